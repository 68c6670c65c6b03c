// The server's Prometheus metrics (README "Metrics"): per event loop one shard of plain counters
// and fixed-bucket latency histograms, written by that loop's requests, merged when /metrics is
// scraped. The request path only adds to its own loop's shard with relaxed atomic adds (a
// cache line no other core writes): no lock, no allocation, no lookup by name. Everything is
// indexed by small numbers: the SMB2 command, a slot of a small open-addressing table for the
// (command, NTSTATUS) pairs of failed requests, the share's index and the data path.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/header.h"
#include "protocol/status.h"

namespace daxsmbd::server::metrics {

// Upper bounds of the latency buckets, in nanoseconds (50 us .. 10 s); one more bucket above
// the last bound is +Inf.
inline constexpr std::array<uint64_t, 17> kLatencyBoundsNs = {
    50'000,      100'000,       250'000,       500'000,       1'000'000,     2'500'000,
    5'000'000,   10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000,
    500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
inline constexpr size_t kLatencyBuckets = kLatencyBoundsNs.size() + 1;

// The bucket of a latency: the first whose bound is >= ns (Prometheus buckets are "less than
// or equal"); kLatencyBuckets - 1 (+Inf) above the last bound.
size_t latency_bucket(uint64_t ns);

inline void bump(std::atomic<uint64_t>& a, uint64_t n = 1) {
    a.fetch_add(n, std::memory_order_relaxed);
}

// One shard's histogram: per-bucket counts (not cumulative) and the sum of the observations.
struct LatencyHistogram {
    std::array<std::atomic<uint64_t>, kLatencyBuckets> buckets{};
    std::atomic<uint64_t> sum_ns{0};

    void observe(uint64_t ns) {
        bump(buckets[latency_bucket(ns)]);
        bump(sum_ns, ns);
    }
};

// A merged histogram.
struct HistogramSnapshot {
    std::array<uint64_t, kLatencyBuckets> buckets{};  // per bucket, not cumulative
    uint64_t sum_ns = 0;

    void add(const LatencyHistogram& h);
    void add(const HistogramSnapshot& h);
    uint64_t count() const;
};

// Where a READ's or WRITE's data went: the io_uring block path, a DAX mapping, a splice pipe
// (buffered READ straight from the page cache to the socket), or an RDMA transfer of the
// client's buffers (SMB Direct).
enum class IoPath : uint8_t { Block, Dax, Splice, Rdma };
inline constexpr size_t kIoPaths = 4;
const char* io_path_name(IoPath p);
enum class IoDirection : uint8_t { Read, Write };
inline constexpr size_t kIoDirections = 2;

// One share's I/O on one loop, per direction and data path.
struct ShareIo {
    std::array<std::array<LatencyHistogram, kIoPaths>, kIoDirections> latency{};
    std::array<std::array<std::atomic<uint64_t>, kIoPaths>, kIoDirections> bytes{};
};

// Failed requests by (command, NTSTATUS): a fixed open-addressing table, a slot claimed once
// per distinct pair; pairs past its capacity are counted in `untracked`.
class StatusTable {
  public:
    static constexpr size_t kSlots = 128;
    static constexpr size_t kMaxProbes = 16;
    void count(protocol::Command c, NtStatus s);
    struct Entry {
        uint16_t command;
        uint32_t status;
        uint64_t count;
    };
    // The pairs counted so far (unordered).
    void collect(std::vector<Entry>& out) const;
    uint64_t untracked() const { return untracked_.load(std::memory_order_relaxed); }

  private:
    // key: command << 32 | status, + 1 << 48 so that no used key is 0 (empty).
    std::array<std::atomic<uint64_t>, kSlots> keys_{};
    std::array<std::atomic<uint64_t>, kSlots> counts_{};
    std::atomic<uint64_t> untracked_{0};
};

// What one event loop counts. Aligned so that two loops' shards share no cache line.
struct alignas(64) LoopShard {
    explicit LoopShard(size_t share_count)
        : shares(new ShareIo[share_count]), shares_n(share_count) {}

    // A request's final status and its latency (admission to the handler's completion).
    void request_done(protocol::Command c, NtStatus s, uint64_t ns) {
        if (size_t(c) >= protocol::kCommandCount) return;  // answered INVALID_PARAMETER, uncounted
        request_latency[size_t(c)].observe(ns);
        if (s != NtStatus::Success) statuses.count(c, s);
    }
    // A READ's or WRITE's bytes on share `share` (its index, Share::metrics_index).
    void share_io(size_t share, IoDirection d, IoPath p, uint64_t bytes, uint64_t ns) {
        if (share >= shares_n) return;
        ShareIo& s = shares[share];
        s.latency[size_t(d)][size_t(p)].observe(ns);
        bump(s.bytes[size_t(d)][size_t(p)], bytes);
    }

    std::array<LatencyHistogram, protocol::kCommandCount> request_latency{};
    StatusTable statuses;
    std::unique_ptr<ShareIo[]> shares;
    size_t shares_n;
};

// The merged view of all shards.
struct Snapshot {
    std::array<HistogramSnapshot, protocol::kCommandCount> requests{};
    std::vector<StatusTable::Entry> failures;  // sorted by command, then status
    uint64_t failures_untracked = 0;
    struct Share {
        std::string name;
        std::array<std::array<HistogramSnapshot, kIoPaths>, kIoDirections> latency{};
        std::array<std::array<uint64_t, kIoPaths>, kIoDirections> bytes{};
    };
    std::vector<Share> shares;
};

class Registry {
  public:
    // Slots for shares that a configuration reload adds, beyond those configured at start.
    static constexpr size_t kReloadShareSlots = 256;

    // Made before the loops run: one shard per loop, one slot per share (by index), and
    // kReloadShareSlots spare slots.
    void configure(size_t loops, std::vector<std::string> share_names);
    LoopShard& shard(size_t loop) { return *shards_[loop]; }
    size_t loop_count() const { return shards_.size(); }
    Snapshot snapshot() const;

    // The slot of share `name` (a reload added or replaced it): the one it had, if any (a
    // changed or re-added share's counters go on), else a spare one; SIZE_MAX when none is
    // left. The share appears in snapshots from now on.
    size_t share_slot(std::string_view name);
    // Share `index` was removed: snapshots leave it out (its counts are kept for a re-add).
    void retire_share(size_t index);

  private:
    std::vector<std::unique_ptr<LoopShard>> shards_;
    size_t capacity_ = 0;
    mutable std::mutex names_mu_;  // the names and `retired_` (a reload, a scrape)
    std::vector<std::string> share_names_;
    std::vector<bool> retired_;
};

}  // namespace daxsmbd::server::metrics
