// The logon throttle's arithmetic (server/logon_throttle.h), with time passed in: growth per
// failure, the cap, the window, independence of addresses, and the bounded table.
#include "server/logon_throttle.h"

#include <gtest/gtest.h>

#include <string>

namespace daxsmbd::server {
namespace {

using namespace std::chrono_literals;
using Clock = LogonThrottle::Clock;

LogonThrottle::Settings settings(std::chrono::milliseconds base = 200ms,
                                 std::chrono::milliseconds cap = 5000ms,
                                 std::chrono::seconds window = 300s, size_t max = 65536) {
    LogonThrottle::Settings s;
    s.base = base;
    s.cap = cap;
    s.window = window;
    s.max_addresses = max;
    return s;
}

TEST(LogonThrottle, CleanAddressIsNotDelayed) {
    LogonThrottle t(settings());
    const auto now = Clock::now();
    EXPECT_EQ(t.failures("10.0.0.1", now), 0u);
    EXPECT_EQ(t.delay_for("10.0.0.1", now), 0ms);
}

TEST(LogonThrottle, DelayDoublesPerFailureUpToTheCap) {
    LogonThrottle t(settings(200ms, 5000ms));
    const auto now = Clock::now();
    const std::chrono::milliseconds want[] = {200ms,  400ms,  800ms,  1600ms,
                                              3200ms, 5000ms, 5000ms, 5000ms};
    for (unsigned i = 0; i < 8; ++i) {
        EXPECT_EQ(t.record_failure("10.0.0.1", now), i + 1);
        EXPECT_EQ(t.delay_for("10.0.0.1", now), want[i]) << "after failure " << i + 1;
    }
    // Far beyond any shift width: still the cap, no overflow.
    EXPECT_EQ(t.delay_after(100000), 5000ms);
}

TEST(LogonThrottle, OtherAddressesAreNotAffected) {
    LogonThrottle t(settings());
    const auto now = Clock::now();
    for (int i = 0; i < 10; ++i)
        t.record_failure("192.0.2.7", now);
    EXPECT_EQ(t.delay_for("192.0.2.7", now), 5000ms);
    EXPECT_EQ(t.delay_for("192.0.2.8", now), 0ms);
    EXPECT_EQ(t.delay_for("::1", now), 0ms);
}

TEST(LogonThrottle, FailuresAreForgottenAfterTheWindow) {
    LogonThrottle t(settings(200ms, 5000ms, 60s));
    const auto t0 = Clock::now();
    t.record_failure("10.0.0.1", t0);
    t.record_failure("10.0.0.1", t0 + 30s);
    // The window runs from the last failure.
    EXPECT_EQ(t.failures("10.0.0.1", t0 + 89s), 2u);
    EXPECT_EQ(t.failures("10.0.0.1", t0 + 91s), 0u);
    EXPECT_EQ(t.delay_for("10.0.0.1", t0 + 91s), 0ms);
    // A failure after the window starts counting from one again.
    EXPECT_EQ(t.record_failure("10.0.0.1", t0 + 100s), 1u);
    EXPECT_EQ(t.delay_for("10.0.0.1", t0 + 100s), 200ms);
}

TEST(LogonThrottle, ZeroBaseDisablesTheDelayButStillCounts) {
    LogonThrottle t(settings(0ms));
    const auto now = Clock::now();
    EXPECT_EQ(t.record_failure("10.0.0.1", now), 1u);
    EXPECT_EQ(t.record_failure("10.0.0.1", now), 2u);
    EXPECT_EQ(t.delay_for("10.0.0.1", now), 0ms);
}

TEST(LogonThrottle, CapBelowBaseWins) {
    LogonThrottle t(settings(1000ms, 300ms));
    EXPECT_EQ(t.delay_after(1), 300ms);
}

TEST(LogonThrottle, TableStaysBoundedDroppingExpiredThenOldest) {
    LogonThrottle t(settings(200ms, 5000ms, 60s, 4));
    const auto t0 = Clock::now();
    t.record_failure("a", t0);
    t.record_failure("b", t0 + 1s);
    t.record_failure("c", t0 + 100s);
    t.record_failure("d", t0 + 101s);
    EXPECT_EQ(t.tracked(), 4u);
    // "a" and "b" expired: they make room.
    t.record_failure("e", t0 + 102s);
    EXPECT_EQ(t.tracked(), 3u);
    t.record_failure("f", t0 + 103s);
    EXPECT_EQ(t.tracked(), 4u);
    // Full with live entries: the oldest ("c") goes.
    t.record_failure("g", t0 + 104s);
    EXPECT_EQ(t.tracked(), 4u);
    EXPECT_EQ(t.failures("c", t0 + 104s), 0u);
    EXPECT_EQ(t.failures("d", t0 + 104s), 1u);
    EXPECT_EQ(t.failures("g", t0 + 104s), 1u);
}

}  // namespace
}  // namespace daxsmbd::server
