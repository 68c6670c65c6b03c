#include "server/log_rate_limit.h"

#include <iterator>

namespace daxsmbd::server {

LogRateLimiter::Decision LogRateLimiter::admit(Clock::time_point now) {
    std::lock_guard lock(mu_);
    if (used_ == 0 || now - window_start_ >= window_) {
        window_start_ = now;
        used_ = 0;
    }
    if (used_ >= budget_) {
        ++suppressed_;
        return {};
    }
    ++used_;
    Decision d{true, suppressed_};
    suppressed_ = 0;
    return d;
}

std::uint64_t LogRateLimiter::take_suppressed() {
    std::lock_guard lock(mu_);
    auto n = suppressed_;
    suppressed_ = 0;
    return n;
}

void LogRateLimiter::add_suppressed(std::uint64_t n) {
    std::lock_guard lock(mu_);
    suppressed_ += n;
}

LogRateLimiter::Decision AddressLogLimits::admit(const std::string& address,
                                                 LogRateLimiter::Clock::time_point now) {
    std::lock_guard lock(mu_);
    if (entries_.size() >= kMaxAddresses && !entries_.contains(address)) {
        // Forget addresses whose window has passed; their unreported counts go with them,
        // which only loses a summary, never a budget.
        for (auto it = entries_.begin(); it != entries_.end();)
            it = now - it->second.window_start >= kWindow ? entries_.erase(it) : std::next(it);
        if (entries_.size() >= kMaxAddresses) return {};
    }
    Entry& e = entries_[address];
    if (e.used == 0 || now - e.window_start >= kWindow) {
        e.window_start = now;
        e.used = 0;
    }
    if (e.used >= kLinesPerWindow) {
        ++e.suppressed;
        return {};
    }
    ++e.used;
    LogRateLimiter::Decision d{true, e.suppressed};
    e.suppressed = 0;
    return d;
}

}  // namespace daxsmbd::server
