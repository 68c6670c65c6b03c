// Rate limits for log lines a client can cause (refused CREATEs, bad signatures, failed
// logons): a client looping on errors must not fill the disk. Each connection and each client
// address gets a budget of lines per window; lines past it are counted, not written, and the
// count is reported with the next line written ("suppressed N") or when the connection closes.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace daxsmbd::server {

class LogRateLimiter {
  public:
    using Clock = std::chrono::steady_clock;
    struct Decision {
        bool write = false;
        // Lines suppressed since the last line written (reported with this one).
        std::uint64_t suppressed = 0;
    };
    LogRateLimiter(unsigned lines_per_window, Clock::duration window)
        : budget_(lines_per_window), window_(window) {}

    Decision admit(Clock::time_point now);
    // Suppressed lines not reported yet; resets the count.
    std::uint64_t take_suppressed();
    // Counts lines this limiter let through but another budget refused.
    void add_suppressed(std::uint64_t n);

  private:
    std::mutex mu_;
    const unsigned budget_;
    const Clock::duration window_;
    Clock::time_point window_start_{};
    unsigned used_ = 0;
    std::uint64_t suppressed_ = 0;
};

// One LogRateLimiter per client address, shared by all connections from it. Bounded: past
// max_addresses, addresses whose window has passed are forgotten.
class AddressLogLimits {
  public:
    static constexpr unsigned kLinesPerWindow = 60;
    static constexpr std::chrono::seconds kWindow{10};
    static constexpr std::size_t kMaxAddresses = 4096;

    LogRateLimiter::Decision admit(const std::string& address,
                                   LogRateLimiter::Clock::time_point now);

  private:
    struct Entry {
        LogRateLimiter::Clock::time_point window_start;
        unsigned used = 0;
        std::uint64_t suppressed = 0;
    };
    std::mutex mu_;
    std::unordered_map<std::string, Entry> entries_;
};

}  // namespace daxsmbd::server
