// IOCTL (MS-SMB2 3.3.5.15): the FSCTLs the SMB2 server answers itself (validate negotiate,
// pipes, server-side copy, snapshots, DFS, network interfaces) and the file-system controls of
// MS-FSA 2.1.5.10 that Linux can express (sparse files, zeroing, allocated ranges, object ids,
// reflinks). Every other FSCTL gets what Windows answers for one its file system does not
// implement: STATUS_INVALID_DEVICE_REQUEST for the MS-FSCC codes, STATUS_NOT_SUPPORTED for codes
// MS-FSCC does not define (MS-SMB2 3.3.5.15.8).
#include "protocol/ioctl.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <optional>
#include <random>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/file_info.h"
#include "protocol/negotiate.h"
#include "server/buffer_pool.h"
#include "server/connection_state.h"
#include "server/errno_status.h"
#include "server/handlers/handlers.h"
#include "server/io/data_path.h"
#include "server/log.h"
#include "server/net_interfaces.h"
#include "server/rpcpipe/pipe_endpoint.h"
#include "server/server.h"
#include "server/state/lock_table.h"
#include "server/vfs/metadata.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace am = protocol::access_mask;

namespace {

// STATUS_INVALID_VIEW_SIZE (MS-ERREF 2.3.1): a copychunk source range past the end of the file,
// what Windows Server 2012 and later answer (smbtorture smb2.ioctl.copy_chunk_src_exceed).
constexpr NtStatus kStatusInvalidViewSize = static_cast<NtStatus>(0xC000001F);

// MS-SMB2 3.3.5.15.6 server-side copy limits (the values Windows uses, MS-SMB2 3.3.3 note).
constexpr uint32_t kCopyMaxChunks = 256;
constexpr uint32_t kCopyMaxChunkSize = 1024 * 1024;
constexpr uint32_t kCopyMaxDataSize = 16 * 1024 * 1024;

// FILE_PIPE_PEEK_BUFFER (MS-FSCC 2.3.49): NamedPipeState, ReadDataAvailable, NumberOfMessages,
// MessageLength, then the data.
constexpr size_t kPipePeekFixedSize = 16;
constexpr uint32_t kFilePipeConnectedState = 3;
// FILE_OBJECTID_BUFFER (MS-FSCC 2.1.3): ObjectId, BirthVolumeId, BirthObjectId, DomainId.
constexpr size_t kObjectIdBufferSize = 64;
// COMPRESSION_FORMAT_* (MS-FSCC 2.3.18, 2.3.67).
constexpr uint16_t kCompressionFormatNone = 0;
constexpr uint16_t kCompressionFormatDefault = 1;
constexpr uint16_t kCompressionFormatLznt1 = 2;

bool is_all_ones(const FileId& id) {
    return id.persistent == ~0ull && id.volatile_ == ~0ull;
}

// The FSCTLs whose FileId must be {all ones} because they are not about a file
// (MS-SMB2 3.3.5.15).
bool fsctl_without_file(uint32_t code) {
    return code == fsctl::kDfsGetReferrals || code == fsctl::kDfsGetReferralsEx ||
           code == fsctl::kQueryNetworkInterfaceInfo || code == fsctl::kValidateNegotiateInfo ||
           code == fsctl::kPipeWait;
}

// The MS-FSCC 2.3 control codes (pass-through FSCTLs a file system may implement).
bool is_fscc_code(uint32_t code) {
    static constexpr uint32_t kCodes[] = {
        fsctl::kCreateOrGetObjectId,
        fsctl::kDeleteObjectId,
        fsctl::kDeleteReparsePoint,
        fsctl::kDuplicateExtentsToFile,
        fsctl::kDuplicateExtentsToFileEx,
        fsctl::kFilesystemGetStatistics,
        fsctl::kFileLevelTrim,
        fsctl::kFindFilesBySid,
        fsctl::kGetCompression,
        fsctl::kGetIntegrityInformation,
        fsctl::kGetNtfsVolumeData,
        fsctl::kGetRefsVolumeData,
        fsctl::kGetObjectId,
        fsctl::kGetReparsePoint,
        fsctl::kGetRetrievalPointerCount,
        fsctl::kGetRetrievalPointers,
        fsctl::kGetRetrievalPointersAndRefcount,
        fsctl::kIsPathnameValid,
        fsctl::kLmrSetLinkTrackingInformation,
        fsctl::kMarkHandle,
        fsctl::kOffloadRead,
        fsctl::kOffloadWrite,
        fsctl::kQueryAllocatedRanges,
        fsctl::kQueryFatBpb,
        fsctl::kQueryFileRegions,
        fsctl::kQueryOnDiskVolumeInfo,
        fsctl::kQuerySparingInfo,
        fsctl::kReadFileUsnData,
        fsctl::kRecallFile,
        fsctl::kRefsStreamSnapshotManagement,
        fsctl::kSetCompression,
        fsctl::kSetDefectManagement,
        fsctl::kSetEncryption,
        fsctl::kSetIntegrityInformation,
        fsctl::kSetIntegrityInformationEx,
        fsctl::kSetObjectId,
        fsctl::kSetObjectIdExtended,
        fsctl::kSetReparsePoint,
        fsctl::kSetSparse,
        fsctl::kSetZeroData,
        fsctl::kSetZeroOnDeallocation,
        fsctl::kSisCopyfile,
        fsctl::kWriteUsnCloseRecord,
    };
    return std::find(std::begin(kCodes), std::end(kCodes), code) != std::end(kCodes);
}

// Writes the IOCTL response (MS-SMB2 2.2.32): CtlCode of the request, InputCount 0, the output
// (never more than MaxOutputResponse; the callers make sure), Flags 0.
NtStatus reply(RequestContext& ctx, const IoctlRequest& req, const FileId& fid, Bytes output,
               NtStatus status = NtStatus::Success) {
    IoctlResponse r;
    r.ctl_code = req.ctl_code;
    r.file_id = fid;
    r.output = output;
    r.serialize(ctx.body());
    return status;
}

// ---- FSCTL_VALIDATE_NEGOTIATE_INFO (MS-SMB2 3.3.5.15.12) ----

NtStatus disconnect(RequestContext& ctx, const char* why) {
    ctx.log().info("FSCTL_VALIDATE_NEGOTIATE_INFO: ", why, ", disconnecting");
    ctx.suppress_response = true;
    ctx.disconnect_after = true;
    return NtStatus::AccessDenied;
}

NtStatus validate_negotiate(RequestContext& ctx, const IoctlRequest& req) {
    auto& st = ctx.conn.state;
    // Every failure terminates the connection without a response: a mismatch means someone
    // tampered with the NEGOTIATE exchange.
    if (st.dialect == Dialect::Smb311) return disconnect(ctx, "not used with 3.1.1");
    if (req.max_output_response < ValidateNegotiateInfoResponse::kSize)
        return disconnect(ctx, "MaxOutputResponse too small");
    auto in = ValidateNegotiateInfoRequest::decode(req.input);
    if (!in) return disconnect(ctx, "malformed request");
    // This server implements 3.1.1, so the list must be the one the client negotiated with.
    if (in->dialects != st.client_dialects) return disconnect(ctx, "dialect list differs");
    const auto& g = ctx.server.config().global;
    uint16_t best = 0;
    for (uint16_t d : in->dialects) {
        const bool known = d == 0x0202 || d == 0x0210 || d == 0x0300 || d == 0x0302 || d == 0x0311;
        if (known && d >= uint16_t(g.min_protocol) && d <= uint16_t(g.max_protocol))
            best = std::max(best, d);
    }
    if (best == 0 || best != uint16_t(st.dialect)) return disconnect(ctx, "dialect differs");
    if (in->guid != st.client_guid) return disconnect(ctx, "ClientGuid differs");
    if (in->security_mode != st.client_security_mode)
        return disconnect(ctx, "SecurityMode differs");
    if (in->capabilities != st.client_capabilities) return disconnect(ctx, "Capabilities differ");

    ValidateNegotiateInfoResponse resp;
    resp.capabilities = st.server_capabilities;
    resp.guid = ctx.server.guid();
    resp.security_mode = st.server_security_mode;
    resp.dialect = uint16_t(st.dialect);
    ByteVector out;
    ByteWriter w(out);
    resp.encode(w);
    return reply(ctx, req, kPlaceholderFileId, out);
}

// ---- Named pipes (MS-SMB2 3.3.5.15.3, 3.3.5.15.4, 3.3.5.15.10) ----

NtStatus pipe_transceive(RequestContext& ctx, const IoctlRequest& req, Open& open) {
    auto out = open.pipe->transceive(req.input, req.max_output_response);
    if (!out) return out.status();
    // The reply did not fit: its first part now, the rest by READ (MS-SMB2 3.3.5.15.3 with the
    // message-mode rules of 3.3.5.12).
    const NtStatus st =
        open.pipe->message_continues() ? NtStatus::BufferOverflow : NtStatus::Success;
    return reply(ctx, req, open.id, *out, st);
}

NtStatus pipe_peek(RequestContext& ctx, const IoctlRequest& req, Open& open) {
    if (req.max_output_response < kPipePeekFixedSize) return NtStatus::BufferTooSmall;
    auto p = open.pipe->peek(req.max_output_response - kPipePeekFixedSize);
    ByteVector out;
    ByteWriter w(out);
    w.u32(kFilePipeConnectedState);
    w.u32(uint32_t(std::min<size_t>(p.bytes_available, UINT32_MAX)));
    w.u32(uint32_t(std::min<size_t>(p.messages, UINT32_MAX)));
    w.u32(uint32_t(std::min<size_t>(p.message_remaining, UINT32_MAX)));
    w.bytes(p.data);
    // A message longer than the buffer: the peek shows its beginning (MS-FSCC 2.3.49).
    const NtStatus st =
        p.data.size() < p.message_remaining ? NtStatus::BufferOverflow : NtStatus::Success;
    return reply(ctx, req, open.id, out, st);
}

NtStatus pipe_wait(RequestContext& ctx, const IoctlRequest& req) {
    // FSCTL_PIPE_WAIT_REQUEST (MS-FSCC 2.3.31): Timeout(8) NameLength(4) TimeoutSpecified(1)
    // Padding(1) Name. A malformed name is OBJECT_NAME_NOT_FOUND (MS-SMB2 3.3.5.15.10).
    ByteReader r(req.input);
    if (!r.skip(8)) return NtStatus::ObjectNameNotFound;
    auto len = r.u32();
    if (!len || !r.skip(2)) return NtStatus::ObjectNameNotFound;
    auto raw = r.bytes(*len);
    if (!raw) return NtStatus::ObjectNameNotFound;
    auto name = utf16le_to_utf8(*raw);
    if (!name || !rpcpipe::pipe_exists(*name)) return NtStatus::ObjectNameNotFound;
    // Our pipes take any number of connections: one is always available at once.
    return reply(ctx, req, kPlaceholderFileId, {});
}

// ---- Server-side copy (MS-SMB2 3.3.5.15.5, 3.3.5.15.6) ----

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
        ctx.log().info("server-side copy without the needed access refused");
        co_return NtStatus::AccessDenied;
    }
    if (source->session_id != dest->session_id) co_return NtStatus::ObjectNameNotFound;
    if (source->is_directory || dest->is_directory) co_return NtStatus::InvalidDeviceRequest;

    // MS-SMB2 3.3.5.15.6: no byte-range lock may conflict with reading the source ranges or
    // writing the target ranges; then nothing is copied (Windows Server 2012 behaviour,
    // smbtorture smb2.ioctl.copy_chunk_src_lock / dest_lock).
    auto& locks = LockTable::global();
    CopyOutcome result;
    for (const auto& c : cc->chunks) {
        if (!locks.allows_io(source->device, source->file_id, source.get(), c.source_offset,
                             c.length, false) ||
            (c.target_offset != ~0ull && !locks.allows_io(dest->device, dest->file_id, dest.get(),
                                                          c.target_offset, c.length, true))) {
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
            // is written; the chunks before it stay written.
            if (c.source_offset > *src_size || c.length > *src_size - c.source_offset) {
                result.status = kStatusInvalidViewSize;
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
            PoolBuffer buf = BufferPool::global().acquire(c.length);
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
    if (src->is_directory || dest->is_directory || src->pipe || dest->pipe)
        co_return NtStatus::InvalidParameter;
    if (!(src->granted_access & am::kFileReadData) ||
        !(dest->granted_access & (am::kFileWriteData | am::kFileAppendData)))
        co_return NtStatus::AccessDenied;
    if (in->byte_count == 0) co_return reply(ctx, req, dest->id, {});
    auto& locks = LockTable::global();
    if (!locks.allows_io(dest->device, dest->file_id, dest.get(), uint64_t(in->target_file_offset),
                         uint64_t(in->byte_count), true) ||
        !locks.allows_io(src->device, src->file_id, src.get(), uint64_t(in->source_file_offset),
                         uint64_t(in->byte_count), false))
        co_return NtStatus::FileLockConflict;
    const int src_fd = src->fd, dst_fd = dest->fd;
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

// ---- Sparse files, zeroing, allocated ranges (MS-FSA 2.1.5.10.38, .39, .22) ----

// The DOS attributes as stored, or as derived when nothing is stored yet (so that turning
// SPARSE_FILE on does not drop a READONLY derived from the mode bits).
Result<vfs::DosXattr> current_dos(int fd) {
    if (auto x = vfs::read_dos_xattr(fd)) return *x;
    DAX_TRY(auto info, vfs::query_info(fd));
    vfs::DosXattr x;
    x.attributes = info.file_attributes & vfs::kStoredAttributes;
    return x;
}

bool is_sparse(int fd) {
    auto x = vfs::read_dos_xattr(fd);
    return x && (x->attributes & vfs::kAttrSparseFile);
}

asio::awaitable<NtStatus> set_sparse(RequestContext& ctx, const IoctlRequest& req,
                                     std::shared_ptr<Open> open) {
    // MS-FSA 2.1.5.10.38: FILE_SET_SPARSE_BUFFER is optional (absent means TRUE).
    const bool sparse = req.input.empty() || req.input[0] != std::byte{0};
    if (open->is_directory) co_return NtStatus::InvalidParameter;
    if (!(open->granted_access &
          (am::kFileWriteData | am::kFileAppendData | am::kFileWriteAttributes))) {
        ctx.log().info("FSCTL_SET_SPARSE without write access refused");
        co_return NtStatus::AccessDenied;
    }
    const int fd = open->fd;
    auto st = co_await ctx.blocking([&]() -> Status {
        DAX_TRY(auto x, current_dos(fd));
        const bool was = x.attributes & vfs::kAttrSparseFile;
        if (was == sparse) return {};
        if (sparse) {
            x.attributes |= vfs::kAttrSparseFile;
        } else {
            // Clearing the flag allocates the holes again (MS-FSA 2.1.5.10.38).
            struct stat s;
            if (::fstat(fd, &s) == 0 && s.st_size > 0) (void)::fallocate(fd, 0, 0, s.st_size);
            x.attributes &= ~vfs::kAttrSparseFile;
        }
        return vfs::write_dos_xattr(fd, x);
    });
    if (!st) co_return st.status();
    co_return reply(ctx, req, open->id, {});
}

asio::awaitable<NtStatus> set_zero_data(RequestContext& ctx, const IoctlRequest& req,
                                        std::shared_ptr<Open> open) {
    // MS-FSA 2.1.5.10.39.
    auto in = FileZeroDataInformation::decode(req.input);
    if (!in) co_return NtStatus::InvalidParameter;
    if (open->is_directory) co_return NtStatus::InvalidParameter;
    if (in->file_offset < 0 || in->beyond_final_zero < 0 || in->file_offset > in->beyond_final_zero)
        co_return NtStatus::InvalidParameter;
    if (!(open->granted_access & am::kFileWriteData)) co_return NtStatus::AccessDenied;
    if (in->file_offset == in->beyond_final_zero) co_return reply(ctx, req, open->id, {});
    const int fd = open->fd;
    const auto z = *in;
    // The stream size does not change: only [FileOffset, min(BeyondFinalZero, size)) is zeroed.
    struct Outcome {
        int err = 0;
        uint64_t start = 0, len = 0;
    };
    auto range = co_await ctx.blocking([&]() {
        Outcome o;
        struct stat s;
        if (::fstat(fd, &s) != 0) {
            o.err = errno;
            return o;
        }
        const uint64_t end = std::min<uint64_t>(uint64_t(z.beyond_final_zero), uint64_t(s.st_size));
        o.start = uint64_t(z.file_offset);
        o.len = end > o.start ? end - o.start : 0;
        return o;
    });
    if (range.err) co_return errno_to_status(range.err);
    if (range.len == 0) co_return reply(ctx, req, open->id, {});
    // Zeroing is a write (MS-FSA 2.1.4.10 with IsExclusive TRUE).
    if (!LockTable::global().allows_io(open->device, open->file_id, open.get(), range.start,
                                       range.len, true))
        co_return NtStatus::FileLockConflict;
    int err = co_await ctx.blocking([&]() {
        // A sparse file gives the range back (hole); others keep their allocation.
        const int mode = is_sparse(fd) ? (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)
                                       : (FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE);
        if (::fallocate(fd, mode, off_t(range.start), off_t(range.len)) == 0) return 0;
        if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL) return errno;
        // No fallocate modes here: write the zeros.
        std::vector<std::byte> zeros(std::min<uint64_t>(range.len, 1u << 20));
        uint64_t done = 0;
        while (done < range.len) {
            size_t n = size_t(std::min<uint64_t>(zeros.size(), range.len - done));
            ssize_t w = ::pwrite(fd, zeros.data(), n, off_t(range.start + done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return w < 0 ? errno : EIO;
            done += uint64_t(w);
        }
        return 0;
    });
    if (err) co_return errno_to_status(err);
    co_return reply(ctx, req, open->id, {});
}

asio::awaitable<NtStatus> query_allocated_ranges(RequestContext& ctx, const IoctlRequest& req,
                                                 std::shared_ptr<Open> open) {
    // MS-FSA 2.1.5.10.22.
    auto in = FileAllocatedRangeBuffer::decode(req.input);
    if (!in) co_return NtStatus::InvalidParameter;
    if (in->file_offset < 0 || in->length < 0 || in->length > INT64_MAX - in->file_offset)
        co_return NtStatus::InvalidParameter;
    if (open->is_directory) co_return NtStatus::InvalidParameter;
    if (!(open->granted_access & am::kFileReadData)) co_return NtStatus::AccessDenied;
    const int fd = open->fd;
    const int64_t q_off = in->file_offset, q_len = in->length;
    std::vector<FileAllocatedRangeBuffer> list;
    const int err = co_await ctx.blocking([&]() {
        struct stat s;
        if (::fstat(fd, &s) != 0) return errno;
        const int64_t size = s.st_size;
        if (q_len == 0 || size == 0 || q_off >= size) return 0;
        const int64_t end = std::min<int64_t>(q_off + q_len, size);
        if (!is_sparse(fd)) {
            // A file that is not sparse is allocated everywhere below its size.
            list.push_back({q_off, end - q_off});
            return 0;
        }
        // The data extents the file system reports (SEEK_DATA / SEEK_HOLE).
        int64_t pos = q_off;
        while (pos < end) {
            off_t data = ::lseek(fd, pos, SEEK_DATA);
            if (data < 0) return errno == ENXIO ? 0 : errno;
            if (data >= end) break;
            off_t hole = ::lseek(fd, data, SEEK_HOLE);
            if (hole < 0) return errno;
            const int64_t stop = std::min<int64_t>(hole, end);
            list.push_back({int64_t(data), stop - int64_t(data)});
            pos = stop;
        }
        return 0;
    });
    if (err) co_return errno_to_status(err);
    // Nothing allocated needs no room at all; one range that does not fit is
    // STATUS_BUFFER_TOO_SMALL (smbtorture smb2.ioctl.sparse_qar_malformed), and beyond the first,
    // as many entries as MaxOutputResponse holds with STATUS_BUFFER_OVERFLOW for the rest.
    if (!list.empty() && req.max_output_response < FileAllocatedRangeBuffer::kSize)
        co_return NtStatus::BufferTooSmall;
    const size_t fit = req.max_output_response / FileAllocatedRangeBuffer::kSize;
    ByteVector out;
    ByteWriter w(out);
    for (size_t i = 0; i < list.size() && i < fit; ++i)
        list[i].encode(w);
    const NtStatus st = list.size() > fit ? NtStatus::BufferOverflow : NtStatus::Success;
    co_return reply(ctx, req, open->id, out, st);
}

// ---- Object ids (MS-FSA 2.1.5.10.1, .13) ----

// A stable object id derived from the file's (device, inode), as Samba does: no state to keep,
// the same answer for every open of the file.
NtStatus object_id(RequestContext& ctx, const IoctlRequest& req, const Open& open) {
    if (req.max_output_response < kObjectIdBufferSize) return NtStatus::InvalidParameter;
    ByteVector out;
    ByteWriter w(out);
    w.u64(open.file_id);  // ObjectId
    w.u64(open.device);
    w.zeros(16);          // BirthVolumeId
    w.u64(open.file_id);  // BirthObjectId = ObjectId
    w.u64(open.device);
    w.zeros(16);  // DomainId
    return reply(ctx, req, open.id, out);
}

// ---- Compression (MS-FSA 2.1.5.10.9, .30): never compressed here ----

NtStatus get_compression(RequestContext& ctx, const IoctlRequest& req, const Open& open) {
    if (req.max_output_response < 2) return NtStatus::InvalidParameter;
    ByteVector out;
    ByteWriter w(out);
    w.u16(kCompressionFormatNone);
    return reply(ctx, req, open.id, out);
}

NtStatus set_compression(RequestContext& ctx, const IoctlRequest& req, const Open& open) {
    if (req.input.size() < 2) return NtStatus::InvalidParameter;
    const uint16_t format = load_le16(req.input.data());
    if (format == kCompressionFormatNone) return reply(ctx, req, open.id, {});
    // The volume does not compress (FileFsAttributeInformation has no FILE_FILE_COMPRESSION).
    if (format == kCompressionFormatDefault || format == kCompressionFormatLznt1)
        return NtStatus::NotSupported;
    return NtStatus::InvalidParameter;
}

// MS-SMB2 3.3.5.15.9. What resiliency gives here is lock sequence replay detection
// (3.3.5.14); the open is not yet kept for a reconnect after its connection is lost (durable and
// resilient reconnects come with durable handles), so a client that loses its connection loses
// the handle as it would without resiliency.
NtStatus request_resiliency(RequestContext& ctx, const IoctlRequest& req, Open& open) {
    // <388>: Windows fails it on 2.0.2.
    if (ctx.dialect() == Dialect::Smb202) return NtStatus::InvalidDeviceRequest;
    auto r = NetworkResiliencyRequest::decode(req.input);
    if (!r) return NtStatus::InvalidParameter;
    // MaxResiliencyTimeout: 5 minutes; a timeout of 0 means 2 minutes (Windows' values, <389>).
    constexpr uint32_t kMaxResiliencyTimeoutMs = 300'000;
    constexpr uint32_t kDefaultResiliencyTimeoutMs = 120'000;
    if (r->timeout > kMaxResiliencyTimeoutMs) return NtStatus::InvalidParameter;
    {
        std::lock_guard lk(open.mu);
        open.is_resilient = true;
        open.resiliency_timeout_ms = r->timeout ? r->timeout : kDefaultResiliencyTimeoutMs;
    }
    ctx.log().debug("'", open.path, "' is resilient (", open.resiliency_timeout_ms, " ms)");
    return reply(ctx, req, open.id, {});
}

}  // namespace

asio::awaitable<NtStatus> ioctl(RequestContext& ctx) {
    auto req = IoctlRequest::parse(ctx.msg);
    if (!req) co_return req.status();

    // MS-SMB2 3.3.5.15: only FSCTLs travel over SMB2.
    if (req->flags != ioctl_flags::kIsFsctl) co_return NtStatus::NotSupported;
    const uint32_t code = req->ctl_code;
    std::shared_ptr<Open> open;
    if (fsctl_without_file(code)) {
        if (!is_all_ones(req->file_id)) co_return NtStatus::InvalidParameter;
    } else {
        auto found = ctx.find_open(req->file_id);
        if (!found) co_return found.status();
        open = std::move(*found);
    }
    // MS-SMB2 3.3.5.15: nothing larger than Connection.MaxTransactSize.
    const uint32_t max_transact = ctx.conn.state.max_transact_size;
    if (req->input.size() > max_transact || req->max_input_response > max_transact ||
        req->max_output_response > max_transact)
        co_return NtStatus::InvalidParameter;

    switch (code) {
        case fsctl::kValidateNegotiateInfo:
            co_return validate_negotiate(ctx, *req);
        case fsctl::kQueryNetworkInterfaceInfo: {
            // MS-SMB2 3.3.5.15.11: the addresses a multichannel client may bind further
            // channels from; refused where SMB2_GLOBAL_CAP_MULTI_CHANNEL was not offered.
            if (!(ctx.conn.state.server_capabilities & global_caps::kMultiChannel))
                co_return NtStatus::NotSupported;
            const auto& listen = ctx.server.config().global.interfaces;
            auto list =
                co_await ctx.blocking([&listen] { return query_network_interfaces(listen); });
            ByteVector out;
            ByteWriter w(out);
            NetworkInterfaceInfo::encode_list(w, list);
            if (out.size() > req->max_output_response) co_return NtStatus::BufferTooSmall;
            co_return reply(ctx, *req, req->file_id, out);
        }
        case fsctl::kDfsGetReferrals:
        case fsctl::kDfsGetReferralsEx:
            // MS-SMB2 3.3.5.15.2: IsDfsCapable is FALSE.
            co_return NtStatus::FsDriverRequired;
        case fsctl::kPipeWait:
            if (!ctx.tree->is_ipc()) co_return NtStatus::NotSupported;
            co_return pipe_wait(ctx, *req);
        case fsctl::kPipeTransceive:
        case fsctl::kPipePeek:
            // MS-SMB2 3.3.5.15.3 / .4: only on the named pipe share.
            if (!ctx.tree->is_ipc() || !open->pipe) co_return NtStatus::NotSupported;
            co_return code == fsctl::kPipeTransceive ? pipe_transceive(ctx, *req, *open)
                                                     : pipe_peek(ctx, *req, *open);
        default:
            break;
    }

    // Everything else is about a file or directory of a disk share.
    if (open->pipe) co_return NtStatus::InvalidDeviceRequest;
    switch (code) {
        case fsctl::kSrvEnumerateSnapshots: {
            // MS-SMB2 3.3.5.15.1: no previous versions are kept, so the array is empty.
            if (req->max_output_response < 16) co_return NtStatus::InvalidParameter;
            ByteVector out;
            ByteWriter w(out);
            SrvSnapshotArray{}.encode(w, req->max_output_response);
            co_return reply(ctx, *req, open->id, out);
        }
        case fsctl::kSrvRequestResumeKey:
            co_return request_resume_key(ctx, *req, *open);
        case fsctl::kSrvCopychunk:
        case fsctl::kSrvCopychunkWrite:
            co_return co_await copychunk(ctx, *req, std::move(open));
        case fsctl::kSrvReadHash:
            co_return NtStatus::NotSupported;  // MS-SMB2 3.3.5.15.7: no BranchCache
        case fsctl::kLmrRequestResiliency:
            co_return request_resiliency(ctx, *req, *open);
        case fsctl::kGetReparsePoint:
            // MS-FSA 2.1.5.10.14: nothing here is a reparse point (symlinks are followed inside
            // the share and never opened as such).
            co_return NtStatus::NotAReparsePoint;
        case fsctl::kSetSparse:
            co_return co_await set_sparse(ctx, *req, std::move(open));
        case fsctl::kSetZeroData:
            co_return co_await set_zero_data(ctx, *req, std::move(open));
        case fsctl::kQueryAllocatedRanges:
            co_return co_await query_allocated_ranges(ctx, *req, std::move(open));
        case fsctl::kCreateOrGetObjectId:
        case fsctl::kGetObjectId:
            co_return object_id(ctx, *req, *open);
        case fsctl::kGetCompression:
            co_return get_compression(ctx, *req, *open);
        case fsctl::kSetCompression:
            co_return set_compression(ctx, *req, *open);
        case fsctl::kDuplicateExtentsToFile:
            co_return co_await duplicate_extents(ctx, *req, std::move(open));
        default:
            break;
    }
    if (debug_enabled()) ctx.log().debug("FSCTL 0x", std::hex, code, " not implemented");
    // MS-SMB2 3.3.5.15.8: an MS-FSCC control the object store does not implement is
    // STATUS_INVALID_DEVICE_REQUEST (MS-FSA 2.1.5.10, "support for this operation is
    // optional"); a code MS-FSCC does not define is STATUS_NOT_SUPPORTED.
    co_return is_fscc_code(code) ? NtStatus::InvalidDeviceRequest : NtStatus::NotSupported;
}

}  // namespace daxsmbd::server::handlers
