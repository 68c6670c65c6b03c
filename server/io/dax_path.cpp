#include "server/io/dax_path.h"

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
                         BackgroundRunner background)
    : map_(std::move(map)), block_(std::move(block)), background_(std::move(background)) {}

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
