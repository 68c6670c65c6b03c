// How often each abuse limit (architecture.md "Limits on everything a client can make the server
// hold"; the configuration's "max ..." keys) refused or cut something: daxsmbd_limit_hits_total.
// Counted where the limit acts, from any thread; rare by nature, so one relaxed add each.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace daxsmbd::server::metrics {

enum class Limit : uint8_t {
    MaxConnectionsTotal,
    MaxConnectionsPerAddress,
    MaxSessionsPerConnection,
    MaxTreeConnectsPerSession,
    MaxOpensPerSession,
    MaxLocksPerOpen,
    MaxDurableHandlesPerClient,
    MaxAsyncRequestsPerConnection,
    MaxBytesInFlightPerConnection,
    MaxMessageSize,
    MaxCompoundLength,
    AuthTimeout,
};
inline constexpr size_t kLimits = size_t(Limit::AuthTimeout) + 1;

// The configuration key of the limit ("max opens per session").
const char* limit_key(Limit l);

class LimitHits {
  public:
    void hit(Limit l) { hits_[size_t(l)].fetch_add(1, std::memory_order_relaxed); }
    uint64_t count(Limit l) const { return hits_[size_t(l)].load(std::memory_order_relaxed); }

  private:
    std::array<std::atomic<uint64_t>, kLimits> hits_{};
};

}  // namespace daxsmbd::server::metrics
