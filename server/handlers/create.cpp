// CREATE (MS-SMB2 3.3.5.9; MS-FSA 2.1.5.1 for what the object store does). See create.h for the
// decisions where daxsmbd had a choice.
#include "server/handlers/create.h"

// GCC 12 flags Asio's awaitable-frame operator new/delete pair as mismatched in this file's
// coroutines once their frames are inlined (a false positive: both come from Asio's
// thread_info_base allocator); clang and GCC 13 do not.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <chrono>

#include "auth/access_check.h"
#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "server/connection_state.h"
#include "server/errno_status.h"
#include "server/handlers/create_caching.h"
#include "server/handlers/create_contexts.h"
#include "server/handlers/handlers.h"
#include "server/handlers/security_info.h"
#include "server/io/data_path.h"
#include "server/log.h"
#include "server/persistent_handles.h"
#include "server/rpcpipe/pipe_endpoint.h"
#include "server/server.h"
#include "server/vfs/dir.h"
#include "server/vfs/ea.h"
#include "server/vfs/open.h"
#include "server/vfs/path.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace am = protocol::access_mask;
namespace co = protocol::create_options;
namespace cd = protocol::create_disposition;
namespace fa = protocol::file_attributes;

namespace {

// FILE_CREATE_TREE_CONNECTION (MS-SMB2 2.2.13: "ignored"; Windows answers NOT_SUPPORTED, see
// smbtorture smb2.create.gentest not_supported_mask 0x00102080).
constexpr uint32_t kCreateTreeConnection = 0x00000080;
constexpr uint32_t kReservedCreateOptions = 0xFF000000;
// The FileAttributes a CREATE may carry: gentest's ok_mask 0x00003fb7 plus ENCRYPTED (refused
// separately). VOLUME, DEVICE, INTEGRITY_STREAM and everything from 0x10000 up are invalid.
constexpr uint32_t kValidCreateAttributes = 0x00007FB7;
// Options the SMB2 server clears before opening (MS-SMB2 3.3.5.9).
constexpr uint32_t kClearedOptions = co::kCompleteIfOplocked | co::kSynchronousIoAlert |
                                     co::kSynchronousIoNonalert | co::kOpenForFreeSpaceQuery;
// Rights a READONLY file never grants through MAXIMUM_ALLOWED (MS-FSA 2.1.5.1.2.1).
constexpr uint32_t kReadonlyStrips =
    am::kFileWriteData | am::kFileAppendData | am::kFileAddSubdirectory | am::kFileDeleteChild;

// Internal: lost a race with another creator / deleter; resolve the name again.
struct Attempt {
    Result<CreateOutcome> result = Error(NtStatus::InternalError);
    bool retry = false;
};

Attempt fail(NtStatus s) {
    Attempt a;
    a.result = Error(s);
    return a;
}
Attempt retry() {
    Attempt a;
    a.retry = true;
    return a;
}

struct Plan {
    const CreateParams& p;
    uint32_t options = 0;  // after MS-SMB2 3.3.5.9 clearing
    uint32_t desired = 0;  // generic-mapped, without MAXIMUM_ALLOWED
    bool want_max = false;
    bool dir_wanted = false;     // FILE_DIRECTORY_FILE
    bool nondir_wanted = false;  // FILE_NON_DIRECTORY_FILE
    bool delete_on_close = false;
    bool trailing_separator = false;
};

// Opens the object with a descriptor fit for what the open may do. Directories are read-only
// descriptors (fsync and getdents work on them); a file gets write access when the open may
// write (or must truncate). An open that neither reads nor writes data falls back to O_PATH when
// Linux refuses a readable descriptor (attributes and xattrs still work through it).
Result<vfs::UniqueFd> open_object(const vfs::ShareRoot& root, const std::string& rel, bool is_dir,
                                  uint32_t granted, bool must_write) {
    if (is_dir) {
        auto fd = vfs::open_beneath(root, rel, O_RDONLY | O_DIRECTORY);
        if (fd || fd.status() != NtStatus::AccessDenied || (granted & am::kFileListDirectory))
            return fd;
        return vfs::open_beneath(root, rel, O_PATH | O_DIRECTORY);
    }
    const bool reads = granted & (am::kFileReadData | am::kFileExecute);
    const bool writes = must_write || (granted & (am::kFileWriteData | am::kFileAppendData));
    if (writes) {
        auto fd = vfs::open_beneath(root, rel, O_RDWR);
        if (fd || fd.status() != NtStatus::AccessDenied || reads) return fd;
        return vfs::open_beneath(root, rel, O_WRONLY);
    }
    auto fd = vfs::open_beneath(root, rel, O_RDONLY);
    if (fd || fd.status() != NtStatus::AccessDenied || reads) return fd;
    return vfs::open_beneath(root, rel, O_PATH);
}

// Whether the request's user may remove `rp` from its directory, asked as the user (the calling
// thread runs with its credentials): write and search permission on the parent and, in a sticky
// directory, ownership of the object or of the directory (unlink(2), rmdir(2)). DELETE is only
// granted where the unlink at close would succeed: a delete the kernel refuses later could not
// be reported (Samba's can_delete_file_in_directory makes the same check at open).
bool user_may_unlink(const vfs::ShareRoot& root, const vfs::ResolvedPath& rp, uid_t object_uid) {
    auto parent = vfs::open_beneath(root, rp.parent, O_PATH | O_DIRECTORY);
    if (!parent) return false;
    if (::faccessat(parent->get(), ".", W_OK | X_OK, AT_EACCESS) != 0) return false;
    const vfs::UnixIdentity* who = vfs::current_fs_identity();
    if (who == nullptr || who->is_root()) return true;
    struct stat st {};
    if (::fstat(parent->get(), &st) != 0) return false;
    return !(st.st_mode & S_ISVTX) || who->uid == object_uid || who->uid == st.st_uid;
}

// Attributes, EAs and allocation of a file this CREATE made or overwrote (MS-FSA 2.1.5.1.1:
// only the settable attributes survive, ARCHIVE is added to files).
Status apply_new_metadata(int fd, const CreateParams& p, bool is_dir, int64_t creation_time) {
    if (p.store_dos_attributes) {
        vfs::DosXattr x;
        x.attributes = p.file_attributes & vfs::kSettableAttributes;
        if (!is_dir) x.attributes |= vfs::kAttrArchive;
        x.creation_time = creation_time;
        DAX_CHECK(vfs::write_dos_xattr(fd, x));
    }
    // MS-SMB2 3.3.5.9.1: EAs of ExtA go onto the new file.
    if (p.eas && !p.eas->empty()) DAX_CHECK(vfs::set_eas(fd, *p.eas));
    // MS-SMB2 3.3.5.9.3: reserve the space; a file system that cannot is ignored (the context is
    // a hint), one without room is DISK_FULL.
    if (!is_dir && p.allocation_size && *p.allocation_size > 0 &&
        *p.allocation_size <= uint64_t(INT64_MAX)) {
        if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, off_t(*p.allocation_size)) != 0) {
            int err = errno;
            if (err == ENOSPC || err == EDQUOT || err == EFBIG) return Error(NtStatus::DiskFull);
        }
    }
    return {};
}

