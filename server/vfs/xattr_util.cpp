#include "server/vfs/xattr_util.h"

#include <sys/xattr.h>

#include <cerrno>

namespace daxsmbd::server::vfs::detail {

std::string proc_fd_path(int fd) {
    return "/proc/self/fd/" + std::to_string(fd);
}

std::string proc_fd_path(int dirfd, const char* name) {
    return proc_fd_path(dirfd) + "/" + name;
}

namespace {
long result(long r) {
    return r < 0 ? -errno : r;
}
}  // namespace

long fd_getxattr(int fd, const char* attr, void* buf, size_t size) {
    long r = ::fgetxattr(fd, attr, buf, size);
    if (r < 0 && errno == EBADF) r = ::getxattr(proc_fd_path(fd).c_str(), attr, buf, size);
    return result(r);
}

long fd_setxattr(int fd, const char* attr, const void* buf, size_t size, int flags) {
    long r = ::fsetxattr(fd, attr, buf, size, flags);
    if (r < 0 && errno == EBADF) r = ::setxattr(proc_fd_path(fd).c_str(), attr, buf, size, flags);
    return result(r);
}

long fd_removexattr(int fd, const char* attr) {
    long r = ::fremovexattr(fd, attr);
    if (r < 0 && errno == EBADF) r = ::removexattr(proc_fd_path(fd).c_str(), attr);
    return result(r);
}

long fd_listxattr(int fd, char* buf, size_t size) {
    long r = ::flistxattr(fd, buf, size);
    if (r < 0 && errno == EBADF) r = ::listxattr(proc_fd_path(fd).c_str(), buf, size);
    return result(r);
}

long at_lgetxattr(int dirfd, const char* name, const char* attr, void* buf, size_t size) {
    return result(::lgetxattr(proc_fd_path(dirfd, name).c_str(), attr, buf, size));
}

long at_llistxattr(int dirfd, const char* name, char* buf, size_t size) {
    return result(::llistxattr(proc_fd_path(dirfd, name).c_str(), buf, size));
}

}  // namespace daxsmbd::server::vfs::detail
