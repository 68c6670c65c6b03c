#include "server/descriptor_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <string>

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

// The process limit really moves: from a lowered soft limit, raise_descriptor_limit takes it
// up to what the connections need, or at least to the hard limit when the hard limit may not
// grow (unprivileged, or root without CAP_SYS_RESOURCE), and the log line says what it got.
TEST(DescriptorLimit, RaiseAppliesToThisProcess) {
    rlimit before{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
    rlimit lowered = before;
    lowered.rlim_cur = std::min<rlim_t>(before.rlim_cur, 256);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
    const unsigned connections = 20000;
    const std::string line = raise_descriptor_limit(connections);
    rlimit after{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
    const std::uint64_t wanted = descriptors_wanted(connections);
    EXPECT_GE(after.rlim_cur, std::min<std::uint64_t>(wanted, before.rlim_max)) << line;
    if (after.rlim_max > before.rlim_max) {
        EXPECT_GE(after.rlim_cur, wanted) << line;
    }
    EXPECT_NE(line.find("descriptor limit: " + std::to_string(after.rlim_cur)), std::string::npos)
        << line;
    EXPECT_EQ(line.find("WARNING") != std::string::npos, after.rlim_cur < wanted) << line;
    setrlimit(RLIMIT_NOFILE, &before);
}

}  // namespace
}  // namespace daxsmbd::server
