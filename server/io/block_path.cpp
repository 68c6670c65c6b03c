#include "server/io/block_path.h"

#include <fcntl.h>
#include <linux/stat.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <string>

#include "server/errno_status.h"
#include "server/log.h"

namespace daxsmbd::server::io {

namespace {

// One log line per device and reason, not one per open.
void log_once_per_device(dev_t dev, const std::string& what) {
    static std::mutex mu;
    static std::set<std::pair<dev_t, std::string>> seen;
    {
        std::lock_guard lk(mu);
        if (!seen.emplace(dev, what).second) return;
    }
    log_info("block path, device ", major(dev), ":", minor(dev), ": ", what);
}

uint64_t round_down(uint64_t v, uint64_t a) {
    return v / a * a;
}
uint64_t round_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

// Transient results of a single SQE that are retried as they are (a bounded number of times).
bool transient(int res) {
    return res == -EINTR || res == -EAGAIN;
}
constexpr int kMaxRetries = 16;

}  // namespace

std::shared_ptr<BlockDataPath> BlockDataPath::open(int fd, const BlockOptions& opts) {
    vfs::UniqueFd direct;
    uint32_t mem_align = 0, off_align = 0;
    struct statx stx {};
    if (opts.direct_io && ::statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_DIOALIGN, &stx) == 0 &&
        S_ISREG(stx.stx_mode)) {
        const dev_t dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        if (!(stx.stx_mask & STATX_DIOALIGN) || stx.stx_dio_offset_align == 0) {
            log_once_per_device(dev,
                                "direct io = yes, but the file system offers no direct I/O "
                                "(statx DIOALIGN): files stay buffered");
        } else {
            const int acc = ::fcntl(fd, F_GETFL);
            const std::string proc = "/proc/self/fd/" + std::to_string(fd);
            int dfd = acc < 0 ? -1 : ::open(proc.c_str(), (acc & O_ACCMODE) | O_DIRECT | O_CLOEXEC);
            if (dfd < 0) {
                log_once_per_device(dev, std::string("direct io = yes, but opening with O_DIRECT "
                                                     "failed (") +
                                             std::strerror(errno) + "): files stay buffered");
            } else {
                direct.reset(dfd);
                mem_align = stx.stx_dio_mem_align ? stx.stx_dio_mem_align : 1;
                off_align = stx.stx_dio_offset_align;
            }
        }
    }
    return std::make_shared<BlockDataPath>(fd, std::move(direct), mem_align, off_align, opts);
}

BlockDataPath::BlockDataPath(int fd, vfs::UniqueFd direct_fd, uint32_t mem_align,
                             uint32_t offset_align, const BlockOptions& opts)
    : fd_(fd), direct_(std::move(direct_fd)) {
    if (direct_) {
        mem_align_ = mem_align;
        offset_align_ = offset_align;
    }
    ring_ = opts.io_sqpoll ? RingKind::SqPoll : RingKind::Normal;
    aio_write_size_ = opts.aio_write_size;
    splice_reads_ = opts.splice_reads;
    polled_ = direct_ && opts.io_poll;
}

asio::awaitable<int> BlockDataPath::direct_read(Engine& io, const vfs::UnixIdentity* as,
                                                std::byte* dst, size_t len, uint64_t offset) {
    if (polled_.load(std::memory_order_relaxed) && io.has_ring(RingKind::Polled)) {
        int n = co_await io.read({RingKind::Polled, as}, direct_.get(), dst, len, offset);
        if (n != -EOPNOTSUPP) co_return n;
        // The device (or its driver) has no poll queues after all.
        if (polled_.exchange(false))
            log_info(
                "block path: io poll refused by the device (EOPNOTSUPP): this open "
                "completes by interrupt");
    }
    co_return co_await io.read({ring_, as}, direct_.get(), dst, len, offset);
}

asio::awaitable<int> BlockDataPath::direct_write(Engine& io, const vfs::UnixIdentity* as,
                                                 const std::byte* src, size_t len,
                                                 uint64_t offset) {
    if (polled_.load(std::memory_order_relaxed) && io.has_ring(RingKind::Polled)) {
        int n = co_await io.write({RingKind::Polled, as}, direct_.get(), src, len, offset);
        if (n != -EOPNOTSUPP) co_return n;
        if (polled_.exchange(false))
            log_info(
                "block path: io poll refused by the device (EOPNOTSUPP): this open "
                "completes by interrupt");
    }
    co_return co_await io.write({ring_, as}, direct_.get(), src, len, offset);
}

