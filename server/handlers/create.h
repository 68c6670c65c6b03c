// The file-system half of SMB2 CREATE on a disk share (MS-SMB2 3.3.5.9, MS-FSA 2.1.5.1), without
// any connection state, so that unit tests can drive every disposition on a temporary directory.
// The handler (create.cpp) parses the request, calls create_file() on the blocking pool, registers
// the resulting Open and answers.
//
// Decisions (where the specifications leave room or daxsmbd differs from Windows):
//   - Leading backslash in the name: STATUS_INVALID_PARAMETER (Windows; smbtorture
//     smb2.create.leading-slash). Pipe names on IPC$ may have one.
//   - '/' is accepted as a separator like '\' (Samba and ksmbd do; Windows refuses it as an
//     invalid name character). smbtorture's smb2.timestamps and smb2.dir send "dir/file".
//   - Streams ("file:stream", "file:stream:$DATA", even "file::$DATA"):
//     STATUS_OBJECT_NAME_INVALID, as Samba answers on a share without stream support (smbtorture
//     smb2.create_no_streams; smb2.streams and the stream steps of smb2.create.gentest and
//     smb2.fileid fail until streams are stored).
//   - Share permissions: the tree's MaximalAccess (read-only share: read + execute) bounds every
//     open; asking for more, or for a disposition that writes, is STATUS_ACCESS_DENIED.
//     MAXIMUM_ALLOWED grants the tree's maximal access (without the write rights on a READONLY
//     file, MS-FSA 2.1.5.1.2.1). A file or directory with a stored NT security descriptor also
//     needs its DACL to grant the access (security_info.h); the others are not evaluated.
//   - Open.GrantedAccess is the (generic-mapped) DesiredAccess (EXECUTE alone also allows READ,
//     MS-SMB2 3.3.5.12); the rights an overwrite / supersede implies (WRITE_DATA / DELETE,
//     MS-FSA 2.1.5.1.2) only take part in the sharing check, as in Samba.
//   - DesiredAccess of only SYNCHRONIZE is accepted (MS-FSA only refuses 0; Samba agrees and
//     smbtorture smb2.sharemode relies on it), although Windows refuses it in
//     smb2.create.gentest.
//   - FILE_ATTRIBUTE_ENCRYPTED on a created / overwritten file: STATUS_ACCESS_DENIED (no EFS, as
//     a standalone Windows server).
//   - Options outside MS-FSA's ValidDirectoryCreateOptions on a directory open are accepted
//     (Samba does; clients send SEQUENTIAL_ONLY and friends on directories).
//   - A delete-pending *parent* directory is not checked (MS-FSA phase 6 would answer
//     DELETE_PENDING for a path through it); the final component is.
//   - Created files: mode 0666 & ~umask, directories 0777 & ~umask, owned by the daemon's user;
//     DOS attributes (+ ARCHIVE for files, MS-FSA 2.1.5.1.1) and the creation time go into the
//     daxsmbd xattr when the share stores DOS attributes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth/access_check.h"
#include "protocol/create.h"
#include "protocol/result.h"
#include "protocol/security_descriptor.h"
#include "server/state/file_table.h"
#include "server/state/open.h"
#include "server/vfs/ea.h"
#include "server/vfs/metadata.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server::handlers {

struct CreateParams {
    std::string name;  // as sent (UTF-8), "" = the share root
    uint32_t impersonation_level = protocol::impersonation_level::kImpersonation;
    uint32_t desired_access = 0;  // as sent (GENERIC_* / MAXIMUM_ALLOWED not yet mapped)
    uint32_t file_attributes = 0;
    uint32_t share_access = 0;
    uint32_t create_disposition = protocol::create_disposition::kOpen;
    uint32_t create_options = 0;
    // TreeConnect.MaximalAccess: what the share lets this user do (MS-SMB2 3.3.5.7).
    uint32_t maximal_access = protocol::access_mask::kFileAllAccess;
    bool store_dos_attributes = true;         // share option "store dos attributes"
    std::optional<uint64_t> allocation_size;  // AlSi create context
    std::optional<std::vector<vfs::Ea>> eas;  // ExtA create context
    // NT ACLs (security_info.h): the SecD descriptor a created file gets, and the token stored
    // descriptors are checked against (nullopt: they are not evaluated; a SecD descriptor then
    // defaults its owner and group to the file's POSIX ones).
    std::optional<protocol::SecurityDescriptor> security_descriptor;
    std::optional<auth::AccessToken> token;
    // Break other opens' oplocks this open conflicts with (MS-FSA 2.1.4.12). When a break is
    // started or still running, create_file fails with OPLOCK_BREAK_IN_PROGRESS and stores the
    // file in `oplock_break_file`: wait with FileTable::when_breaks_resolved and call again.
    bool break_oplocks = false;
    std::optional<FileKey>* oplock_break_file = nullptr;
    // The lease the open asks for: opens of the same lease do not break it.
    std::optional<LeaseId> lease;
    // Its ParentLeaseKey (v2): a file made or replaced under that directory lease does not
    // break it (MS-SMB2 3.3.5.9.11).
    std::optional<LeaseId> parent_lease;
};