// What the user may do with this object: the share's maximal access, without the write rights
// on a READONLY file (MS-FSA 2.1.5.1.2.1 MAXIMUM_ALLOWED).
uint32_t object_maximal_access(uint32_t tree_maximal, bool readonly_file) {
    return readonly_file ? tree_maximal & ~kReadonlyStrips : tree_maximal;
}

uint32_t grant(const Plan& pl, uint32_t maximal) {
    // EXECUTE is not widened to READ_DATA: READ accepts either (MS-SMB2 3.3.5.12), and
    // FileAccessInformation must report what was granted (smbtorture smb2.getinfo.granted).
    return pl.desired | (pl.want_max ? maximal : 0);
}

// Undo of a registration that did not become an open: never let it delete anything.
void abandon(FileTable& files, const std::shared_ptr<FileRegistration>& reg) {
    if (!reg) return;
    (void)files.set_delete_on_close(reg->key(), reg->token(), false);
    reg->release();
}

// The data path of a new file open (server/io/data_path.h: the block path, or the DAX path on a
// DAX share), chosen here, off the loop: it may open the file a second time (O_DIRECT) or map
// it. An overwrite/supersede truncated the file, which a mapping shared with other opens learns
// here. The DAX path prefaults its mapping on the blocking `pool`. Blocking.
void attach_data_path(const Share& share, dax::MapRegistry& maps, asio::thread_pool& pool,
                      CreateOutcome& r) {
    Open& o = *r.open;
    if (o.local.is_directory) return;
    o.local.data = io::open_data_path(share, o, maps, [&pool](std::function<void()> job) {
        // A blocking-pool thread may still run as some user (StickyFsCredentials): the
        // daemon's own jobs say so.
        asio::post(pool, [job = std::move(job)] {
            vfs::AsDaemon as_daemon;
            job();
        });
    });
    if (r.create_action == create_action::kOverwritten ||
        r.create_action == create_action::kSuperseded)
        o.local.data->truncated(uint64_t(r.info.end_of_file));
}

std::shared_ptr<Open> make_open(vfs::UniqueFd fd, const std::string& rel, bool is_dir,
                                const vfs::FileInfo& info, uint32_t granted, const Plan& pl,
                                std::shared_ptr<FileRegistration> reg) {
    auto o = std::make_shared<Open>();
    o->local.fd = fd.release();
    o->local.path = rel;
    o->local.is_directory = is_dir;
    o->local.file_id = info.file_id;
    o->local.device = info.device;
    o->granted_access = granted;
    o->local.share_access = pl.p.share_access;
    o->create_options = pl.options;
    o->local.delete_on_close = pl.delete_on_close;
    o->local.file_registration = std::move(reg);
    return o;
}

// MS-FSA 2.1.5.1 phase 7: the kind of stream opened must fit the existing object, and
// FILE_CREATE fails on it. Success when it does.
NtStatus existing_kind_refusal(const Plan& pl, bool is_dir, bool is_root) {
    const uint32_t disp = pl.p.create_disposition;
    if (is_dir) {
        if (pl.nondir_wanted) return NtStatus::FileIsADirectory;
        // MS-FSA 2.1.5.1.2: existing directories cannot be overwritten or superseded.
        if (disp != cd::kOpen && disp != cd::kOpenIf)
            return is_root ? NtStatus::AccessDenied : NtStatus::ObjectNameCollision;
    } else {
        if (pl.dir_wanted)
            return disp == cd::kCreate ? NtStatus::ObjectNameCollision : NtStatus::NotADirectory;
        if (pl.trailing_separator) return NtStatus::ObjectNameInvalid;
    }
    if (disp == cd::kCreate) return NtStatus::ObjectNameCollision;
    return NtStatus::Success;
}

