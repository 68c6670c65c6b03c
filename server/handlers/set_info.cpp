// SET_INFO (MS-SMB2 3.3.5.21): file classes (MS-FSCC 2.4, MS-FSA 2.1.5.15), file-system classes
// (none can be applied) and security descriptors (stored, see security_info.h).
//
// Decisions (where the specifications leave room or daxsmbd differs from Windows):
//   - Read-only share: every class that changes the file answers STATUS_ACCESS_DENIED (the open
//     could not have been granted the rights anyway); FilePositionInformation and
//     FileModeInformation, which only change the handle, still work. A read-only mount answers
//     STATUS_MEDIA_WRITE_PROTECTED (MS-FSA 2.1.5.15).
//   - FileBasicInformation times: 0 and -1 leave a time alone, -2 too. -1 ("stop updating this
//     time for this handle") is not enforced: Linux updates mtime/ctime on every write, and
//     putting the time back after each WRITE is not done (yet). ChangeTime cannot be set on
//     Linux and is ignored.
//   - FileAllocationInformation below the end of file truncates to exactly that size (Samba's
//     behaviour; MS-FSA rounds up to a cluster first), see info::set_allocation().
//   - FileValidDataLengthInformation: Linux has no valid data length (it always equals the end
//     of file), so a set succeeds when it asks for exactly the end of file and is
//     STATUS_INVALID_PARAMETER otherwise (MS-FSA 2.1.5.15.15: below the current VDL or beyond
//     the end of file).
//   - FileShortNameInformation: STATUS_SHORT_NAMES_NOT_ENABLED_ON_VOLUME (no 8.3 names).
//   - FileDispositionInformationEx with FILE_DISPOSITION_POSIX_SEMANTICS is handled like a plain
//     delete (the name goes at the last close); FILE_DISPOSITION_ON_CLOSE sets or clears this
//     handle's delete-on-close.
//   - Renaming a directory while a file or directory below it is open: STATUS_ACCESS_DENIED
//     (MS-FSA 2.1.4.2 / 2.1.5.15.12). Opens of the same file through other handles follow the
//     rename (their path is updated).
//   - SMB2_0_INFO_SECURITY: after the access checks of MS-SMB2 3.3.5.21.3, the named parts are
//     stored (security_info.h); a read-only share refuses it with STATUS_ACCESS_DENIED, a file
//     system without user xattrs with STATUS_NOT_SUPPORTED.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>

#include "protocol/access_mask.h"
#include "protocol/file_info.h"
#include "protocol/fs_info.h"
#include "protocol/set_info.h"
#include "server/connection_state.h"
#include "server/errno_status.h"
#include "server/handlers/handlers.h"
#include "server/handlers/info_classes.h"
#include "server/handlers/security_info.h"
#include "server/io/data_path.h"
#include "server/log.h"
#include "server/server.h"
#include "server/state/file_table.h"
#include "server/state/share.h"
#include "server/vfs/ea.h"
#include "server/wakeup.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace fic = protocol::file_info_class;
namespace am = protocol::access_mask;

