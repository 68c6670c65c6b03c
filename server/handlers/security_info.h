// NT security descriptors of files (MS-SMB2 3.3.5.20.3 QUERY_INFO, 3.3.5.21.3 SET_INFO, 3.3.5.9.2
// the "SecD" create context; MS-FSA 2.1.5.14 / 2.1.5.16): what the handlers call, kept out of
// query_info.cpp, set_info.cpp and create.cpp. Storage is server/vfs/security_store.h, the codec
// protocol/security_descriptor.h, the access check auth/access_check.h.
//
// What a file's descriptor is:
//   - the stored one (user.daxsmbd.ntacl), when a client gave one: a "SecD" context at CREATE of
//     a new file, or a SET_INFO of security (which first materialises the synthesized descriptor
//     and replaces the parts named by AdditionalInformation);
//   - otherwise one synthesized from the POSIX owner, group and mode (info_classes.h), so that a
//     query always works.
// A "SecD" descriptor missing parts is completed as Windows does for a creator without
// inheritable ACEs to apply: owner = the creator's user SID, group = its primary group, no
// SE_DACL_PRESENT = a DACL from the new file's mode for that owner and group. Inheritance of
// parent ACEs (MS-DTYP 2.5.3.4) is not done yet.
//
// What is enforced (see README "NT ACLs"):
//   - CREATE of an existing file or directory with a *stored* descriptor: the DesiredAccess
//     (MAXIMUM_ALLOWED: what is left) must be granted by its DACL for the session's token
//     (token_of), and DELETE also when the parent's DACL grants FILE_DELETE_CHILD (MS-FSA
//     2.1.5.1.2.1); otherwise STATUS_ACCESS_DENIED. Files with a synthesized descriptor keep the
//     share's rights and the POSIX permissions of the daemon's accesses, as before.
//   - Not enforced: a new file's access against its parent's DACL (FILE_ADD_FILE /
//     FILE_ADD_SUBDIRECTORY), SACLs (no auditing), privileges, owner changes against the token
//     (any SID is accepted as owner, as by a holder of SeRestorePrivilege), chown of the Unix file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "auth/access_check.h"
#include "protocol/bytes.h"
#include "protocol/result.h"
#include "protocol/security_descriptor.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server {
struct Session;
}

namespace daxsmbd::server::handlers::security {

// The token a session's file accesses are checked with: user S-1-22-1-<uid>, primary group
// S-1-22-2-<gid>, S-1-22-2-<g> for each supplementary group of its identity, Everyone, and
// Authenticated Users (authenticated users) or BUILTIN\Guests (guest and anonymous sessions). Until
// identities are mapped to domain SIDs these are Samba's SIDs for Unix ids without a Windows
// account.
auth::AccessToken token_of(const Session& s);

// The descriptor of the open file `fd`: the stored one, else the synthesized one. Blocking.
Result<protocol::SecurityDescriptor> effective_descriptor(int fd);

// QUERY_INFO SMB2_0_INFO_SECURITY: the self-relative bytes of the parts `secinfo` selects.
// Blocking.
Result<protocol::ByteVector> query_descriptor(int fd, uint32_t secinfo);

// SET_INFO SMB2_0_INFO_SECURITY (the caller checked the open's rights): parses `buffer`
// (malformed: STATUS_INVALID_SECURITY_DESCR), replaces the parts `secinfo` names in the effective
// descriptor and stores the result. Blocking.
Status set_descriptor(int fd, protocol::Bytes buffer, uint32_t secinfo);

// `given` completed as a new file's descriptor: owner and group from `token` where missing, the
// DACL of `mode` (the new file's permission bits) where there is none.
protocol::SecurityDescriptor complete_create_descriptor(const protocol::SecurityDescriptor& given,
                                                        const auth::AccessToken& token,
                                                        mode_t mode);

// The stored descriptor of the directory `parent_rel` a new object is created in (nullopt: it
// has none; an unreadable one fails closed with AccessDenied). Blocking.
Result<std::optional<protocol::SecurityDescriptor>> parent_descriptor(
    const vfs::ShareRoot& root, const std::string& parent_rel);

// The descriptor a new object stores (MS-DTYP 2.5.3.4): what it inherits from the parent's stored
// descriptor `parent` and/or the creator's "SecD" descriptor `creator`, owner and group defaulting
// to `token`'s (nullptr: the file's POSIX ones), a DACL from the mode bits when neither gives one.
// Nothing is stored when there is neither a creator descriptor nor an inheritable ACE: the object
// then shows the descriptor synthesized from its mode. Blocking.
Status store_new_object_descriptor(int fd, const protocol::SecurityDescriptor* parent,
                                   const protocol::SecurityDescriptor* creator,
                                   const auth::AccessToken* token, bool is_directory);

// CREATE of the existing object `rel` (open as `fd`, any descriptor): nullopt when it has no
// stored descriptor (nothing to enforce), else the rights its DACL grants `token`, DELETE added
// when the parent directory `parent_rel` lets the token delete children (its stored DACL grants
// FILE_DELETE_CHILD, or it has none). A stored descriptor that does not decode denies
// everything (logged). Blocking.
Result<std::optional<uint32_t>> stored_access(const vfs::ShareRoot& root,
                                              const std::string& parent_rel, bool is_root, int fd,
                                              const auth::AccessToken& token);

}  // namespace daxsmbd::server::handlers::security