// MS-FSA 2.1.5.1.2.1: what the object's DACL allows, where one is stored (security_info.h;
// nullopt: none is, or the request has no token); ACCESS_DENIED when it does not allow what the
// request needs.
Result<std::optional<uint32_t>> stored_acl_access(const vfs::ShareRoot& root, const Plan& pl,
                                                  const vfs::ResolvedPath& rp, bool is_root,
                                                  int probe_fd, bool overwrite, bool readonly) {
    const CreateParams& p = pl.p;
    if (!p.token) return std::optional<uint32_t>();
    DAX_TRY(std::optional<uint32_t> allowed,
            security::stored_access(root, rp.parent, is_root, probe_fd, *p.token));
    if (!allowed) return allowed;
    uint32_t needed = pl.desired;
    // Overwriting writes the data; superseding replaces the file, which Windows (since
    // 2000) and Samba treat as an overwrite: FILE_WRITE_DATA either way, and DELETE for a
    // supersede (smbtorture smb2.acls.OVERWRITE_READ_ONLY_FILE).
    if (overwrite) needed |= am::kFileWriteData;
    if (overwrite && p.create_disposition == cd::kSupersede) needed |= am::kDelete;
    if (needed & ~*allowed) return Error(NtStatus::AccessDenied);
    if (pl.want_max && pl.desired == 0 &&
        (object_maximal_access(p.maximal_access, readonly) & *allowed) == 0)
        return Error(NtStatus::AccessDenied);
    return allowed;
}

// MS-FSA 2.1.5.1.2.1 (access to an existing file with these DOS attributes); Success when
// allowed.
NtStatus existing_access_refusal(const Plan& pl, uint32_t attributes, bool readonly, bool is_root,
                                 bool overwrite) {
    const CreateParams& p = pl.p;
    if (readonly && (overwrite || (pl.desired & (am::kFileWriteData | am::kFileAppendData))))
        return NtStatus::AccessDenied;
    if (readonly && pl.delete_on_close) return NtStatus::CannotDelete;
    if (is_root && pl.delete_on_close) return NtStatus::AccessDenied;
    if (overwrite) {
        // MS-SMB2 3.3.5.9: overwriting writes; a read-only share refuses it.
        if (!(p.maximal_access & am::kFileWriteData)) return NtStatus::AccessDenied;
        // MS-FSA 2.1.5.1.2: an overwrite must keep HIDDEN and SYSTEM.
        if ((attributes & vfs::kAttrHidden) && !(p.file_attributes & fa::kHidden))
            return NtStatus::AccessDenied;
        if ((attributes & vfs::kAttrSystem) && !(p.file_attributes & fa::kSystem))
            return NtStatus::AccessDenied;
        if (p.file_attributes & fa::kEncrypted) return NtStatus::AccessDenied;
    }
    return NtStatus::Success;
}

// The open runs as the user: the kernel's permission check decides too. What it refuses is not
// part of MAXIMUM_ALLOWED (MS-SMB2 3.3.5.9, MS-FSA 2.1.5.1.2.1: the rights the object grants),
// so a file the user may only read opens for reading (the rights dropped leave `granted` and
// `maximal`); rights asked for by name stay required.
Result<vfs::UniqueFd> open_within_kernel_rights(const vfs::ShareRoot& root, const Plan& pl,
                                                const std::string& rel, bool is_dir, bool overwrite,
                                                uint32_t& granted, uint32_t& maximal) {
    auto fd = open_object(root, rel, is_dir, granted, overwrite);
    if (!fd && fd.status() == NtStatus::AccessDenied && pl.want_max && !is_dir) {
        for (const uint32_t bits :
             {am::kFileWriteData | am::kFileAppendData, am::kFileReadData | am::kFileExecute}) {
            const uint32_t droppable = bits & ~pl.desired & granted;
            if (fd || droppable == 0 || (overwrite && (bits & am::kFileWriteData))) continue;
            granted &= ~droppable;
            maximal &= ~droppable;
            fd = open_object(root, rel, is_dir, granted, overwrite);
        }
    }
    return fd;
}

// MS-FSA 2.1.5.1.2: an overwrite or supersede replaces the data, the attributes become the
// requested ones (+ ARCHIVE), the creation time stays. The file's information afterwards.
Result<vfs::FileInfo> overwrite_existing(int fd, const CreateParams& p, int64_t creation_time) {
    int64_t ctime = creation_time;
    if (auto old = vfs::read_dos_xattr(fd); old && old->creation_time) ctime = old->creation_time;
    if (::ftruncate(fd, 0) != 0) return Error(errno_to_status(errno));
    DAX_CHECK(apply_new_metadata(fd, p, false, ctime));
    return vfs::query_info(fd);
}

