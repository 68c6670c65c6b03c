#include <gtest/gtest.h>

#include <cerrno>

#include "server/errno_status.h"

namespace daxsmbd::server {
namespace {

struct Row {
    int err;
    uint32_t status;  // raw NTSTATUS (MS-ERREF 2.3.1), independent of the enum's spelling
};

TEST(VfsErrno, TableMatchesWindowsStatuses) {
    const Row rows[] = {
        {ENOENT, 0xC0000034},        // OBJECT_NAME_NOT_FOUND
        {ENOTDIR, 0xC000003A},       // OBJECT_PATH_NOT_FOUND
        {EEXIST, 0xC0000035},        // OBJECT_NAME_COLLISION
        {EACCES, 0xC0000022},        // ACCESS_DENIED
        {EPERM, 0xC0000022},         //
        {ENOSPC, 0xC000007F},        // DISK_FULL
        {EDQUOT, 0xC000007F},        //
        {EFBIG, 0xC000007F},         //
        {EISDIR, 0xC00000BA},        // FILE_IS_A_DIRECTORY
        {ENOTEMPTY, 0xC0000101},     // DIRECTORY_NOT_EMPTY
        {ENAMETOOLONG, 0xC0000106},  // NAME_TOO_LONG
        {EROFS, 0xC00000A2},         // MEDIA_WRITE_PROTECTED
        {EXDEV, 0xC0000022},         // escape from the share -> ACCESS_DENIED
        {ELOOP, 0xC0000022},         //
        {EMFILE, 0xC000011F},        // TOO_MANY_OPENED_FILES
        {ENFILE, 0xC000011F},        //
        {EBADF, 0xC0000008},         // INVALID_HANDLE
        {EINVAL, 0xC000000D},        // INVALID_PARAMETER
        {EIO, 0xC00000E9},           // UNEXPECTED_IO_ERROR
        {ENOMEM, 0xC0000017},        // NO_MEMORY
        {EAGAIN, 0xC0000043},        // SHARING_VIOLATION
        {EBUSY, 0xC0000043},         //
        {ETXTBSY, 0xC0000043},       //
        {EMLINK, 0xC0000265},        // TOO_MANY_LINKS
        {EOPNOTSUPP, 0xC00000BB},    // NOT_SUPPORTED
        {ENOSYS, 0xC00000BB},        //
        {ENODATA, 0xC0000225},       // NOT_FOUND
        {ENXIO, 0xC0000010},         // INVALID_DEVICE_REQUEST
        {ETIMEDOUT, 0xC00000B5},     // IO_TIMEOUT
        {ECANCELED, 0xC0000120},     // CANCELLED
        {EPROTO, 0xC00000E9},        // default: UNEXPECTED_IO_ERROR
        {0, 0xC0000001},             // no error to map: UNSUCCESSFUL, never SUCCESS
    };
    for (const Row& r : rows) {
        EXPECT_EQ(to_u32(errno_to_status(r.err)), r.status) << "errno " << r.err;
        EXPECT_TRUE(is_error(errno_to_status(r.err))) << "errno " << r.err;
    }
}

TEST(VfsErrno, ParentVariantMapsMissingComponentsToPathNotFound) {
    EXPECT_EQ(errno_to_status_for_parent(ENOENT), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(errno_to_status_for_parent(ENOTDIR), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(errno_to_status_for_parent(EXDEV), NtStatus::AccessDenied);
    EXPECT_EQ(errno_to_status_for_parent(EACCES), NtStatus::AccessDenied);
}

}  // namespace
}  // namespace daxsmbd::server
