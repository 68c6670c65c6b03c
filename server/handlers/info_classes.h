// What QUERY_INFO, SET_INFO and QUERY_DIRECTORY share (MS-SMB2 3.3.5.18, 3.3.5.20, 3.3.5.21):
// which information classes exist and how small an output buffer may be, the translation of
// file-system facts (vfs::FileInfo, statvfs, the POSIX mode) into MS-FSCC structures, the
// synthetic security descriptor, and the directory enumeration loop. Everything here works
// without a connection, so unit tests drive it directly on a temporary directory.
// Implemented in file_info_classes.cpp (file classes, security descriptor), fs_info_classes.cpp
// (file-system classes), dir_info_classes.cpp (directory listing) and file_info_set.cpp (the
// helpers of SET_INFO).
//
// Decisions (where the specifications leave room or daxsmbd differs from Windows):
//   - Minimum OutputBufferLength: what Windows checks (the C sizeof of the structure, i.e. the
//     fixed part plus the first name character, rounded to the structure's alignment), which is
//     larger than MS-FSCC's fixed part for the name classes: FileAllInformation 104,
//     FileNormalizedNameInformation 8, FileStreamInformation 32,
//     FileFsVolumeInformation 24, FileFsAttributeInformation 16 (smbtorture
//     smb2.getinfo.qfile_buffercheck / qfs_buffercheck, which are run against Windows).
//   - Short (8.3) names are computed from the long name, never stored (see short_name()), and
//     answered by FileAlternateNameInformation, as Samba's default "mangled names" does (Windows
//     and smbtorture's getinfo tests expect the class to succeed). Directory entries still carry
//     an empty ShortName, and CREATE does not resolve a short name to its file.
//   - FileFsAttributeInformation reports the name "NTFS", as Samba does by default: Windows
//     applications enable features by file-system name. The flags are honest: no
//     FILE_PERSISTENT_ACLS (no NT ACLs are stored yet), no FILE_NAMED_STREAMS (CREATE refuses
//     streams), FILE_CASE_SENSITIVE_SEARCH only on a "case sensitive" share.
//   - Security descriptor of a file without a stored one (security_info.h), derived from the
//     POSIX owner, group and mode, as Samba does without an ACL module: owner S-1-22-1-<uid>,
//     group S-1-22-2-<gid>, and a DACL with one allow ACE each for the owner, the group and
//     Everyone (S-1-1-0) carrying the rights of their rwx bits (see posix_bits_to_access); a
//     class without any bit gets no ACE. No inheritable ACEs and no SACL.
//   - "." and ".." are listed first in every directory, the share root included (vfs/dir.h).
//     Symlinks that resolve outside the share (or nowhere) are left out of listings: a client
//     could not open them anyway.
//   - FileIndex in directory entries is 0 (a position is not kept, as NTFS); SMB2_INDEX_SPECIFIED
//     is ignored and the enumeration continues where it stood, which is what Windows does
//     (MS-SMB2 3.3.5.18 <410>).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/dir_info.h"
#include "protocol/file_info.h"
#include "protocol/fs_info.h"
#include "protocol/result.h"
#include "protocol/security_descriptor.h"
#include "protocol/sid.h"
#include "server/state/file_table.h"
#include "server/vfs/dir.h"
#include "server/vfs/metadata.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server::handlers::info {

// ---- Information classes -----------------------------------------------------------------

enum class ClassSupport {
    Supported,     // handled here
    NotSupported,  // documented in MS-FSCC but not served: STATUS_NOT_SUPPORTED
    Invalid,       // not a class of this InfoType: STATUS_INVALID_INFO_CLASS
};

