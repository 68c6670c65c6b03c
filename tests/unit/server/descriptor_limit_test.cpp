#include "server/descriptor_limit.h"

#include <gtest/gtest.h>

namespace daxsmbd::server {
namespace {

TEST(DescriptorLimit, WantedCoversASocketAndAnOpenPerConnection) {
    EXPECT_EQ(descriptors_wanted(10000), 21024u);
    EXPECT_EQ(descriptors_wanted(0), 1024u);
}

TEST(DescriptorLimit, UnprivilegedRaisesSoftUpToHard) {
    const auto got = choose_descriptor_limits(21024, {1024, 4096}, 1048576, false);
    EXPECT_EQ(got.soft, 4096u);
    EXPECT_EQ(got.hard, 4096u);
}

TEST(DescriptorLimit, RootRaisesHardUpToNrOpen) {
    auto got = choose_descriptor_limits(21024, {1024, 4096}, 1048576, true);
    EXPECT_EQ(got.soft, 21024u);
    EXPECT_EQ(got.hard, 21024u);
    got = choose_descriptor_limits(21024, {1024, 4096}, 8192, true);
    EXPECT_EQ(got.soft, 8192u);
    EXPECT_EQ(got.hard, 8192u);
}

TEST(DescriptorLimit, NeverLowersALimit) {
    const auto got = choose_descriptor_limits(2048, {65536, 524288}, 1048576, true);
    EXPECT_EQ(got.soft, 65536u);
    EXPECT_EQ(got.hard, 524288u);
}

}  // namespace
}  // namespace daxsmbd::server
