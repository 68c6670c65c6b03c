#include "server/credits.h"

#include <gtest/gtest.h>

using daxsmbd::server::CreditWindow;

TEST(CreditWindow, StartsWithMessageIdZeroOnly) {
    CreditWindow w;
    EXPECT_EQ(w.outstanding(), 1u);
    EXPECT_FALSE(w.consume(1, 1));
    EXPECT_TRUE(w.consume(0, 1));
    EXPECT_FALSE(w.consume(0, 1));  // each id only once
    EXPECT_EQ(w.outstanding(), 0u);
}

TEST(CreditWindow, GrantExtendsWindowAndAllowsOutOfOrder) {
    CreditWindow w;
    ASSERT_TRUE(w.consume(0, 1));
    EXPECT_EQ(w.grant(3, 100), 3);  // ids 1,2,3
    EXPECT_TRUE(w.consume(3, 1));
    EXPECT_TRUE(w.consume(1, 1));
    EXPECT_FALSE(w.consume(3, 1));
    EXPECT_TRUE(w.consume(2, 1));
    EXPECT_FALSE(w.consume(4, 1));
    EXPECT_EQ(w.outstanding(), 0u);
}

TEST(CreditWindow, MultiCreditChargeNeedsAllIds) {
    CreditWindow w;
    ASSERT_TRUE(w.consume(0, 1));
    w.grant(4, 100);                // ids 1..4
    EXPECT_FALSE(w.consume(2, 4));  // 2..5: 5 not granted
    EXPECT_TRUE(w.consume(1, 4));   // 1..4
    EXPECT_EQ(w.outstanding(), 0u);
}

TEST(CreditWindow, GrantCapsAtMaximumButNeverZero) {
    CreditWindow w;
    EXPECT_EQ(w.grant(10, 4), 3);  // holds 1, may reach 4
    EXPECT_EQ(w.grant(10, 4), 0);
    for (uint64_t i = 0; i < 4; ++i)
        ASSERT_TRUE(w.consume(i, 1));
    EXPECT_EQ(w.grant(0, 4), 1);  // client requested nothing but would be left with none
}

TEST(CreditWindow, RejectsWrapAndReservedId) {
    CreditWindow w;
    EXPECT_FALSE(w.consume(UINT64_MAX, 1));
}
