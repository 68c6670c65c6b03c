// Page-aligned pooled buffers for receive frames and READ data. A READ response is sent as
// [header+body][PoolBuffer] by gather I/O, so file data is never copied into a response vector.
// Buffers are recycled per size class; the block path (io_uring fixed buffers) and SMB Direct
// (memory registration) register the same slabs.
#pragma once

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
    static constexpr size_t kMaxCachedPerClass[] = {256, 32, 8};

    static BufferPool& global();
    // A buffer of at least `size` bytes (page aligned); larger than the biggest class -> a
    // one-off allocation freed on release.
    PoolBuffer acquire(size_t size);
    void release(std::byte* data, size_t capacity);
    ~BufferPool();

  private:
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