Attempt open_existing(const std::shared_ptr<const vfs::ShareRoot>& root, FileTable& files,
                      const Plan& pl, const vfs::ResolvedPath& rp) {
    const CreateParams& p = pl.p;
    const uint32_t disp = p.create_disposition;
    const bool is_root = rp.rel.empty();

    // Look at the object first (O_PATH needs no rights), then decide.
    auto probe = vfs::open_beneath(*root, rp.rel, O_PATH);
    if (!probe) {
        // Vanished since resolve_path: look again.
        if (probe.status() == NtStatus::ObjectNameNotFound) return retry();
        return fail(probe.status());
    }
    auto before = vfs::query_info(probe->get());
    if (!before) return fail(before.status());
    const bool is_dir = before->is_directory;

    if (NtStatus st = existing_kind_refusal(pl, is_dir, is_root); st != NtStatus::Success)
        return fail(st);

    const bool overwrite =
        disp == cd::kSupersede || disp == cd::kOverwrite || disp == cd::kOverwriteIf;
    const bool readonly = !is_dir && (before->file_attributes & vfs::kAttrReadonly);

    auto acl_allowed = stored_acl_access(*root, pl, rp, is_root, probe->get(), overwrite, readonly);
    if (!acl_allowed) return fail(acl_allowed.status());
    // MS-FSA 2.1.5.1.2.1 (access to an existing file).
    if (NtStatus st =
            existing_access_refusal(pl, before->file_attributes, readonly, is_root, overwrite);
        st != NtStatus::Success)
        return fail(st);

    uint32_t maximal =
        object_maximal_access(p.maximal_access, readonly) & acl_allowed->value_or(~0u);
    uint32_t granted = grant(pl, maximal);
    struct stat object_st {};
    if ((granted & am::kDelete) && !is_root &&
        (::fstat(probe->get(), &object_st) != 0 || !user_may_unlink(*root, rp, object_st.st_uid))) {
        if ((pl.desired & am::kDelete) || pl.delete_on_close) return fail(NtStatus::AccessDenied);
        granted &= ~am::kDelete;  // MAXIMUM_ALLOWED: not what the directory allows
        maximal &= ~am::kDelete;
    }

    auto fd = open_within_kernel_rights(*root, pl, rp.rel, is_dir, overwrite, granted, maximal);
    // MS-FSA 2.1.5.1.2: overwrite and supersede take part in sharing as writes / deletes.
    uint32_t sharing = granted;
    if (overwrite) sharing |= disp == cd::kSupersede ? am::kDelete : am::kFileWriteData;
    if (!fd) {
        if (fd.status() == NtStatus::ObjectNameNotFound) return retry();
        return fail(fd.status());
    }
    auto info = vfs::query_info(fd->get());
    if (!info) return fail(info.status());
    // Replaced between the probe and the open: start over.
    if (info->device != before->device || info->file_id != before->file_id) return retry();

    FileKey key{info->device, info->file_id};
    OplockOpenIntent intent{granted, overwrite, p.lease, pl.delete_on_close};
    auto token = files.add(key, ShareMode{sharing, p.share_access}, pl.delete_on_close, rp.rel,
                           p.break_oplocks ? &intent : nullptr);
    if (!token) {
        if (token.status() == NtStatus::OplockBreakInProgress && p.oplock_break_file)
            *p.oplock_break_file = key;
        return fail(token.status());
    }
    auto reg = std::make_shared<FileRegistration>(files, key, *token, root);
    // Deleted by its last closer between our open and our registration: it is gone, look again.
    if (info->nlink == 0) {
        abandon(files, reg);
        return retry();
    }

    uint32_t action = create_action::kOpened;
    if (overwrite) {
        auto replaced = overwrite_existing(fd->get(), p, info->creation_time);
        if (!replaced) {
            abandon(files, reg);
            return fail(replaced.status());
        }
        action = disp == cd::kSupersede ? create_action::kSuperseded : create_action::kOverwritten;
        info = std::move(replaced);
        break_parent_directory_leases(files, *root, rp.rel, p.parent_lease);
    }

    Attempt a;
    CreateOutcome out;
    out.open = make_open(std::move(*fd), rp.rel, is_dir, *info, granted, pl, std::move(reg));
    out.create_action = action;
    out.info = *info;
    out.maximal_access = maximal;
    a.result = std::move(out);
    return a;
}

