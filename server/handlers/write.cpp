// WRITE (MS-SMB2 3.3.5.13). The data is written straight from the request frame through the
// open's data path (server/io: the io_uring block path, completing on this loop, or on a DAX
// share a copy into the file's mapping).
#include "protocol/write.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstdint>
#include <optional>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "server/connection_state.h"
#include "server/errno_status.h"
#include "server/handlers/handlers.h"
#include "server/handlers/rdma_transfer.h"
#include "server/io/data_path.h"
#include "server/log.h"
#include "server/rpcpipe/pipe_endpoint.h"
#include "server/server.h"
#include "server/state/lock_table.h"
#include "server/transport.h"
#include "server/vfs/metadata.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace am = protocol::access_mask;

namespace {

// The largest file size Windows (NTFS) allows, 16 TiB - 64 KiB: writes reaching past it are
// STATUS_INVALID_PARAMETER (smbtorture smb2.rw.invalid, MAXFILESIZE).
constexpr uint64_t kMaxFileSize = 0xfffffff0000ull;
// WRITE Offset 0xFFFFFFFFFFFFFFFF: "at the end of the file" for an append-only open
// (MS-FSA 2.1.5.3 FILE_WRITE_TO_END_OF_FILE).
constexpr uint64_t kWriteToEndOfFile = ~0ull;

// Windows files are not sparse unless marked so: a write far past the end of file allocates the
// gap, and fails with DISK_FULL when the volume cannot hold it (smbtorture smb2.rw.invalid writes
// one byte just below the 16 TiB limit). Linux would silently make a sparse file; refuse the same
// way Windows does unless the file carries FILE_ATTRIBUTE_SPARSE_FILE. Blocking (statvfs,
// xattr): run on the blocking pool.
bool gap_exceeds_free_space(int fd, uint64_t size, uint64_t offset) {
    if (offset <= size) return false;
    struct statvfs vs {};
    if (::fstatvfs(fd, &vs) != 0) return false;
    const uint64_t avail = uint64_t(vs.f_bavail) * uint64_t(vs.f_frsize);
    if (offset - size <= avail) return false;
    auto dos = vfs::read_dos_xattr(fd);
    return !(dos && (dos->attributes & vfs::kAttrSparseFile));
}

// Gaps up to this size are not checked against the free space: pipelined writes of one client
// arrive ahead of each other all the time (each sees the file shorter than its offset), and the
// check costs a trip to the blocking pool. Below this size the only difference is a sparse hole
// instead of DISK_FULL on an almost full volume.
constexpr uint64_t kUncheckedGap = 64ull << 20;

// MS-SMB2 3.3.5.13: the RDMA channel of a WRITE (none: nullopt). Its data comes from the
// client's buffers, RemainingBytes of it, nothing inline; req.length becomes that count.
Result<std::optional<RdmaTransfer>> rdma_channel_of(RequestContext& ctx, WriteRequest& req) {
    if (req.channel == channel::kNone) return std::optional<RdmaTransfer>();
    if (req.length != 0) return Error(NtStatus::InvalidParameter);
    if (req.remaining_bytes > ctx.conn.state.max_write_size)
        return Error(NtStatus::InvalidParameter);
    auto t = rdma_transfer(ctx, req.channel, req.channel_info, req.remaining_bytes);
    if (!t) return Error(t.status());
    // Also when the WRITE fails: the client relies on the server to invalidate.
    if (t->invalidate) ctx.invalidate_token = t->buffers[0].token;
    req.length = req.remaining_bytes;
    return std::optional<RdmaTransfer>(std::move(*t));
}

// The data of a WRITE by RDMA: landed straight in the file (a DAX share whose mapping the
// channel registers: the bytes written), else fetched into `pulled` for DataPath::write
// (nullopt).
asio::awaitable<Result<std::optional<size_t>>> write_by_rdma(
    RequestContext& ctx, Open& open, io::DataPath& data, const RdmaTransfer& rdma, size_t length,
    uint64_t offset, io::WriteMode mode, PoolBuffer& pulled) {
    auto from = smbdirect::select_range(rdma.buffers, 0, length);
    if (!from) co_return Error(NtStatus::InvalidParameter);
    if (ctx.conn.rdma->push_kinds().has(PayloadKind::Mapped)) {
        if (auto land = data.landing(length, offset, mode)) {
            auto st = co_await ctx.conn.rdma->pull_into(*from, *land);
            if (st) {
                auto w = data.landed(ctx.caller(open), *land, mode);
                if (!w) co_return Error(w.status());
                co_return std::optional<size_t>(*w);
            }
            // Nothing was read when the channel cannot reach the mapping: fetch it below.
            if (st.status() != NtStatus::NotSupported) co_return Error(st.status());
        }
    }
    auto got = co_await ctx.conn.rdma->pull(*from, length);
    if (!got) co_return Error(got.status());
    pulled = std::move(*got);
    co_return std::optional<size_t>();
}

}  // namespace

