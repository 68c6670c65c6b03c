// The data-path interface: how a handler reads, writes and flushes the data of an open file,
// whatever carries it. Chosen once per open at CREATE (open_data_path) and kept in
// Open::data; READ, WRITE, FLUSH, CLOSE and the truncating SET_INFOs only talk to this
// interface. Two implementations (architecture.md "Data paths"): the io_uring block path
// (block_path.h) and the DAX path (dax_path.h), which serves what the file's mapping can and
// hands everything else to a block path of its own.
//
// Contract of every implementation:
//   - All calls are made on an event loop and must not block it: they complete asynchronously
//     (the block path through the loop's io_uring Engine, passed in Caller::io) or are memory
//     copies (the DAX path).
//   - Data moves between the file and pool buffers (server/buffer_pool.h) or the request frame
//     (itself a pool buffer), the memory the TCP transport sends from and SMB Direct registers,
//     so an RDMA transfer can target the same buffers later.
//   - Errors are NTSTATUS values mapped from errno by errno_to_status() (server/errno_status.h).
//   - The SMB semantics around the data (byte-range locks, MinimumCount, END_OF_FILE,
//     append-only opens, maximum file size) stay in the handlers.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "protocol/bytes.h"
#include "protocol/result.h"
#include "server/buffer_pool.h"
#include "server/io/splice_pipe.h"
#include "server/payload.h"

namespace daxsmbd::dax {
class MapRegistry;  // dax/mapping.h
}
namespace daxsmbd::server {
struct Open;
struct Share;
}  // namespace daxsmbd::server
namespace daxsmbd::server::vfs {
struct UnixIdentity;  // vfs/fs_credentials.h
}

namespace daxsmbd::server::io {

namespace asio = boost::asio;
class Engine;

// Who makes a data-path call: the io_uring engine of the loop the call runs on, and the file's
// share-relative path for the implementation's log lines. Converts from an Engine (tests).
struct Caller {
    Caller(Engine& engine, std::string_view file_path = {}, const vfs::UnixIdentity* who = nullptr)
        : io(engine), path(file_path), as(who) {}
    Engine& io;
    std::string_view path;
    // Whom the file operations run as (vfs/fs_credentials.h; null: the daemon, tests only).
    const vfs::UnixIdentity* as;
};

// How a WRITE reaches the file beyond its bytes and offset (MS-SMB2 3.3.5.13).
struct WriteMode {
    // Durable before the call completes (SMB2_WRITEFLAG_WRITE_THROUGH, FILE_WRITE_THROUGH opens).
    bool write_through = false;
    // The offset is the end of file the handler looked up (FILE_WRITE_TO_END_OF_FILE).
    bool to_end_of_file = false;
    // The open may only append (FILE_APPEND_DATA without FILE_WRITE_DATA).
    bool append_only = false;
};

class DataPath {
  public:
    virtual ~DataPath() = default;
    // "block", "block+direct", "dax": for logs and tests.
    virtual std::string_view name() const = 0;