Attempt create_new(const std::shared_ptr<const vfs::ShareRoot>& root, FileTable& files,
                   const Plan& pl, const vfs::ResolvedPath& rp) {
    const CreateParams& p = pl.p;
    const uint32_t disp = p.create_disposition;
    // MS-FSA 2.1.5.1 phase 6.
    if (disp == cd::kOpen || disp == cd::kOverwrite) return fail(NtStatus::ObjectNameNotFound);

    const bool make_dir = pl.dir_wanted;
    // MS-FSA 2.1.5.1 phase 7: a trailing '\' names a directory.
    if (pl.trailing_separator && !make_dir) return fail(NtStatus::ObjectNameInvalid);
    // Share permission (MS-SMB2 3.3.5.9): creating needs ADD_FILE / ADD_SUBDIRECTORY.
    if (!(p.maximal_access & (make_dir ? am::kFileAddSubdirectory : am::kFileAddFile)))
        return fail(NtStatus::AccessDenied);
    // MS-FSA 2.1.5.1.1.
    if (make_dir && (p.file_attributes & fa::kTemporary)) return fail(NtStatus::InvalidParameter);
    if ((p.file_attributes & fa::kReadonly) && pl.delete_on_close)
        return fail(NtStatus::CannotDelete);
    if (p.file_attributes & fa::kEncrypted) return fail(NtStatus::AccessDenied);

    // MS-FSA 2.1.5.1.1: the creator gets what it asked for (MAXIMUM_ALLOWED: all the share
    // allows).
    const uint32_t granted = grant(pl, p.maximal_access);

    // The parent's stored DACL must allow the create (MS-FSA 2.1.5.1.1: FILE_ADD_FILE or
    // FILE_ADD_SUBDIRECTORY on the parent); it is also what the new object inherits from. A
    // parent without one is left to the kernel's check of its mode bits, made as the user.
    std::optional<protocol::SecurityDescriptor> parent_sd;
    if (p.token) {
        auto psd = security::parent_descriptor(*root, rp.parent);
        if (!psd) return fail(psd.status());
        parent_sd = std::move(*psd);
        const uint32_t need = make_dir ? am::kFileAddSubdirectory : am::kFileAddFile;
        if (parent_sd && !(auth::granted_access(*parent_sd, *p.token) & need))
            return fail(NtStatus::AccessDenied);
    }

    Result<vfs::UniqueFd> fd = Error(NtStatus::InternalError);
    if (make_dir) {
        auto st = vfs::mkdir_beneath(*root, rp.rel, 0777);
        if (!st) {
            // Someone else created it first: OPEN_IF opens theirs (smbtorture mkdir-dup).
            if (st.status() == NtStatus::ObjectNameCollision && disp != cd::kCreate) return retry();
            return fail(st.status());
        }
        fd = open_object(*root, rp.rel, true, granted, false);
    } else {
        // The creator may always write what it created: a writable descriptor, whatever the
        // open was granted, so that allocation and attributes can be applied.
        fd = vfs::open_beneath(*root, rp.rel, O_CREAT | O_EXCL | O_RDWR, 0666);
        if (!fd && fd.status() == NtStatus::ObjectNameCollision && disp != cd::kCreate)
            return retry();
    }
    if (!fd) return fail(fd.status());

    auto info = vfs::query_info(fd->get());
    if (!info) return fail(info.status());
    FileKey key{info->device, info->file_id};
    auto token = files.add(key, ShareMode{granted, p.share_access}, pl.delete_on_close, rp.rel);
    if (!token) return fail(token.status());
    auto reg = std::make_shared<FileRegistration>(files, key, *token, root);

    Status applied = apply_new_metadata(fd->get(), p, make_dir, info->creation_time);
    // MS-SMB2 3.3.5.9.2: the SecD descriptor becomes the new file's, merged with what it
    // inherits from the parent (MS-DTYP 2.5.3.4; security_info.h).
    if (applied)
        applied = security::store_new_object_descriptor(
            fd->get(), parent_sd ? &*parent_sd : nullptr,
            p.security_descriptor ? &*p.security_descriptor : nullptr,
            p.token ? &*p.token : nullptr, make_dir);
    if (auto st = applied; !st) {
        // Do not leave a half-made file behind.
        abandon(files, reg);
        (void)delete_if_same_file(*root, key, rp.rel);
        return fail(st.status());
    }
    info = vfs::query_info(fd->get());
    if (!info) {
        abandon(files, reg);
        return fail(info.status());
    }

    Attempt a;
    CreateOutcome out;
    out.open = make_open(std::move(*fd), rp.rel, make_dir, *info, granted, pl, std::move(reg));
    out.create_action = create_action::kCreated;
    break_parent_directory_leases(files, *root, rp.rel, p.parent_lease);
    out.info = *info;
    out.maximal_access = p.maximal_access;
    a.result = std::move(out);
    return a;
}

}  // namespace

Status validate_create(const CreateParams& p) {
    // MS-SMB2 3.3.5.9 / 2.2.13: ImpersonationLevel is 0..3.
    if (p.impersonation_level > impersonation_level::kDelegate)
        return Error(NtStatus::BadImpersonationLevel);
    // MS-FSA 2.1.5.1 phase 1: invalid parameter combinations.
    if (p.create_disposition > cd::kMax) return Error(NtStatus::InvalidParameter);
    if (p.create_options & kReservedCreateOptions) return Error(NtStatus::InvalidParameter);
    const bool dir = p.create_options & co::kDirectoryFile;
    const bool nondir = p.create_options & co::kNonDirectoryFile;
    if (dir && nondir) return Error(NtStatus::InvalidParameter);
    if (dir && p.create_disposition != cd::kCreate && p.create_disposition != cd::kOpen &&
        p.create_disposition != cd::kOpenIf)
        return Error(NtStatus::InvalidParameter);
    if (p.share_access & ~share_access::kAll) return Error(NtStatus::InvalidParameter);
    // MS-FSA 2.1.5.1 phase 1: zero or invalid DesiredAccess bits are ACCESS_DENIED; Windows
    // checks them before FileAttributes (gentest sends both wrong).
    if (p.desired_access & am::kInvalidDesiredAccess) return Error(NtStatus::AccessDenied);
    if (p.desired_access == 0) return Error(NtStatus::AccessDenied);
    // MS-FSA 2.1.5.1.1: ACCESS_SYSTEM_SECURITY needs SeSecurityPrivilege, which nobody has here.
    if (p.desired_access & am::kAccessSystemSecurity) return Error(NtStatus::PrivilegeNotHeld);
    if (p.file_attributes & ~kValidCreateAttributes) return Error(NtStatus::InvalidParameter);
    // MS-SMB2 2.2.13: open by file id and reserve-opfilter are not supported by the server.
    if (p.create_options & (co::kOpenByFileId | co::kReserveOpfilter | kCreateTreeConnection))
        return Error(NtStatus::NotSupported);
    // Windows refuses a leading backslash in an SMB2 CREATE name (smbtorture
    // smb2.create.leading-slash); MS-SMB2 2.2.13 says the name is relative to the share.
    if (!p.name.empty() && (p.name.front() == '\\' || p.name.front() == '/'))
        return Error(NtStatus::InvalidParameter);
    if (p.create_options & co::kDeleteOnClose) {
        // MS-SMB2 3.3.5.9 "Open Execution": the share must allow DELETE at all.
        if (!(p.maximal_access & am::kDelete)) return Error(NtStatus::AccessDenied);
        // MS-FSA 2.1.5.1 phase 1: delete on close needs DELETE in DesiredAccess
        // (MAXIMUM_ALLOWED and GENERIC_ALL include it here).
        uint32_t mapped = map_generic_file(p.desired_access);
        if (!(mapped & (am::kDelete | am::kMaximumAllowed)))
            return Error(NtStatus::InvalidParameter);
    }
    return {};
}

