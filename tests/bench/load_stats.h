// Measurement helpers of the load generator (daxsmbd-load): a latency histogram that costs one
// array increment per I/O, size parsing, and the server-side figures read from /proc (CPU ticks,
// resident memory, file descriptors, threads) of one process or a process tree (Samba forks one
// smbd per connection).
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace daxsmbd::bench {

// Log-linear histogram of nanosecond values: values below 2^kSubBits are exact, larger ones fall
// in buckets 1/2^kSubBits of their power of two wide (relative error < 0.4 %). Fixed size, so
// recording allocates nothing.
class LatencyHistogram {
  public:
    static constexpr int kSubBits = 8;
    static constexpr int kSub = 1 << kSubBits;
    static constexpr int kBuckets = (64 - kSubBits + 1) * kSub;

    void add(uint64_t ns) {
        ++counts_[bucket_of(ns)];
        ++count_;
        sum_ += ns;
        if (ns > max_) max_ = ns;
        if (ns < min_) min_ = ns;
    }
    void merge(const LatencyHistogram& o);
    void clear();

    uint64_t count() const { return count_; }
    double mean_ns() const { return count_ ? double(sum_) / double(count_) : 0.0; }
    uint64_t max_ns() const { return count_ ? max_ : 0; }
    uint64_t min_ns() const { return count_ ? min_ : 0; }
    // The value below which a fraction q (0..1) of the samples lie (bucket midpoint); 0 when
    // empty.
    double percentile_ns(double q) const;

    static int bucket_of(uint64_t ns);
    static double bucket_mid(int idx);

  private:
    std::array<uint64_t, kBuckets> counts_{};
    uint64_t count_ = 0;
    uint64_t sum_ = 0;
    uint64_t max_ = 0;
    uint64_t min_ = UINT64_MAX;
};

// "4096", "4k", "1m", "1.5g" (binary units). nullopt on anything else.
std::optional<uint64_t> parse_size(std::string_view s);

// Fields of /proc/<pid>/stat that matter here. The command name is in parentheses and may itself
// contain spaces and parentheses: the fields start after the last ')'.
struct ProcStat {
    pid_t ppid = 0;
    uint64_t utime = 0;  // clock ticks
    uint64_t stime = 0;
    uint64_t cutime = 0;  // reaped children (Samba's per-connection smbd after disconnect)
    uint64_t cstime = 0;
    uint64_t threads = 0;
};
std::optional<ProcStat> parse_proc_stat(std::string_view line);
std::optional<ProcStat> read_proc_stat(pid_t pid);

// The server processes measured: each root, and with `tree` also every live descendant.
struct ServerSample {
    double cpu_seconds = 0;  // utime+stime+cutime+cstime summed over the processes
    uint64_t rss_kib = 0;    // VmRSS summed (shared pages count once per process, like ps)
    uint64_t pss_kib = 0;    // Pss from smaps_rollup summed (shared pages split between sharers)
    uint64_t fds = 0;        // entries of /proc/<pid>/fd
    uint64_t threads = 0;
    uint64_t processes = 0;
};

class ServerProcs {
  public:
    ServerProcs(std::vector<pid_t> roots, bool tree) : roots_(std::move(roots)), tree_(tree) {}
    bool empty() const { return roots_.empty(); }
    // The process set now (roots that still run, plus their descendants when `tree`).
    std::vector<pid_t> processes() const;
    // CPU only (cheap: one stat file per process).
    double cpu_seconds() const;
    // Everything, including memory and descriptor counts.
    ServerSample sample() const;

  private:
    std::vector<pid_t> roots_;
    bool tree_;
};

// Value in kB of a "Key:   123 kB" line in a /proc status-like text; nullopt when absent.
std::optional<uint64_t> proc_kib_field(std::string_view text, std::string_view key);

}  // namespace daxsmbd::bench
