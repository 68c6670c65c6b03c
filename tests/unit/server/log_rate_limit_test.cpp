#include "server/log_rate_limit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "server/connection_state.h"

namespace daxsmbd::server {
namespace {

using Clock = LogRateLimiter::Clock;
using namespace std::chrono_literals;

TEST(LogRateLimiter, WritesTheBudgetThenCountsAndReportsWithTheNextWindowsFirstLine) {
    LogRateLimiter limiter(3, 10s);
    const auto t0 = Clock::now();
    for (int i = 0; i < 3; ++i) {
        auto d = limiter.admit(t0 + std::chrono::milliseconds(i));
        EXPECT_TRUE(d.write);
        EXPECT_EQ(d.suppressed, 0u);
    }
    for (int i = 0; i < 5; ++i)
        EXPECT_FALSE(limiter.admit(t0 + 5s).write);
    auto next = limiter.admit(t0 + 10s);
    EXPECT_TRUE(next.write);
    EXPECT_EQ(next.suppressed, 5u);
    EXPECT_EQ(limiter.take_suppressed(), 0u);
}

TEST(LogRateLimiter, UnreportedCountIsTakenOnce) {
    LogRateLimiter limiter(1, 10s);
    const auto t0 = Clock::now();
    EXPECT_TRUE(limiter.admit(t0).write);
    EXPECT_FALSE(limiter.admit(t0).write);
    limiter.add_suppressed(2);
    EXPECT_EQ(limiter.take_suppressed(), 3u);
    EXPECT_EQ(limiter.take_suppressed(), 0u);
}

TEST(AddressLogLimits, OneBudgetPerAddress) {
    AddressLogLimits limits;
    const auto t0 = Clock::now();
    unsigned written = 0;
    for (unsigned i = 0; i < AddressLogLimits::kLinesPerWindow + 7; ++i)
        written += limits.admit("192.0.2.1", t0).write;
    EXPECT_EQ(written, AddressLogLimits::kLinesPerWindow);
    EXPECT_TRUE(limits.admit("192.0.2.2", t0).write);  // another address has its own budget
    auto later = limits.admit("192.0.2.1", t0 + AddressLogLimits::kWindow);
    EXPECT_TRUE(later.write);
    EXPECT_EQ(later.suppressed, 7u);
}

TEST(AddressLogLimits, ForgetsIdleAddressesWhenFull) {
    AddressLogLimits limits;
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < AddressLogLimits::kMaxAddresses; ++i)
        ASSERT_TRUE(limits.admit("a" + std::to_string(i), t0).write);
    // Full, every window still open: a new address is not admitted (no unbounded growth) ...
    EXPECT_FALSE(limits.admit("new", t0 + 1s).write);
    // ... and is once the old windows have passed.
    EXPECT_TRUE(limits.admit("new", t0 + AddressLogLimits::kWindow).write);
}

// What the process writes to stderr while the object lives (log lines go to fd 2).
class StderrCapture {
  public:
    StderrCapture() {
        std::fflush(stderr);
        saved_ = dup(2);
        file_ = std::tmpfile();
        dup2(fileno(file_), 2);
    }
    std::string text() {
        std::fflush(stderr);
        dup2(saved_, 2);
        close(saved_);
        std::rewind(file_);
        std::string out;
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0)
            out.append(buf, n);
        std::fclose(file_);
        return out;
    }

  private:
    int saved_ = -1;
    std::FILE* file_ = nullptr;
};

unsigned count(const std::string& text, const std::string& what) {
    unsigned n = 0;
    for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1))
        ++n;
    return n;
}

TEST(ConnectionLogRefusal, ALoopingClientWritesItsBudgetAndOneSummaryAtClose) {
    const int level = g_log_level.exchange(1);
    StderrCapture capture;
    {
        ConnectionLog log(7, "192.0.2.9:445");
        for (int i = 0; i < 50; ++i)
            log.refusal("CREATE 'x' refused: ACCESS_DENIED");
    }
    const std::string out = capture.text();
    g_log_level = level;
    EXPECT_EQ(count(out, "refused: ACCESS_DENIED"), ConnectionLog::kRefusalsPerWindow) << out;
    EXPECT_EQ(count(out,
                    "conn 7 192.0.2.9:445: suppressed 30 similar lines before the "
                    "connection closed"),
              1u)
        << out;
}

TEST(ConnectionLogRefusal, ConnectionsFromOneAddressShareItsBudget) {
    const int level = g_log_level.exchange(1);
    AddressLogLimits limits;
    StderrCapture capture;
    {
        ConnectionLog a(1, "192.0.2.5:1000", &limits, "192.0.2.5");
        ConnectionLog b(2, "192.0.2.5:1001", &limits, "192.0.2.5");
        ConnectionLog c(3, "192.0.2.5:1002", &limits, "192.0.2.5");
        ConnectionLog d(4, "192.0.2.5:1003", &limits, "192.0.2.5");
        for (int i = 0; i < 20; ++i)
            for (auto* l : {&a, &b, &c, &d})
                l->refusal("logon failure");
    }
    const std::string out = capture.text();
    g_log_level = level;
    EXPECT_EQ(count(out, "logon failure"), AddressLogLimits::kLinesPerWindow) << out;
    // 15 lines each reached the log; the 5 more each the address refused are summed per
    // connection at its close.
    EXPECT_EQ(count(out, "suppressed 5 similar lines before the connection closed"), 4u) << out;
}

TEST(ConnectionLogRefusal, DebugLevelSuppressesNothing) {
    const int level = g_log_level.exchange(2);
    StderrCapture capture;
    {
        ConnectionLog log(9, "192.0.2.9:445");
        for (int i = 0; i < 50; ++i)
            log.refusal("bad signature");
    }
    const std::string out = capture.text();
    g_log_level = level;
    EXPECT_EQ(count(out, "bad signature"), 50u);
    EXPECT_EQ(count(out, "suppressed"), 0u);
}

}  // namespace
}  // namespace daxsmbd::server
