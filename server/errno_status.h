// The one errno -> NTSTATUS mapping of daxsmbd (architecture.md, "Errors": "errno is mapped to
// NTSTATUS in exactly one function"). Everything that turns a failed system call into a status
// goes through here, so a client sees the same answer for the same failure everywhere.
#pragma once

#include "protocol/status.h"

namespace daxsmbd::server {

// Maps an errno value of a failed file-system call to the NTSTATUS Windows gives for the same
// condition. The table (and the reasons where it is not obvious):
//
//   ENOENT             OBJECT_NAME_NOT_FOUND   the final name is missing. When a *directory
//                                              component* is missing, Windows answers
//                                              OBJECT_PATH_NOT_FOUND: use
//                                              errno_to_status_for_parent() for that case.
//   ENOTDIR            OBJECT_PATH_NOT_FOUND   a component used as a directory is not one. When
//                                              the caller asked for the *final* name to be a
//                                              directory the answer is NOT_A_DIRECTORY; the vfs
//                                              open functions make that distinction themselves.
//   EEXIST             OBJECT_NAME_COLLISION
//   EACCES, EPERM      ACCESS_DENIED
//   ENOSPC, EDQUOT,    DISK_FULL               quota errors too: Windows applications handle
//   EFBIG                                      DISK_FULL, not QUOTA_EXCEEDED
//   EISDIR             FILE_IS_A_DIRECTORY
//   ENOTEMPTY          DIRECTORY_NOT_EMPTY
//   ENAMETOOLONG       NAME_TOO_LONG
//   EROFS              MEDIA_WRITE_PROTECTED   MS-FSA 2.1.5.15: read-only volume
//   EXDEV, ELOOP       ACCESS_DENIED           from openat2(RESOLVE_BENEATH|NO_MAGICLINKS) these
//                                              mean "the path tried to leave the share" (or a
//                                              symlink loop); the client learns nothing about
//                                              what lies outside. (rename_beneath maps a
//                                              renameat2 EXDEV, a cross-mount move, to
//                                              NtStatus::NotSameDevice itself.)
//   EMFILE, ENFILE     TOO_MANY_OPENED_FILES
//   EBADF              INVALID_HANDLE
//   EINVAL, EFAULT     INVALID_PARAMETER
//   EIO                UNEXPECTED_IO_ERROR
//   ENOMEM             NO_MEMORY
//   EAGAIN, EBUSY,     SHARING_VIOLATION       a conflicting kernel lease (open with O_NONBLOCK),
//   ETXTBSY                                    a busy mount point or running executable: the
//                                              object is in use by someone else
//   EMLINK             TOO_MANY_LINKS
//   ENOSYS, EOPNOTSUPP NOT_SUPPORTED
//   ENODATA            NOT_FOUND               generic; the EA code answers its own statuses
//   ENXIO, ENODEV      INVALID_DEVICE_REQUEST  FIFO without a writer, device nodes
//   ETIMEDOUT          IO_TIMEOUT
//   ECANCELED, EINTR   CANCELLED
//   0                  UNSUCCESSFUL            a caller bug (no error to map); never SUCCESS, so
//                                              the result can always be wrapped in Error()
//   anything else      UNEXPECTED_IO_ERROR
NtStatus errno_to_status(int err);

// The same mapping for a lookup whose *parent directory* (some component before the final name)
// could not be resolved: ENOENT and ENOTDIR become OBJECT_PATH_NOT_FOUND, as Windows answers
// for \missing\file.txt; every other errno maps as in errno_to_status().
NtStatus errno_to_status_for_parent(int err);

}  // namespace daxsmbd::server