// QUERY_INFO, SMB2_0_INFO_FILE (MS-SMB2 3.3.5.20.1: classes of 2.2.37 are served, other classes
// of MS-FSCC 2.4 are NOT_SUPPORTED, the rest INVALID_INFO_CLASS). The pipe classes count as not
// supported (named pipes answer FileStandardInformation only, see query_info.cpp).
ClassSupport query_file_class_support(uint8_t info_class);
// QUERY_INFO, SMB2_0_INFO_FILESYSTEM (MS-SMB2 3.3.5.20.2).
ClassSupport query_fs_class_support(uint8_t fs_class);
// SET_INFO, SMB2_0_INFO_FILE (MS-SMB2 3.3.5.21.1): classes with "Set" in MS-FSCC 2.4 that
// set_info.cpp applies are Supported, the other settable ones NotSupported, the rest Invalid.
ClassSupport set_file_class_support(uint8_t info_class);
// SET_INFO, SMB2_0_INFO_FILESYSTEM (MS-SMB2 3.3.5.21.2): FileFsControlInformation,
// FileFsObjectIdInformation and FileFsLabelInformation are settable on Windows and
// NotSupported here; the rest Invalid.
ClassSupport set_fs_class_support(uint8_t fs_class);

// Smallest OutputBufferLength accepted for a supported query class (below it:
// STATUS_INFO_LENGTH_MISMATCH, MS-SMB2 3.3.5.20.1/2); see the note on Windows' sizes above.
size_t query_file_min_output(uint8_t info_class);
size_t query_fs_min_output(uint8_t fs_class);

// Fits an encoded answer into OutputBufferLength (the caller has checked the minimum): Success
// when it fits, else the data is cut to `output_buffer_length` bytes and the answer is
// STATUS_BUFFER_OVERFLOW (MS-SMB2 3.3.5.20.1: a portion of the variable-length data).
NtStatus fit_output(protocol::ByteVector& data, uint32_t output_buffer_length);

// ---- File information --------------------------------------------------------------------

protocol::FileBasicInfo basic_info(const vfs::FileInfo& fi);
// NumberOfLinks counts the links that are not delete-pending (MS-FSA 2.1.5.12.27); a directory
// has one link, whatever st_nlink says (Windows never reports its subdirectories' "..").
protocol::FileStandardInfo standard_info(const vfs::FileInfo& fi, bool delete_pending);
protocol::FileNetworkOpenInfo network_open_info(const vfs::FileInfo& fi);
// MS-FSCC 2.4.26: the volume serial number and a 128-bit id: inode (low 8 bytes) and device
// (high 8 bytes), unique within the share even when it spans mounts.
protocol::FileIdInfo file_id_info(const vfs::FileInfo& fi, uint32_t volume_serial);
// The default data stream of a file (MS-FSCC 2.4.49); directories have none.
protocol::FileStreamInfo stream_info(const vfs::FileInfo& fi);

// Share-relative on-disk path as Windows spells it: '\' separators, with a leading '\' for
// FileAllInformation's name ("\dir\file", the root is "\") and without one for
// FileNormalizedNameInformation ("dir\file", the root is "").
std::string windows_path(std::string_view rel, bool leading_backslash);

// The 8.3 name of a file whose on-disk name is `long_name` (FileAlternateNameInformation,
// MS-FSCC 2.4.5): a name that already is 8.3 is answered in upper case, any other gets a name
// derived from a hash of the long name, with a '~' (e.g. "TOL2K7~4.TXT"). Stateless: the same
// long name always gives the same short name.
std::string short_name(std::string_view long_name);

// FILE_MODE_INFORMATION bits of a CREATE's CreateOptions (MS-FSCC 2.4.31: the same values).
uint32_t mode_from_create_options(uint32_t create_options);
// MS-FSA 2.1.5.15.8: STATUS_INVALID_PARAMETER for a Mode a handle cannot take; otherwise the
// new Open.Mode (FILE_WRITE_THROUGH is kept as it was under FILE_NO_INTERMEDIATE_BUFFERING).
Result<uint32_t> apply_mode(uint32_t open_mode, uint32_t requested);

// One QUERY_DIRECTORY entry from a vfs entry.
protocol::DirEntry dir_entry(const vfs::DirEntry& e, uint32_t ea_size);

