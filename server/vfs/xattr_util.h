// Internal helpers of server/vfs: extended-attribute calls on a descriptor that also work for
// O_PATH descriptors. f*xattr() refuse O_PATH descriptors (EBADF); for those the call is
// repeated on /proc/self/fd/<fd>, which names exactly the file the descriptor holds (the magic
// link is our own descriptor, so no path walk happens that openat2 did not already check).
// Without /proc mounted the fallback fails with ENOENT and callers treat the xattr as absent.
//
// Every function returns a size or 0 on success and -errno on failure.
#pragma once

#include <cstddef>
#include <string>

namespace daxsmbd::server::vfs::detail {

std::string proc_fd_path(int fd);
std::string proc_fd_path(int dirfd, const char* name);

long fd_getxattr(int fd, const char* attr, void* buf, size_t size);
long fd_setxattr(int fd, const char* attr, const void* buf, size_t size, int flags);
long fd_removexattr(int fd, const char* attr);
long fd_listxattr(int fd, char* buf, size_t size);

// getxattr / listxattr of the entry `name` (one path component, never followed if it is a
// symlink) of the directory `dirfd`, via /proc/self/fd/<dirfd>/<name>.
long at_lgetxattr(int dirfd, const char* name, const char* attr, void* buf, size_t size);
long at_llistxattr(int dirfd, const char* name, char* buf, size_t size);

}  // namespace daxsmbd::server::vfs::detail
