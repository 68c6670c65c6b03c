// The DAX data path (architecture.md "Data paths"): READ and WRITE copy between the request's
// buffer and the file's DAX mapping (dax/mapping.h) on the event loop, with no system call to
// wait for; everything the mapping cannot serve goes to the open's block path (block_path.h).
//
// The FileMap is shared by every open of the file (dax::MapRegistry, CREATE); each open has its
// own DaxDataPath around it, with its own block path for the fallbacks:
//   - READ: the mapping serves whatever lies in whole mapped pages; a range reaching into the
//     partial last page or beyond the chunk table, or a mapping that cannot be made, falls back.
//   - WRITE: writes to the end of file (FILE_WRITE_TO_END_OF_FILE), writes of append-only opens
//     and writes starting past the mapped size (they leave a gap, which the handler's DISK_FULL
//     rule looks at) use the block path without trying the mapping; the rest is copied into the
//     mapping (growing the file with fallocate), falling back like READ.
//   - A SIGBUS inside the file's data (a media error) fails the request with
//     STATUS_UNEXPECTED_IO_ERROR and a log_error line; routine fallbacks are logged at debug
//     level, other fallbacks at info level. dax::Stats counts what the mapping served.
//   - Durability: write-through writes are flushed before they complete (FileMap::write); other
//     writes are made durable by FLUSH (persist, then the block path's fsync for what the
//     fallbacks wrote and for metadata) and by CLOSE (persist).
//   - Prefault: the first READ (WRITE) served from a chunk's new mapping has the page tables of
//     the chunk's first bytes populated for reading (writing) on the blocking pool
//     (FileMap::prefault), so later requests find their pages mapped instead of faulting on the
//     loop. Populating for writing only after a write: it sets the file's mtime, as any write
//     fault does, and opening a file must not.
//   - RDMA placement (Share::rdma_direct, an On-Demand-Paging registration of the mapping):
//     a READ by RDMA lends the pinned mapping itself (Payload Mapped) for the device to send
//     from; a WRITE by RDMA lands in a pinned range of it (landing/landed: allocated first,
//     flushed like a copy after). What the mapping cannot pin whole goes through pool buffers.
//     A truncation of this server waits for placements in flight (truncating).
//   - Timestamps: a write into a page already mapped writable (the map may be warm from an
//     earlier open) changes no timestamp, so the first WRITE of each open and its CLOSE set the
//     mtime as write(2) would.
#pragma once

#include <atomic>
#include <memory>

#include "dax/mapping.h"
#include "server/io/data_path.h"

namespace daxsmbd::server::io {

class DaxDataPath final : public DataPath {
  public:
    // `block`: the open's block path, for everything the mapping does not serve; `background`:
    // where prefaults run (none: no prefault); `rdma_direct`: an RDMA transport may place READ
    // and WRITE data straight from and into the mapping (Share::rdma_direct).
    DaxDataPath(std::shared_ptr<dax::FileMap> map, std::shared_ptr<DataPath> block,
                BackgroundRunner background = {}, bool rdma_direct = false);

    // Large READs that nothing needs in user space (not signed, not encrypted, alone) go through
    // the block path's splice: the file system copies them from persistent memory into pipe
    // pages once and the socket takes those pages, where the mapping costs two copies (mapping
    // -> pool buffer -> socket buffer). Measured in the VM (tests/bench/dax_bench.sh, 1 MiB
    // sequential read): 0.85-0.92x of the block path with the copy. Smaller READs stay on the
    // mapping (no io-wq hand-off), and so does a file system that refuses the splice.
    static constexpr size_t kSpliceFrom = 512 * 1024;

    std::string_view name() const override { return "dax"; }
    asio::awaitable<Result<size_t>> read(Caller c, PoolBuffer& buf, size_t len,
                                         uint64_t offset) override;
    bool splices(size_t len) const override { return len >= kSpliceFrom && block_->splices(len); }
    asio::awaitable<Result<SplicePipe>> read_to_pipe(Caller c, size_t len,
                                                     uint64_t offset) override;
    // With Mapped among `kinds` (an RDMA transport that registers the mapping) and placement
    // on: the pinned range of the mapping itself; else as DataPath::lend.
    asio::awaitable<Result<Payload>> lend(Caller c, size_t len, uint64_t offset, PayloadKinds kinds,
                                          BufferPool& pool) override;
    asio::awaitable<Result<size_t>> write(Caller c, protocol::Bytes data, uint64_t offset,
                                          WriteMode mode) override;
    // Writes that write() would copy into the mapping may land there by RDMA instead.
    std::optional<dax::MappedRange> landing(size_t len, uint64_t offset, WriteMode mode) override;
    Result<size_t> landed(Caller c, const dax::MappedRange& range, WriteMode mode) override;
    void truncating() override;
    void truncation_over() override { map_->lift_rdma_fence(); }
    asio::awaitable<Status> flush(Caller c) override;
    asio::awaitable<Result<uint64_t>> file_size(Caller c) override;
    std::optional<uint64_t> known_size() const override { return map_->size(); }
    void on_close(std::string_view path) override;
    void truncated(uint64_t new_size) override;

    const std::shared_ptr<dax::FileMap>& map() const { return map_; }
    const std::shared_ptr<DataPath>& block() const { return block_; }

  private:
    void served_from_map(uint64_t offset, bool write);

    std::shared_ptr<dax::FileMap> map_;
    std::shared_ptr<DataPath> block_;
    BackgroundRunner background_;
    const bool rdma_direct_;
    std::atomic<bool> wrote_{false};  // a WRITE of this open went through the mapping
};

}  // namespace daxsmbd::server::io