Result<CreateOutcome> create_file(const std::shared_ptr<const vfs::ShareRoot>& root,
                                  FileTable& files, const CreateParams& p) {
    DAX_CHECK(validate_create(p));
    Plan pl{p};
    pl.options = p.create_options & ~kClearedOptions;
    uint32_t mapped = map_generic_file(p.desired_access);
    pl.want_max = mapped & am::kMaximumAllowed;
    pl.desired = mapped & ~am::kMaximumAllowed;
    // MS-SMB2 3.3.5.9: FILE_NO_INTERMEDIATE_BUFFERING clears FILE_APPEND_DATA.
    if (pl.options & co::kNoIntermediateBuffering) pl.desired &= ~am::kFileAppendData;
    // Nothing beyond what the share grants (TreeConnect.MaximalAccess, MS-SMB2 3.3.5.7/3.3.5.9).
    if (pl.desired & ~p.maximal_access) return Error(NtStatus::AccessDenied);
    pl.dir_wanted = pl.options & co::kDirectoryFile;
    pl.nondir_wanted = pl.options & co::kNonDirectoryFile;
    pl.delete_on_close = pl.options & co::kDeleteOnClose;

    // '/' separates components too, as Samba and ksmbd accept it (smbtorture's timestamps and
    // dir tests send "dir/file"); the path parser only knows '\\'.
    std::string name = p.name;
    std::replace(name.begin(), name.end(), '/', '\\');
    DAX_TRY(auto sp, vfs::parse_smb_path(name));
    // No streams on this server, not even the explicit default one (create.h).
    if (sp.has_stream() || !sp.stream_type.empty()) return Error(NtStatus::ObjectNameInvalid);
    pl.trailing_separator = sp.trailing_separator;
    // MS-FSA 2.1.5.1 phase 1.
    if (pl.trailing_separator && pl.nondir_wanted) return Error(NtStatus::ObjectNameInvalid);

    for (int i = 0; i < 8; ++i) {
        DAX_TRY(auto rp, vfs::resolve_path(*root, sp));
        Attempt a =
            rp.exists ? open_existing(root, files, pl, rp) : create_new(root, files, pl, rp);
        if (!a.retry) return std::move(a.result);
    }
    // Another client keeps creating and deleting the same name under us.
    return Error(NtStatus::SharingViolation);
}

// ---------------------------------------------------------------------------------------------
// The handler.

void fill_times(CreateResponse& r, const vfs::FileInfo& i) {
    r.creation_time = i.creation_time;
    r.last_access_time = i.last_access_time;
    r.last_write_time = i.last_write_time;
    r.change_time = i.change_time;
    r.allocation_size = int64_t(i.allocation_size);
    r.end_of_file = int64_t(i.end_of_file);
    r.file_attributes = i.file_attributes;
}

