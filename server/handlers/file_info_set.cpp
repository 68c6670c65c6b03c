// What SET_INFO's file classes do to the file system (info_classes.h, MS-FSA 2.1.5.15):
// the emptiness check of a directory to delete, allocation, rename and hard links.
#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "protocol/access_mask.h"
#include "server/errno_status.h"
#include "server/handlers/info_classes.h"
#include "server/vfs/open.h"
#include "server/vfs/path.h"

namespace daxsmbd::server::handlers::info {

using namespace protocol;

// ---- Helpers of SET_INFO -----------------------------------------------------------------

Result<bool> directory_is_empty(const vfs::ShareRoot& root, std::string_view rel) {
    DAX_TRY(auto fd, vfs::open_beneath(root, rel, O_RDONLY | O_DIRECTORY));
    DIR* d = ::fdopendir(fd.get());
    if (!d) return Error(errno_to_status(errno));
    fd.release();  // owned by d now
    bool empty = true;
    int err = 0;
    for (;;) {
        errno = 0;
        struct dirent* e = ::readdir(d);
        if (!e) {
            err = errno;
            break;
        }
        std::string_view n = e->d_name;
        if (n == "." || n == "..") continue;
        empty = false;
        break;
    }
    ::closedir(d);
    if (err) return Error(errno_to_status(err));
    return empty;
}

Status set_allocation(int fd, int64_t allocation_size) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return Error(errno_to_status(errno));
    const off_t size = st.st_size;
    if (allocation_size < size) {
        // Truncating also frees the blocks past the new end of file.
        if (::ftruncate(fd, allocation_size) != 0) return Error(errno_to_status(errno));
        return {};
    }
    const int64_t allocated = int64_t(st.st_blocks) * 512;
    if (allocation_size > allocated) {
        if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, allocation_size) != 0) {
            // A file system that cannot reserve space: the size is already right, and
            // Windows' allocation is a promise Linux cannot make there (as Samba's default
            // "strict allocate = no").
            if (errno == EOPNOTSUPP || errno == ENOSYS) return {};
            return Error(errno_to_status(errno));
        }
    } else if (allocation_size < allocated) {
        // Release what an earlier reservation holds past the end of file: a truncate to the
        // current size drops every block beyond it (ext4 and XFS do not punch holes past the
        // end of file), then the smaller reservation is made again. Failing to release changes
        // no visible size, so those errors are not reported.
        if (::ftruncate(fd, size) != 0) return Error(errno_to_status(errno));
        if (allocation_size > size) (void)::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, allocation_size);
    }
    return {};
}

namespace {

// A rename / link target: where it resolves on disk and how the client spelled its last name.
struct Target {
    vfs::ResolvedPath rp;
    std::string rel;  // parent on disk + the client's spelling of the final name
};

Result<Target> resolve_target(const vfs::ShareRoot& root, std::string_view client_name) {
    // '/' separates components as in CREATE (create.h: Samba and ksmbd accept it).
    std::string spelled_name(client_name);
    std::replace(spelled_name.begin(), spelled_name.end(), '/', '\\');
    std::string_view name = spelled_name;
    // MS-FSA rejects a leading '\' from a remote client; Samba and Windows clients' names are
    // relative to the share root either way, so one is tolerated.
    if (!name.empty() && name.front() == '\\') name.remove_prefix(1);
    if (name.empty()) return Error(NtStatus::ObjectNameInvalid);
    // A stream target (":new", "file:stream"): daxsmbd stores no named streams.
    if (name.front() == ':') return Error(NtStatus::NotSupported);
    DAX_TRY(auto sp, vfs::parse_smb_path(name));
    if (sp.has_stream() || !sp.stream_type.empty()) return Error(NtStatus::NotSupported);
    if (sp.is_root()) return Error(NtStatus::ObjectNameInvalid);
    Target t;
    DAX_TRY(t.rp, vfs::resolve_path(root, sp));
    const std::string& spelled = sp.components.back();
    t.rel = t.rp.parent.empty() ? spelled : t.rp.parent + "/" + spelled;
    return t;
}

// Facts about an existing target name, without following a symlink in the final component.
Result<vfs::FileInfo> target_info(const vfs::ShareRoot& root, const std::string& rel) {
    DAX_TRY(auto parent, vfs::open_parent_beneath(root, rel));
    return vfs::query_info_at(parent.dir.get(), parent.name);
}

// MS-FSA 2.1.5.15.12 / 2.1.5.15.7: may an existing other file be replaced?
// With `wait_on`, opens of the file that cache their handle (HANDLE caching leases) are asked to
// give it up first (MS-FSA 2.1.5.15.12 via 2.1.4.12, as Windows breaks them): then
// OPLOCK_BREAK_IN_PROGRESS and *wait_on is the file to wait for. An open that stays makes the
// replace fail with ACCESS_DENIED.
Status check_replaceable(FileTable& files, const vfs::FileInfo& t, FileKey* wait_on) {
    if (t.is_directory) return Error(NtStatus::AccessDenied);  // a directory is never replaced
    if (t.file_attributes & vfs::kAttrReadonly) return Error(NtStatus::AccessDenied);
    FileKey tk{t.device, t.file_id};
    if (files.delete_pending(tk)) return Error(NtStatus::DeletePending);
    if (files.open_count(tk) == 0) return {};
    if (wait_on && files.break_handle_caching(tk, FileTable::kNoToken)) {
        *wait_on = tk;
        return Error(NtStatus::OplockBreakInProgress);
    }
    return Error(NtStatus::AccessDenied);
}

// MS-FSA 2.1.5.15.12 / 2.1.5.15.7 open the destination directory for FILE_ADD_FILE (a file) or
// FILE_ADD_SUBDIRECTORY (a directory) before anything else; Windows shares only read and write
// with that open (MS-FSA <185>/<183>), so an open of the directory that holds DELETE access or
// does not share writing makes the rename fail with SHARING_VIOLATION (smbtorture smb2.rename
// share_delete_and_delete_access, no_share_delete_*), and a delete-pending directory with
// DELETE_PENDING.
Status check_destination_dir(const vfs::ShareRoot& root, FileTable& files,
                             const std::string& dir_rel, bool is_directory) {
    DAX_TRY(auto fd, vfs::open_beneath(root, dir_rel, O_PATH | O_DIRECTORY));
    DAX_TRY(auto fi, vfs::query_info(fd.get()));
    constexpr uint32_t kShareReadWrite = 0x1 | 0x2;  // FILE_SHARE_READ | FILE_SHARE_WRITE
    ShareMode want{is_directory ? access_mask::kFileAddSubdirectory : access_mask::kFileAddFile,
                   kShareReadWrite};
    return files.check(FileKey{fi.device, fi.file_id}, want);
}

std::mutex& rename_mutex() {
    static std::mutex mu;
    return mu;
}

}  // namespace

