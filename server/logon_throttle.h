// Slows down password guessing: per client address, the number of failed logons is kept, and
// the answer to every SESSION_SETUP that completes or fails an authentication from an address
// with failures is held back by base * 2^(failures-1), at most `cap`. Successes are delayed too
// (while the address has failures): otherwise a client could tell a failure from a success by
// the missing answer and give up early instead of waiting. The count is forgotten once `window`
// passes without a new failure from that address. Other addresses are not affected, and the
// waiting itself is an Asio timer in the handler coroutine: the event loop goes on serving.
//
// Thread-safe (the event loops share one throttle). Time is passed in, so the logic is tested
// without clocks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace daxsmbd::server {

class LogonThrottle {
  public:
    using Clock = std::chrono::steady_clock;
    struct Settings {
        std::chrono::milliseconds base{200};  // delay after the first failure; 0 = no throttling
        std::chrono::milliseconds cap{5000};
        std::chrono::seconds window{300};
        size_t max_addresses = 65536;  // addresses tracked at most (the oldest are dropped)
    };

    explicit LogonThrottle(Settings s) : settings_(s) {}

    // Counts a failed logon from `address`; returns the failures within the window, this one
    // included.
    unsigned record_failure(const std::string& address, Clock::time_point now);
    // Failures from `address` within the window.
    unsigned failures(const std::string& address, Clock::time_point now) const;
    // How long an answer to `address` is held back now.
    std::chrono::milliseconds delay_for(const std::string& address, Clock::time_point now) const {
        return delay_after(failures(address, now));
    }
    // base * 2^(n-1) capped; 0 for n == 0.
    std::chrono::milliseconds delay_after(unsigned failures) const;

    size_t tracked() const;
    // Failed logons counted since start (all addresses; metrics).
    uint64_t failures_total() const { return failures_total_.load(std::memory_order_relaxed); }
    const Settings& settings() const { return settings_; }

  private:
    struct Entry {
        unsigned failures = 0;
        Clock::time_point last;
    };
    bool expired(const Entry& e, Clock::time_point now) const {
        return now - e.last > settings_.window;
    }
    void make_room(Clock::time_point now);

    Settings settings_;
    mutable std::mutex mu_;
    std::unordered_map<std::string, Entry> entries_;
    std::atomic<uint64_t> failures_total_{0};
};

}  // namespace daxsmbd::server
