// Extended attributes (EAs) of SMB (MS-FSCC 2.4.15/2.4.16, MS-FSA 2.1.5.15.6), stored as Linux
// user xattrs: the EA "NAME" is the xattr "user.NAME".
//
// Names: EA names are case-insensitive on Windows, so daxsmbd stores them upper-cased (ASCII
// letters only; EA names are 8-bit strings) and looks them up case-insensitively, which also
// finds user xattrs that other Linux programs wrote in lower or mixed case; list_eas() reports
// names as stored. Allowed names (MS-FSCC 2.4.16): 1..254 bytes, none of 0x00-0x1F
// \ / : * ? " < > | , + = [ ] ; -> otherwise NtStatus::InvalidEaName. Linux caps an xattr name at
// 255 bytes including "user.", so names of 251..254 bytes are refused the same way.
//
// Hidden: daxsmbd's own xattrs (prefix "user.daxsmbd.", see metadata.h) are never listed,
// read, written or counted as EAs; an EA name that upper-cases to "DAXSMBD.*" is still a normal
// EA ("user.DAXSMBD.*" is a different xattr name on Linux). Samba's private xattrs
// (user.DOSATTRIB, user.DosStream.*) would show as EAs on a share that Samba served before.
//
// Flags: FILE_NEED_EA (0x80) has no Linux equivalent and is not stored; EAs read back with
// flags 0.
//
// Size limit: MS-FSA 2.1.5.15.6 fails a set with STATUS_EA_TOO_LARGE when the EA list would
// exceed 64 KiB - 5 bytes; the list size is ea_list_size(). A file system that refuses the value
// (ext4 keeps all xattrs of a file in one block: ENOSPC/E2BIG) also gives EA_TOO_LARGE. No user
// xattr support (ENOTSUP) -> NtStatus::EasNotSupported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/result.h"

namespace daxsmbd::server::vfs {

inline constexpr uint32_t kMaxEaListSize = 65536 - 5;  // MS-FSA 2.1.5.15.6

struct Ea {
    std::string name;
    std::vector<std::byte> value;
    uint8_t flags = 0;
    bool operator==(const Ea&) const = default;
};

// MS-FSCC 2.4.16 name rules (+ the Linux length cap, see above).
bool is_valid_ea_name(std::string_view name);

// Size of `eas` as a chain of FILE_FULL_EA_INFORMATION entries (MS-FSCC 2.4.16): each is 8 bytes
// + name + NUL + value, padded to 4 bytes except the last. This is the EaSize reported by
// FileEaInformation (MS-FSCC 2.4.13) and by directory listings, as Samba reports it to SMB2
// clients.
uint32_t ea_list_size(std::span<const Ea> eas);

// All EAs of the open file (any descriptor, O_PATH included): empty when it has none or the
// file system has no user xattrs.
Result<std::vector<Ea>> list_eas(int fd);

// One EA by name (case-insensitive); nullopt when absent. NtStatus::InvalidEaName for a bad name.
Result<std::optional<Ea>> get_ea(int fd, std::string_view name);

// Sets (or, with an empty value, deletes: MS-FSCC 2.4.16 EaValueLength 0) one EA. A differently
// cased existing xattr of the same name is replaced. Deleting an absent EA succeeds.
Status set_ea(int fd, std::string_view name, std::span<const std::byte> value);

// Applies a FILE_FULL_EA_INFORMATION list in order. All names and the resulting total size are
// checked before anything is written; a system call failing midway leaves the earlier entries
// applied (Linux has no transaction over several xattrs).
Status set_eas(int fd, std::span<const Ea> eas);

// EaSize of FileEaInformation: ea_list_size(list_eas(fd)); 0 when there are none.
Result<uint32_t> ea_size(int fd);

// The same for the entry `name` of the open directory `dirfd` without opening it (a directory
// listing reports every entry's EaSize, MS-FSCC 2.4.8): its xattrs are listed through
// /proc/self/fd/<dirfd>/<name> with llistxattr/lgetxattr, which never follow a final symlink (a
// symlink reports its own xattrs: none), and only the sizes of the values are read. `name` must
// be one component of the directory (not "." or "..", no '/'): STATUS_OBJECT_NAME_INVALID
// otherwise, so the path never leaves the directory.
Result<uint32_t> ea_size_at(int dirfd, std::string_view name);

}  // namespace daxsmbd::server::vfs