Result<std::string> rename_file(const vfs::ShareRoot& root, FileTable& files, const FileKey& key,
                                bool is_directory, std::string_view from_rel,
                                std::string_view new_name, bool replace_if_exists,
                                const std::function<bool()>& breaks_pending, FileKey* wait_on) {
    std::lock_guard lk(rename_mutex());
    DAX_TRY(auto t, resolve_target(root, new_name));
    if (from_rel.empty()) return Error(NtStatus::AccessDenied);  // the share root
    DAX_CHECK(check_destination_dir(root, files, t.rp.parent, is_directory));
    // MS-FSA 2.1.5.15.12: Open.Link.IsDeleted.
    if (files.delete_pending(key)) return Error(NtStatus::AccessDenied);
    // MS-FSA 2.1.5.15.12 / 2.1.4.12: the breaks come after the checks that fail at once (a
    // sharing violation on the destination directory breaks nothing: smb2.oplock.batch20).
    if (breaks_pending && breaks_pending()) {
        if (wait_on) *wait_on = key;
        return Error(NtStatus::OplockBreakInProgress);
    }
    const std::string from(from_rel);
    if (!t.rp.exists) {
        DAX_CHECK(vfs::rename_beneath(root, from, t.rel, false));
        return t.rel;
    }
    DAX_TRY(auto ti, target_info(root, t.rp.rel));
    const bool same_file = ti.device == key.device && ti.file_id == key.inode;
    if (same_file && t.rp.rel == from) {
        if (t.rel == from) return from;  // exactly its own name: nothing to do
        // The same link in another case: give it the new spelling.
        DAX_CHECK(vfs::rename_beneath(root, from, t.rel, true));
        return t.rel;
    }
    if (same_file) {
        // Another hard link of the same file: the file ends up reachable under the target
        // name only (MS-FSA: the source link is removed, the target link stays).
        DAX_CHECK(vfs::unlink_beneath(root, from));
        return t.rp.rel;
    }
    if (!replace_if_exists) return Error(NtStatus::ObjectNameCollision);
    DAX_CHECK(check_replaceable(files, ti, wait_on));
    DAX_CHECK(vfs::rename_beneath(root, from, t.rp.rel, true));
    files.file_unlinked(FileKey{ti.device, ti.file_id});  // the replaced file lost this name
    // Keep the client's spelling of the replaced name; if that fails the file keeps the old
    // spelling, which names it just as well on a case-insensitive share.
    if (t.rel != t.rp.rel && vfs::rename_beneath(root, t.rp.rel, t.rel, false)) return t.rel;
    return t.rp.rel;
}

Status link_file(const vfs::ShareRoot& root, FileTable& files, const FileKey& key,
                 std::string_view from_rel, std::string_view new_name, bool replace_if_exists) {
    std::lock_guard lk(rename_mutex());
    DAX_TRY(auto t, resolve_target(root, new_name));
    DAX_CHECK(check_destination_dir(root, files, t.rp.parent, false));
    if (files.delete_pending(key)) return Error(NtStatus::AccessDenied);  // Open.Link.IsDeleted
    if (t.rp.exists) {
        DAX_TRY(auto ti, target_info(root, t.rp.rel));
        if (!replace_if_exists) return Error(NtStatus::ObjectNameCollision);
        if (ti.device == key.device && ti.file_id == key.inode) return {};  // already a link
        DAX_CHECK(check_replaceable(files, ti, nullptr));
        DAX_CHECK(vfs::unlink_beneath(root, t.rp.rel));
        files.file_unlinked(FileKey{ti.device, ti.file_id});
    }
    DAX_TRY(auto src, vfs::open_parent_beneath(root, from_rel));
    DAX_TRY(auto dst, vfs::open_parent_beneath(root, t.rel));
    // Both names are resolved from openat2-checked parents; linkat never follows a symlink in
    // the final source name with flags 0.
    if (::linkat(src.dir.get(), src.name.c_str(), dst.dir.get(), dst.name.c_str(), 0) != 0) {
        if (errno == EXDEV) return Error(NtStatus::NotSameDevice);
        return Error(errno_to_status(errno));
    }
    // A new name in the target's directory (conservatively, the linking client's own
    // directory lease breaks too).
    break_parent_directory_leases(files, root, t.rel, std::nullopt);
    return {};
}

}  // namespace daxsmbd::server::handlers::info
