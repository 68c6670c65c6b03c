#include "dax/flush.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace daxsmbd::dax {

namespace {

constexpr uintptr_t kCacheLine = 64;

// The instructions are compiled for their own target only, so that the binary still runs on CPUs
// without them; the CPUID check in resolve_flush_kind() keeps them from being called there.
__attribute__((target("clwb"))) void flush_clwb(const void* addr, size_t len) {
    uintptr_t p = uintptr_t(addr) & ~(kCacheLine - 1);
    const uintptr_t end = uintptr_t(addr) + len;
    for (; p < end; p += kCacheLine)
        _mm_clwb(reinterpret_cast<void*>(p));
}

__attribute__((target("clflushopt"))) void flush_clflushopt(const void* addr, size_t len) {
    uintptr_t p = uintptr_t(addr) & ~(kCacheLine - 1);
    const uintptr_t end = uintptr_t(addr) + len;
    for (; p < end; p += kCacheLine)
        _mm_clflushopt(reinterpret_cast<void*>(p));
}

void flush_clflush(const void* addr, size_t len) {
    uintptr_t p = uintptr_t(addr) & ~(kCacheLine - 1);
    const uintptr_t end = uintptr_t(addr) + len;
    for (; p < end; p += kCacheLine)
        _mm_clflush(reinterpret_cast<const void*>(p));
}

// Non-temporal copy: the aligned middle with MOVNTDQ (16 bytes), the unaligned head and tail with
// ordinary stores that are then written back with CLFLUSH, which every x86-64 CPU has.
void copy_nt(void* dst, const void* src, size_t len) {
    auto* d = static_cast<std::byte*>(dst);
    const auto* s = static_cast<const std::byte*>(src);
    const size_t head = std::min(len, size_t((16 - (uintptr_t(d) & 15)) & 15));
    if (head) {
        std::memcpy(d, s, head);
        flush_clflush(d, head);
        d += head;
        s += head;
        len -= head;
    }
    for (; len >= 16; len -= 16, d += 16, s += 16) {
        __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
        _mm_stream_si128(reinterpret_cast<__m128i*>(d), v);
    }
    if (len) {
        std::memcpy(d, s, len);
        flush_clflush(d, len);
    }
}

}  // namespace

std::string_view to_string(FlushKind kind) {
    switch (kind) {
        case FlushKind::Auto:
            return "auto";
        case FlushKind::Clwb:
            return "clwb";
        case FlushKind::Clflushopt:
            return "clflushopt";
        case FlushKind::Clflush:
            return "clflush";
        case FlushKind::NtStore:
            return "ntstore";
    }
    return "?";
}

std::optional<FlushKind> parse_flush_kind(std::string_view text) {
    for (FlushKind k : {FlushKind::Auto, FlushKind::Clwb, FlushKind::Clflushopt, FlushKind::Clflush,
                        FlushKind::NtStore})
        if (text == to_string(k)) return k;
    return std::nullopt;
}

CpuFlushSupport detect_cpu_flush_support() {
    CpuFlushSupport s;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        s.clflush = d & (1u << 19);  // CPUID.01H:EDX.CLFSH
        s.sse2 = d & (1u << 26);
    }
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        s.clflushopt = b & (1u << 23);  // CPUID.(EAX=07H,ECX=0):EBX.CLFLUSHOPT
        s.clwb = b & (1u << 24);        // CPUID.(EAX=07H,ECX=0):EBX.CLWB
    }
    return s;
}

std::optional<FlushKind> resolve_flush_kind(FlushKind requested, const CpuFlushSupport& cpu) {
    switch (requested) {
        case FlushKind::Auto:
            if (cpu.clwb) return FlushKind::Clwb;
            if (cpu.clflushopt) return FlushKind::Clflushopt;
            if (cpu.clflush) return FlushKind::Clflush;
            return std::nullopt;
        case FlushKind::Clwb:
            if (cpu.clwb) return requested;
            return std::nullopt;
        case FlushKind::Clflushopt:
            if (cpu.clflushopt) return requested;
            return std::nullopt;
        case FlushKind::Clflush:
            if (cpu.clflush) return requested;
            return std::nullopt;
        case FlushKind::NtStore:
            // The unaligned edges of a non-temporal copy are flushed with CLFLUSH.
            if (cpu.sse2 && cpu.clflush) return requested;
            return std::nullopt;
    }
    return std::nullopt;
}

Flusher::Flusher(FlushKind resolved)
    : kind_(resolved == FlushKind::Auto ? FlushKind::Clflush : resolved) {}

void Flusher::copy_to_pmem(void* dst, const void* src, size_t len) const {
    if (len == 0) return;  // src may be null for an empty buffer; memcpy forbids that
    if (kind_ == FlushKind::NtStore)
        copy_nt(dst, src, len);
    else
        std::memcpy(dst, src, len);
}

void Flusher::flush(const void* addr, size_t len) const {
    if (len == 0) return;
    switch (kind_) {
        case FlushKind::Clwb:
            flush_clwb(addr, len);
            break;
        case FlushKind::Clflushopt:
            flush_clflushopt(addr, len);
            break;
        // Data written by copy_to_pmem with non-temporal stores is not in the cache; a range
        // written some other way (or an explicit flush of a range) still needs the write-back.
        case FlushKind::NtStore:
            break;
        case FlushKind::Clflush:
        case FlushKind::Auto:
            flush_clflush(addr, len);
            break;
    }
}

void Flusher::drain() const {
    // SFENCE orders the CLWB/CLFLUSHOPT write-backs and the non-temporal stores before anything
    // after it (CLFLUSH is ordered by itself, the fence is harmless there).
    _mm_sfence();
}

}  // namespace daxsmbd::dax
