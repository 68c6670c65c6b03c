#include "server/buffer_pool.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>

namespace daxsmbd::server {

BufferPool::BufferPool() {
    void* p = ::mmap(nullptr, kMaxSlabs * kSlabSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    // Without the arena every buffer is a one-off allocation: slower, never wrong.
    if (p != MAP_FAILED) arena_ = static_cast<std::byte*>(p);
}

BufferPool::~BufferPool() {
    if (arena_) ::munmap(arena_, kMaxSlabs * kSlabSize);
}

int BufferPool::slab_of(const void* p, size_t len) const {
    if (!arena_) return -1;
    const auto a = reinterpret_cast<uintptr_t>(p);
    const auto base = reinterpret_cast<uintptr_t>(arena_);
    if (a < base) return -1;
    const size_t i = (a - base) / kSlabSize;
    if (i >= slab_count()) return -1;
    const uintptr_t end = base + (i + 1) * kSlabSize;
    if (len > end - a) return -1;
    return int(i);
}

PoolBuffer BufferPool::acquire(size_t size) {
    for (size_t c = 0; c < std::size(kClasses); ++c) {
        if (size > kClasses[c]) continue;
        {
            std::lock_guard lk(mu_);
            if (free_[c].empty() && arena_ && slab_count() < kMaxSlabs) {
                // Carve a new slab into buffers of this class.
                std::byte* slab = slab_base(slab_count());
                for (size_t off = 0; off + kClasses[c] <= kSlabSize; off += kClasses[c])
                    free_[c].push_back(slab + off);
                slabs_.fetch_add(1, std::memory_order_release);
            }
            if (!free_[c].empty()) {
                auto* p = free_[c].back();
                free_[c].pop_back();
                return PoolBuffer(p, kClasses[c], this);
            }
        }
        auto* p = static_cast<std::byte*>(std::aligned_alloc(kPageSize, kClasses[c]));
        if (!p) throw std::bad_alloc();
        return PoolBuffer(p, kClasses[c], this);
    }
    size_t cap = (size + kPageSize - 1) / kPageSize * kPageSize;
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kPageSize, cap));
    if (!p) throw std::bad_alloc();
    return PoolBuffer(p, cap, this);
}

void BufferPool::release(std::byte* data, size_t capacity) {
    const auto a = reinterpret_cast<uintptr_t>(data);
    const auto base = reinterpret_cast<uintptr_t>(arena_);
    if (arena_ && a >= base && a < base + kMaxSlabs * kSlabSize) {
        for (size_t c = 0; c < std::size(kClasses); ++c) {
            if (capacity != kClasses[c]) continue;
            std::lock_guard lk(mu_);
            free_[c].push_back(data);
            return;
        }
    }
    std::free(data);
}

}  // namespace daxsmbd::server
