// Identity remoting on TREE_CONNECT (MS-SMB2 2.2.9.2.1, 3.3.5.7): who may remote an identity on
// a share, and the access token a remoted tree's access checks use.
//
// Trust rule: MS-SMB2 does not say which callers a server should accept a remoted identity
// from. daxsmbd accepts it only on shares with "identity remoting = yes" and only from SMB
// sessions whose user is in that share's "identity remoting principals" (fail closed: an empty
// list lets nobody). The remoted token replaces the session's token in the NT ACL checks of the
// tree; file-system operations keep running as the calling session's Unix user, so remoting can
// narrow what the caller may do, never widen it beyond its own Unix rights.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "auth/access_check.h"
#include "protocol/result.h"
#include "protocol/tree_connect_contexts.h"

namespace daxsmbd::server::handlers {

// The remoted identity context of a request's context list: nullopt when there is none or its
// TicketType is not 1 (MS-SMB2 3.3.5.7: such a context is ignored); STATUS_INVALID_PARAMETER
// when there are two.
Result<std::optional<protocol::RemotedIdentityTreeConnectContext>> find_remoted_identity(
    const protocol::TreeConnectContextList& contexts);

// Whether `user` (the SMB session's user name) is one of `principals` (case-insensitive).
bool listed_user(const std::vector<std::string>& principals, const std::string& user);

// The token of a remoted identity (MS-DTYP 2.5.2 Token): User; PrimaryGroup (the first of the
// array, else the user); enabled or mandatory Groups; deny-only groups (SE_GROUP_USE_FOR_DENY_
// ONLY) for deny ACEs only; RestrictedGroups as restricting SIDs; Owner as the owner of new
// objects. Privileges, DefaultDacl, DeviceGroups and the claims are not part of the file access
// check (auth/access_check.h). A context without User is STATUS_INVALID_PARAMETER.
Result<auth::AccessToken> remoted_token(const protocol::RemotedIdentityTreeConnectContext& c);

}  // namespace daxsmbd::server::handlers
