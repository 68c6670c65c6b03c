#include "server/vfs/open.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "server/errno_status.h"

namespace daxsmbd::server::vfs {

namespace {

constexpr int kEagainRetries = 8;

// openat2 wants a non-empty path; "" (the root) is ".".
std::string path_arg(std::string_view rel) {
    return rel.empty() ? std::string(".") : std::string(rel);
}

// Status for a lookup of rel_path that failed with `err`: tells a missing final name from a
// missing directory on the way (Windows' OBJECT_NAME_NOT_FOUND vs OBJECT_PATH_NOT_FOUND).
NtStatus lookup_error(const ShareRoot& root, std::string_view rel, int err) {
    if (err != ENOENT && err != ENOTDIR) return errno_to_status(err);
    std::string_view parent, name;
    split_rel_path(rel, parent, name);
    if (!parent.empty()) {
        int pfd = openat2_beneath(root.fd(), std::string(parent).c_str(), O_PATH | O_DIRECTORY);
        if (pfd < 0) return errno_to_status_for_parent(-pfd);
        ::close(pfd);
    }
    // The parent is a reachable directory, so the final name is the problem.
    return err == ENOENT ? NtStatus::ObjectNameNotFound : NtStatus::NotADirectory;
}

int statx_nofollow(int dirfd, const std::string& name, struct statx& st) {
    if (::statx(dirfd, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE | STATX_INO,
                &st) != 0)
        return errno;
    return 0;
}

}  // namespace

void split_rel_path(std::string_view rel, std::string_view& parent, std::string_view& name) {
    size_t slash = rel.rfind('/');
    if (slash == std::string_view::npos) {
        parent = {};
        name = rel;
    } else {
        parent = rel.substr(0, slash);
        name = rel.substr(slash + 1);
    }
}

int openat2_beneath(int dirfd, const char* path, int flags, mode_t mode) {
    struct open_how how {};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    // The kernel rejects a mode without O_CREAT/O_TMPFILE (EINVAL).
    how.mode = (flags & (O_CREAT | __O_TMPFILE)) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    int eagain = 0;
    for (;;) {
        long fd = ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd >= 0) return static_cast<int>(fd);
        int err = errno;
        if (err == EINTR) continue;
        if (err == EAGAIN && ++eagain < kEagainRetries) continue;
        return -err;
    }
}

Result<UniqueFd> open_beneath(const ShareRoot& root, std::string_view rel_path, int flags,
                              mode_t mode) {
    const bool path_only = (flags & O_PATH) != 0;
    int use_flags = flags;
    if (!path_only) use_flags |= O_NONBLOCK | O_NOCTTY;
    int fd = openat2_beneath(root.fd(), path_arg(rel_path).c_str(), use_flags, mode);
    if (fd < 0) return Error(lookup_error(root, rel_path, -fd));
    UniqueFd ufd(fd);
    if (!path_only) {
        struct stat st {};
        if (::fstat(fd, &st) != 0) return Error(errno_to_status(errno));
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return Error(NtStatus::AccessDenied);
        if (!(flags & O_NONBLOCK)) {
            int fl = ::fcntl(fd, F_GETFL);
            if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
                return Error(errno_to_status(errno));
        }
    }
    return ufd;
}

Result<ParentDir> open_parent_beneath(const ShareRoot& root, std::string_view rel_path) {
    if (rel_path.empty()) return Error(NtStatus::AccessDenied);
    std::string_view parent, name;
    split_rel_path(rel_path, parent, name);
    if (name.empty() || name == "." || name == "..") return Error(NtStatus::ObjectNameInvalid);
    int fd = openat2_beneath(root.fd(), path_arg(parent).c_str(), O_PATH | O_DIRECTORY);
    if (fd < 0) return Error(errno_to_status_for_parent(-fd));
    ParentDir pd;
    pd.dir.reset(fd);
    pd.name = std::string(name);
    return pd;
}

Status mkdir_beneath(const ShareRoot& root, std::string_view rel_path, mode_t mode) {
    if (rel_path.empty()) return Error(NtStatus::ObjectNameCollision);  // the root exists
    DAX_TRY(ParentDir p, open_parent_beneath(root, rel_path));
    if (::mkdirat(p.dir.get(), p.name.c_str(), mode) != 0) return Error(errno_to_status(errno));
    return {};
}

Status unlink_beneath(const ShareRoot& root, std::string_view rel_path) {
    DAX_TRY(ParentDir p, open_parent_beneath(root, rel_path));
    struct statx st {};
    if (int err = statx_nofollow(p.dir.get(), p.name, st)) return Error(errno_to_status(err));
    const int flags = S_ISDIR(st.stx_mode) ? AT_REMOVEDIR : 0;
    if (::unlinkat(p.dir.get(), p.name.c_str(), flags) != 0) {
        int err = errno;
        // rmdir(2) may report a non-empty directory as EEXIST instead of ENOTEMPTY.
        if (flags == AT_REMOVEDIR && err == EEXIST) return Error(NtStatus::DirectoryNotEmpty);
        return Error(errno_to_status(err));
    }
    return {};
}

Status rename_beneath(const ShareRoot& root, std::string_view from, std::string_view to,
                      bool replace) {
    if (from.empty() || to.empty()) return Error(NtStatus::AccessDenied);
    DAX_TRY(ParentDir src, open_parent_beneath(root, from));
    DAX_TRY(ParentDir dst, open_parent_beneath(root, to));

    struct statx sst {};
    if (int err = statx_nofollow(src.dir.get(), src.name, sst)) return Error(errno_to_status(err));

    auto rename_error = [](int err) -> NtStatus {
        if (err == EXDEV) return NtStatus::NotSameDevice;
        return errno_to_status(err);
    };

    if (replace) {
        struct statx dstx {};
        if (statx_nofollow(dst.dir.get(), dst.name, dstx) == 0) {
            const bool same_file = dstx.stx_ino == sst.stx_ino &&
                                   dstx.stx_dev_major == sst.stx_dev_major &&
                                   dstx.stx_dev_minor == sst.stx_dev_minor;
            if (!same_file) {
                if (S_ISDIR(dstx.stx_mode)) return Error(NtStatus::AccessDenied);
                if (S_ISDIR(sst.stx_mode) && ::unlinkat(dst.dir.get(), dst.name.c_str(), 0) != 0 &&
                    errno != ENOENT)
                    return Error(errno_to_status(errno));
            }
        }
        if (::renameat(src.dir.get(), src.name.c_str(), dst.dir.get(), dst.name.c_str()) != 0)
            return Error(rename_error(errno));
        return {};
    }

    if (::renameat2(src.dir.get(), src.name.c_str(), dst.dir.get(), dst.name.c_str(),
                    RENAME_NOREPLACE) == 0)
        return {};
    int err = errno;
    if (err == EEXIST || err == ENOTEMPTY) return Error(NtStatus::ObjectNameCollision);
    if (err != EINVAL) return Error(rename_error(err));
    // EINVAL: either RENAME_NOREPLACE is unsupported here, or a directory would move into its
    // own subtree. Check-then-rename; the second case fails again with EINVAL below.
    struct statx dstx {};
    if (statx_nofollow(dst.dir.get(), dst.name, dstx) == 0)
        return Error(NtStatus::ObjectNameCollision);
    if (::renameat(src.dir.get(), src.name.c_str(), dst.dir.get(), dst.name.c_str()) != 0)
        return Error(rename_error(errno));
    return {};
}

}  // namespace daxsmbd::server::vfs
