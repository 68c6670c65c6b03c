#include "dax/media_guard.h"

#include <setjmp.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace daxsmbd::dax {

namespace {

struct RecoveryPoint {
    sigjmp_buf env;
    volatile sig_atomic_t armed = 0;
    volatile uintptr_t lo = 0;
    volatile uintptr_t hi = 0;
};

// initial-exec TLS: safe to touch from a signal handler (no lazy allocation).
thread_local RecoveryPoint tl_point;

struct sigaction g_previous;
std::atomic<unsigned long> g_recovered{0};
std::once_flag g_install_once;

void on_sigbus(int sig, siginfo_t* info, void* uctx) {
    RecoveryPoint& rp = tl_point;
    const auto addr = uintptr_t(info->si_addr);
    if (rp.armed && addr >= rp.lo && addr < rp.hi) {
        rp.armed = 0;
        g_recovered.fetch_add(1, std::memory_order_relaxed);
        siglongjmp(rp.env, 1);
    }
    // Not ours: behave as if we were not here.
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) {
            g_previous.sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
        return;
    }
    // Default action: returning re-executes the faulting access, which now kills the process.
    signal(sig, SIG_DFL);
}

}  // namespace

void install_media_guard() {
    std::call_once(g_install_once, [] {
        struct sigaction sa {};
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, &g_previous);
    });
}

// noinline + the volatile fields: nothing the compiler keeps in registers across sigsetjmp
// matters after the jump (we only return false).
__attribute__((noinline)) bool guarded_copy(void* dst, const void* src, size_t len,
                                            const void* mapped, size_t mapped_len, CopyFn copy,
                                            void* copy_ctx) {
    if (sigsetjmp(tl_point.env, 0) != 0) return false;
    RecoveryPoint& rp = tl_point;
    rp.lo = uintptr_t(mapped);
    rp.hi = uintptr_t(mapped) + mapped_len;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    rp.armed = 1;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (copy)
        copy(copy_ctx, dst, src, len);
    else
        std::memcpy(dst, src, len);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    rp.armed = 0;
    return true;
}

unsigned long recovered_sigbus_count() {
    return g_recovered.load(std::memory_order_relaxed);
}

}  // namespace daxsmbd::dax