asio::awaitable<NtStatus> write(RequestContext& ctx) {
    auto req = WriteRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    std::shared_ptr<Open> open = *found;
    const Dialect dialect = ctx.dialect();

    // MS-SMB2 3.3.5.13: Length above MaxWriteSize; inline data starts right after the 48-byte
    // body (DataOffset at most 0x100).
    if (req->length > ctx.conn.state.max_write_size) co_return NtStatus::InvalidParameter;
    if (req->length > 0 && req->data_offset > 0x100) co_return NtStatus::InvalidParameter;
    auto rdma = rdma_channel_of(ctx, *req);
    if (!rdma) co_return rdma.status();

    if (open->local.pipe) {
        if (*rdma) co_return NtStatus::InvalidParameter;  // pipe messages are small: inline
        // MS-SMB2 3.3.5.13: write-through / unbuffered are meaningless on a pipe (3.x).
        if (is_smb3(dialect) &&
            (req->flags & (write_flags::kWriteThrough | write_flags::kWriteUnbuffered)))
            co_return NtStatus::InvalidParameter;
        auto st = open->local.pipe->write(req->data);
        if (!st) co_return st.status();
        open->local.pipe->wake_reader();  // a READ parked for the reply
        WriteResponse resp;
        resp.count = uint32_t(req->data.size());
        resp.serialize(ctx.body());
        co_return NtStatus::Success;
    }

    // MS-FSA 2.1.4.12 (Operation WRITE): other opens' LEVEL_II oplocks break to NONE.
    if (open->local.file_registration) open->local.file_registration->break_others_level2_oplocks();

    if (open->local.is_directory) co_return NtStatus::InvalidDeviceRequest;
    if (!open->local.modified.load(std::memory_order_relaxed))
        open->local.modified.store(true, std::memory_order_relaxed);
    const bool can_write = open->granted_access & am::kFileWriteData;
    const bool can_append = open->granted_access & am::kFileAppendData;
    if (!can_write && !can_append) {
        ctx.log().refusal("WRITE to '", open->local.path, "' without write access refused");
        co_return NtStatus::AccessDenied;
    }

    const bool to_eof = req->offset == kWriteToEndOfFile && can_append && !can_write;
    if (!to_eof) {
        // Offsets are signed 64-bit (MS-FSA 2.1.5.3); past the maximum file size is invalid.
        if (req->offset > uint64_t(INT64_MAX)) co_return NtStatus::InvalidParameter;
        if (req->length > 0 && req->offset + req->length > kMaxFileSize)
            co_return NtStatus::InvalidParameter;
    }

    // MS-FSA 2.1.5.3 via 2.1.4.10: a byte-range lock of another open covering the range (an
    // append-only write to the end of file is checked where it lands, below).
    if (!to_eof && !ctx.server.locks.allows_io(FileKey{open->local.device, open->local.file_id},
                                               open.get(), req->offset, req->length, true))
        co_return NtStatus::FileLockConflict;

    WriteResponse resp;
    if (req->length == 0) {
        resp.serialize(ctx.body());
        co_return NtStatus::Success;
    }

    // SMB2_WRITEFLAG_WRITE_THROUGH (not in 2.0.2) or an open made with FILE_WRITE_THROUGH.
    const bool write_through =
        ((req->flags & write_flags::kWriteThrough) && dialect != Dialect::Smb202) ||
        (open->create_options & create_options::kWriteThrough);
    const bool append_only = !can_write;
    std::shared_ptr<io::DataPath> data = io::data_path_of(*open);
    const io::WriteMode mode{write_through, to_eof, append_only};
    uint64_t offset = req->offset;
    // The end of file (through the ring, statx): where an append lands, whether the write
    // leaves a gap. Not needed for a write inside what the data path already knows to exist
    // (the DAX mapping's size), which leaves no gap.
    const std::optional<uint64_t> known = data->known_size();
    if (to_eof || append_only || !known || offset > *known) {
        auto size = co_await data->file_size(ctx.caller(*open));
        if (!size) co_return size.status();
        if (to_eof) {
            offset = *size;
            if (!ctx.server.locks.allows_io(FileKey{open->local.device, open->local.file_id},
                                            open.get(), offset, req->length, true))
                co_return NtStatus::FileLockConflict;
        } else if (append_only && offset < *size) {
            // MS-SMB2 3.3.5.13: writing inside the existing data needs FILE_WRITE_DATA.
            co_return NtStatus::AccessDenied;
        }
        if (offset > *size && offset - *size > kUncheckedGap) {
            const int fd = open->local.fd;
            const uint64_t cur = *size;
            const bool full = co_await ctx.blocking(
                [fd, cur, offset] { return gap_exceeds_free_space(fd, cur, offset); });
            if (full) co_return errno_to_status(ENOSPC);
        }
    }
    PoolBuffer pulled;
    std::optional<size_t> landed;
    if (*rdma) {
        auto r =
            co_await write_by_rdma(ctx, *open, *data, **rdma, req->length, offset, mode, pulled);
        if (!r) co_return r.status();
        landed = *r;
        req->data = Bytes(pulled.span());
    }
    Result<size_t> w = landed ? Result<size_t>(*landed) : Result<size_t>(0);
    if (!landed) w = co_await data->write(ctx.caller(*open), req->data, offset, mode);
    if (!w) {
        ctx.log().debug("WRITE to '", open->local.path, "' at ", offset,
                        " failed: ", status_name(w.status()));
        co_return w.status();
    }

    resp.count = uint32_t(*w);
    ctx.io_bytes = *w;
    ctx.io_path = *rdma                   ? metrics::IoPath::Rdma
                  : data->name() == "dax" ? metrics::IoPath::Dax
                                          : metrics::IoPath::Block;
    resp.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
