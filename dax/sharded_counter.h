// A counter split into one cache line per CPU, so that the cores incrementing it never fight
// over one line. Used for the pin counts of mappings (dax/mapping.h) and the DAX statistics.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

namespace daxsmbd::dax {

// The number of shards: the CPUs of the machine (at least one), fixed at first use.
inline size_t shard_count() {
    static const size_t n = [] {
        unsigned c = std::thread::hardware_concurrency();
        return size_t(c ? c : 1);
    }();
    return n;
}

// The shard of the calling thread: the CPU it runs on (vDSO getcpu, no system call). A thread
// may migrate right after; that only costs sharing, never correctness, because whoever adds to a
// shard subtracts from the same one (see ShardedCounter::add's return value).
inline size_t current_shard() {
    int cpu = sched_getcpu();
    return cpu < 0 ? 0 : size_t(cpu) % shard_count();
}

class ShardedCounter {
  public:
    ShardedCounter() : shards_(new Shard[shard_count()]) {}

    // Adds `delta` to the caller's shard and returns the shard used, for a later matching
    // subtract on the same shard.
    size_t add(int64_t delta, std::memory_order order = std::memory_order_relaxed) {
        const size_t s = current_shard();
        shards_[s].value.fetch_add(delta, order);
        return s;
    }
    void add_to(size_t shard, int64_t delta, std::memory_order order = std::memory_order_relaxed) {
        shards_[shard].value.fetch_add(delta, order);
    }
    // The sum over all shards. Exact only when no one adds concurrently; a shard whose adds and
    // subtracts pair up never goes negative, so a sum of 0 with seq_cst loads means no holder
    // that incremented before the caller's last seq_cst store is still counted.
    int64_t sum(std::memory_order order = std::memory_order_relaxed) const {
        int64_t total = 0;
        for (size_t i = 0; i < shard_count(); ++i)
            total += shards_[i].value.load(order);
        return total;
    }

  private:
    struct alignas(64) Shard {
        std::atomic<int64_t> value{0};
    };
    std::unique_ptr<Shard[]> shards_;
};

}  // namespace daxsmbd::dax
