// The access check of a security descriptor's DACL against a user's token (MS-DTYP 2.5.3.2,
// AccessCheck), reduced to what file servers need: allow and deny ACEs, the owner's implicit
// rights, NULL and empty DACLs. Pure: the caller reads the descriptor and builds the token.
//
// Rules (MS-DTYP 2.5.3.2):
//   - No DACL (SE_DACL_PRESENT clear) or a NULL DACL: every right is granted.
//   - The owner (its SID in the token) gets READ_CONTROL | WRITE_DAC, unless the DACL has an ACE
//     for OWNER RIGHTS (S-1-3-4), which then decides the owner's rights like any other ACE.
//   - ACEs are evaluated in order; INHERIT_ONLY ACEs are skipped; the first ACE that decides a
//     bit wins (a deny before an allow denies). Generic bits in ACE masks are mapped with the
//     file mapping. CREATOR OWNER / CREATOR GROUP match nobody on the object itself (they only
//     take part in inheritance).
//   - Callback (conditional) ACEs cannot be evaluated here: an allow is ignored and a deny is
//     applied as if its condition held (fail closed). Object ACEs do not apply to files (they
//     name directory-service object types) and are ignored. Everything else is ignored.
//   - Deny-only groups (SE_GROUP_USE_FOR_DENY_ONLY) match deny ACEs only. A token with
//     restricting SIDs (a restricted token) gets what both its normal SIDs and its restricting
//     SIDs are granted (MS-DTYP 2.5.3.2, second pass over the restricted SIDs).
// Privileges (SeBackup, SeRestore, SeTakeOwnership, SeSecurity) are not modelled.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/security_descriptor.h"
#include "protocol/sid.h"

namespace daxsmbd::auth {

// Well-known SIDs (MS-DTYP 2.4.2.4).
namespace well_known_sid {
protocol::Sid everyone();             // S-1-1-0
protocol::Sid creator_owner();        // S-1-3-0
protocol::Sid creator_group();        // S-1-3-1
protocol::Sid owner_rights();         // S-1-3-4
protocol::Sid authenticated_users();  // S-1-5-11
protocol::Sid local_system();         // S-1-5-18
protocol::Sid builtin_guests();       // S-1-5-32-546
// Samba's mapping of Unix ids that have no Windows account: S-1-22-1-<uid>, S-1-22-2-<gid>.
protocol::Sid unix_user(uint32_t uid);
protocol::Sid unix_group(uint32_t gid);
}  // namespace well_known_sid

struct AccessToken {
    protocol::Sid user;
    protocol::Sid primary_group;
    std::vector<protocol::Sid> groups;            // besides the primary group
    std::vector<protocol::Sid> deny_only_groups;  // SE_GROUP_USE_FOR_DENY_ONLY
    std::vector<protocol::Sid> restricted_sids;   // empty: not a restricted token
    // MS-DTYP Token.Owner: the owner of objects this token creates; unset = the user.
    std::optional<protocol::Sid> owner;

    bool contains(const protocol::Sid& sid) const;
    const protocol::Sid& new_object_owner() const { return owner ? *owner : user; }
};

// Every right `sd` grants `token` (the MAXIMUM_ALLOWED answer, MS-DTYP 2.5.3.2), as file rights
// (0x001F01FF at most, plus nothing else).
uint32_t granted_access(const protocol::SecurityDescriptor& sd, const AccessToken& token);

}  // namespace daxsmbd::auth
