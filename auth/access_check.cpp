#include "auth/access_check.h"

#include <algorithm>

#include "protocol/access_mask.h"

namespace daxsmbd::auth {

using protocol::Ace;
using protocol::SecurityDescriptor;
using protocol::Sid;
namespace am = protocol::access_mask;
namespace at = protocol::ace_type;

namespace well_known_sid {
Sid everyone() {
    return Sid::make(1, {0});
}
Sid creator_owner() {
    return Sid::make(3, {0});
}
Sid creator_group() {
    return Sid::make(3, {1});
}
Sid owner_rights() {
    return Sid::make(3, {4});
}
Sid authenticated_users() {
    return Sid::make(5, {11});
}
Sid local_system() {
    return Sid::make(5, {18});
}
Sid builtin_guests() {
    return Sid::make(5, {32, 546});
}
Sid unix_user(uint32_t uid) {
    return Sid::make(22, {1, uid});
}
Sid unix_group(uint32_t gid) {
    return Sid::make(22, {2, gid});
}
}  // namespace well_known_sid

bool AccessToken::contains(const Sid& sid) const {
    return sid == user || sid == primary_group ||
           std::find(groups.begin(), groups.end(), sid) != groups.end();
}

namespace {

uint32_t granted_one_pass(const SecurityDescriptor& sd, const AccessToken& token) {
    // Every right a file can have, standard rights included.
    constexpr uint32_t kAll = am::kFileAllAccess;
    if (!sd.dacl_present() || !sd.dacl) return kAll;

    const Sid owner_rights = well_known_sid::owner_rights();
    const bool is_owner = sd.owner && token.contains(*sd.owner);
    // MS-DTYP 2.5.3.2: an OWNER RIGHTS ACE replaces the owner's implicit rights.
    const bool has_owner_rights_ace = std::any_of(
        sd.dacl->aces.begin(), sd.dacl->aces.end(),
        [&](const Ace& a) { return !a.inherit_only() && a.sid && *a.sid == owner_rights; });

    uint32_t granted = 0;
    uint32_t denied = 0;
    if (is_owner && !has_owner_rights_ace) granted |= am::kReadControl | am::kWriteDac;

    auto matches = [&](const Sid& sid) {
        if (sid == owner_rights) return is_owner;
        return token.contains(sid);
    };
    auto matches_deny = [&](const Sid& sid) {
        return matches(sid) ||
               std::find(token.deny_only_groups.begin(), token.deny_only_groups.end(), sid) !=
                   token.deny_only_groups.end();
    };
    for (const Ace& a : sd.dacl->aces) {
        if (a.inherit_only() || !a.sid) continue;
        const uint32_t mask = protocol::map_generic_file(a.mask) & kAll;
        switch (a.type) {
            case at::kAccessAllowed:
                if (matches(*a.sid)) granted |= mask & ~denied;
                break;
            case at::kAccessDenied:
            case at::kAccessDeniedCallback:  // condition not evaluated: applied (fail closed)
                if (matches_deny(*a.sid)) denied |= mask & ~granted;
                break;
            default:  // allow-callback (condition unknown), audit, label, ...: no grant
                break;
        }
    }
    return granted & ~denied;
}

}  // namespace

uint32_t granted_access(const SecurityDescriptor& sd, const AccessToken& token) {
    const uint32_t granted = granted_one_pass(sd, token);
    if (token.restricted_sids.empty()) return granted;
    // MS-DTYP 2.5.3.2: a restricted token is checked a second time with its restricting SIDs
    // in place of its user and groups; it gets only what both passes grant.
    AccessToken restricted;
    restricted.user = token.restricted_sids.front();
    restricted.primary_group = token.restricted_sids.front();
    restricted.groups.assign(token.restricted_sids.begin() + 1, token.restricted_sids.end());
    restricted.deny_only_groups = token.deny_only_groups;
    return granted & granted_one_pass(sd, restricted);
}

}  // namespace daxsmbd::auth