asio::awaitable<Result<size_t>> BlockDataPath::read(Caller c, PoolBuffer& buf, size_t len,
                                                    uint64_t offset) {
    Engine& io = c.io;
    size_t done = 0;
    int retries = 0;
    while (done < len) {
        const uint64_t off = offset + done;
        std::byte* dst = buf.data() + done;
        const size_t want = len - done;
        int n = -1;
        bool went_direct = false;
        if (direct_ && offset_aligned(off) && memory_aligned(dst)) {
            // Round the length up inside the buffer (the surplus is clipped), or, if the buffer
            // is too small for that, down (the rest continues buffered).
            size_t dlen = round_up(want, offset_align_);
            if (done + dlen > buf.capacity()) dlen = round_down(want, offset_align_);
            if (dlen > 0) {
                n = co_await direct_read(io, c.as, dst, dlen, off);
                went_direct = true;
                ++counters_.direct;
                if (n > 0 && size_t(n) > want) n = int(want);
            }
        }
        if (!went_direct) {
            n = co_await io.read({ring_, c.as}, fd_, dst, want, off);
            ++counters_.buffered;
        }
        if (n < 0) {
            if (transient(n) && ++retries < kMaxRetries) continue;
            co_return Error(errno_to_status(-n));
        }
        if (n == 0) break;  // end of file
        done += size_t(n);
    }
    co_return done;
}

bool BlockDataPath::splices(size_t len) const {
    // An O_DIRECT open keeps its direct reads (the page cache is what it avoids).
    return splice_reads_ && !direct_ && len >= BlockOptions::kSpliceFrom &&
           PipePool::pipe_bytes_for(0, len) <= PipePool::kCapacity;
}

asio::awaitable<Result<SplicePipe>> BlockDataPath::read_to_pipe(Caller c, size_t len,
                                                                uint64_t offset) {
    if (!splices(len)) co_return Error(NtStatus::NotSupported);
    SplicePipe pipe = c.io.pipes().acquire(offset, len);
    if (!pipe) co_return Error(NtStatus::NotSupported);
    int retries = 0;
    while (pipe.size() < len) {
        const int n = co_await c.io.splice_to_pipe({ring_, c.as}, fd_, offset + pipe.size(),
                                                   pipe.write_fd(), len - pipe.size());
        if (n == -EINTR && ++retries < kMaxRetries) continue;
        // EAGAIN: the pipe filled up (cannot happen with the capacity acquire() checked);
        // EINVAL/EBADF: a file or descriptor that does not splice. The copy path serves the
        // read; the pipe with its partial data is closed, not reused.
        if (n == -EAGAIN || n == -EINVAL || n == -EBADF) co_return Error(NtStatus::NotSupported);
        if (n < 0) co_return Error(errno_to_status(-n));
        if (n == 0) break;  // end of file
        pipe.added(size_t(n));
    }
    ++counters_.spliced;
    if (pipe.size() > 0) c.io.note_spliced_read(pipe.size());
    co_return pipe;
}

