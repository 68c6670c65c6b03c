#include "server/io/dax_path.h"

#include <algorithm>
#include <chrono>
#include <span>
#include <utility>

#include "server/log.h"

namespace daxsmbd::server::io {

namespace {

// A request the mapping handed back: by design (debug) or because something failed (info).
void log_fallback(const char* op, std::string_view path, uint64_t offset, const dax::IoResult& d) {
    if (d.routine)
        log_debug("DAX ", op, " of '", path, "' at ", offset, ": block path: ", d.why);
    else
        log_info("DAX ", op, " of '", path, "' at ", offset, ": block path: ", d.why);
}

}  // namespace

DaxDataPath::DaxDataPath(std::shared_ptr<dax::FileMap> map, std::shared_ptr<DataPath> block,
                         BackgroundRunner background, bool rdma_direct)
    : map_(std::move(map)),
      block_(std::move(block)),
      background_(std::move(background)),
      rdma_direct_(rdma_direct) {}

void DaxDataPath::served_from_map(uint64_t offset, bool write) {
    if (write && !wrote_.exchange(true, std::memory_order_relaxed)) map_->touch_mtime();
    // One atomic load on the way; the populating runs once per chunk mapping, off the loop.
    if (background_ && map_->claim_prefault(offset, write))
        background_([map = map_, offset, write] { map->prefault(offset, write); });
}

asio::awaitable<Result<size_t>> DaxDataPath::read(Caller c, PoolBuffer& buf, size_t len,
                                                  uint64_t offset) {
    // A memory copy from the mapping, on the event loop (no system call to wait for).
    dax::IoResult d = map_->read(offset, std::span<std::byte>(buf.data(), len));
    if (d.outcome == dax::IoOutcome::Done) {
        served_from_map(offset, false);
        co_return d.bytes;
    }
    if (d.outcome == dax::IoOutcome::MediaError) {
        log_error("DAX READ of '", c.path, "' at ", offset, ": ", d.why);
        co_return Error(NtStatus::UnexpectedIoError);
    }
    log_fallback("READ", c.path, offset, d);
    co_return co_await block_->read(c, buf, len, offset);
}

asio::awaitable<Result<Payload>> DaxDataPath::lend(Caller c, size_t len, uint64_t offset,
                                                   PayloadKinds kinds, BufferPool& pool) {
    if (rdma_direct_ && kinds.has(PayloadKind::Mapped) && len > 0) {
        // Up to the end of file; a range the mapping cannot pin whole is read into a buffer.
        uint64_t size = map_->size();
        if (offset + len > size) {
            auto now = co_await block_->file_size(c);
            if (now) size = *now;
        }
        if (offset < size) {
            const size_t n = size_t(std::min<uint64_t>(len, size - offset));
            std::string why;
            if (auto r = map_->pin_for_rdma(offset, n, false, false, &why)) {
                served_from_map(offset, false);
                map_->stats().reads.add(1);
                map_->stats().read_bytes.add(int64_t(n));
                co_return Payload(std::move(*r), n);
            }
            log_debug("DAX READ of '", c.path, "' at ", offset, ": no RDMA placement: ", why);
        }
    }
    co_return co_await DataPath::lend(c, len, offset, kinds, pool);
}

std::optional<dax::MappedRange> DaxDataPath::landing(size_t len, uint64_t offset, WriteMode mode) {
    // The writes write() copies into the mapping; the rest keeps the block path.
    if (!rdma_direct_ || mode.to_end_of_file || mode.append_only || offset > map_->size())
        return std::nullopt;
    std::string why;
    auto r = map_->pin_for_rdma(offset, len, true, mode.write_through, &why);
    if (!r) log_debug("DAX WRITE at ", offset, ": no RDMA placement: ", why);
    return r;
}

Result<size_t> DaxDataPath::landed(Caller c, const dax::MappedRange& range, WriteMode mode) {
    dax::IoResult d = map_->landed(range, mode.write_through);
    if (d.outcome != dax::IoOutcome::Done) {
        log_error("DAX WRITE of '", c.path, "' at ", range.file_offset(), ": ", d.why);
        return Error(NtStatus::UnexpectedIoError);
    }
    served_from_map(range.file_offset(), true);
    return d.bytes;
}

void DaxDataPath::truncating() {
    // A device's transfer into pages the truncation frees would fail its whole connection.
    if (!map_->fence_rdma(std::chrono::seconds(5)))
        log_info("DAX: RDMA transfers still in flight after 5 s while truncating a file");
}

asio::awaitable<Result<SplicePipe>> DaxDataPath::read_to_pipe(Caller c, size_t len,
                                                              uint64_t offset) {
    // Through the file system, which sees the mapping's stores (the same memory; no page cache
    // on DAX) and answers a media error or a truncation for this request alone.
    co_return co_await block_->read_to_pipe(c, len, offset);
}

asio::awaitable<Result<size_t>> DaxDataPath::write(Caller c, protocol::Bytes data, uint64_t offset,
                                                   WriteMode mode) {
    // Copied from the request frame straight into the mapping, on the event loop. Writes to the
    // end of file, append-only opens and writes leaving a gap keep the block path.
    if (!mode.to_end_of_file && !mode.append_only && offset <= map_->size()) {
        dax::IoResult d = map_->write(offset, data, mode.write_through);
        if (d.outcome == dax::IoOutcome::Done) {
            served_from_map(offset, true);
            co_return d.bytes;
        }
        if (d.outcome == dax::IoOutcome::MediaError) {
            log_error("DAX WRITE of '", c.path, "' at ", offset, ": ", d.why);
            co_return Error(NtStatus::UnexpectedIoError);
        }
        log_fallback("WRITE", c.path, offset, d);
    }
    co_return co_await block_->write(c, data, offset, mode);
}

asio::awaitable<Status> DaxDataPath::flush(Caller c) {
    // The writes made without write-through are still in the CPU caches: flush them. The fsync
    // still follows for what the block path wrote (fallbacks) and for metadata.
    if (!map_->persist()) log_info("DAX FLUSH of '", c.path, "': some ranges could not be flushed");
    co_return co_await block_->flush(c);
}

asio::awaitable<Result<uint64_t>> DaxDataPath::file_size(Caller c) {
    co_return co_await block_->file_size(c);
}

void DaxDataPath::on_close(std::string_view path) {
    // Writes without write-through are made durable at CLOSE at the latest.
    if (!map_->persist()) log_info("DAX CLOSE of '", path, "': some ranges could not be flushed");
    if (wrote_.load(std::memory_order_relaxed)) map_->touch_mtime();
}

void DaxDataPath::truncated(uint64_t new_size) {
    // Every open of the file shares the map: drop what the new size no longer covers.
    map_->truncated(new_size);
}

}  // namespace daxsmbd::server::io
