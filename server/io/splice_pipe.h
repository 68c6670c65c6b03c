// Pipes that carry READ data from the page cache to a socket without a copy through user space
// (the splice path of the block data path, Samba's "use sendfile"): the file's pages are spliced
// into a pipe (the pipe then holds references to the page-cache pages, not copies), and the TCP
// transport splices the pipe into the socket, whose skbs reference the same pages. The only copy
// left is the receiver's.
//
// Pipes come from a small pool per event loop (one per io::Engine), not one per connection: an
// idle connection holds no pipe, a READ holds one from the splice into it until the transport
// sent its last byte. The pool keeps at most kMaxIdle idle pipes and lends at most kMaxInUse at a
// time (each pipe is two descriptors); past that, a READ takes the copy path. Every pipe is
// resized to kCapacity with F_SETPIPE_SZ (the default /proc/sys/fs/pipe-max-size is 1 MiB, and an
// unprivileged user's pipes count against pipe-user-pages-soft); a pipe the kernel will not
// resize is closed and pipe creation pauses for a while, so READs simply take the copy path.
//
// A pipe comes back to the pool only empty. One that still holds data (a send failed midway,
// a response that was dropped) is closed instead: its stale bytes can never leak into another
// response.
//
// Threading: a pool and its pipes belong to one event loop; the mutex only makes the odd
// destruction elsewhere (shutdown) safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "server/buffer_pool.h"

namespace daxsmbd::server::io {

class PipePool;

// One pipe lent by a PipePool, with the number of file bytes it holds. Move-only; goes back to
// its pool (or is closed, see above) on destruction or reset().
class SplicePipe {
  public:
    SplicePipe() = default;
    SplicePipe(SplicePipe&& o) noexcept { *this = std::move(o); }
    SplicePipe& operator=(SplicePipe&& o) noexcept;
    SplicePipe(const SplicePipe&) = delete;
    SplicePipe& operator=(const SplicePipe&) = delete;
    ~SplicePipe() { reset(); }

    explicit operator bool() const { return read_fd_ >= 0; }
    int read_fd() const { return read_fd_; }
    int write_fd() const { return write_fd_; }
    size_t capacity() const { return capacity_; }  // bytes of whole pages the pipe can hold
    size_t size() const { return bytes_; }         // bytes in the pipe now
    // Bookkeeping of whoever moved data in (splice from the file) or out (to the socket).
    void added(size_t n) { bytes_ += n; }
    void removed(size_t n) { bytes_ -= n; }
    // Reads everything the pipe holds into `out` (capacity at least size(); its size is set to
    // what was read): for a transport that cannot splice, or a response that turned out to need
    // the bytes. False on a read error or a buffer too small.
    bool copy_out(PoolBuffer& out);
    // Back to the pool (closed if it still holds data).
    void reset();

  private:
    friend class PipePool;
    std::shared_ptr<PipePool> pool_;
    int read_fd_ = -1;
    int write_fd_ = -1;
    size_t capacity_ = 0;
    size_t bytes_ = 0;
};

class PipePool : public std::enable_shared_from_this<PipePool> {
  public:
    static constexpr size_t kCapacity = size_t(1) << 20;
    static constexpr size_t kMaxIdle = 4;
    static constexpr size_t kMaxInUse = 16;
    // After the kernel refused a pipe or its size, no new pipe is tried for this long.
    static constexpr std::chrono::seconds kRetryAfter{10};

    static std::shared_ptr<PipePool> make(const char* name = "io");
    ~PipePool();

    // A pipe that can hold `len` bytes of a file starting at `offset` (a page-cache page is one
    // pipe slot, so a read that is not page-aligned needs a slot more), or an empty handle when
    // none can be had now (too large, pool exhausted, the kernel refused): take the copy path.
    SplicePipe acquire(uint64_t offset, size_t len);
    // Slots (in bytes) that `len` bytes at `offset` occupy in a pipe.
    static size_t pipe_bytes_for(uint64_t offset, size_t len);

    size_t idle() const;
    size_t in_use() const;

  private:
    explicit PipePool(const char* name) : name_(name) {}
    friend class SplicePipe;
    struct Idle {
        int read_fd;
        int write_fd;
        size_t capacity;
    };
    void give_back(SplicePipe& p);

    const char* name_;
    mutable std::mutex mu_;
    std::vector<Idle> idle_;
    size_t in_use_ = 0;
    std::chrono::steady_clock::time_point refused_until_{};
};

}  // namespace daxsmbd::server::io
