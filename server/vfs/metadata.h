// File metadata as SMB reports it: FILETIME timestamps, FILE_ATTRIBUTE_* flags, file ids.
//
// Where Linux has no place for a Windows fact, daxsmbd keeps it in one user xattr per file,
// `user.daxsmbd.dosattrib` (kDosXattrName), independent of Samba's user.DOSATTRIB so the two
// never misread each other. Format, little-endian, 12 bytes:
//   bytes 0..3   uint32  FILE_ATTRIBUTE_* bits that Linux cannot express (kStoredAttributes)
//   bytes 4..11  int64   creation time as FILETIME; 0 = never recorded (use the file system's)
// Readers accept longer values and ignore the extra bytes (room for later fields appended at
// the end); shorter values are treated as absent.
//
// What is reported:
//   file_id          st_ino. Stable for the life of the file, across reopen and rename (MS-FSCC
//                    2.1.9). Unique only per device: (device, file_id) identifies a file within a
//                    share (a share can span mounts); the server combines them where it needs a
//                    share-wide id.
//   creation_time    the xattr's creation time if recorded (a client set it, or the create
//                    handler stored it), else statx birth time when the file system has one,
//                    else the earlier of mtime and ctime. The xattr wins over the birth time
//                    because Linux cannot set a birth time, and a client that set one must read
//                    back what it set.
//   last_access / last_write / change   atime / mtime / ctime.
//   end_of_file      st_size; 0 for directories (Windows reports no size for them).
//   allocation_size  st_blocks * 512; 0 for directories.
//   file_attributes  from the xattr when present (only kStoredAttributes bits are taken from it),
//                    else READONLY for a non-directory without any write permission bit;
//                    DIRECTORY from S_ISDIR; NORMAL when nothing else is set (MS-FSCC 2.6).
//                    Directories never get READONLY from the mode: Windows uses that bit on
//                    directories to mean "customised folder", not "cannot write".
//                    Hiding dot files is a share policy for the caller, not done here.
#pragma once

#include <sys/stat.h>
#include <time.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/result.h"

