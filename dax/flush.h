// How written data leaves the CPU caches for persistent memory: the flush instruction (CLWB,
// CLFLUSHOPT, CLFLUSH) followed by SFENCE, or non-temporal stores that bypass the caches and need
// only the SFENCE ("dax flush" share key). With a MAP_SYNC mapping of a DAX file this is all that
// makes a store durable: no system call, the file system's metadata is already synchronous.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace daxsmbd::dax {

enum class FlushKind { Auto, Clwb, Clflushopt, Clflush, NtStore };

std::string_view to_string(FlushKind kind);
std::optional<FlushKind> parse_flush_kind(std::string_view text);  // "auto", "clwb", ...

// What the CPU offers (CPUID leaf 1 EDX.CLFSH, leaf 7 EBX.CLFLUSHOPT/CLWB).
struct CpuFlushSupport {
    bool clflush = false;
    bool clflushopt = false;
    bool clwb = false;
    bool sse2 = false;  // MOVNTI/MOVNTDQ and SFENCE
};
CpuFlushSupport detect_cpu_flush_support();

// Resolves a requested kind against what the CPU has: Auto picks CLWB, else CLFLUSHOPT, else
// CLFLUSH (CLWB keeps the line cached, so a READ right after a WRITE still hits the cache). An
// explicit kind the CPU lacks is refused (nullopt), so the share does not start with a setting
// that would silently be something else.
std::optional<FlushKind> resolve_flush_kind(FlushKind requested, const CpuFlushSupport& cpu);

// One resolved strategy. Copies into persistent memory go through copy_to_pmem() (non-temporal
// for NtStore, plain memcpy otherwise); flush() writes the cache lines of a range back; drain()
// is the fence after which every flushed line is durable.
class Flusher {
  public:
    explicit Flusher(FlushKind resolved);  // Auto is not a resolved kind: treated as Clflush

    FlushKind kind() const { return kind_; }

    void copy_to_pmem(void* dst, const void* src, size_t len) const;
    void flush(const void* addr, size_t len) const;
    void drain() const;
    void persist(const void* addr, size_t len) const {
        flush(addr, len);
        drain();
    }

  private:
    FlushKind kind_;
};

}  // namespace daxsmbd::dax
