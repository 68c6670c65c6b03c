#include "tests/bench/load_stats.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <thread>

namespace daxsmbd::bench {
namespace {

TEST(LatencyHistogram, SmallValuesAreExact) {
    LatencyHistogram h;
    for (uint64_t v = 1; v <= 100; ++v)
        h.add(v);
    EXPECT_EQ(h.count(), 100u);
    EXPECT_DOUBLE_EQ(h.mean_ns(), 50.5);
    EXPECT_DOUBLE_EQ(h.percentile_ns(0.5), 50);
    EXPECT_DOUBLE_EQ(h.percentile_ns(0.99), 99);
    EXPECT_EQ(h.min_ns(), 1u);
    EXPECT_EQ(h.max_ns(), 100u);
}

TEST(LatencyHistogram, LargeValuesWithinHalfAPercent) {
    LatencyHistogram h;
    // 1..100000 µs in ns: p50 = 50 ms, p99 = 99 ms, p99.9 = 99.9 ms.
    for (uint64_t us = 1; us <= 100000; ++us)
        h.add(us * 1000);
    EXPECT_NEAR(h.percentile_ns(0.5), 50e6, 50e6 * 0.005);
    EXPECT_NEAR(h.percentile_ns(0.99), 99e6, 99e6 * 0.005);
    EXPECT_NEAR(h.percentile_ns(0.999), 99.9e6, 99.9e6 * 0.005);
    EXPECT_LE(h.percentile_ns(1.0), 100e6);
}

TEST(LatencyHistogram, BucketMidpointStaysInsideItsBucket) {
    for (uint64_t v : {255ull, 256ull, 1000ull, 123456789ull, 1ull << 40}) {
        int b = LatencyHistogram::bucket_of(v);
        double mid = LatencyHistogram::bucket_mid(b);
        EXPECT_EQ(LatencyHistogram::bucket_of(uint64_t(mid)), b) << v;
        EXPECT_NEAR(mid, double(v), double(v) * 0.004) << v;
    }
}

TEST(LatencyHistogram, MergeAddsCountsAndKeepsExtremes) {
    LatencyHistogram a, b;
    a.add(10);
    a.add(20);
    b.add(5);
    b.add(5000);
    a.merge(b);
    EXPECT_EQ(a.count(), 4u);
    EXPECT_EQ(a.min_ns(), 5u);
    EXPECT_EQ(a.max_ns(), 5000u);
    EXPECT_DOUBLE_EQ(a.mean_ns(), (10 + 20 + 5 + 5000) / 4.0);
}

TEST(LatencyHistogram, EmptyReportsZero) {
    LatencyHistogram h;
    EXPECT_EQ(h.percentile_ns(0.99), 0);
    EXPECT_EQ(h.mean_ns(), 0);
    EXPECT_EQ(h.max_ns(), 0u);
}

TEST(ParseSize, Units) {
    EXPECT_EQ(parse_size("4096"), 4096u);
    EXPECT_EQ(parse_size("4k"), 4096u);
    EXPECT_EQ(parse_size("1m"), 1u << 20);
    EXPECT_EQ(parse_size("256M"), 256u << 20);
    EXPECT_EQ(parse_size("1.5g"), 3ull << 29);
    EXPECT_FALSE(parse_size(""));
    EXPECT_FALSE(parse_size("k"));
    EXPECT_FALSE(parse_size("4x"));
    EXPECT_FALSE(parse_size("-1"));
}

TEST(ProcStat, CommandNameWithSpacesAndParentheses) {
    std::string line =
        "4242 (smbd: (client) x) S 17 4242 4242 0 -1 4194560 100 0 0 0 "
        "250 75 3 4 20 0 9 0 12345 1000000 500";
    auto st = parse_proc_stat(line);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->ppid, 17);
    EXPECT_EQ(st->utime, 250u);
    EXPECT_EQ(st->stime, 75u);
    EXPECT_EQ(st->cutime, 3u);
    EXPECT_EQ(st->cstime, 4u);
    EXPECT_EQ(st->threads, 9u);
    EXPECT_FALSE(parse_proc_stat("4242 (cut short) S 1 2"));
    EXPECT_FALSE(parse_proc_stat("no parenthesis at all"));
}

TEST(ProcKibField, FindsTheKeyAtALineStart) {
    std::string status = "Name:\tx\nVmHWM:\t  900 kB\nVmRSS:\t  1234 kB\nRssAnon:\t 5 kB\n";
    EXPECT_EQ(proc_kib_field(status, "VmRSS"), 1234u);
    EXPECT_EQ(proc_kib_field(status, "RssAnon"), 5u);
    EXPECT_FALSE(proc_kib_field(status, "Rss"));  // prefix of another key only
    EXPECT_FALSE(proc_kib_field(status, "VmSwap"));
}

TEST(ServerProcs, OwnProcessFigures) {
    ServerProcs self({::getpid()}, false);
    auto before = self.sample();
    EXPECT_EQ(before.processes, 1u);
    EXPECT_GT(before.rss_kib, 0u);
    EXPECT_GE(before.threads, 1u);
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    std::thread t([&] {
        auto during = self.sample();
        EXPECT_EQ(during.fds, before.fds + 1);
        EXPECT_EQ(during.threads, before.threads + 1);
    });
    t.join();
    ::close(fd);
}

TEST(ServerProcs, TreeIncludesChildren) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    ServerProcs tree({::getpid()}, true);
    ServerProcs alone({::getpid()}, false);
    auto procs = tree.processes();
    EXPECT_NE(std::find(procs.begin(), procs.end(), child), procs.end());
    EXPECT_EQ(alone.processes().size(), 1u);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
}

TEST(ServerProcs, GoneProcessIsSkipped) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);
    ServerProcs gone({child}, false);
    EXPECT_TRUE(gone.processes().empty());
    EXPECT_EQ(gone.sample().processes, 0u);
}

}  // namespace
}  // namespace daxsmbd::bench
