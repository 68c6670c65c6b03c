// QUERY_INFO (MS-SMB2 3.3.5.20): file classes (MS-FSCC 2.4, MS-FSA 2.1.5.12), file-system classes
// (MS-FSCC 2.5, MS-FSA 2.1.5.13), the security descriptor (MS-FSA 2.1.5.14; stored or
// synthesized, see security_info.h) and quotas (not supported). The translation of metadata
// into the classes is in info_classes.h (file_info_classes.cpp, fs_info_classes.cpp); this file
// decides status, access and buffer sizes.
#include <sys/stat.h>

#include "protocol/access_mask.h"
#include "protocol/error.h"
#include "protocol/query_info.h"
#include "server/connection_state.h"
#include "server/errno_status.h"
#include "server/handlers/handlers.h"
#include "server/handlers/info_classes.h"
#include "server/handlers/security_info.h"
#include "server/log.h"
#include "server/server.h"
#include "server/state/file_table.h"
#include "server/state/share.h"
#include "server/vfs/ea.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace fic = protocol::file_info_class;
namespace am = protocol::access_mask;

namespace {

bool is_311(const RequestContext& ctx) {
    return ctx.dialect() == Dialect::Smb311;
}

// MS-SMB2 3.3.5.20.1/2: STATUS_INFO_LENGTH_MISMATCH carries, on 3.1.1, one empty default error
// context (ByteCount 8, ErrorDataLength 0, ErrorId 0); before 3.1.1 no error data.
NtStatus info_length_mismatch(RequestContext& ctx) {
    if (is_311(ctx)) {
        auto e = make_error_response({ErrorContext{}});
        ctx.error_data = std::move(e.error_data);
        ctx.error_context_count = e.error_context_count;
    }
    return NtStatus::InfoLengthMismatch;
}

// Sends `data` as the QUERY_INFO output: all of it, or (variable-size classes) the part that
// fits with STATUS_BUFFER_OVERFLOW.
NtStatus reply(RequestContext& ctx, ByteVector data, uint32_t output_buffer_length) {
    NtStatus st = info::fit_output(data, output_buffer_length);
    QueryInfoResponse resp;
    resp.buffer = data;
    resp.serialize(ctx.body());
    return st;
}

// The file table this open's share modes and pending delete live in.
bool delete_pending_of(const Open& open, FileTable& files) {
    if (open.local.file_registration)
        return open.local.file_registration->table().delete_pending(
            open.local.file_registration->key());
    return files.delete_pending(FileKey{open.local.device, open.local.file_id});
}

uint32_t current_mode(const Open& open) {
    return open.local.mode_set ? open.local.mode
                               : info::mode_from_create_options(open.create_options);
}

// Named pipes on IPC$ answer FileStandardInformation only, with the values Windows gives a pipe
// (a 4096-byte buffer, one link, delete pending as the pipe goes away at close).
NtStatus query_pipe(RequestContext& ctx, const QueryInfoRequest& req) {
    if (req.info_type != info_type::kFile) return NtStatus::NotSupported;
    uint8_t c = req.file_info_class;
    if (info::query_file_class_support(c) == info::ClassSupport::Invalid)
        return NtStatus::InvalidInfoClass;
    if (c != fic::kFileStandardInformation) return NtStatus::NotSupported;
    if (req.output_buffer_length < FileStandardInfo::kSize) return info_length_mismatch(ctx);
    FileStandardInfo s;
    s.allocation_size = 4096;
    s.end_of_file = 0;
    s.number_of_links = 1;
    s.delete_pending = true;
    s.directory = false;
    ByteVector data;
    ByteWriter w(data);
    s.encode(w);
    return reply(ctx, std::move(data), req.output_buffer_length);
}

// FileFullEaInformation (MS-SMB2 3.3.5.20.1, MS-FSA 2.1.5.12.12): the EAs named in the input
// list, or the enumeration from Open.CurrentEaIndex.
asio::awaitable<NtStatus> query_full_ea(RequestContext& ctx, std::shared_ptr<Open> open,
                                        const QueryInfoRequest& req) {
    struct Out {
        NtStatus status = NtStatus::Success;
        ByteVector data;
    };
    auto out = co_await ctx.blocking([&]() -> Result<Out> {
        std::lock_guard lk(open->mu);
        DAX_TRY(auto all, vfs::list_eas(open->local.fd));
        if (all.empty()) return Error(NtStatus::NoEasOnFile);
        FileFullEaInfo list;
        const bool by_name = !req.input.empty();
        size_t start = 0;
        if (by_name) {
            // SL_RESTART_SCAN and SL_INDEX_SPECIFIED do not apply to a named list.
            auto names = FileGetEaInfo::decode(req.input);
            if (!names) return Error(NtStatus::EaListInconsistent);
            for (const auto& n : names->names) {
                DAX_TRY(auto ea, vfs::get_ea(open->local.fd, n));
                // An EA the file does not have comes back with an empty value.
                if (ea)
                    list.entries.push_back(FullEaEntry{0, ea->name, ea->value});
                else
                    list.entries.push_back(FullEaEntry{0, n, {}});
            }
        } else {
            if (req.flags & query_info_flags::kRestartScan) open->ea_index = 0;
            start = open->ea_index;
            if (start >= all.size()) return Error(NtStatus::NoMoreEas);
            for (size_t i = start; i < all.size(); ++i)
                list.entries.push_back(FullEaEntry{0, all[i].name, all[i].value});
        }
        if ((req.flags & query_info_flags::kReturnSingleEntry) && list.entries.size() > 1)
            list.entries.resize(1);
        Out o;
        ByteWriter w(o.data);
        size_t n = list.encode(w, req.output_buffer_length);
        // Not even the first entry fits (MS-FSA 2.1.5.12.12).
        if (n == 0) return Error(NtStatus::BufferTooSmall);
        if (!by_name) open->ea_index = uint32_t(start + n);
        if (n < list.entries.size()) o.status = NtStatus::BufferOverflow;
        return o;
    });
    if (!out) co_return out.status();
    QueryInfoResponse resp;
    resp.buffer = out->data;
    resp.serialize(ctx.body());
    co_return out->status;
}

// QUERY_INFO of a file class (MS-SMB2 3.3.5.20.1): the class must be served, on this dialect,
// and the open must have the access it needs; Success when all of that holds.
NtStatus file_class_refusal(RequestContext& ctx, const Open& open, uint8_t c) {
    switch (info::query_file_class_support(c)) {
        case info::ClassSupport::Invalid:
            return NtStatus::InvalidInfoClass;
        case info::ClassSupport::NotSupported:
            return NtStatus::NotSupported;
        case info::ClassSupport::Supported:
            break;
    }
    // MS-SMB2 3.3.5.20.1: FileIdInformation needs a 3.x dialect, FileNormalizedNameInformation
    // 3.1.1 (smbtorture smb2.getinfo.normalized expects NOT_SUPPORTED below it).
    if (c == fic::kFileIdInformation && !is_smb3(ctx.dialect())) return NtStatus::NotSupported;
    if (c == fic::kFileNormalizedNameInformation && !is_311(ctx)) return NtStatus::NotSupported;

    // MS-SMB2 3.3.5.20.1 access checks.
    const uint32_t granted = open.granted_access;
    if ((c == fic::kFileBasicInformation || c == fic::kFileAllInformation ||
         c == fic::kFileNetworkOpenInformation || c == fic::kFileAttributeTagInformation) &&
        !(granted & am::kFileReadAttributes)) {
        ctx.log().debug("QUERY_INFO class ", int(c), " on '", open.local.path,
                        "' without READ_ATTRIBUTES");
        return NtStatus::AccessDenied;
    }
    if (c == fic::kFileFullEaInformation && !(granted & am::kFileReadEa))
        return NtStatus::AccessDenied;
    return NtStatus::Success;
}

// What the file classes are made of, read off the loop.
struct FileFacts {
    vfs::FileInfo fi;
    bool delete_pending = false;
    uint32_t ea_size = 0;
    uint64_t position = 0;
    uint32_t mode = 0;
    std::string path;
};

// Blocking.
Result<FileFacts> file_facts(Open& open, bool needs_ea, FileTable& files) {
    FileFacts f;
    DAX_TRY(f.fi, vfs::query_info(open.local.fd));
    f.delete_pending = delete_pending_of(open, files);
    if (needs_ea) {
        auto ea = vfs::ea_size(open.local.fd);
        f.ea_size = ea ? *ea : 0;
    }
    std::lock_guard lk(open.mu);
    f.position = open.local.position;
    f.mode = current_mode(open);
    f.path = open.local.path;
    return f;
}

// Encodes a supported file class other than FileStreamInformation and FileFullEaInformation.
Status encode_file_class(uint8_t c, const FileFacts& f, uint32_t granted, const TreeConnect& tree,
                         ByteWriter& w) {
    const vfs::FileInfo& fi = f.fi;
    switch (c) {
        case fic::kFileBasicInformation:
            info::basic_info(fi).encode(w);
            break;
        case fic::kFileStandardInformation:
            info::standard_info(fi, f.delete_pending).encode(w);
            break;
        case fic::kFileInternalInformation:
            FileInternalInfo{fi.file_id}.encode(w);
            break;
        case fic::kFileEaInformation:
            FileEaInfo{f.ea_size}.encode(w);
            break;
        case fic::kFileAccessInformation:
            FileAccessInfo{granted}.encode(w);
            break;
        case fic::kFilePositionInformation:
            // MS-SMB2 <418> lets a server answer 0; the handle's position is what was set
            // (smbtorture smb2.setinfo reads it back).
            FilePositionInfo{int64_t(f.position)}.encode(w);
            break;
        case fic::kFileModeInformation:
            FileModeInfo{f.mode}.encode(w);
            break;
        case fic::kFileAlignmentInformation:
            FileAlignmentInfo{file_alignment::kByte}.encode(w);
            break;
        case fic::kFileAllInformation: {
            FileAllInfo a;
            a.basic = info::basic_info(fi);
            a.standard = info::standard_info(fi, f.delete_pending);
            a.internal.index_number = fi.file_id;
            a.ea.ea_size = f.ea_size;
            a.access.access_flags = granted;
            a.position.current_byte_offset = int64_t(f.position);
            a.mode.mode = f.mode;
            a.alignment.alignment_requirement = file_alignment::kByte;
            // MS-SMB2 3.3.5.20.1 allows an empty name; the share-relative path is more useful
            // and is what Samba answers.
            a.name.file_name = info::windows_path(f.path, true);
            a.encode(w);
            break;
        }
        case fic::kFileCompressionInformation: {
            FileCompressionInfo ci;  // COMPRESSION_FORMAT_NONE
            ci.compressed_file_size = int64_t(fi.end_of_file);
            ci.encode(w);
            break;
        }
        case fic::kFileNetworkOpenInformation:
            info::network_open_info(fi).encode(w);
            break;
        case fic::kFileAttributeTagInformation:
            FileAttributeTagInfo{fi.file_attributes, 0}.encode(w);
            break;
        case fic::kFileAlternateNameInformation: {
            // MS-FSA 2.1.5.12.4: the share root has no short name.
            if (f.path.empty()) return Error(NtStatus::ObjectNameNotFound);
            auto slash = f.path.rfind('/');
            std::string_view last = f.path;
            if (slash != std::string::npos) last.remove_prefix(slash + 1);
            FileNameInfo{info::short_name(last)}.encode(w);
            break;
        }
        case fic::kFileNormalizedNameInformation:
            // MS-SMB2 3.3.5.20.1: relative to the share root, the root itself is "".
            FileNameInfo{info::windows_path(f.path, false)}.encode(w);
            break;
        case fic::kFileIdInformation:
            info::file_id_info(fi, tree.share->root->volume_serial()).encode(w);
            break;
        default:
            return Error(NtStatus::InternalError);
    }
    return {};
}

// FileStreamInformation: whole entries only (MS-FSA 2.1.5.12.29), what does not fit is left out.
NtStatus reply_stream_info(RequestContext& ctx, const vfs::FileInfo& fi,
                           uint32_t output_buffer_length) {
    ByteVector data;
    ByteWriter w(data);
    auto s = info::stream_info(fi);
    size_t n = s.encode(w, output_buffer_length);
    QueryInfoResponse resp;
    resp.buffer = data;
    resp.serialize(ctx.body());
    return n < s.streams.size() ? NtStatus::BufferOverflow : NtStatus::Success;
}

asio::awaitable<NtStatus> query_file(RequestContext& ctx, std::shared_ptr<Open> open,
                                     const QueryInfoRequest& req) {
    const uint8_t c = req.file_info_class;
    if (NtStatus st = file_class_refusal(ctx, *open, c); st != NtStatus::Success) co_return st;
    if (req.output_buffer_length < info::query_file_min_output(c))
        co_return info_length_mismatch(ctx);
    if (c == fic::kFileFullEaInformation) co_return co_await query_full_ea(ctx, open, req);

    const bool needs_ea = c == fic::kFileEaInformation || c == fic::kFileAllInformation;
    auto facts =
        co_await ctx.blocking([&] { return file_facts(*open, needs_ea, ctx.server.files); });
    if (!facts) co_return facts.status();
    if (c == fic::kFileStreamInformation)
        co_return reply_stream_info(ctx, facts->fi, req.output_buffer_length);

    ByteVector data;
    ByteWriter w(data);
    if (auto st = encode_file_class(c, *facts, open->granted_access, *ctx.tree, w); !st)
        co_return st.status();
    co_return reply(ctx, std::move(data), req.output_buffer_length);
}

asio::awaitable<NtStatus> query_fs(RequestContext& ctx, std::shared_ptr<Open> open,
                                   const QueryInfoRequest& req) {
    const uint8_t c = req.file_info_class;
    switch (info::query_fs_class_support(c)) {
        case info::ClassSupport::Invalid:
            co_return NtStatus::InvalidInfoClass;
        case info::ClassSupport::NotSupported:
            co_return NtStatus::NotSupported;
        case info::ClassSupport::Supported:
            break;
    }
    if (req.output_buffer_length < info::query_fs_min_output(c))
        co_return info_length_mismatch(ctx);
    std::shared_ptr<vfs::ShareRoot> root = ctx.tree->share->root;
    const bool needs_space = c == fs_info_class::kFileFsSizeInformation ||
                             c == fs_info_class::kFileFsFullSizeInformation ||
                             c == fs_info_class::kFileFsSectorSizeInformation;
    auto facts = co_await ctx.blocking([&]() -> Result<info::VolumeFacts> {
        vfs::FsSpace space;
        // The volume that holds the open (MS-SMB2 3.3.5.20.2): a share can span mounts.
        if (needs_space) {
            DAX_TRY(space, vfs::query_fs_space(open->local.fd));
        }
        return info::volume_facts(*root, space, ctx.tree->share->config.name, ctx.tree->read_only);
    });
    if (!facts) co_return facts.status();
    co_return reply(ctx, info::encode_fs_info(c, *facts), req.output_buffer_length);
}

asio::awaitable<NtStatus> query_security(RequestContext& ctx, std::shared_ptr<Open> open,
                                         const QueryInfoRequest& req) {
    namespace si = security_information;
    // MS-SMB2 3.3.5.20.3: flags that are not defined are ignored.
    const uint32_t secinfo = req.additional_information;
    // MS-FSA 2.1.5.14: the SACL needs ACCESS_SYSTEM_SECURITY, the other parts READ_CONTROL.
    if ((secinfo & si::kSacl) && !(open->granted_access & am::kAccessSystemSecurity))
        co_return NtStatus::AccessDenied;
    if ((secinfo & (si::kOwner | si::kGroup | si::kDacl | si::kLabel)) &&
        !(open->granted_access & am::kReadControl))
        co_return NtStatus::AccessDenied;
    // The stored descriptor, else the one of the POSIX mode (security_info.h).
    auto got = co_await ctx.blocking([&]() -> Result<ByteVector> {
        return security::query_descriptor(open->local.fd, secinfo);
    });
    if (!got) {
        ctx.log().info("security descriptor of '", open->local.path,
                       "': ", status_name(got.status()));
        co_return got.status();
    }
    ByteVector sd = std::move(*got);
    if (req.output_buffer_length < sd.size()) {
        // MS-SMB2 3.3.5.20.3: never a partial descriptor; the error data says how much is needed.
        auto e = make_buffer_too_small_error(uint32_t(sd.size()), is_311(ctx));
        ctx.error_data = std::move(e.error_data);
        ctx.error_context_count = e.error_context_count;
        co_return NtStatus::BufferTooSmall;
    }
    co_return reply(ctx, std::move(sd), req.output_buffer_length);
}

}  // namespace

asio::awaitable<NtStatus> query_info(RequestContext& ctx) {
    auto req = QueryInfoRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    std::shared_ptr<Open> open = *found;

    // MS-SMB2 3.3.5.20 (<414>: Windows fails it).
    if (req->output_buffer_length > ctx.conn.state.max_transact_size)
        co_return NtStatus::InvalidParameter;
    if (open->local.pipe || ctx.tree->is_ipc()) co_return query_pipe(ctx, *req);
    if (!ctx.tree->share || !ctx.tree->share->root || open->local.fd < 0)
        co_return NtStatus::InvalidHandle;

    switch (req->info_type) {
        case info_type::kFile:
            co_return co_await query_file(ctx, open, *req);
        case info_type::kFileSystem:
            co_return co_await query_fs(ctx, open, *req);
        case info_type::kSecurity:
            co_return co_await query_security(ctx, open, *req);
        case info_type::kQuota:
            // MS-SMB2 3.3.5.20.4: the object store does not support user quotas.
            co_return NtStatus::NotSupported;
        default:
            co_return NtStatus::InvalidParameter;
    }
}

}  // namespace daxsmbd::server::handlers
