#include "mmap_interposer.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DAXSMBD_TEST_NO_INTERPOSER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define DAXSMBD_TEST_NO_INTERPOSER 1
#endif

namespace daxsmbd::dax::testing {
namespace {

std::atomic<bool> g_active{false};
std::atomic<unsigned> g_failed_fixed{0};
std::atomic<unsigned> g_failed_noreplace{0};
std::atomic<bool> g_inject{false};
std::atomic<bool> g_fill{false};
std::atomic<unsigned char> g_canary{0};
std::atomic<void*> g_hole{nullptr};
std::atomic<size_t> g_hole_len{0};

}  // namespace

bool mmap_interposer_active() {
    return g_active.load();
}
unsigned failed_fixed_file_mmaps() {
    return g_failed_fixed.load();
}
void reset_failed_fixed_file_mmaps() {
    g_failed_fixed.store(0);
}
unsigned failed_noreplace_mmaps() {
    return g_failed_noreplace.load();
}
void reset_failed_noreplace_mmaps() {
    g_failed_noreplace.store(0);
}
void inject_fixed_file_mmap_failure(bool fill_hole, unsigned char canary) {
    g_hole.store(nullptr);
    g_hole_len.store(0);
    g_fill.store(fill_hole);
    g_canary.store(canary);
    g_inject.store(true);
}
void* injected_hole() {
    return g_hole.load();
}
size_t injected_hole_length() {
    return g_hole_len.load();
}

#ifndef DAXSMBD_TEST_NO_INTERPOSER
namespace {
void* raw_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    return reinterpret_cast<void*>(::syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}
}  // namespace

void* interposed_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    g_active.store(true, std::memory_order_relaxed);
    const bool fixed_file = (flags & MAP_FIXED) && fd >= 0;
    if (fixed_file && g_inject.exchange(false)) {
        // What mmap_region() does when the file system's mmap hook fails: the old mapping of
        // the range is gone already.
        ::munmap(addr, len);
        if (g_fill.load()) {
            void* foreign = raw_mmap(addr, len, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (foreign == addr) {
                *static_cast<unsigned char*>(foreign) = g_canary.load();
                g_hole_len.store(len);
                g_hole.store(foreign);
            }
        }
        g_failed_fixed.fetch_add(1);
        errno = ENOMEM;
        return MAP_FAILED;
    }
    void* p = raw_mmap(addr, len, prot, flags, fd, off);
    if (p == MAP_FAILED && fixed_file) g_failed_fixed.fetch_add(1);
    if (p == MAP_FAILED && fd < 0 && (flags & MAP_FIXED_NOREPLACE)) g_failed_noreplace.fetch_add(1);
    return p;
}
#endif

}  // namespace daxsmbd::dax::testing

#ifndef DAXSMBD_TEST_NO_INTERPOSER
// The dynamic symbols: calls from libpmem2.so and from dax/ bind here before libc's.
extern "C" void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    return daxsmbd::dax::testing::interposed_mmap(addr, len, prot, flags, fd, off);
}
extern "C" void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    return daxsmbd::dax::testing::interposed_mmap(addr, len, prot, flags, fd, off);
}
#endif