namespace {

// The file table this open's share modes and pending delete live in (`files`, the server's,
// for an open made without one).
FileTable& table_of(const Open& open, FileTable& files) {
    return open.local.file_registration ? open.local.file_registration->table() : files;
}

FileKey key_of(const Open& open) {
    return FileKey{open.local.device, open.local.file_id};
}

uint32_t current_mode(const Open& open) {
    return open.local.mode_set ? open.local.mode
                               : info::mode_from_create_options(open.create_options);
}

Status require(const Open& open, uint32_t access) {
    if (!(open.granted_access & access)) return Error(NtStatus::AccessDenied);
    return {};
}

// MS-FSA 2.1.5.15.3 / 2.1.5.15.4: may this file's delete become pending?
Status check_deletable(const vfs::ShareRoot& root, const Open& open, bool ignore_readonly) {
    if (open.local.path.empty()) return Error(NtStatus::AccessDenied);  // the share root
    DAX_TRY(auto fi, vfs::query_info(open.local.fd));
    if ((fi.file_attributes & vfs::kAttrReadonly) && !ignore_readonly)
        return Error(NtStatus::CannotDelete);
    if (fi.is_directory) {
        DAX_TRY(bool empty, info::directory_is_empty(root, open.local.path));
        if (!empty) return Error(NtStatus::DirectoryNotEmpty);
    }
    return {};
}

Status set_disposition(const vfs::ShareRoot& root, Open& open, Bytes buf, FileTable& all) {
    DAX_TRY(auto d, FileDispositionInfo::decode(buf));
    FileTable& files = table_of(open, all);
    if (d.delete_pending) DAX_CHECK(check_deletable(root, open, false));
    return files.set_delete_pending(key_of(open), d.delete_pending);
}

Status set_disposition_ex(const vfs::ShareRoot& root, Open& open, Bytes buf, FileTable& all) {
    namespace dx = file_disposition_ex;
    DAX_TRY(auto d, FileDispositionInfoEx::decode(buf));
    constexpr uint32_t kKnown = dx::kDelete | dx::kPosixSemantics | dx::kForceImageSectionCheck |
                                dx::kOnClose | dx::kIgnoreReadonlyAttribute;
    if (d.flags & ~kKnown) return Error(NtStatus::NotSupported);  // MS-FSA 2.1.5.15.4
    FileTable& files = table_of(open, all);
    const bool on_close = d.flags & dx::kOnClose;
    if (on_close && !open.local.file_registration) return Error(NtStatus::NotSupported);
    if (d.flags & dx::kDelete) {
        // IGNORE_READONLY_ATTRIBUTE counts only with the right to change the attribute.
        bool ignore_ro = (d.flags & dx::kIgnoreReadonlyAttribute) &&
                         (open.granted_access & am::kFileWriteAttributes);
        DAX_CHECK(check_deletable(root, open, ignore_ro));
    }
    const bool del = d.flags & dx::kDelete;
    if (on_close)
        return files.set_delete_on_close(key_of(open), open.local.file_registration->token(), del);
    return files.set_delete_pending(key_of(open), del);
}

// Around a truncation of this server: RDMA placement into the file waits (io::DataPath::
// truncating), whether or not the truncation succeeds.
class TruncationFence {
  public:
    explicit TruncationFence(io::DataPath& data) : data_(data) { data_.truncating(); }
    ~TruncationFence() { data_.truncation_over(); }
    TruncationFence(const TruncationFence&) = delete;
    TruncationFence& operator=(const TruncationFence&) = delete;

