// Where a file's NT security descriptor lives: one xattr per file, `user.daxsmbd.ntacl`
// (kNtAclXattrName), beside the DOS-attribute xattr (metadata.h) and following its rules.
//
// Why this name:
//   - user.* works for an unprivileged daemon (architecture.md: the daemon drops root after
//     binding its ports); security.* and trusted.* need CAP_SYS_ADMIN, so an ACL written while
//     running as root would vanish (read as absent) once the daemon runs as its service user.
//   - The "user.daxsmbd." prefix (kPrivateXattrPrefix) already hides the xattr from SMB EAs, and
//     a client cannot reach it through an EA: EA names are stored upper-case (vfs/ea.h).
//   - Not Samba's security.NTACL: that holds an NDR blob with a hash of the POSIX ACL; sharing
//     the name would make each server misread the other's data.
//   - Cost of user.*: a local Unix user who may write the file's xattrs (its owner) can rewrite
//     the descriptor from the Linux side. The descriptor only ever restricts what SMB clients
//     get beyond POSIX permissions, which still apply to the daemon's own accesses.
//
// Value (little-endian): uint16 format version (1), uint16 reserved (0), then the self-relative
// SECURITY_DESCRIPTOR (MS-DTYP 2.4.6) exactly as protocol::SecurityDescriptor::serialize() writes
// it. A value with another version or that does not parse is reported as
// STATUS_INVALID_SECURITY_DESCR (never silently taken as "no descriptor": that would widen
// access); an administrator removes it with `setfattr -x user.daxsmbd.ntacl FILE`.
#pragma once

#include <optional>

#include "protocol/result.h"
#include "protocol/security_descriptor.h"

namespace daxsmbd::server::vfs {

inline constexpr char kNtAclXattrName[] = "user.daxsmbd.ntacl";
inline constexpr uint16_t kNtAclFormatVersion = 1;

// The xattr value; fails (STATUS_INVALID_SECURITY_DESCR) only for ACLs beyond the format's sizes.
Result<protocol::ByteVector> encode_ntacl_xattr(const protocol::SecurityDescriptor& sd);
// A malformed value or another format version is STATUS_INVALID_SECURITY_DESCR.
Result<protocol::SecurityDescriptor> decode_ntacl_xattr(protocol::Bytes value);

// The stored descriptor of an open file (any descriptor, O_PATH included): nullopt when none is
// stored, the file system has no user xattrs, or (O_PATH without /proc mounted) xattrs cannot be
// read at all. Blocking.
Result<std::optional<protocol::SecurityDescriptor>> read_security_descriptor(int fd);
// Stores it. Unlike the DOS attributes, a file system without user xattrs is an error
// (STATUS_NOT_SUPPORTED): a client must not be told its ACL was applied when it was not.
// Blocking.
Status write_security_descriptor(int fd, const protocol::SecurityDescriptor& sd);

}  // namespace daxsmbd::server::vfs
