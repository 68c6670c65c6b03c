// Opening and changing names beneath a share root.
//
// Every path is resolved by openat2(2) from the share root with RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS: a symlink inside the share that stays inside is followed; one that
// leaves it (absolute target, or ".." climbing above the root) fails with EXDEV, a /proc-style
// magic link with ELOOP; both become STATUS_ACCESS_DENIED. Name-changing calls (mkdir, unlink,
// rename) first resolve the *parent* directory that way to an O_PATH descriptor and then act on
// the final name with the *at() call, which never follows a symlink in the final name. So no
// system call ever walks a path that openat2 did not check. Mounts inside the share are
// crossed (RESOLVE_NO_XDEV is not used), like Samba.
//
// `rel_path` arguments are share-relative, '/'-separated on-disk paths, "" for the root:
// normally ResolvedPath::rel from path.h. They are not re-validated beyond what openat2 enforces
// (an absolute or escaping path simply fails with ACCESS_DENIED).
//
// These are blocking calls; the server runs them off the event loop.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "protocol/result.h"
#include "server/vfs/share_root.h"
#include "server/vfs/unique_fd.h"

namespace daxsmbd::server::vfs {

// openat2(dirfd, path, {flags | O_CLOEXEC, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS}).
// Returns the descriptor or -errno. Retries EINTR, and EAGAIN a few times (openat2 reports a
// concurrent rename that might have let ".." escape as EAGAIN).
int openat2_beneath(int dirfd, const char* path, int flags, mode_t mode = 0);

// Opens rel_path with open(2) `flags` (O_CREAT/O_EXCL/O_TRUNC/O_DIRECTORY/O_PATH/O_NOFOLLOW...)
// and `mode` for creation. Non-O_PATH opens are made with O_NONBLOCK | O_NOCTTY so that a FIFO or
// a conflicting kernel lease cannot block the calling thread; O_NONBLOCK is cleared again unless
// the caller asked for it. Errors:
//   ObjectNameNotFound  the final name does not exist (and no O_CREAT)
//   ObjectPathNotFound  a directory component is missing or is not a directory
//   NotADirectory       O_DIRECTORY was given and the final name is not a directory
//   FileIsADirectory    write access to a directory
//   ObjectNameCollision O_CREAT | O_EXCL and the name exists
//   AccessDenied        permission, escape from the share, magic link, symlink loop, and any
//                       object that is neither a regular file nor a directory (FIFO, socket,
//                       device node: nothing a Windows client can use; mount shares nodev)
//   others via errno_to_status.
Result<UniqueFd> open_beneath(const ShareRoot& root, std::string_view rel_path, int flags,
                              mode_t mode = 0);

// mkdirat() of the final name in its (openat2-resolved) parent. EEXIST -> ObjectNameCollision.
Status mkdir_beneath(const ShareRoot& root, std::string_view rel_path, mode_t mode = 0777);

// Removes a file, symlink (the link itself) or empty directory. A non-empty directory ->
// DirectoryNotEmpty; the share root itself -> AccessDenied.
Status unlink_beneath(const ShareRoot& root, std::string_view rel_path);

// Renames `from` to `to`, both inside this share (renameat2 on two openat2-resolved parents).
//  !replace: RENAME_NOREPLACE; an existing target -> ObjectNameCollision. On a file system
//            without RENAME_NOREPLACE support it falls back to check-then-rename (racy against
//            local processes, never against another SMB client of the same share, whose renames
//            the server serialises).
//  replace:  an existing target directory -> AccessDenied (MS-FSA 2.1.5.15.12: a directory is
//            never replaced); a directory replacing a non-directory first removes the target
//            (not atomic: Linux rename cannot do that in one step).
// Checks that belong to the caller: sharing/opens on the target, READONLY target
// (AccessDenied per MS-FSA 2.1.5.15.12), case-only renames (pass the client's spelling of the
// final component, not the resolved on-disk one). Source missing -> ObjectNameNotFound; renaming
// the root -> AccessDenied; across mounts (EXDEV) -> STATUS_NOT_SAME_DEVICE.
Status rename_beneath(const ShareRoot& root, std::string_view from, std::string_view to,
                      bool replace);

// The parent directory of rel_path, opened O_PATH | O_DIRECTORY beneath the root, and the final
// name. Fails with AccessDenied for the root itself (it has no parent in the share) and
// ObjectNameInvalid for a final name of "", "." or "..".
struct ParentDir {
    UniqueFd dir;
    std::string name;
};
Result<ParentDir> open_parent_beneath(const ShareRoot& root, std::string_view rel_path);

// Splits an on-disk relative path into parent ("" for a top-level name) and final name.
void split_rel_path(std::string_view rel_path, std::string_view& parent, std::string_view& name);

}  // namespace daxsmbd::server::vfs
