#include "server/logon_throttle.h"

#include <algorithm>

namespace daxsmbd::server {

unsigned LogonThrottle::record_failure(const std::string& address, Clock::time_point now) {
    std::lock_guard lk(mu_);
    failures_total_.fetch_add(1, std::memory_order_relaxed);
    auto it = entries_.find(address);
    if (it == entries_.end()) {
        make_room(now);
        it = entries_.emplace(address, Entry{}).first;
    } else if (expired(it->second, now)) {
        it->second.failures = 0;
    }
    Entry& e = it->second;
    if (e.failures < 1000000) ++e.failures;  // no overflow, whatever a client sends
    e.last = now;
    return e.failures;
}

unsigned LogonThrottle::failures(const std::string& address, Clock::time_point now) const {
    std::lock_guard lk(mu_);
    auto it = entries_.find(address);
    if (it == entries_.end() || expired(it->second, now)) return 0;
    return it->second.failures;
}

std::chrono::milliseconds LogonThrottle::delay_after(unsigned failures) const {
    if (failures == 0 || settings_.base.count() <= 0) return std::chrono::milliseconds(0);
    // Doubling stops at the cap; the shift is bounded so it cannot overflow.
    const unsigned shift = std::min(failures - 1, 30u);
    const long long ms = settings_.base.count();
    const long long cap = settings_.cap.count();
    const long long d = ms > (cap >> shift) ? cap : ms << shift;
    return std::chrono::milliseconds(std::min(d, cap));
}

size_t LogonThrottle::tracked() const {
    std::lock_guard lk(mu_);
    return entries_.size();
}

// Called with mu_ held, before a new address is added: first drop the expired entries, then,
// if that is not enough, the address whose last failure is the oldest. The table stays bounded
// however many addresses an attacker uses.
void LogonThrottle::make_room(Clock::time_point now) {
    if (entries_.size() < settings_.max_addresses) return;
    std::erase_if(entries_, [&](const auto& kv) { return expired(kv.second, now); });
    while (!entries_.empty() && entries_.size() >= settings_.max_addresses) {
        auto oldest = std::min_element(
            entries_.begin(), entries_.end(),
            [](const auto& a, const auto& b) { return a.second.last < b.second.last; });
        entries_.erase(oldest);
    }
}

}  // namespace daxsmbd::server
