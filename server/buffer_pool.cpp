#include "server/buffer_pool.h"

#include <cstdlib>
#include <new>

namespace daxsmbd::server {

BufferPool& BufferPool::global() {
    static BufferPool pool;
    return pool;
}

PoolBuffer BufferPool::acquire(size_t size) {
    for (size_t c = 0; c < std::size(kClasses); ++c) {
        if (size > kClasses[c]) continue;
        {
            std::lock_guard lk(mu_);
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
    for (size_t c = 0; c < std::size(kClasses); ++c) {
        if (capacity != kClasses[c]) continue;
        std::lock_guard lk(mu_);
        if (free_[c].size() < kMaxCachedPerClass[c]) {
            free_[c].push_back(data);
            return;
        }
        break;
    }
    std::free(data);
}

BufferPool::~BufferPool() {
    for (auto& v : free_)
        for (auto* p : v)
            std::free(p);
}

}  // namespace daxsmbd::server
