// Access mask bits for files, pipes and directories (MS-SMB2 2.2.13.1, MS-DTYP 2.4.3) and the
// generic mapping the server applies before an access check (spec digest 9.3).
#pragma once

#include <cstdint>

namespace daxsmbd::protocol {

namespace access_mask {
// File, pipe and printer specific rights (MS-SMB2 2.2.13.1.1).
constexpr uint32_t kFileReadData = 0x00000001;
constexpr uint32_t kFileWriteData = 0x00000002;
constexpr uint32_t kFileAppendData = 0x00000004;
constexpr uint32_t kFileReadEa = 0x00000008;
constexpr uint32_t kFileWriteEa = 0x00000010;
constexpr uint32_t kFileExecute = 0x00000020;
constexpr uint32_t kFileDeleteChild = 0x00000040;
constexpr uint32_t kFileReadAttributes = 0x00000080;
constexpr uint32_t kFileWriteAttributes = 0x00000100;
// Directory names of the same bits (MS-SMB2 2.2.13.1.2).
constexpr uint32_t kFileListDirectory = kFileReadData;
constexpr uint32_t kFileAddFile = kFileWriteData;
constexpr uint32_t kFileAddSubdirectory = kFileAppendData;
constexpr uint32_t kFileTraverse = kFileExecute;
// Standard rights.
constexpr uint32_t kDelete = 0x00010000;
constexpr uint32_t kReadControl = 0x00020000;
constexpr uint32_t kWriteDac = 0x00040000;
constexpr uint32_t kWriteOwner = 0x00080000;
constexpr uint32_t kSynchronize = 0x00100000;
constexpr uint32_t kStandardRightsRequired =
    0x000F0000;  // DELETE|READ_CONTROL|WRITE_DAC|WRITE_OWNER
constexpr uint32_t kAccessSystemSecurity = 0x01000000;
constexpr uint32_t kMaximumAllowed = 0x02000000;
constexpr uint32_t kGenericAll = 0x10000000;
constexpr uint32_t kGenericExecute = 0x20000000;
constexpr uint32_t kGenericWrite = 0x40000000;
constexpr uint32_t kGenericRead = 0x80000000;

// Generic mapping for files and directories (digest 9.3; same values as Samba and ksmbd).
constexpr uint32_t kFileGenericRead = 0x00120089;
constexpr uint32_t kFileGenericWrite = 0x00120116;
constexpr uint32_t kFileGenericExecute = 0x001200A0;
constexpr uint32_t kFileAllAccess = 0x001F01FF;

// Every bit a DesiredAccess may carry; anything else is STATUS_ACCESS_DENIED /
// STATUS_INVALID_PARAMETER territory (Samba rejects 0x0CE0FE00, the complement).
constexpr uint32_t kValidDesiredAccess = 0xF31F01FF;
constexpr uint32_t kInvalidDesiredAccess = ~kValidDesiredAccess;  // 0x0CE0FE00
}  // namespace access_mask

// Replaces GENERIC_* bits by the file rights they stand for. MAXIMUM_ALLOWED and
// ACCESS_SYSTEM_SECURITY are left as they are: the access check treats them specially.
uint32_t map_generic_file(uint32_t mask);

}  // namespace daxsmbd::protocol