struct CreateOutcome {
    // fd, path, is_directory, file_id, device, granted/share access, create_options,
    // delete_on_close and file_registration are set; ids, session and tree are the caller's.
    std::shared_ptr<Open> open;
    uint32_t create_action = protocol::create_action::kOpened;
    vfs::FileInfo info;           // after the open (and the overwrite) completed
    uint32_t maximal_access = 0;  // for the MxAc response
};

// The checks that need neither the file system nor any state (MS-SMB2 3.3.5.9, MS-FSA 2.1.5.1
// phase 1), in the order Windows applies them (smbtorture smb2.create.gentest):
//   ImpersonationLevel > Delegate            BAD_IMPERSONATION_LEVEL
//   CreateDisposition > OVERWRITE_IF, reserved CreateOptions bits (0xFF000000),
//   DIRECTORY_FILE with NON_DIRECTORY_FILE, DIRECTORY_FILE with a disposition other than
//   CREATE / OPEN / OPEN_IF, ShareAccess beyond READ|WRITE|DELETE   INVALID_PARAMETER
//   DesiredAccess 0, or any bit of 0x0CE0FE00                             ACCESS_DENIED
//   ACCESS_SYSTEM_SECURITY (no SeSecurityPrivilege)                      PRIVILEGE_NOT_HELD
//   FileAttributes with VOLUME, DEVICE, INTEGRITY_STREAM or bits >= 0x10000  INVALID_PARAMETER
//   FILE_OPEN_BY_FILE_ID, FILE_RESERVE_OPFILTER, FILE_CREATE_TREE_CONNECTION   NOT_SUPPORTED
//   name starting with '\'                   INVALID_PARAMETER
//   DELETE_ON_CLOSE when the share allows no DELETE        ACCESS_DENIED (MS-SMB2 3.3.5.9)
//   DELETE_ON_CLOSE without DELETE (or MAXIMUM_ALLOWED)    INVALID_PARAMETER (MS-FSA)
Status validate_create(const CreateParams& p);

// Opens or creates `p.name` beneath `root` following CreateDisposition (MS-FSA 2.1.5.1), checks
// and registers share modes in `files`, applies attributes / EAs / allocation to what it creates
// or overwrites. Blocking. Errors besides validate_create()'s:
//   OBJECT_NAME_NOT_FOUND   OPEN / OVERWRITE of a missing name
//   OBJECT_PATH_NOT_FOUND   a missing or non-directory parent
//   OBJECT_NAME_COLLISION   CREATE of an existing name; a non-OPEN(_IF) disposition on a directory
//   FILE_IS_A_DIRECTORY     NON_DIRECTORY_FILE on a directory
//   NOT_A_DIRECTORY         DIRECTORY_FILE on a file
//   OBJECT_NAME_INVALID     bad name, any stream syntax, trailing '\' on a file
//   ACCESS_DENIED           beyond the share's rights or a stored DACL's, write to a READONLY
//                           file, overwrite of a HIDDEN / SYSTEM file without keeping the
//                           attribute, path escapes
//   CANNOT_DELETE           DELETE_ON_CLOSE on a READONLY file
//   DELETE_PENDING          the file's delete is pending
//   SHARING_VIOLATION       MS-FSA 2.1.5.1.2.2
//   OPLOCK_BREAK_IN_PROGRESS  (p.break_oplocks) see CreateParams::break_oplocks
Result<CreateOutcome> create_file(const std::shared_ptr<const vfs::ShareRoot>& root,
                                  FileTable& files, const CreateParams& p);

}  // namespace daxsmbd::server::handlers