namespace {

// How long an open waits for the holder of an oplock it breaks (MS-SMB2 3.3.2.1: Windows 35 s).
constexpr auto kOplockBreakTimeout = std::chrono::seconds(35);

// A named pipe on IPC$ (MS-SMB2 3.3.5.9 with the pipe rules of 2.2.13).
NtStatus create_pipe(RequestContext& ctx, const CreateRequest& req) {
    // MS-SMB2 3.3.5.9 "Open Execution": pipes refuse the Delegate level.
    if (req.impersonation_level >= impersonation_level::kDelegate)
        return NtStatus::BadImpersonationLevel;
    std::string_view name = req.name;
    if (!name.empty() && name.front() == '\\') name.remove_prefix(1);
    auto ep = rpcpipe::make_pipe_endpoint(ctx.server, name);
    if (!ep) {
        ctx.log().debug("no pipe named '", name, "'");
        return NtStatus::ObjectNameNotFound;
    }
    uint32_t mapped = map_generic_file(req.desired_access);
    if (mapped & am::kMaximumAllowed) mapped = (mapped & ~am::kMaximumAllowed) | am::kFileAllAccess;

    auto open = std::make_shared<Open>();
    open->local.pipe = std::move(ep);
    open->local.path = std::string(name);
    open->granted_access = mapped;
    open->local.share_access = req.share_access;
    open->create_options = req.create_options;
    open->session_id = ctx.session_id;
    open->tree_id = ctx.tree->id;
    open->tree = ctx.tree;
    open->connection_id = ctx.conn.id;
    ctx.server.opens.insert(open);
    ctx.created_file_id = open->id;

    CreateResponse resp;
    resp.create_action = create_action::kOpened;
    // MS-SMB2 3.3.5.9: times and sizes of a pipe are 0; Windows and Samba report NORMAL.
    resp.file_attributes = fa::kNormal;
    resp.file_id = open->id;
    resp.serialize(ctx.body());
    return NtStatus::Success;
}

// Abuse limit "max opens per session" (architecture.md "Limits"): true (logged) when reached.
bool open_limit_reached(RequestContext& ctx) {
    const size_t max = ctx.limits().max_opens_per_session;
    if (ctx.server.opens.count_for_session(ctx.session_id) < max) return false;
    ctx.server.limit_hits.hit(metrics::Limit::MaxOpensPerSession);
    ctx.log().refusal("limit 'max opens per session' (", max, ") reached; CREATE refused");
    return true;
}

CreateParams create_params(const RequestContext& ctx, const CreateRequest& req, const Share& share,
                           CreateContextRequests& contexts) {
    CreateParams p;
    p.name = req.name;
    p.impersonation_level = req.impersonation_level;
    p.desired_access = req.desired_access;
    p.file_attributes = req.file_attributes;
    p.share_access = req.share_access;
    p.create_disposition = req.create_disposition;
    p.create_options = req.create_options;
    p.maximal_access = ctx.tree->maximal_access;
    p.store_dos_attributes = share.config.store_dos_attributes;
    p.allocation_size = contexts.allocation_size;
    p.eas = std::move(contexts.eas);
    p.security_descriptor = std::move(contexts.security_descriptor);
    // A remoted identity's token replaces the session's on its tree (MS-SMB2 3.3.5.7).
    p.token = ctx.tree->remoted_token ? *ctx.tree->remoted_token : security::token_of(*ctx.session);
    return p;
}

// A refused CREATE: access refusals are logged for the administrator, the rest for debugging.
NtStatus create_refused(RequestContext& ctx, const CreateParams& p, const Share& share,
                        NtStatus st) {
    if (st == NtStatus::AccessDenied || st == NtStatus::PrivilegeNotHeld)
        ctx.log().refusal("user ", ctx.session->user, " CREATE '", p.name, "' on [",
                          share.config.name, "] access 0x", std::hex, p.desired_access,
                          " disposition ", std::dec, p.create_disposition,
                          " refused: ", status_name(st));
    else
        ctx.log().debug("CREATE '", p.name, "' -> ", status_name(st));
    return st;
}

// A DH2Q CREATE in progress, in PendingCreates while it runs (MS-SMB2 3.3.5.9.10).
class PendingCreate {
  public:
    PendingCreate(PendingCreates& table, std::optional<ReplayKey> key)
        : table_(table), key_(std::move(key)) {
        if (key_ && !table_.begin(*key_)) {
            admitted_ = false;
            key_.reset();
        }
    }
    ~PendingCreate() {
        if (key_) table_.end(*key_);
    }
    PendingCreate(const PendingCreate&) = delete;
    PendingCreate& operator=(const PendingCreate&) = delete;
    // False: a CREATE with the same ClientGuid and CreateGuid is in progress.
    bool admitted() const { return admitted_; }

  private:
    PendingCreates& table_;
    std::optional<ReplayKey> key_;
    bool admitted_ = true;
};

// The request's connection closed, but its session goes on over other channels.
bool outlives_channel(const RequestContext& ctx) {
    return ctx.pending && ctx.pending->connection_lost && ctx.session &&
           ctx.session->state == Session::State::Valid && ctx.session->channel_count() > 0;
}

// MS-SMB2 3.3.5.9 / 3.3.4.6: an open that breaks oplocks waits, async, until their holders
// acknowledge (or close, or run out of time), then tries again (`res` is the new attempt's
// outcome). Success, or the status the request ends with at once (not allowed to go async,
// cancelled).
asio::awaitable<NtStatus> wait_for_oplock_breaks(
    RequestContext& ctx, FileTable& files, std::optional<FileKey>& break_file,
    Result<CreateOutcome>& res, const std::function<Result<CreateOutcome>()>& open_file) {
    auto wake = Wakeup::make(ctx.executor());
    const auto deadline = std::chrono::steady_clock::now() + kOplockBreakTimeout;
    ctx.pending->waiter = wake;
    // Past `max async requests per connection` the open fails instead of waiting.
    if (Status st = co_await ctx.go_async(); !st) co_return st.status();
    while (!res && res.status() == NtStatus::OplockBreakInProgress && break_file) {
        if (files.when_breaks_resolved(*break_file, wake->waker())) {
            const bool woken = co_await wake->wait(deadline);
            if (ctx.cancelled() && !outlives_channel(ctx)) co_return NtStatus::Cancelled;
            if (!woken) files.expire_breaks(*break_file);  // MS-SMB2 3.3.2.1
        }
        break_file.reset();
        res = co_await ctx.blocking(open_file);
    }
    co_return NtStatus::Success;
}

// What a replay of this CREATE is answered with (MS-SMB2 3.3.5.9.10), and its
// Open.ChannelSequence (3.3.5.2.10); before the open is published.
void remember_for_replay(const RequestContext& ctx, const CreateContextRequests& contexts,
                         const CreateOutcome& res) {
    Open& open = *res.open;
    if (is_smb3(ctx.dialect())) open.channel_sequence.reset(ctx.header.channel_sequence());
    auto key = replay_key(ctx, contexts);
    if (!key) return;
    ReplayRecord r;
    r.key = *key;
    if (contexts.lease) r.lease_key = contexts.lease->lease_key;
    r.create_action = res.create_action;
    open.replay = r;
}

// The new open joins the session's, tree's and connection's opens.
void register_open(RequestContext& ctx, const std::shared_ptr<Open>& open) {
    open->session_id = ctx.session_id;
    open->tree_id = ctx.tree->id;
    open->tree = ctx.tree;
    open->connection_id = ctx.conn.id;
    ctx.server.opens.insert(open);
    ctx.created_file_id = open->id;
}

asio::awaitable<NtStatus> respond_created(RequestContext& ctx, const CreateRequest& req,
                                          const CreateOutcome& res,
                                          const CreateContextRequests& contexts,
                                          const CreateParams& p) {
    const auto& open = res.open;
    CreateResponse resp;
    CreateGrants grants;
    // MS-SMB2 3.3.5.9 "Oplock Acquisition", leases, durability.
    auto st = grant_caching(ctx, req, contexts, open, resp.oplock_level, grants);
    // A persistent handle is on the share's volume before the client learns of it.
    if (st && open->durable.persistent) {
        const auto& reg = *open->local.file_registration;
        auto held = reg.table().held(reg.key(), reg.token());
        auto journal = ctx.tree->share->journal;
        st = co_await ctx.blocking_as_daemon(
            [&] { return journal_persistent_open(journal, open, held); });
        if (!st)
            ctx.log().info("persistent handle '", open->local.path,
                           "' not journaled: ", status_name(st.status()));
    }
    if (!st) {
        ctx.server.opens.remove(open->id.volatile_);
        co_return create_refused(ctx, p, *ctx.tree->share, st.status());
    }
    resp.create_action = res.create_action;
    // From now on a replay of this CREATE gets this open (MS-SMB2 3.3.5.9.10).
    if (open->replay) open->replay_eligible.store(true, std::memory_order_release);
    fill_times(resp, res.info);
    resp.file_id = open->id;
    resp.contexts = encode_create_response_contexts(contexts, res.maximal_access, res.info, grants);
    resp.serialize(ctx.body());
    ctx.log().debug("CREATE '", p.name, "' -> fid ", open->id.volatile_, " action ",
                    res.create_action);
    co_return NtStatus::Success;
}

asio::awaitable<NtStatus> open_or_create(RequestContext& ctx, const CreateRequest& req,
                                         const std::shared_ptr<Share>& share,
                                         CreateContextRequests& contexts);

}  // namespace