asio::awaitable<Result<size_t>> BlockDataPath::write(Caller c, protocol::Bytes data,
                                                     uint64_t offset, WriteMode mode) {
    Engine& io = c.io;
    const bool write_through = mode.write_through;
    size_t done = 0;
    int retries = 0;
    bool synced = false;
    PoolBuffer bounce;
    while (done < data.size()) {
        const uint64_t off = offset + done;
        const std::byte* src = data.data() + done;
        const size_t want = data.size() - done;
        int n = -1;
        size_t piece = want;
        if (direct_ && offset_aligned(off) && want >= offset_align_) {
            // The aligned prefix goes direct; misaligned memory through an aligned copy.
            piece = round_down(want, offset_align_);
            const std::byte* from = src;
            if (!memory_aligned(src)) {
                piece = std::min<size_t>(
                    piece, round_down(BufferPool::kClasses[std::size(BufferPool::kClasses) - 1],
                                      offset_align_));
                if (!bounce) bounce = io.buffers().acquire(piece);
                piece = std::min(piece, round_down(bounce.capacity(), offset_align_));
                std::memcpy(bounce.data(), src, piece);
                from = bounce.data();
                ++counters_.bounced;
            }
            ++counters_.direct;
            if (write_through && piece == want && !polled_.load(std::memory_order_relaxed)) {
                auto r =
                    co_await io.write_then_datasync({ring_, c.as}, direct_.get(), from, piece, off);
                n = r.write;
                synced = r.write >= 0 && size_t(r.write) == piece && r.sync == 0;
                if (r.write >= 0 && size_t(r.write) == piece && r.sync < 0 && r.sync != -ECANCELED)
                    co_return Error(errno_to_status(-r.sync));
            } else {
                n = co_await direct_write(io, c.as, from, piece, off);
            }
        } else if (write_through) {
            ++counters_.buffered;
            auto r = co_await io.write_then_datasync({ring_, c.as}, fd_, src, want, off);
            n = r.write;
            synced = r.write >= 0 && size_t(r.write) == want && r.sync == 0;
            if (r.write >= 0 && size_t(r.write) == want && r.sync < 0 && r.sync != -ECANCELED)
                co_return Error(errno_to_status(-r.sync));
        } else {
            ++counters_.buffered;
            if (aio_write_size_ == 0 || want <= aio_write_size_) {
                ++counters_.inline_writes;
                n = co_await io.write_small_buffered({ring_, c.as}, fd_, src, want, off);
            } else {
                n = co_await io.write({ring_, c.as}, fd_, src, want, off);
            }
        }
        if (n < 0) {
            if (transient(n) && ++retries < kMaxRetries) continue;
            co_return Error(errno_to_status(-n));
        }
        // A regular file accepts no bytes at all only when it cannot grow (a size limit the
        // kernel reports as 0 rather than EFBIG is still "the disk is full" to the client).
        if (n == 0) co_return Error(errno_to_status(ENOSPC));
        done += size_t(n);
        if (size_t(n) < want) synced = false;  // more pieces follow; they sync at the end
    }
    if (write_through && !synced) {
        // Several pieces (or a cancelled link): one fdatasync after the last of them.
        int r = co_await io.fsync({ring_, c.as}, fd_, true);
        if (r < 0) co_return Error(errno_to_status(-r));
    }
    co_return done;
}

asio::awaitable<Status> BlockDataPath::flush(Caller c) {
    int r = co_await c.io.fsync({ring_, c.as}, fd_, false);
    if (r < 0) co_return Error(errno_to_status(-r));
    co_return Status{};
}

asio::awaitable<Result<uint64_t>> BlockDataPath::file_size(Caller) {
    // On the loop, not through the ring: IORING_OP_STATX always runs on an io-wq worker (a
    // thread hand-off each way for every WRITE that needs the end of file), while statx of an
    // open descriptor on a local file system reads the in-memory inode and never waits.
    struct statx stx {};
    if (::statx(fd_, "", AT_EMPTY_PATH, STATX_SIZE, &stx) != 0)
        co_return Error(errno_to_status(errno));
    co_return uint64_t(stx.stx_size);
}

bool device_has_poll_queues(const std::string& path, std::string* why) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        *why = std::string("stat: ") + std::strerror(errno);
        return false;
    }
    const unsigned maj = major(st.st_dev), min = minor(st.st_dev);
    if (maj == 0) {
        *why = "the file system is not on a block device";
        return false;
    }
    const std::string dev = "/sys/dev/block/" + std::to_string(maj) + ":" + std::to_string(min);
    // A partition has no queue of its own: its parent disk's.
    for (const std::string& q : {dev + "/queue/io_poll", dev + "/../queue/io_poll"}) {
        std::ifstream f(q);
        int v = 0;
        if (f >> v) {
            if (v == 1) return true;
            *why = "device " + std::to_string(maj) + ":" + std::to_string(min) +
                   " has no poll queues (queue/io_poll = 0; NVMe: nvme.poll_queues=N)";
            return false;
        }
    }
    *why = "device " + std::to_string(maj) + ":" + std::to_string(min) +
           " has no queue/io_poll (not a blk-mq device)";
    return false;
}

}  // namespace daxsmbd::server::io
