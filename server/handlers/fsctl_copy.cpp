// Server-side copy (MS-SMB2 3.3.5.15.5, 3.3.5.15.6) and FSCTL_DUPLICATE_EXTENTS_TO_FILE
// (MS-SMB2 3.3.5.15.17, MS-FSA 2.1.5.10.4): data moved between two opens of one session without
// passing through the client.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <random>

#include "protocol/access_mask.h"
#include "server/buffer_pool.h"
#include "server/connection_state.h"
#include "server/errno_status.h"
#include "server/handlers/fsctl.h"
#include "server/io/data_path.h"
#include "server/log.h"
#include "server/server.h"
#include "server/state/lock_table.h"

namespace daxsmbd::server::handlers::fsctls {

using namespace protocol;
namespace am = protocol::access_mask;

namespace {

// MS-SMB2 3.3.5.15.6 server-side copy limits (the values Windows uses, MS-SMB2 3.3.3 note).
constexpr uint32_t kCopyMaxChunks = 256;
constexpr uint32_t kCopyMaxChunkSize = 1024 * 1024;
constexpr uint32_t kCopyMaxDataSize = 16 * 1024 * 1024;

// Open.ResumeKey: the open's FileId and a keyed check value, so that a key cannot be made up
// from a guessed FileId (the check value also makes a stale key of a reused id fail).
uint64_t resume_check(uint64_t persistent, uint64_t volatile_id) {
    static const uint64_t secret = [] {
        std::random_device rd;
        return (uint64_t(rd()) << 32) ^ rd();
    }();
    // splitmix64 finaliser over the secret-mixed ids.
    uint64_t z =
        secret ^ (persistent * 0x9E3779B97F4A7C15ull) ^ (volatile_id + 0x632BE59BD9B4E019ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::array<std::byte, 24> make_resume_key(const FileId& id) {
    std::array<std::byte, 24> key{};
    store_le64(key.data(), id.persistent);
    store_le64(key.data() + 8, id.volatile_);
    store_le64(key.data() + 16, resume_check(id.persistent, id.volatile_));
    return key;
}

std::shared_ptr<Open> open_by_resume_key(Server& server, Bytes key) {
    if (key.size() < 24) return nullptr;
    const uint64_t persistent = load_le64(key.data());
    const uint64_t volatile_id = load_le64(key.data() + 8);
    if (load_le64(key.data() + 16) != resume_check(persistent, volatile_id)) return nullptr;
    auto o = server.opens.find(volatile_id);
    if (!o || o->id.persistent != persistent) return nullptr;
    return o;
}

// MS-SMB2 3.3.5.15.6.2: INVALID_PARAMETER with the server's limits in the response.
NtStatus copy_limits_reply(RequestContext& ctx, const IoctlRequest& req, const Open& dest) {
    SrvCopychunkResponse resp;
    resp.chunks_written = kCopyMaxChunks;
    resp.chunk_bytes_written = kCopyMaxChunkSize;
    resp.total_bytes_written = kCopyMaxDataSize;
    ByteVector out;
    ByteWriter w(out);
    resp.encode(w);
    return reply(ctx, req, dest.id, out, NtStatus::InvalidParameter);
}

struct CopyOutcome {
    NtStatus status = NtStatus::Success;
    uint32_t chunks_written = 0;
    uint32_t chunk_bytes_written = 0;  // of a chunk that failed part way
    uint32_t total_bytes_written = 0;
};

}  // namespace

NtStatus request_resume_key(RequestContext& ctx, const IoctlRequest& req, Open& open) {
    if (req.max_output_response < SrvRequestResumeKeyResponse::kSize)
        return NtStatus::InvalidParameter;
    SrvRequestResumeKeyResponse resp;
    resp.resume_key = make_resume_key(open.id);
    ByteVector out;
    ByteWriter w(out);
    resp.encode(w);
    return reply(ctx, req, open.id, out);
}

asio::awaitable<NtStatus> copychunk(RequestContext& ctx, const IoctlRequest& req,
                                    std::shared_ptr<Open> dest) {
    const bool is_write = req.ctl_code == fsctl::kSrvCopychunkWrite;
    // MS-SMB2 3.3.5.15.6: the source is the open whose ResumeKey is SourceKey.
    if (req.input.size() < 24) co_return copy_limits_reply(ctx, req, *dest);
    auto source = open_by_resume_key(ctx.server, req.input.first(24));
    if (!source) co_return NtStatus::ObjectNameNotFound;
    if (req.max_output_response < SrvCopychunkResponse::kSize) co_return NtStatus::InvalidParameter;
    auto cc = SrvCopychunkCopy::decode(req.input);
    if (!cc || cc->chunks.size() > kCopyMaxChunks || ctx.tree->is_ipc() ||
        (source->tree && source->tree->is_ipc()))
        co_return copy_limits_reply(ctx, req, *dest);
    uint64_t total = 0;
    for (const auto& c : cc->chunks) {
        total += c.length;
        if (c.length == 0 || c.length > kCopyMaxChunkSize || total > kCopyMaxDataSize ||
            (c.target_offset > uint64_t(INT64_MAX) && c.target_offset != ~0ull))
            co_return copy_limits_reply(ctx, req, *dest);
    }
    // Access (MS-SMB2 3.3.5.15.6): read on the source, write on the destination, and for
    // FSCTL_SRV_COPYCHUNK (not _WRITE) read on the destination too.
    if (!(source->granted_access & am::kFileReadData) ||
        !(dest->granted_access & (am::kFileWriteData | am::kFileAppendData)) ||
        (!is_write && !(dest->granted_access & am::kFileReadData))) {
        ctx.log().refusal("server-side copy without the needed access refused");
        co_return NtStatus::AccessDenied;
    }
    if (source->session_id != dest->session_id) co_return NtStatus::ObjectNameNotFound;
    if (source->local.is_directory || dest->local.is_directory)
        co_return NtStatus::InvalidDeviceRequest;

    // MS-SMB2 3.3.5.15.6: no byte-range lock may conflict with reading the source ranges or
    // writing the target ranges; then nothing is copied (Windows Server 2012 behaviour,
    // smbtorture smb2.ioctl.copy_chunk_src_lock / dest_lock).
    auto& locks = ctx.server.locks;
    CopyOutcome result;
    for (const auto& c : cc->chunks) {
        if (!locks.allows_io(source->local.device, source->local.file_id, source.get(),
                             c.source_offset, c.length, false) ||
            (c.target_offset != ~0ull &&
             !locks.allows_io(dest->local.device, dest->local.file_id, dest.get(), c.target_offset,
                              c.length, true))) {
            result.status = NtStatus::FileLockConflict;
            break;
        }
    }
    if (result.status == NtStatus::Success) {
        // Through the data paths of both opens (server/io): the io_uring block path, or the DAX
        // mapping, as READ and WRITE would. Each chunk (at most kCopyMaxChunkSize) is read whole
        // into a pool buffer before any of it is written, so an overlapping copy inside one
        // file reads the source bytes before they are overwritten (smbtorture
        // smb2.ioctl.copy_chunk_src_is_dest_overlap).
        std::shared_ptr<io::DataPath> from = io::data_path_of(*source);
        std::shared_ptr<io::DataPath> to = io::data_path_of(*dest);
        const bool append_only = !(dest->granted_access & am::kFileWriteData);
        for (const auto& c : cc->chunks) {
            auto src_size = co_await from->file_size(ctx.caller(*source));
            if (!src_size) {
                result.status = src_size.status();
                break;
            }
            // A source range past the end of the file is refused before anything of the chunk
            // is written; the chunks before it stay written. STATUS_INVALID_VIEW_SIZE is what
            // Windows Server 2012 and later answer (smbtorture smb2.ioctl.copy_chunk_src_exceed).
            if (c.source_offset > *src_size || c.length > *src_size - c.source_offset) {
                result.status = NtStatus::InvalidViewSize;
                break;
            }
            const bool to_eof = c.target_offset == ~0ull;  // "at the end of the file"
            uint64_t target = c.target_offset;
            if (to_eof) {
                auto dst_size = co_await to->file_size(ctx.caller(*dest));
                if (!dst_size) {
                    result.status = dst_size.status();
                    break;
                }
                target = *dst_size;
            }
            PoolBuffer buf = ctx.server.buffers.acquire(c.length);
            auto got = co_await from->read(ctx.caller(*source), buf, c.length, c.source_offset);
            if (!got) {
                result.status = got.status();
                break;
            }
            size_t put = 0;
            if (*got > 0) {
                auto w = co_await to->write(ctx.caller(*dest), Bytes(buf.data(), *got), target,
                                            io::WriteMode{false, to_eof, append_only});
                if (!w) {
                    result.status = w.status();
                    break;
                }
                put = *w;
            }
            result.total_bytes_written += uint32_t(put);
            // The file shrank between the size check and the read.
            if (put != c.length) {
                result.status = NtStatus::UnexpectedIoError;
                result.chunk_bytes_written = uint32_t(put);
                break;
            }
            ++result.chunks_written;
        }
    }
    SrvCopychunkResponse resp;
    resp.chunks_written = result.chunks_written;
    resp.chunk_bytes_written = result.chunk_bytes_written;
    resp.total_bytes_written = result.total_bytes_written;
    ByteVector out;
    ByteWriter w(out);
    resp.encode(w);
    // MS-SMB2 3.3.5.15.6.1: a failed copy still carries the response with what was written.
    co_return reply(ctx, req, dest->id, out, result.status);
}

// ---- FSCTL_DUPLICATE_EXTENTS_TO_FILE (MS-SMB2 3.3.5.15.17, MS-FSA 2.1.5.10.4) ----

asio::awaitable<NtStatus> duplicate_extents(RequestContext& ctx, const IoctlRequest& req,
                                            std::shared_ptr<Open> dest) {
    auto in = DuplicateExtentsData::decode(req.input);
    if (!in) co_return NtStatus::InvalidParameter;
    auto src = ctx.server.opens.find(in->source_file_id.volatile_);
    if (!src || src->session_id != dest->session_id ||
        src->id.persistent != in->source_file_id.persistent)
        co_return NtStatus::InvalidHandle;
    if (in->source_file_offset < 0 || in->target_file_offset < 0 || in->byte_count < 0)
        co_return NtStatus::InvalidParameter;
    if (src->local.is_directory || dest->local.is_directory || src->local.pipe || dest->local.pipe)
        co_return NtStatus::InvalidParameter;
    if (!(src->granted_access & am::kFileReadData) ||
        !(dest->granted_access & (am::kFileWriteData | am::kFileAppendData)))
        co_return NtStatus::AccessDenied;
    if (in->byte_count == 0) co_return reply(ctx, req, dest->id, {});
    auto& locks = ctx.server.locks;
    if (!locks.allows_io(dest->local.device, dest->local.file_id, dest.get(),
                         uint64_t(in->target_file_offset), uint64_t(in->byte_count), true) ||
        !locks.allows_io(src->local.device, src->local.file_id, src.get(),
                         uint64_t(in->source_file_offset), uint64_t(in->byte_count), false))
        co_return NtStatus::FileLockConflict;
    const int src_fd = src->local.fd, dst_fd = dest->local.fd;
    const auto args = *in;
    int err = co_await ctx.blocking([&] {
        struct stat st;
        if (::fstat(src_fd, &st) != 0) return errno;
        // MS-FSA 2.1.5.10.4: the source range must lie inside the source stream.
        if (args.source_file_offset + args.byte_count > st.st_size) return EOPNOTSUPP;
        struct file_clone_range r {};
        r.src_fd = src_fd;
        r.src_offset = uint64_t(args.source_file_offset);
        r.src_length = uint64_t(args.byte_count);
        r.dest_offset = uint64_t(args.target_file_offset);
        return ::ioctl(dst_fd, FICLONERANGE, &r) == 0 ? 0 : errno;
    });
    if (err == 0) co_return reply(ctx, req, dest->id, {});
    // No shared extents on this file system (ext4) or misaligned ranges: not supported, which is
    // what clients and smbtorture expect from a volume without block refcounting.
    if (err == EOPNOTSUPP || err == EXDEV || err == EINVAL || err == ENOTTY || err == ENOSYS)
        co_return NtStatus::NotSupported;
    co_return errno_to_status(err);
}

}  // namespace daxsmbd::server::handlers::fsctls
