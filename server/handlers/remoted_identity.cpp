#include "server/handlers/remoted_identity.h"

#include <cctype>

namespace daxsmbd::server::handlers {

using namespace protocol;

Result<std::optional<RemotedIdentityTreeConnectContext>> find_remoted_identity(
    const TreeConnectContextList& contexts) {
    std::optional<RemotedIdentityTreeConnectContext> found;
    for (const auto& c : contexts) {
        const auto* ri = std::get_if<RemotedIdentityTreeConnectContext>(&c);
        if (!ri) continue;  // other context types: not ours to interpret
        // Two identities in one request cannot both be the tree's: malformed.
        if (found) return Error(NtStatus::InvalidParameter);
        found = *ri;
    }
    if (found && found->ticket_type != RemotedIdentityTreeConnectContext::kTicketTypeRemoted)
        found.reset();  // MS-SMB2 3.3.5.7: an unknown TicketType is ignored
    return found;
}

bool listed_user(const std::vector<std::string>& principals, const std::string& user) {
    for (const auto& u : principals) {
        if (u.size() != user.size()) continue;
        bool eq = true;
        for (size_t i = 0; i < u.size() && eq; ++i)
            eq = std::tolower(uint8_t(u[i])) == std::tolower(uint8_t(user[i]));
        if (eq) return true;
    }
    return false;
}

namespace {

// MS-DTYP 2.5.2.3 (SidInToken): a group takes part in allow ACEs when enabled (mandatory
// groups are always enabled), in deny ACEs also when it is deny-only.
void add_groups(const std::vector<SidAttr>& list, auth::AccessToken& t) {
    for (const auto& g : list) {
        if (g.attributes & se_group::kUseForDenyOnly)
            t.deny_only_groups.push_back(g.sid);
        else if (g.attributes & (se_group::kEnabled | se_group::kMandatory))
            t.groups.push_back(g.sid);
    }
}

}  // namespace

Result<auth::AccessToken> remoted_token(const RemotedIdentityTreeConnectContext& c) {
    if (!c.user) return Error(NtStatus::InvalidParameter);
    auth::AccessToken t;
    t.user = c.user->sid;
    t.primary_group =
        c.primary_group && !c.primary_group->empty() ? c.primary_group->front().sid : c.user->sid;
    if (c.groups) add_groups(*c.groups, t);
    if (c.restricted_groups)
        for (const auto& g : *c.restricted_groups)
            t.restricted_sids.push_back(g.sid);
    t.owner = c.owner;
    return t;
}

}  // namespace daxsmbd::server::handlers