  private:
    io::DataPath& data_;
};

Status set_end_of_file(Open& open, Bytes buf) {
    DAX_TRY(auto e, FileEndOfFileInfo::decode(buf));
    if (open.local.is_directory || e.end_of_file < 0) return Error(NtStatus::InvalidParameter);
    std::shared_ptr<io::DataPath> data = io::data_path_of(open);
    TruncationFence fence(*data);
    if (::ftruncate(open.local.fd, e.end_of_file) != 0) return Error(errno_to_status(errno));
    // State shared by every open of the file (the DAX mapping) drops what the size no longer
    // covers.
    data->truncated(uint64_t(e.end_of_file));
    return {};
}

Status set_allocation(Open& open, Bytes buf) {
    DAX_TRY(auto a, FileAllocationInfo::decode(buf));
    if (open.local.is_directory || a.allocation_size < 0) return Error(NtStatus::InvalidParameter);
    std::shared_ptr<io::DataPath> data = io::data_path_of(open);
    TruncationFence fence(*data);
    auto st = info::set_allocation(open.local.fd, a.allocation_size);
    // An allocation below the end of file truncated the file (info::set_allocation).
    if (st) {
        if (auto known = data->known_size(); known && uint64_t(a.allocation_size) < *known)
            data->truncated(uint64_t(a.allocation_size));
    }
    return st;
}

Status set_valid_data_length(Open& open, Bytes buf) {
    DAX_TRY(auto v, FileValidDataLengthInfo::decode(buf));
    if (open.local.is_directory) return Error(NtStatus::InvalidParameter);
    struct stat st {};
    if (::fstat(open.local.fd, &st) != 0) return Error(errno_to_status(errno));
    // The valid data length is the end of file on Linux: it can neither shrink nor pass it.
    if (v.valid_data_length != st.st_size) return Error(NtStatus::InvalidParameter);
    return {};
}

Status set_full_ea(Open& open, Bytes buf) {
    auto list = FileFullEaInfo::decode(buf);
    // MS-SMB2 3.3.5.21.1: a malformed EA buffer.
    if (!list) return Error(NtStatus::EaListInconsistent);
    std::vector<vfs::Ea> eas;
    eas.reserve(list->entries.size());
    for (auto& e : list->entries) {
        // MS-FSA 2.1.5.15.6: FILE_NEED_EA is the only flag.
        if (e.flags & ~kFileNeedEa) return Error(NtStatus::InvalidEaName);
        eas.push_back(
            vfs::Ea{e.name, std::vector<std::byte>(e.value.begin(), e.value.end()), e.flags});
    }
    return vfs::set_eas(open.local.fd, eas);
}

Status set_position(Open& open, Bytes buf) {
    DAX_TRY(auto p, FilePositionInfo::decode(buf));
    std::lock_guard lk(open.mu);
    // MS-FSA 2.1.5.15.10; sector-aligned under FILE_NO_INTERMEDIATE_BUFFERING (512 bytes).
    if (p.current_byte_offset < 0) return Error(NtStatus::InvalidParameter);
    if ((current_mode(open) & file_mode::kNoIntermediateBuffering) &&
        p.current_byte_offset % 512 != 0)
        return Error(NtStatus::InvalidParameter);
    open.local.position = uint64_t(p.current_byte_offset);
    return {};
}

Status set_mode(Open& open, Bytes buf) {
    DAX_TRY(auto m, FileModeInfo::decode(buf));
    std::lock_guard lk(open.mu);
    DAX_TRY(uint32_t mode, info::apply_mode(current_mode(open), m.mode));
    open.local.mode = mode;
    open.local.mode_set = true;
    return {};
}

// True when an open of the same share lies below directory `dir_rel` (MS-FSA 2.1.4.2: a
// directory with open files cannot be renamed).
bool has_open_children(Server& server, const Share* share, const std::string& dir_rel) {
    const std::string prefix = dir_rel + "/";
    bool found = false;
    // remove_if with a predicate that never removes: the one way to look at every open.
    server.opens.remove_if([&](const Open& o) {
        if (!found && o.tree && o.tree->share.get() == share &&
            o.local.path.size() > prefix.size() &&
            o.local.path.compare(0, prefix.size(), prefix) == 0)
            found = true;
        return false;
    });
    return found;
}

// Every open of the same file on the same share follows a rename.
void update_paths(Server& server, const Share* share, const FileKey& key,
                  const std::string& new_rel) {
    std::vector<uint64_t> same;
    server.opens.remove_if([&](const Open& o) {
        if (o.tree && o.tree->share.get() == share && o.local.device == key.device &&
            o.local.file_id == key.inode)
            same.push_back(o.id.volatile_);
        return false;
    });
    for (uint64_t id : same) {
        auto o = server.opens.find(id);
        if (!o) continue;  // closed in between
        std::lock_guard lk(o->mu);
        o->local.path = new_rel;
    }
}

// How long a rename waits for the holders of the leases it breaks (MS-SMB2 3.3.2.5: Windows
// 35 s); then their breaks expire.
constexpr auto kRenameBreakTimeout = std::chrono::seconds(35);

// A rename that breaks HANDLE caching of other leases waits, async, until their holders
// acknowledge (or close, or run out of time), then tries again (`res` is the new attempt's
// outcome; smbtorture smb2.lease.rename_wait). `key`, which each attempt may change, is the file
// whose breaks are awaited: the renamed file, or the file it replaces. Success, or Cancelled. A
// rename that may not go async (inside a compound, past the async limit) waits all the same,
// without an interim response: the wait is bounded by the break timeout.
asio::awaitable<NtStatus> wait_for_rename_breaks(
    RequestContext& ctx, FileTable& files, const FileKey& key, Result<std::string>& res,
    const std::function<Result<std::string>()>& attempt) {
    auto wake = Wakeup::make(ctx.executor());
    const auto deadline = std::chrono::steady_clock::now() + kRenameBreakTimeout;
    ctx.pending->waiter = wake;
    (void)co_await ctx.go_async();
    while (!res && res.status() == NtStatus::OplockBreakInProgress) {
        if (files.when_breaks_resolved(key, wake->waker())) {
            const bool woken = co_await wake->wait(deadline);
            if (ctx.cancelled()) co_return NtStatus::Cancelled;
            if (!woken) files.expire_breaks(key);  // MS-SMB2 3.3.2.5
        }
        res = co_await ctx.blocking(attempt);
    }
    co_return NtStatus::Success;
}

asio::awaitable<NtStatus> set_rename(RequestContext& ctx, std::shared_ptr<Open> open, Bytes buf) {
    // MS-SMB2 3.3.5.21.1: the size check comes first, then RootDirectory, then DELETE access.
    auto r = FileRenameInfo::decode(buf);
    if (!r) co_return r.status();
    if (r->root_directory != 0) co_return NtStatus::InvalidParameter;
    if (!(open->granted_access & am::kDelete)) co_return NtStatus::AccessDenied;
    const Share* share = ctx.tree->share.get();
    if (open->local.is_directory && has_open_children(ctx.server, share, open->local.path)) {
        ctx.log().debug("rename of '", open->local.path, "' refused: open children");
        co_return NtStatus::AccessDenied;
    }
    std::shared_ptr<vfs::ShareRoot> root = ctx.tree->share->root;
    const FileKey key = key_of(*open);
    FileTable& files = table_of(*open, ctx.server.files);
    // MS-FSA 2.1.5.15.12: other lease keys lose HANDLE caching before the name changes.
    std::function<bool()> breaks_pending;
    if (const auto& reg = open->local.file_registration)
        breaks_pending = [&files, key, token = reg->token()] {
            return files.break_handle_caching(key, token);
        };
    FileKey wait_on = key;  // the file whose breaks the rename waits for
    std::function<Result<std::string>()> attempt = [&]() -> Result<std::string> {
        std::string from;
        {
            std::lock_guard lk(open->mu);
            from = open->local.path;
        }
        DAX_TRY(auto to,
                info::rename_file(*root, files, key, open->local.is_directory, from, r->file_name,
                                  r->replace_if_exists, breaks_pending, &wait_on));
        if (to != from) {
            files.set_path(key, to);
            // The name left one directory and entered another (or the same).
            if (const auto& reg = open->local.file_registration) {
                reg->break_parent_directory_leases(from);
                reg->break_parent_directory_leases(to);
            }
        }
        return to;
    };
    auto renamed = co_await ctx.blocking(attempt);
    if (!renamed && renamed.status() == NtStatus::OplockBreakInProgress) {
        NtStatus st = co_await wait_for_rename_breaks(ctx, files, wait_on, renamed, attempt);
        if (st != NtStatus::Success) co_return st;
    }
    if (!renamed) co_return renamed.status();
    update_paths(ctx.server, share, key, *renamed);
    co_return NtStatus::Success;
}

// MS-SMB2 3.3.5.21.1: the access the open must hold for info class `c`.
Status check_set_file_access(const Open& open, uint8_t c) {
    switch (c) {
        case fic::kFileBasicInformation:
            return require(open, am::kFileWriteAttributes);
        case fic::kFileDispositionInformation:
        case fic::kFileDispositionInformationEx:
        case fic::kFileShortNameInformation:
            return require(open, am::kDelete);
        case fic::kFileFullEaInformation:
            return require(open, am::kFileWriteEa);
        case fic::kFileAllocationInformation:
        case fic::kFileEndOfFileInformation:
        case fic::kFileValidDataLengthInformation:
            return require(open, am::kFileWriteData);
        default:
            return {};
    }
}

asio::awaitable<NtStatus> set_file(RequestContext& ctx, std::shared_ptr<Open> open,
                                   const SetInfoRequest& req) {
    const uint8_t c = req.file_info_class;
    switch (info::set_file_class_support(c)) {
        case info::ClassSupport::Invalid:
            co_return NtStatus::InvalidInfoClass;
        case info::ClassSupport::NotSupported:
            co_return NtStatus::NotSupported;
        case info::ClassSupport::Supported:
            break;
    }
    Bytes buf = req.buffer;
    // Classes that only change the handle, not the file.
    if (c == fic::kFilePositionInformation) co_return set_position(*open, buf).status();
    if (c == fic::kFileModeInformation) co_return set_mode(*open, buf).status();

    if (ctx.tree->read_only) {
        ctx.log().debug("SET_INFO class ", int(c), " on read-only share");
        co_return NtStatus::AccessDenied;
    }
    std::shared_ptr<vfs::ShareRoot> root = ctx.tree->share->root;
    if (root->read_only()) co_return NtStatus::MediaWriteProtected;  // MS-FSA 2.1.5.15

    if (auto st = check_set_file_access(*open, c); !st) co_return st.status();

    switch (c) {
        case fic::kFileRenameInformation:
            co_return co_await set_rename(ctx, open, buf);
        case fic::kFileShortNameInformation:
            co_return NtStatus::ShortNamesNotEnabledOnVolume;
        case fic::kFileLinkInformation: {
            auto l = FileLinkInfo::decode(buf);
            if (!l) co_return l.status();
            if (l->root_directory != 0) co_return NtStatus::InvalidParameter;
            if (open->local.is_directory)
                co_return NtStatus::FileIsADirectory;  // MS-FSA 2.1.5.15.7
            auto st = co_await ctx.blocking([&] {
                std::string from;
                {
                    std::lock_guard lk(open->mu);
                    from = open->local.path;
                }
                return info::link_file(*root, table_of(*open, ctx.server.files), key_of(*open),
                                       from, l->file_name, l->replace_if_exists);
            });
            co_return st.status();
        }
        default:
            break;
    }

    auto apply = [&]() -> Status {
        switch (c) {
            case fic::kFileBasicInformation: {
                DAX_TRY(auto b, FileBasicInfo::decode(buf));
                vfs::BasicInfoUpdate u;
                u.creation_time = b.creation_time;
                u.last_access_time = b.last_access_time;
                u.last_write_time = b.last_write_time;
                u.change_time = b.change_time;
                u.file_attributes = b.file_attributes;
                u.is_share_root = open->local.path.empty();
                return vfs::set_basic_info(open->local.fd, u);
            }
            case fic::kFileDispositionInformation:
                return set_disposition(*root, *open, buf, ctx.server.files);
            case fic::kFileDispositionInformationEx:
                return set_disposition_ex(*root, *open, buf, ctx.server.files);
            case fic::kFileEndOfFileInformation:
                // MS-FSA 2.1.4.12 (SET_INFORMATION): LEVEL_II oplocks of others break.
                if (open->local.file_registration)
                    open->local.file_registration->break_others_level2_oplocks();
                return set_end_of_file(*open, buf);
            case fic::kFileAllocationInformation:
                // MS-FSA 2.1.4.12 (SET_INFORMATION): LEVEL_II oplocks of others break.
                if (open->local.file_registration)
                    open->local.file_registration->break_others_level2_oplocks();
                return set_allocation(*open, buf);
            case fic::kFileValidDataLengthInformation:
                return set_valid_data_length(*open, buf);
            case fic::kFileFullEaInformation:
                return set_full_ea(*open, buf);
            default:
                return Error(NtStatus::InternalError);
        }
    };
    auto st = co_await ctx.blocking([&]() -> Status {
        DAX_CHECK(apply());
        // Times, attributes and sizes are what a directory lease holder caches of its
        // children (Windows breaks it for each; the open's own parent lease excepted).
        const bool seen_by_parent = c == fic::kFileBasicInformation ||
                                    c == fic::kFileEndOfFileInformation ||
                                    c == fic::kFileAllocationInformation;
        if (seen_by_parent && open->local.file_registration) {
            std::string path;
            {
                std::lock_guard lk(open->mu);
                path = open->local.path;
            }
            open->local.file_registration->break_parent_directory_leases(path);
        }
        return {};
    });
    co_return st.status();
}

NtStatus set_fs(const Open& open, const SetInfoRequest& req) {
    switch (info::set_fs_class_support(req.file_info_class)) {
        case info::ClassSupport::Invalid:
            return NtStatus::InvalidInfoClass;
        default:
            break;
    }
    // MS-SMB2 3.3.5.21.2: FileFsControlInformation / FileFsObjectIdInformation need
    // FILE_WRITE_DATA; none of the classes can be applied here.
    if ((req.file_info_class == fs_info_class::kFileFsControlInformation ||
         req.file_info_class == fs_info_class::kFileFsObjectIdInformation) &&
        !(open.granted_access & am::kFileWriteData))
        return NtStatus::AccessDenied;
    return NtStatus::NotSupported;
}

NtStatus check_set_security_access(const Open& open, const SetInfoRequest& req) {
    namespace si = security_information;
    const uint32_t secinfo = req.additional_information;
    const uint32_t g = open.granted_access;
    // MS-SMB2 3.3.5.21.3 access checks.
    if ((secinfo & si::kSacl) && !(g & am::kAccessSystemSecurity)) return NtStatus::AccessDenied;
    if ((secinfo & si::kDacl) && !(g & am::kWriteDac)) return NtStatus::AccessDenied;
    if ((secinfo & (si::kLabel | si::kGroup | si::kOwner)) && !(g & am::kWriteOwner))
        return NtStatus::AccessDenied;
    if ((secinfo & si::kAttribute) && !(g & am::kWriteDac)) return NtStatus::AccessDenied;
    if ((secinfo & si::kScope) && !(g & am::kAccessSystemSecurity)) return NtStatus::AccessDenied;
    if ((secinfo & si::kBackup) &&
        (g & (am::kWriteDac | am::kWriteOwner | am::kAccessSystemSecurity)) !=
            (am::kWriteDac | am::kWriteOwner | am::kAccessSystemSecurity))
        return NtStatus::AccessDenied;
    return NtStatus::Success;
}

// SMB2_0_INFO_SECURITY (MS-SMB2 3.3.5.21.3, MS-FSA 2.1.5.16): the parts named are replaced in the
// file's descriptor and stored (security_info.h).
asio::awaitable<NtStatus> set_security(RequestContext& ctx, std::shared_ptr<Open> open,
                                       const SetInfoRequest& req) {
    if (NtStatus st = check_set_security_access(*open, req); st != NtStatus::Success) co_return st;
    if (ctx.tree->read_only) co_return NtStatus::AccessDenied;
    auto st = co_await ctx.blocking([&]() -> Status {
        return security::set_descriptor(open->local.fd, req.buffer, req.additional_information);
    });
    if (!st) {
        // The first bytes of what was refused, for whoever reads the log.
        std::string head;
        static constexpr char kHex[] = "0123456789abcdef";
        for (size_t i = 0; i < req.buffer.size() && i < 64; ++i) {
            head.push_back(kHex[uint8_t(req.buffer[i]) >> 4]);
            head.push_back(kHex[uint8_t(req.buffer[i]) & 15]);
        }
        ctx.log().info("SET_INFO security of '", open->local.path, "' (0x", std::hex,
                       req.additional_information, std::dec, ", ", req.buffer.size(),
                       " bytes: ", head, "): ", status_name(st.status()));
        co_return st.status();
    }
    co_return NtStatus::Success;
}

}  // namespace

