// The file-system controls of MS-FSA 2.1.5.10 that Linux can express: sparse files, zeroing,
// allocated ranges (SEEK_DATA / SEEK_HOLE), object ids and compression (never compressed).
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/file_info.h"
#include "server/connection_state.h"
#include "server/errno_status.h"
#include "server/handlers/fsctl.h"
#include "server/log.h"
#include "server/server.h"
#include "server/state/lock_table.h"
#include "server/vfs/metadata.h"

namespace daxsmbd::server::handlers::fsctls {

using namespace protocol;
namespace am = protocol::access_mask;

namespace {

// FILE_OBJECTID_BUFFER (MS-FSCC 2.1.3): ObjectId, BirthVolumeId, BirthObjectId, DomainId.
constexpr size_t kObjectIdBufferSize = 64;
// COMPRESSION_FORMAT_* (MS-FSCC 2.3.18, 2.3.67).
constexpr uint16_t kCompressionFormatNone = 0;
constexpr uint16_t kCompressionFormatDefault = 1;
constexpr uint16_t kCompressionFormatLznt1 = 2;

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

}  // namespace

asio::awaitable<NtStatus> set_sparse(RequestContext& ctx, const IoctlRequest& req,
                                     std::shared_ptr<Open> open) {
    // MS-FSA 2.1.5.10.38: FILE_SET_SPARSE_BUFFER is optional (absent means TRUE).
    const bool sparse = req.input.empty() || req.input[0] != std::byte{0};
    if (open->local.is_directory) co_return NtStatus::InvalidParameter;
    if (!(open->granted_access &
          (am::kFileWriteData | am::kFileAppendData | am::kFileWriteAttributes))) {
        ctx.log().refusal("FSCTL_SET_SPARSE without write access refused");
        co_return NtStatus::AccessDenied;
    }
    const int fd = open->local.fd;
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
    if (open->local.is_directory) co_return NtStatus::InvalidParameter;
    if (in->file_offset < 0 || in->beyond_final_zero < 0 || in->file_offset > in->beyond_final_zero)
        co_return NtStatus::InvalidParameter;
    if (!(open->granted_access & am::kFileWriteData)) co_return NtStatus::AccessDenied;
    if (in->file_offset == in->beyond_final_zero) co_return reply(ctx, req, open->id, {});
    const int fd = open->local.fd;
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
    if (!ctx.server.locks.allows_io(open->local.device, open->local.file_id, open.get(),
                                    range.start, range.len, true))
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
    if (open->local.is_directory) co_return NtStatus::InvalidParameter;
    if (!(open->granted_access & am::kFileReadData)) co_return NtStatus::AccessDenied;
    const int fd = open->local.fd;
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
    w.u64(open.local.file_id);  // ObjectId
    w.u64(open.local.device);
    w.zeros(16);                // BirthVolumeId
    w.u64(open.local.file_id);  // BirthObjectId = ObjectId
    w.u64(open.local.device);
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

}  // namespace daxsmbd::server::handlers::fsctls
