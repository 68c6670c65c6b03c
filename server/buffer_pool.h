// Page-aligned pooled buffers for receive frames and READ data. A READ response is sent as
// [header+body][PoolBuffer] by gather I/O, so file data is never copied into a response vector.
//
// The buffers are carved out of slabs: fixed-size pieces of one address range reserved at first
// use (mapped MAP_NORESERVE, so untouched slabs cost no memory). A slab is handed to one size
// class when that class runs dry and stays in the pool until the pool (a member of the server) is
// destroyed; its buffers are recycled, never freed. Because slab i always sits at arena + i *
// kSlabSize, the slab of any pointer is a subtraction and a division, without a lock: the io_uring
// block path (server/io) registers slab i as fixed buffer i of each ring, once, and passes that
// index for every read into a pool buffer and every write from a received frame; SMB Direct
// registers the same slabs with its protection domain. Requests larger than the biggest class, or
// arriving when all kMaxSlabs slabs are in use, get a one-off allocation that is freed on release
// and is not registered (the block path then uses plain, non-fixed reads and writes).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace daxsmbd::server {

class BufferPool;

class PoolBuffer {
  public:
    PoolBuffer() = default;
    PoolBuffer(std::byte* data, size_t capacity, BufferPool* pool)
        : data_(data), capacity_(capacity), pool_(pool) {}
    PoolBuffer(PoolBuffer&& o) noexcept { swap(o); }
    PoolBuffer& operator=(PoolBuffer&& o) noexcept {
        if (this != &o) {
            reset();
            swap(o);
        }
        return *this;
    }
    PoolBuffer(const PoolBuffer&) = delete;
    PoolBuffer& operator=(const PoolBuffer&) = delete;
    ~PoolBuffer() { reset(); }

    std::byte* data() { return data_; }
    const std::byte* data() const { return data_; }
    size_t capacity() const { return capacity_; }
    size_t size() const { return size_; }
    void set_size(size_t n) { size_ = n; }
    std::span<std::byte> span() { return {data_, size_}; }
    std::span<const std::byte> span() const { return {data_, size_}; }
    explicit operator bool() const { return data_ != nullptr; }
    void reset();

  private:
    void swap(PoolBuffer& o) noexcept {
        std::swap(data_, o.data_);
        std::swap(capacity_, o.capacity_);
        std::swap(size_, o.size_);
        std::swap(pool_, o.pool_);
    }
    std::byte* data_ = nullptr;
    size_t capacity_ = 0;
    size_t size_ = 0;
    BufferPool* pool_ = nullptr;
};

class BufferPool {
  public:
    static constexpr size_t kPageSize = 4096;
    // Size classes: 64 KiB, 1 MiB, 8 MiB + 64 KiB (a full 8 MiB READ/WRITE with its headers).
    static constexpr size_t kClasses[] = {64u << 10, 1u << 20, (8u << 20) + (64u << 10)};
    // A slab holds two buffers of the biggest class (16 of 1 MiB, 258 of 64 KiB).
    static constexpr size_t kSlabSize = 2 * kClasses[2];
    // 64 slabs: about 1 GiB of address space reserved, committed only as buffers are touched.
    static constexpr size_t kMaxSlabs = 64;

    // A buffer of at least `size` bytes (page aligned); larger than the biggest class, or with
    // every slab in use -> a one-off allocation freed on release.
    PoolBuffer acquire(size_t size);
    void release(std::byte* data, size_t capacity);

    // Slabs handed out so far (they never go away): slab i is [slab_base(i), + kSlabSize).
    size_t slab_count() const { return slabs_.load(std::memory_order_acquire); }
    std::byte* slab_base(size_t i) const { return arena_ + i * kSlabSize; }
    // The slab that holds all of [p, p + len), or -1 when the range is not pool slab memory.
    int slab_of(const void* p, size_t len) const;

    BufferPool();
    ~BufferPool();
    BufferPool(const BufferPool&) = delete;
    BufferPool& operator=(const BufferPool&) = delete;

  private:
    std::byte* arena_ = nullptr;  // kMaxSlabs * kSlabSize reserved, or null if mmap failed
    std::atomic<size_t> slabs_{0};
    std::mutex mu_;
    std::vector<std::byte*> free_[std::size(kClasses)];
};

inline void PoolBuffer::reset() {
    if (data_ && pool_) pool_->release(data_, capacity_);
    data_ = nullptr;
    capacity_ = size_ = 0;
    pool_ = nullptr;
}

}  // namespace daxsmbd::server