asio::awaitable<NtStatus> set_info(RequestContext& ctx) {
    auto req = SetInfoRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    std::shared_ptr<Open> open = *found;

    // MS-SMB2 3.3.5.21: BufferLength above MaxTransactSize (<427>) or zero.
    if (req->buffer.size() > ctx.conn.state.max_transact_size || req->buffer.empty())
        co_return NtStatus::InvalidParameter;
    if (open->local.pipe || ctx.tree->is_ipc()) co_return NtStatus::NotSupported;
    if (!ctx.tree->share || !ctx.tree->share->root || open->local.fd < 0)
        co_return NtStatus::InvalidHandle;

    NtStatus st = NtStatus::InvalidParameter;
    switch (req->info_type) {
        case info_type::kFile:
            st = co_await set_file(ctx, open, *req);
            break;
        case info_type::kFileSystem:
            st = set_fs(*open, *req);
            break;
        case info_type::kSecurity:
            st = co_await set_security(ctx, open, *req);
            break;
        case info_type::kQuota:
            st = NtStatus::NotSupported;  // MS-SMB2 3.3.5.21.4
            break;
        default:
            break;
    }
    if (st == NtStatus::Success) SetInfoResponse{}.serialize(ctx.body());
    co_return st;
}

}  // namespace daxsmbd::server::handlers
