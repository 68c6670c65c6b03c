#include "server/metrics/registry.h"

#include <algorithm>
#include <cctype>

namespace daxsmbd::server::metrics {

size_t latency_bucket(uint64_t ns) {
    // A handful of compares, mostly decided by the first few bounds.
    return size_t(std::lower_bound(kLatencyBoundsNs.begin(), kLatencyBoundsNs.end(), ns) -
                  kLatencyBoundsNs.begin());
}

void HistogramSnapshot::add(const LatencyHistogram& h) {
    for (size_t i = 0; i < kLatencyBuckets; ++i)
        buckets[i] += h.buckets[i].load(std::memory_order_relaxed);
    sum_ns += h.sum_ns.load(std::memory_order_relaxed);
}

void HistogramSnapshot::add(const HistogramSnapshot& h) {
    for (size_t i = 0; i < kLatencyBuckets; ++i)
        buckets[i] += h.buckets[i];
    sum_ns += h.sum_ns;
}

uint64_t HistogramSnapshot::count() const {
    uint64_t n = 0;
    for (auto b : buckets)
        n += b;
    return n;
}

const char* io_path_name(IoPath p) {
    switch (p) {
        case IoPath::Block:
            return "block";
        case IoPath::Dax:
            return "dax";
        case IoPath::Splice:
            return "splice";
        case IoPath::Rdma:
            return "rdma";
    }
    return "block";
}

void StatusTable::count(protocol::Command c, NtStatus s) {
    const uint64_t key = (uint64_t(1) << 48) | (uint64_t(c) << 32) | to_u32(s);
    // Fibonacci hashing of the key into the slot range.
    size_t slot = size_t((key * 0x9E3779B97F4A7C15ull) >> 57) % kSlots;
    for (size_t probe = 0; probe < kMaxProbes; ++probe, slot = (slot + 1) % kSlots) {
        uint64_t seen = keys_[slot].load(std::memory_order_relaxed);
        if (seen == 0 && keys_[slot].compare_exchange_strong(seen, key, std::memory_order_relaxed))
            seen = key;
        if (seen == key) {
            bump(counts_[slot]);
            return;
        }
    }
    bump(untracked_);
}

void StatusTable::collect(std::vector<Entry>& out) const {
    for (size_t i = 0; i < kSlots; ++i) {
        const uint64_t key = keys_[i].load(std::memory_order_relaxed);
        const uint64_t n = counts_[i].load(std::memory_order_relaxed);
        if (key == 0 || n == 0) continue;
        out.push_back(Entry{uint16_t((key >> 32) & 0xFFFF), uint32_t(key), n});
    }
}

void Registry::configure(size_t loops, std::vector<std::string> share_names) {
    std::lock_guard lk(names_mu_);
    share_names_ = std::move(share_names);
    retired_.assign(share_names_.size(), false);
    capacity_ = share_names_.size() + kReloadShareSlots;
    shards_.clear();
    for (size_t i = 0; i < loops; ++i)
        shards_.push_back(std::make_unique<LoopShard>(capacity_));
}

size_t Registry::share_slot(std::string_view name) {
    std::lock_guard lk(names_mu_);
    for (size_t i = 0; i < share_names_.size(); ++i)
        if (share_names_[i].size() == name.size() &&
            std::equal(name.begin(), name.end(), share_names_[i].begin(), [](char a, char b) {
                return std::tolower(uint8_t(a)) == std::tolower(uint8_t(b));
            })) {
            share_names_[i] = std::string(name);
            retired_[i] = false;
            return i;
        }
    if (share_names_.size() >= capacity_) return SIZE_MAX;
    share_names_.emplace_back(name);
    retired_.push_back(false);
    return share_names_.size() - 1;
}

void Registry::retire_share(size_t index) {
    std::lock_guard lk(names_mu_);
    if (index < retired_.size()) retired_[index] = true;
}

Snapshot Registry::snapshot() const {
    Snapshot out;
    std::vector<size_t> live;  // slot indexes in the snapshot, in slot order
    {
        std::lock_guard lk(names_mu_);
        for (size_t i = 0; i < share_names_.size(); ++i)
            if (!retired_[i]) {
                live.push_back(i);
                out.shares.emplace_back().name = share_names_[i];
            }
    }
    std::vector<StatusTable::Entry> all;
    for (const auto& sh : shards_) {
        for (size_t c = 0; c < protocol::kCommandCount; ++c)
            out.requests[c].add(sh->request_latency[c]);
        sh->statuses.collect(all);
        out.failures_untracked += sh->statuses.untracked();
        for (size_t j = 0; j < live.size(); ++j) {
            const ShareIo& io = sh->shares[live[j]];
            for (size_t d = 0; d < kIoDirections; ++d)
                for (size_t p = 0; p < kIoPaths; ++p) {
                    out.shares[j].latency[d][p].add(io.latency[d][p]);
                    out.shares[j].bytes[d][p] += io.bytes[d][p].load(std::memory_order_relaxed);
                }
        }
    }
    // The same pair from several shards becomes one entry.
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return a.command != b.command ? a.command < b.command : a.status < b.status;
    });
    for (const auto& e : all) {
        if (!out.failures.empty() && out.failures.back().command == e.command &&
            out.failures.back().status == e.status)
            out.failures.back().count += e.count;
        else
            out.failures.push_back(e);
    }
    return out;
}

}  // namespace daxsmbd::server::metrics