asio::awaitable<NtStatus> create(RequestContext& ctx) {
    auto req = CreateRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    if (open_limit_reached(ctx)) co_return NtStatus::InsufficientResources;
    if (ctx.tree->is_ipc()) co_return create_pipe(ctx, *req);

    auto share = ctx.tree->share;
    if (!share || !share->root) co_return NtStatus::BadNetworkName;

    auto contexts = decode_create_contexts(req->contexts);
    if (!contexts) co_return contexts.status();
    if (contexts->reconnect()) co_return co_await reconnect_durable(ctx, *req, *contexts);
    auto replayed = replayed_create(ctx, *contexts);
    if (replayed.refusal != NtStatus::Success) co_return replayed.refusal;
    if (replayed.open) co_return co_await respond_replayed(ctx, *req, *contexts, replayed.open);
    // MS-SMB2 3.3.5.9.10: until this CREATE is done, a replay of it is told to retry.
    PendingCreate in_progress(ctx.server.pending_creates, replay_key(ctx, *contexts));
    if (!in_progress.admitted()) co_return NtStatus::FileNotAvailable;
    co_return co_await open_or_create(ctx, *req, share, *contexts);
}

namespace {

asio::awaitable<NtStatus> open_or_create(RequestContext& ctx, const CreateRequest& req,
                                         const std::shared_ptr<Share>& share,
                                         CreateContextRequests& contexts) {
    CreateParams p = create_params(ctx, req, *share, contexts);
    p.lease = requested_lease(ctx, req, contexts);
    if (p.lease && contexts.lease->version == 2 &&
        (contexts.lease->flags & lease_flags::kParentLeaseKeySet))
        p.parent_lease = LeaseId{p.lease->client_guid, contexts.lease->parent_lease_key};
    if (auto st = close_earlier_app_instance(ctx, contexts, req.name); !st)
        co_return create_refused(ctx, p, *share, st.status());

    if (auto st = validate_create(p); !st) co_return create_refused(ctx, p, *share, st.status());
    // MS-SMB2 3.3.5.9.4: no snapshot exists for any timestamp (no previous versions served).
    if (contexts.timewarp) co_return create_refused(ctx, p, *share, NtStatus::ObjectNameNotFound);

    std::shared_ptr<const vfs::ShareRoot> root = share->root;
    FileTable& files = ctx.server.files;
    std::optional<FileKey> break_file;
    p.break_oplocks = true;
    p.oplock_break_file = &break_file;
    std::function<Result<CreateOutcome>()> open_file = [&] {
        auto r = create_file(root, files, p);
        if (r) attach_data_path(*share, ctx.server.dax_maps, ctx.server.pool(), *r);
        return r;
    };
    auto res = co_await ctx.blocking(open_file);
    if (!res && res.status() == NtStatus::OplockBreakInProgress && break_file) {
        NtStatus st = co_await wait_for_oplock_breaks(ctx, files, break_file, res, open_file);
        if (st != NtStatus::Success) co_return st;
    }
    if (!res) co_return create_refused(ctx, p, *share, res.status());

    // The session, tree or connection may have gone while the pool worked: then nobody could
    // ever close this open; dropping it here releases it. A connection that closed while the
    // session goes on over other channels leaves the open to the session (the client replays
    // the CREATE over another channel, smbtorture smb2.replay.dhv2-pending2*).
    if ((ctx.conn.closed() && !outlives_channel(ctx)) || !ctx.session->find_tree(ctx.tree->id))
        co_return NtStatus::NetworkNameDeleted;
    remember_for_replay(ctx, contexts, *res);
    register_open(ctx, res->open);
    co_return co_await respond_created(ctx, req, *res, contexts, p);
}

}  // namespace

}  // namespace daxsmbd::server::handlers
