// SID packet form and string form (MS-DTYP 2.4.2.1, 2.4.2.2).
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/sid.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

}  // namespace

TEST(Sid, GoldenPacketForm) {
    // S-1-5-21-1-2-3-500: Revision 1, count 5, authority 5 (big-endian 48-bit), LE subs.
    auto bytes = hex("01 05 000000000005 15000000 01000000 02000000 03000000 F4010000");
    auto sid = Sid::parse(bytes);
    ASSERT_TRUE(sid.ok());
    EXPECT_EQ(sid->to_string(), "S-1-5-21-1-2-3-500");
    EXPECT_EQ(sid->size(), 28u);
    EXPECT_EQ(sid->authority_value(), 5u);
    EXPECT_EQ(sid->to_bytes(), bytes);
    EXPECT_EQ(*sid, Sid::make(5, {21, 1, 2, 3, 500}));
}

TEST(Sid, WellKnownStrings) {
    EXPECT_EQ(Sid::make(1, {0}).to_string(), "S-1-1-0");
    EXPECT_EQ(Sid::make(5, {32, 544}).to_string(), "S-1-5-32-544");
    EXPECT_EQ(Sid::make(5, {}).to_string(), "S-1-5");
    EXPECT_EQ(Sid::make(22, {1, 1000}).to_bytes(), hex("01 02 000000000016 01000000 E8030000"));
}

TEST(Sid, LargeAuthorityIsHex) {
    // MS-DTYP 2.4.2.1: authorities >= 2^32 are written as 0x + 12 hex digits.
    auto sid = Sid::make(0x0000123456789ABCull, {7});
    EXPECT_EQ(sid.to_string(), "S-1-0x123456789ABC-7");
    auto back = Sid::from_string("S-1-0x123456789ABC-7");
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, sid);
}

TEST(Sid, FromStringRoundTrip) {
    for (const char* s : {"S-1-0-0", "S-1-5-18", "S-1-5-21-3623811015-3361044348-30300820-1013",
                          "S-1-16-12288", "S-1-5-21-1-2-3-4-5-6-7-8-9-10-11-12-13-14"}) {
        auto sid = Sid::from_string(s);
        ASSERT_TRUE(sid.ok()) << s;
        EXPECT_EQ(sid->to_string(), s);
        auto again = Sid::parse(sid->to_bytes());
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(*again, *sid);
    }
    EXPECT_TRUE(Sid::from_string("s-1-1-0").ok());
}

TEST(Sid, FromStringRejectsMalformed) {
    for (const char* s : {"", "S", "S-", "S-1", "S-2-5-32", "X-1-5", "S-1-5-", "S-1-5--1",
                          "S-1-5-x", "S-1-5-32 ", "S-1-281474976710656", "S-1-5-4294967296",
                          "S-1-5-1-2-3-4-5-6-7-8-9-10-11-12-13-14-15-16"}) {
        EXPECT_EQ(Sid::from_string(s).status(), NtStatus::InvalidParameter) << s;
    }
}

TEST(Sid, ParseRejectsMalformed) {
    // Revision must be 1; at most 15 sub-authorities (MS-DTYP 2.4.2.2).
    EXPECT_EQ(Sid::parse(hex("02 01 000000000005 12000000")).status(), NtStatus::InvalidParameter);
    ByteVector sixteen = hex("01 10 000000000005");
    sixteen.resize(8 + 64);
    EXPECT_EQ(Sid::parse(sixteen).status(), NtStatus::InvalidParameter);
    auto bytes = hex("01 02 000000000005 20000000 21020000");
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_EQ(Sid::parse(Bytes(bytes).first(n)).status(), NtStatus::InvalidParameter) << n;
}

TEST(Sid, Ordering) {
    EXPECT_LT(Sid::make(5, {32, 544}), Sid::make(5, {32, 545}));
    EXPECT_NE(Sid::make(5, {32}), Sid::make(5, {32, 0}));
}
