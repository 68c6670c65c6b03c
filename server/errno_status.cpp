#include "server/errno_status.h"

#include <cerrno>

namespace daxsmbd::server {

NtStatus errno_to_status(int err) {
    switch (err) {
        case 0:
            return NtStatus::Unsuccessful;
        case ENOENT:
            return NtStatus::ObjectNameNotFound;
        case ENOTDIR:
            return NtStatus::ObjectPathNotFound;
        case EEXIST:
            return NtStatus::ObjectNameCollision;
        case EACCES:
        case EPERM:
            return NtStatus::AccessDenied;
        case ENOSPC:
        case EDQUOT:
        case EFBIG:
            return NtStatus::DiskFull;
        case EISDIR:
            return NtStatus::FileIsADirectory;
        case ENOTEMPTY:
            return NtStatus::DirectoryNotEmpty;
        case ENAMETOOLONG:
            return NtStatus::NameTooLong;
        case EROFS:
            return NtStatus::MediaWriteProtected;
        case EXDEV:
        case ELOOP:
            return NtStatus::AccessDenied;
        case EMFILE:
        case ENFILE:
            return NtStatus::TooManyOpenedFiles;
        case EBADF:
            return NtStatus::InvalidHandle;
        case EINVAL:
        case EFAULT:
            return NtStatus::InvalidParameter;
        case EIO:
            return NtStatus::UnexpectedIoError;
        case ENOMEM:
            return NtStatus::NoMemory;
        case EAGAIN:  // == EWOULDBLOCK on Linux
        case EBUSY:
        case ETXTBSY:
            return NtStatus::SharingViolation;
        case EMLINK:
            return NtStatus::TooManyLinks;
        case ENOSYS:
        case EOPNOTSUPP:  // == ENOTSUP on Linux
            return NtStatus::NotSupported;
        case ENODATA:
            return NtStatus::NotFound;
        case ENXIO:
        case ENODEV:
            return NtStatus::InvalidDeviceRequest;
        case ETIMEDOUT:
            return NtStatus::IoTimeout;
        case ECANCELED:
        case EINTR:
            return NtStatus::Cancelled;
        default:
            return NtStatus::UnexpectedIoError;
    }
}

NtStatus errno_to_status_for_parent(int err) {
    if (err == ENOENT || err == ENOTDIR) return NtStatus::ObjectPathNotFound;
    return errno_to_status(err);
}

}  // namespace daxsmbd::server