namespace daxsmbd::server::vfs {

// FILE_ATTRIBUTE_* (MS-FSCC 2.6).
inline constexpr uint32_t kAttrReadonly = 0x00000001;
inline constexpr uint32_t kAttrHidden = 0x00000002;
inline constexpr uint32_t kAttrSystem = 0x00000004;
inline constexpr uint32_t kAttrDirectory = 0x00000010;
inline constexpr uint32_t kAttrArchive = 0x00000020;
inline constexpr uint32_t kAttrNormal = 0x00000080;
inline constexpr uint32_t kAttrTemporary = 0x00000100;
inline constexpr uint32_t kAttrSparseFile = 0x00000200;
inline constexpr uint32_t kAttrReparsePoint = 0x00000400;
inline constexpr uint32_t kAttrCompressed = 0x00000800;
inline constexpr uint32_t kAttrOffline = 0x00001000;
inline constexpr uint32_t kAttrNotContentIndexed = 0x00002000;
inline constexpr uint32_t kAttrEncrypted = 0x00004000;

// Attributes a client may set with FileBasicInformation: ValidSetAttributes of MS-FSA
// 2.1.5.15.2.
inline constexpr uint32_t kSettableAttributes = kAttrReadonly | kAttrHidden | kAttrSystem |
                                                kAttrArchive | kAttrTemporary | kAttrOffline |
                                                kAttrNotContentIndexed;
// Attributes kept in the xattr: the settable ones plus SPARSE_FILE (set by FSCTL_SET_SPARSE,
// which has no Linux equivalent either). DIRECTORY and NORMAL are always derived.
inline constexpr uint32_t kStoredAttributes = kSettableAttributes | kAttrSparseFile;

// ---- FILETIME (MS-DTYP 2.3.3: 100 ns intervals since 1601-01-01 UTC) ----

// 100-ns intervals between 1601-01-01 and 1970-01-01.
inline constexpr int64_t kFiletimeUnixEpoch = 116444736000000000;

// Times before 1601 become 0; times past the FILETIME range saturate at INT64_MAX.
int64_t timespec_to_filetime(const struct timespec& ts);
int64_t statx_ts_to_filetime(const struct statx_timestamp& ts);
// ft must be >= 0; FILETIME's 100-ns resolution is kept exactly (tv_nsec = (ft % 10^7) * 100).
struct timespec filetime_to_timespec(int64_t ft);

// ---- The DOS-attribute xattr ----

inline constexpr char kDosXattrName[] = "user.daxsmbd.dosattrib";
// Every xattr daxsmbd uses for itself starts with this; ea.h never shows them as EAs.
inline constexpr std::string_view kPrivateXattrPrefix = "user.daxsmbd.";

struct DosXattr {
    uint32_t attributes = 0;    // only kStoredAttributes bits are meaningful
    int64_t creation_time = 0;  // FILETIME, 0 = not recorded
    // A ChangeTime a client set (Linux cannot set ctime), FILETIME, 0 = none, and the wall
    // clock when it was set: it is reported only while the file's real ctime is not later than
    // the anchor (plus one coarse-clock tick), so any later change shows the real ctime again.
    int64_t change_time = 0;
    int64_t change_time_anchor = 0;
    bool operator==(const DosXattr&) const = default;
};
// 12 bytes (attributes, creation time), or 28 with the change time and its anchor.
std::vector<std::byte> encode_dos_xattr(const DosXattr& x);
std::optional<DosXattr> decode_dos_xattr(std::span<const std::byte> value);

// Reads the xattr of an open file (any descriptor, O_PATH included). Absent, unreadable,
// malformed or unsupported all yield nullopt: metadata queries never fail because of it.
std::optional<DosXattr> read_dos_xattr(int fd);
// Writes it. ENOTSUP (no user xattrs on this file system) and EPERM (user xattrs are not
// allowed on this kind of inode, e.g. a symlink) are *not* reported as errors: the caller gets
// success and the value is simply not persisted. Other failures map through errno_to_status.
Status write_dos_xattr(int fd, const DosXattr& x);

// ---- Query ----

struct FileInfo {
    uint64_t file_id = 0;
    int64_t creation_time = 0;  // FILETIME
    int64_t last_access_time = 0;
    int64_t last_write_time = 0;
    int64_t change_time = 0;
    uint64_t end_of_file = 0;
    uint64_t allocation_size = 0;
    uint32_t file_attributes = 0;  // FILE_ATTRIBUTE_*
    uint32_t nlink = 0;
    bool is_directory = false;
    bool is_symlink = false;  // only from query_info_at / a not-followed directory entry
    uint64_t device = 0;      // st_dev of the file
};

// Builds FileInfo from statx data and the (optional) DOS xattr; the rules are at the top of
// this file. Pure, so it is testable without a file system.
FileInfo file_info_from(const struct statx& st, const std::optional<DosXattr>& dos);

// statx(AT_EMPTY_PATH) of an open descriptor (O_PATH is fine) + its DOS xattr.
Result<FileInfo> query_info(int fd);
// Of the entry `name` (a single component) of directory `dirfd`, without following a symlink:
// a symlink is described as itself (is_symlink = true).
Result<FileInfo> query_info_at(int dirfd, const std::string& name);

// ---- FileBasicInformation set (MS-FSA 2.1.5.15.2, MS-FSCC 2.4.7) ----

struct BasicInfoUpdate {
    // FILETIMEs as on the wire: > 0 sets the time; 0 leaves it; -1 ("stop automatic updates
    // for this handle") and -2 ("resume them") also leave it here: the per-handle suppression
    // is state of the open, which the caller keeps (and, on Linux, can only approximate).
    // Less than -2 is STATUS_INVALID_PARAMETER.
    int64_t creation_time = 0;
    int64_t last_access_time = 0;
    int64_t last_write_time = 0;
    // Linux has no way to set ctime: a positive value is kept in the DOS xattr and reported
    // until the file changes again (DosXattr::change_time).
    int64_t change_time = 0;
    // 0 = leave unchanged; else the new value of the kSettableAttributes bits (NORMAL = none).
    uint32_t file_attributes = 0;
    // The share's root directory: its HIDDEN and SYSTEM bits cannot change (MS-FSA 2.1.5.15.2).
    bool is_share_root = false;
};

// Applies `u` to the file open as `fd` (a normal descriptor; O_PATH works through the /proc
// fallback when /proc is mounted). Times go through futimens; creation time and attributes go
// into the DOS xattr (read-modify-write, so SPARSE_FILE and an earlier creation time survive).
// Errors: STATUS_INVALID_PARAMETER for times < -2, for DIRECTORY on a non-directory and for
// TEMPORARY on a directory (MS-FSA 2.1.5.15.2); errno_to_status of a failed futimens/fsetxattr.
// On a file system without user xattrs, the attribute / creation-time part succeeds without
// being stored (see write_dos_xattr).
Status set_basic_info(int fd, const BasicInfoUpdate& u);

}  // namespace daxsmbd::server::vfs