    // Reads `len` bytes at `offset` into buf.data() (buf.capacity() >= len). Returns the bytes
    // read: fewer than `len` only when the end of file was reached, 0 at or past it.
    virtual asio::awaitable<Result<size_t>> read(Caller c, PoolBuffer& buf, size_t len,
                                                 uint64_t offset) = 0;
    // Whether read_to_pipe() may serve a read of `len` bytes: a buffered path of a share with
    // "use sendfile" and a length worth it. Only a caller whose response needs none of the data
    // bytes in user space (not signed, not encrypted, alone in its message) asks.
    virtual bool splices(size_t /*len*/) const { return false; }
    // Moves `len` bytes at `offset` from the page cache into a pipe by reference (splice_pipe.h):
    // the pipe holds what was read, fewer bytes than `len` only when the end of file was
    // reached, none at or past it. Fails with NotSupported when this read cannot be spliced
    // now (no pipe to be had, the file refuses splice): the caller then uses read().
    virtual asio::awaitable<Result<SplicePipe>> read_to_pipe(Caller c, size_t len, uint64_t offset);
    // Reads `len` bytes at `offset` as a payload of one of `kinds` (server/payload.h; Memory is
    // always among them): what costs least that the response can carry. The default lends a
    // pipe when `kinds` has Pipe and splices(len) (falling back as read_to_pipe says), else a
    // buffer of `pool` filled by read(). Fewer bytes than `len` only at the end of file, none
    // at or past it.
    virtual asio::awaitable<Result<Payload>> lend(Caller c, size_t len, uint64_t offset,
                                                  PayloadKinds kinds, BufferPool& pool);
    // Writes all of `data` at `offset` (short writes are continued). With mode.write_through the
    // call completes only after the data is durable.
    virtual asio::awaitable<Result<size_t>> write(Caller c, protocol::Bytes data, uint64_t offset,
                                                  WriteMode mode) = 0;
    // RDMA straight into the file (a WRITE whose data a device places): the pinned range of the
    // file where `len` bytes at `offset` may land, or nullopt (no mapping here, placement off
    // for the share, a range not mappable now): the caller then fetches the data into a pool
    // buffer and calls write(). The bytes are the file's as soon as the device writes them; the
    // write is complete (durable with mode.write_through) only after landed().
    virtual std::optional<dax::MappedRange> landing(size_t /*len*/, uint64_t /*offset*/,
                                                    WriteMode /*mode*/) {
        return std::nullopt;
    }
    // The device filled `range` (from landing()): completes the write as write() would.
    virtual Result<size_t> landed(Caller /*c*/, const dax::MappedRange& /*range*/,
                                  WriteMode /*mode*/) {
        return Error(NtStatus::NotSupported);
    }
    // Makes everything written so far durable (FLUSH, MS-SMB2 3.3.5.11: a full fsync).
    virtual asio::awaitable<Status> flush(Caller c) = 0;
    // The current end of file (for append writes and the gap check of WRITE).
    virtual asio::awaitable<Result<uint64_t>> file_size(Caller c) = 0;
    // The end of file as this path knows it without a system call (the DAX mapping's size), or
    // nullopt. A WRITE at or below it needs no file_size() (it leaves no gap).
    virtual std::optional<uint64_t> known_size() const { return std::nullopt; }

    // CLOSE of the open (MS-SMB2 3.3.5.10): on the loop, before the reply; nothing may block
    // for long. The DAX path makes its writes without write-through durable here.
    virtual void on_close(std::string_view /*path*/) {}
    // This server is about to truncate the file (on the blocking pool, before the ftruncate):
    // RDMA placement into the file is stopped and waited for, until truncation_over() (also
    // when the truncation failed).
    virtual void truncating() {}
    virtual void truncation_over() {}
    // This server set the file's size to `new_size` (SET_INFO end of file or allocation, an
    // overwriting CREATE), after the ftruncate: state shared with other opens (the DAX mapping)
    // drops what the new size no longer covers.
    virtual void truncated(uint64_t /*new_size*/) {}
};

// Runs a job off the event loops (the server's blocking pool): the DAX path prefaults its
// mappings through it.
using BackgroundRunner = std::function<void(std::function<void()>)>;

// Chooses and opens the data path of a new open of a regular file: the DAX path when the share
// serves its files through DAX mappings (Share::dax) and the open reads or writes data, else
// the block path with the share's options (a plain buffered one for an open without data
// access). Blocking (statx, a second open, mapping): call it on
// the blocking pool, as CREATE does. Without `background` the DAX path does not prefault.
std::shared_ptr<DataPath> open_data_path(const Share& share, const Open& open,
                                         dax::MapRegistry& maps, BackgroundRunner background = {});

// The data path of an open; an open that got none at CREATE (made by code other than CREATE)
// gets a plain buffered block path on first use.
std::shared_ptr<DataPath> data_path_of(Open& open);

}  // namespace daxsmbd::server::io
