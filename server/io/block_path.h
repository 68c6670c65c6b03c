// The block data path (architecture.md "Data paths"): file data through the loop's io_uring
// Engine, buffered by default, O_DIRECT for aligned requests on shares with "direct io = yes".
//
// Direct I/O: the open keeps its ordinary descriptor (every metadata call and every unaligned
// request use it) and gets a second descriptor on the same file opened with O_DIRECT (reopened
// through /proc/self/fd, so it is the same inode even if the name changed meanwhile). Alignment
// comes from statx(STATX_DIOALIGN) of the file: a request goes direct when its file offset is a
// multiple of the offset alignment and its memory of the memory alignment.
//   - READ: the length is rounded up to the alignment inside the pool buffer (whose capacity is
//     page-sized) and the result clipped to what was asked, so any read at an aligned offset
//     goes direct; a read that ends short (end of file) continues, if at all, buffered.
//   - WRITE: the aligned prefix of the length goes direct, the unaligned tail through the page
//     cache. Data whose memory is misaligned (a request frame that is not) is first copied into
//     an aligned pool buffer. Offsets that are not aligned go through the page cache.
//   Linux keeps both views coherent: a direct read writes back dirty cached pages of its range
//   first, a direct write invalidates them.
//   When the file system gives no direct I/O (statx without DIOALIGN, or the O_DIRECT reopen
//   fails) the open stays buffered, with one log line per device.
// Polled completion ("io poll = yes", with direct io, on a device with poll queues): the O_DIRECT
// requests go to the engine's IOPOLL ring; a device that refuses (EOPNOTSUPP) is logged once and
// the open goes on interrupt-driven. "io sqpoll = yes": the open's requests use the SQPOLL ring.
// Write-through: the last write SQE of the request is linked to an fdatasync
// (IOSQE_IO_LINK + IORING_FSYNC_DATASYNC), so the reply waits for both completions; a request
// that needed several SQEs (short writes, direct prefix + buffered tail) syncs after the last.
#pragma once

#include <atomic>
#include <memory>

#include "server/io/data_path.h"
#include "server/io/uring_engine.h"
#include "server/vfs/unique_fd.h"

namespace daxsmbd::server::io {

struct BlockOptions {
    bool direct_io = false;
    bool io_poll = false;  // only with direct_io, and only if the device has poll queues
    bool io_sqpoll = false;
    // "aio write size" (Samba's meaning): buffered writes larger than this go through
    // io_uring; smaller ones are written on the loop (Engine::write_small_buffered). 0: all
    // are written on the loop; 1: none.
    size_t aio_write_size = kDefaultAioWriteSize;
    static constexpr size_t kDefaultAioWriteSize = 64 * 1024;
    // "use sendfile" (Samba's meaning): READs of at least kSpliceFrom bytes on a buffered open
    // may go file -> pipe -> socket without a copy through user space (splice_pipe.h).
    bool splice_reads = false;
    // Below this a copy costs less than the splice's io-wq hand-off.
    static constexpr size_t kSpliceFrom = 64 * 1024;
};

class BlockDataPath final : public DataPath {
  public:
    // Blocking (statx, reopen): call on the blocking pool. `fd` stays owned by the caller (the
    // Open) and must outlive the path.
    static std::shared_ptr<BlockDataPath> open(int fd, const BlockOptions& opts);

    BlockDataPath(int fd, vfs::UniqueFd direct_fd, uint32_t mem_align, uint32_t offset_align,
                  const BlockOptions& opts);

    std::string_view name() const override { return direct_ ? "block+direct" : "block"; }
    asio::awaitable<Result<size_t>> read(Caller c, PoolBuffer& buf, size_t len,
                                         uint64_t offset) override;
    bool splices(size_t len) const override;
    asio::awaitable<Result<SplicePipe>> read_to_pipe(Caller c, size_t len,
                                                     uint64_t offset) override;
    asio::awaitable<Result<size_t>> write(Caller c, protocol::Bytes data, uint64_t offset,
                                          WriteMode mode) override;
    asio::awaitable<Status> flush(Caller c) override;
    asio::awaitable<Result<uint64_t>> file_size(Caller c) override;

    bool direct() const { return direct_.valid(); }
    bool polled() const { return polled_.load(std::memory_order_relaxed); }
    // Requests (SQEs) by route, for tests and statistics.
    struct Counters {
        std::atomic<uint64_t> direct{0};         // O_DIRECT reads and writes
        std::atomic<uint64_t> buffered{0};       // through the page cache
        std::atomic<uint64_t> bounced{0};        // direct writes copied to an aligned buffer first
        std::atomic<uint64_t> inline_writes{0};  // buffered writes written on the loop
        std::atomic<uint64_t> spliced{0};        // READs served through a pipe (no copy)
    };
    const Counters& counters() const { return counters_; }
    uint32_t offset_alignment() const { return offset_align_; }
    uint32_t memory_alignment() const { return mem_align_; }

  private:
    asio::awaitable<int> direct_read(Engine& io, const vfs::UnixIdentity* as, std::byte* dst,
                                     size_t len, uint64_t offset);
    asio::awaitable<int> direct_write(Engine& io, const vfs::UnixIdentity* as, const std::byte* src,
                                      size_t len, uint64_t offset);
    bool offset_aligned(uint64_t v) const { return offset_align_ && v % offset_align_ == 0; }
    bool memory_aligned(const void* p) const {
        return mem_align_ && reinterpret_cast<uintptr_t>(p) % mem_align_ == 0;
    }

    int fd_;
    vfs::UniqueFd direct_;
    uint32_t mem_align_ = 0;
    uint32_t offset_align_ = 0;
    RingKind ring_ = RingKind::Normal;  // buffered I/O, fsync, statx
    size_t aio_write_size_ = BlockOptions::kDefaultAioWriteSize;
    bool splice_reads_ = false;
    std::atomic<bool> polled_{false};  // O_DIRECT I/O on the IOPOLL ring
    Counters counters_;
};

// Whether the block device under `path` has poll queues (/sys/dev/block/M:m/queue/io_poll).
// False with a reason for file systems not on a block device (tmpfs) or without poll queues.
bool device_has_poll_queues(const std::string& path, std::string* why);

}  // namespace daxsmbd::server::io
