// WRITE (MS-SMB2 3.3.5.13). The data is written straight from the request frame with pwrite on
// the blocking pool, or on a DAX share copied into the file's mapping (dax/mapping.h).
#include "protocol/write.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "server/connection.h"
#include "server/errno_status.h"
#include "server/handlers/handlers.h"
#include "server/log.h"
#include "server/rpcpipe/pipe_endpoint.h"
#include "server/state/lock_table.h"
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

struct WriteOutcome {
    size_t bytes = 0;
    int err = 0;
    bool append_violation = false;  // an append-only open writing before the end of the file
    bool lock_conflict = false;     // the end of file lies in another open's byte-range lock
    uint64_t offset = 0;            // where the data went
};

// Windows files are not sparse unless marked so: a write far past the end of file allocates the
// gap, and fails with DISK_FULL when the volume cannot hold it (smbtorture smb2.rw.invalid writes
// one byte just below the 16 TiB limit). Linux would silently make a sparse file; refuse the same
// way Windows does unless the file carries FILE_ATTRIBUTE_SPARSE_FILE.
bool gap_exceeds_free_space(int fd, uint64_t size, uint64_t offset) {
    if (offset <= size) return false;
    struct statvfs vs {};
    if (::fstatvfs(fd, &vs) != 0) return false;
    const uint64_t avail = uint64_t(vs.f_bavail) * uint64_t(vs.f_frsize);
    if (offset - size <= avail) return false;
    auto dos = vfs::read_dos_xattr(fd);
    return !(dos && (dos->attributes & vfs::kAttrSparseFile));
}

WriteOutcome pwrite_all(int fd, Bytes data, uint64_t offset, bool to_eof, bool append_only,
                        bool write_through, const FileKey& key, LockOwner owner) {
    WriteOutcome out;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        out.err = errno;
        return out;
    }
    if (to_eof) {
        offset = uint64_t(st.st_size);
        if (!LockTable::global().allows_io(key, owner, offset, data.size(), true)) {
            out.lock_conflict = true;
            return out;
        }
    } else if (append_only && offset < uint64_t(st.st_size)) {
        // MS-SMB2 3.3.5.13: writing inside the existing data needs FILE_WRITE_DATA.
        out.append_violation = true;
        return out;
    }
    if (gap_exceeds_free_space(fd, uint64_t(st.st_size), offset)) {
        out.err = ENOSPC;
        return out;
    }
    out.offset = offset;
    while (out.bytes < data.size()) {
        ssize_t n = ::pwrite(fd, data.data() + out.bytes, data.size() - out.bytes,
                             off_t(offset + out.bytes));
        if (n < 0) {
            if (errno == EINTR) continue;
            out.err = errno;
            return out;
        }
        out.bytes += size_t(n);
    }
    // Write-through (architecture.md "Data paths"): the data is durable before the reply.
    if (write_through && ::fdatasync(fd) != 0) out.err = errno;
    return out;
}

}  // namespace

asio::awaitable<NtStatus> write(RequestContext& ctx) {
    auto req = WriteRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    std::shared_ptr<Open> open = *found;
    const Dialect dialect = ctx.conn.state.dialect;

    // MS-SMB2 3.3.5.13: Length above MaxWriteSize; RDMA channels need an RDMA connection;
    // inline data starts right after the 48-byte body (DataOffset at most 0x100).
    if (req->length > ctx.conn.state.max_write_size) co_return NtStatus::InvalidParameter;
    if (req->channel != channel::kNone) co_return NtStatus::InvalidParameter;
    if (req->length > 0 && req->data_offset > 0x100) co_return NtStatus::InvalidParameter;

    if (open->pipe) {
        // MS-SMB2 3.3.5.13: write-through / unbuffered are meaningless on a pipe (3.x).
        if (is_smb3(dialect) &&
            (req->flags & (write_flags::kWriteThrough | write_flags::kWriteUnbuffered)))
            co_return NtStatus::InvalidParameter;
        auto st = open->pipe->write(req->data);
        if (!st) co_return st.status();
        WriteResponse resp;
        resp.count = uint32_t(req->data.size());
        resp.serialize(ctx.body());
        co_return NtStatus::Success;
    }

    // MS-FSA 2.1.4.12 (Operation WRITE): other opens' LEVEL_II oplocks break to NONE.
    if (open->file_registration) open->file_registration->break_others_level2_oplocks();

    if (open->is_directory) co_return NtStatus::InvalidDeviceRequest;
    const bool can_write = open->granted_access & am::kFileWriteData;
    const bool can_append = open->granted_access & am::kFileAppendData;
    if (!can_write && !can_append) {
        log_info("conn ", ctx.conn.id, " ", ctx.conn.transport->peer(), ": WRITE to '", open->path,
                 "' without write access refused");
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
    if (!to_eof && !LockTable::global().allows_io(FileKey{open->device, open->file_id}, open.get(),
                                                  req->offset, req->length, true))
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
    const int fd = open->fd;
    const Bytes data = req->data;
    const uint64_t offset = req->offset;
    const bool append_only = !can_write;
    // DAX: copied from the request frame straight into the mapping, on the event loop. Writes to
    // the end of file, append-only opens and writes leaving a gap (DISK_FULL rules above) keep
    // the block path.
    if (open->dax_map && !to_eof && !append_only && offset <= open->dax_map->size()) {
        dax::IoResult d = open->dax_map->write(offset, data, write_through);
        if (d.outcome == dax::IoOutcome::Done) {
            resp.count = uint32_t(d.bytes);
            resp.serialize(ctx.body());
            co_return NtStatus::Success;
        }
        if (d.outcome == dax::IoOutcome::MediaError) {
            log_error("DAX WRITE of '", open->path, "' at ", offset, ": ", d.why);
            co_return NtStatus::UnexpectedIoError;
        }
        if (d.routine)
            log_debug("DAX WRITE of '", open->path, "' at ", offset, ": block path: ", d.why);
        else
            log_info("DAX WRITE of '", open->path, "' at ", offset, ": block path: ", d.why);
    }
    WriteOutcome w = co_await ctx.blocking(
        [=, key = FileKey{open->device, open->file_id}, owner = LockOwner(open.get())] {
            return pwrite_all(fd, data, offset, to_eof, append_only, write_through, key, owner);
        });
    if (w.append_violation) co_return NtStatus::AccessDenied;
    if (w.lock_conflict) co_return NtStatus::FileLockConflict;
    if (w.err) co_return errno_to_status(w.err);

    resp.count = uint32_t(w.bytes);
    resp.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