// ---- Security descriptor -----------------------------------------------------------------

struct PosixOwner {
    uint32_t uid = 0;
    uint32_t gid = 0;
    mode_t mode = 0;  // permission bits (others are ignored)
    bool operator==(const PosixOwner&) const = default;
};

// NT rights of one rwx triple (bit 4 r, 2 w, 1 x): all three -> FILE_ALL_ACCESS; otherwise
// r -> FILE_GENERIC_READ, w -> FILE_GENERIC_WRITE, x -> FILE_GENERIC_EXECUTE, ORed (the POSIX
// owner's implicit READ_CONTROL | WRITE_DAC comes from MS-DTYP's access check, not from here).
uint32_t posix_bits_to_access(unsigned rwx);

// The DACL a POSIX mode stands for: one allow ACE each for `owner`, `group` and Everyone with
// the rights of their rwx bits (none for a class without bits), nothing inheritable.
protocol::Acl posix_dacl(const protocol::Sid& owner, const protocol::Sid& group, mode_t mode);
// The descriptor of a file without a stored one: owner S-1-22-1-<uid>, group S-1-22-2-<gid>,
// posix_dacl(); no SACL.
protocol::SecurityDescriptor posix_security_descriptor(const PosixOwner& owner);

// Self-relative SECURITY_DESCRIPTOR (MS-DTYP 2.4.6) of posix_security_descriptor() with the parts
// `secinfo` (AdditionalInformation) asks for (OWNER 0x1, GROUP 0x2, DACL 0x4; nothing else
// exists), laid out as MS-FSA 2.1.5.14 does: header, owner, group, DACL.
protocol::ByteVector synthetic_security_descriptor(const PosixOwner& owner, uint32_t secinfo);

// ---- File system information -------------------------------------------------------------

struct VolumeFacts {
    std::string label;  // the share name (at most 32 characters are sent)
    uint32_t serial = 0;
    int64_t creation_time = 0;
    vfs::FsSpace space;
    uint32_t max_name_length = 255;
    bool case_sensitive = false;
    bool read_only = false;  // share or mount
    bool user_xattrs = false;
    protocol::Guid object_id{};  // FileFsObjectIdInformation, see volume_object_id()
};

// MS-FSCC 2.5.1 FileSystemAttributes, see the decisions above.
uint32_t fs_attributes(const VolumeFacts& v);
// A stable identifier of the share's volume for FileFsObjectIdInformation: derived from the
// volume serial number and the share path, so it stays the same across restarts.
protocol::Guid volume_object_id(uint32_t serial, std::string_view share_path);
// Encodes a supported file-system class (query_fs_class_support() == Supported).
protocol::ByteVector encode_fs_info(uint8_t fs_class, const VolumeFacts& v);
VolumeFacts volume_facts(const vfs::ShareRoot& root, const vfs::FsSpace& space,
                         std::string_view share_name, bool share_read_only);

// ---- Directory enumeration (MS-FSA 2.1.5.6.3) --------------------------------------------

struct ListRequest {
    uint8_t info_class = 0;
    std::string_view pattern = "*";
    size_t output_buffer_length = 0;
    bool return_single_entry = false;
    // The enumeration started with this request (first query or SMB2_REOPEN): no match is then
    // STATUS_NO_SUCH_FILE, later STATUS_NO_MORE_FILES.
    bool first_query = false;
    // Computes EaSize for the classes that carry it (nullptr: 0).
    const vfs::ShareRoot* root = nullptr;
};

// STATUS_OBJECT_NAME_INVALID for a pattern that is not a file name with wildcards (a path
// separator or a stream colon in it, MS-FSA 2.1.5.6.3), else Success.
Status check_pattern(std::string_view pattern);

// Fills one QUERY_DIRECTORY output buffer from `cursor`. An entry that does not fit is put back
// for the next call; when not even the first one fits the answer is
// STATUS_INFO_LENGTH_MISMATCH (as Samba; the entry stays). Errors: INVALID_INFO_CLASS,
// INFO_LENGTH_MISMATCH (buffer smaller than the class's fixed part), NO_SUCH_FILE /
// NO_MORE_FILES (nothing matched), or what the directory read failed with. Blocking.
Result<protocol::ByteVector> list_directory(vfs::DirectoryCursor& cursor, const ListRequest& req);

// ---- Helpers of SET_INFO (blocking) ------------------------------------------------------

// True when directory `rel` has no entry besides "." and "..". Blocking.
Result<bool> directory_is_empty(const vfs::ShareRoot& root, std::string_view rel);

// FileAllocationInformation (MS-FSA 2.1.5.15.1) on a regular file open for writing: below the
// end of file the file is truncated to `allocation_size` (as Samba; MS-FSA rounds up to a
// cluster first); above it the space is reserved with fallocate(KEEP_SIZE) where the file system
// can; a smaller reservation beyond the end of file is released. Blocking.
Status set_allocation(int fd, int64_t allocation_size);

// FileRenameInformation (MS-FSA 2.1.5.15.12) of the file `key`, reached at on-disk `from_rel`, to
// the SMB path `new_name` (relative to the share root; one leading '\' is tolerated, as Samba
// does, and '/' separates components as in CREATE). Returns the new on-disk path. Rules:
//   - empty name, a stream target (":name", "name:stream")       OBJECT_NAME_INVALID /
//                                                                 NOT_SUPPORTED (no streams)
//   - the share root as source or target                         ACCESS_DENIED /
//   OBJECT_NAME_INVALID
//   - an open of the destination directory with DELETE access or without FILE_SHARE_WRITE
//     (Windows opens it sharing read and write only)               SHARING_VIOLATION
//   - the source's delete is pending                             ACCESS_DENIED
//   - the same name (exact case)                                 success, nothing changes
//   - the same name in another case                              renamed to the new spelling
//   - another link of the same file                              the source link is removed
//   - an existing other file, !replace_if_exists                 OBJECT_NAME_COLLISION
//   - ... replace: a directory, READONLY, open by anyone          ACCESS_DENIED
//                  delete pending                                DELETE_PENDING
//                  open, with HANDLE caching leases, and `wait_on` given: those break (see
//                  below); what is still open afterwards: ACCESS_DENIED
//     otherwise it is replaced and the new name takes the client's spelling.
// Open children of a renamed directory are the caller's check (it knows the opens). Once the
// checks passed, `breaks_pending` (when given) starts the breaks the rename causes and says
// whether they must be waited for: then nothing is renamed and OPLOCK_BREAK_IN_PROGRESS is
// returned, with *wait_on the file whose breaks to wait for (wait, and call again). Renames are
// serialised server-wide (rename_beneath's fallback without RENAME_NOREPLACE relies on it).
// Blocking.
Result<std::string> rename_file(const vfs::ShareRoot& root, FileTable& files, const FileKey& key,
                                bool is_directory, std::string_view from_rel,
                                std::string_view new_name, bool replace_if_exists,
                                const std::function<bool()>& breaks_pending = {},
                                FileKey* wait_on = nullptr);

// FileLinkInformation (MS-FSA 2.1.5.15.7): a new hard link `new_name` to the file at `from_rel`.
// Directories: FILE_IS_A_DIRECTORY (the caller checks). The destination directory's opens as for
// a rename (SHARING_VIOLATION). An existing target: !replace ->
// OBJECT_NAME_COLLISION; the same file -> success; a directory, READONLY or open file ->
// ACCESS_DENIED; otherwise it is unlinked first. Blocking.
Status link_file(const vfs::ShareRoot& root, FileTable& files, const FileKey& key,
                 std::string_view from_rel, std::string_view new_name, bool replace_if_exists);

}  // namespace daxsmbd::server::handlers::info
