// TREE_CONNECT (MS-SMB2 3.3.5.7).
#include "protocol/tree_connect.h"
#include "protocol/access_mask.h"
#include "protocol/error.h"
#include "protocol/negotiate.h"
#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/handlers/remoted_identity.h"
#include "server/log.h"
#include "server/server.h"

namespace daxsmbd::server::handlers {

using namespace protocol;

namespace {

bool user_allowed(const ShareConfig& sc, const Session& s) {
    if (sc.valid_users.empty()) return true;
    for (auto& u : sc.valid_users) {
        if (u.size() != s.user.size()) continue;
        bool eq = true;
        for (size_t i = 0; i < u.size() && eq; ++i)
            eq = tolower(uint8_t(u[i])) == tolower(uint8_t(s.user[i]));
        if (eq) return true;
    }
    return false;
}

// MS-SMB2 3.3.5.7 identity remoting: the token of the request's remoted identity on a share
// with "identity remoting = yes" (nullopt: no identity to remote, or the share ignores it);
// ACCESS_DENIED (logged) for a session user not in "identity remoting principals",
// INVALID_PARAMETER for an unusable context.
Result<std::optional<auth::AccessToken>> remoting_token(RequestContext& ctx,
                                                        const TreeConnectRequest& req,
                                                        const Share& share) {
    if (share.is_ipc || !share.config.identity_remoting) return std::optional<auth::AccessToken>();
    DAX_TRY(auto remoted, find_remoted_identity(req.contexts));
    if (!remoted) return std::optional<auth::AccessToken>();
    const Session& s = *ctx.session;
    if (s.is_anonymous || s.is_guest ||
        !listed_user(share.config.identity_remoting_principals, s.user)) {
        ctx.conn.log.refusal("user ", s.user, " may not remote an identity on [", share.config.name,
                             "] (not in 'identity remoting principals')");
        return Error(NtStatus::AccessDenied);
    }
    DAX_TRY(auto token, remoted_token(*remoted));
    ctx.conn.log.info("user ", s.user, " remotes ", token.user.to_string(), " (",
                      remoted->domain.value_or(""), "\\", remoted->user_name.value_or(""), ") on [",
                      share.config.name, "]");
    return std::optional<auth::AccessToken>(std::move(token));
}

// MS-SMB2 2.2.2.2.2.1: the owner's addresses as MOVE_DST_IPADDR entries, those of the client's
// address family first (a client reaches an address of its own family), in the owner's order
// otherwise.
std::vector<MoveDstIpAddr> move_list(const std::vector<asio::ip::tcp::endpoint>& owner,
                                     std::string_view peer_address) {
    boost::system::error_code ec;
    auto peer = asio::ip::make_address(std::string(peer_address), ec);
    const bool peer_v4 = ec || peer.is_v4() || peer.to_v6().is_v4_mapped();
    std::vector<MoveDstIpAddr> v;
    for (int pass = 0; pass < 2; ++pass) {
        const bool want_v4 = (pass == 0) == peer_v4;
        for (const auto& ep : owner) {
            if (ep.address().is_v4() != want_v4) continue;
            if (ep.address().is_v4())
                v.push_back(MoveDstIpAddr::v4(ep.address().to_v4().to_bytes()));
            else
                v.push_back(MoveDstIpAddr::v6(ep.address().to_v6().to_bytes()));
        }
    }
    return v;
}

// MS-SMB2 3.3.5.7 (step 6): a "scale out" share is served by its owner node only. nullopt when
// this node serves it; otherwise STATUS_BAD_NETWORK_NAME, on 3.1.1 with
// SMB2_TREE_CONNECT_FLAG_REDIRECT_TO_OWNER and a known owner address carrying one Share
// Redirect error context (2.2.2.2.2) whose ResourceName is the path as the client sent it.
std::optional<NtStatus> refuse_unowned(RequestContext& ctx, const TreeConnectRequest& req,
                                       const Share& share) {
    if (share.is_ipc || !share.config.scale_out) return std::nullopt;
    auto& ownership = ctx.conn.server.share_ownership();
    auto [serving, owner] = ownership.lookup(share.config.name);
    if (serving == cluster::ShareServing::OwnedBySelf) return std::nullopt;
    if (serving == cluster::ShareServing::Unknown) {
        ++ownership.refusals.unknown;
        ctx.conn.log.refusal("[", share.config.name,
                             "] is a scale-out share without a known owner");
        return NtStatus::BadNetworkName;
    }
    // Flags is 0 here below 3.1.1 (reserved there, TreeConnectRequest::parse).
    const bool asked = ctx.conn.state.dialect == Dialect::Smb311 &&
                       (req.flags & tree_connect_flags::kRedirectToOwner);
    ShareRedirectErrorContext redirect;
    redirect.ip_addresses = move_list(owner->addresses, ctx.conn.peer_address());
    redirect.resource_name = req.path;
    if (!asked || redirect.ip_addresses.empty()) {
        ++ownership.refusals.plain;
        ctx.conn.log.refusal("[", share.config.name, "] is owned by node ", owner->node, " (epoch ",
                             owner->epoch, "); ",
                             asked ? "no address to redirect to" : "no redirect asked for");
        return NtStatus::BadNetworkName;
    }
    auto e = make_share_redirect_error(redirect);
    ctx.error_data = std::move(e.error_data);
    ctx.error_context_count = e.error_context_count;
    ++ownership.refusals.redirected;
    ctx.conn.log.refusal("[", share.config.name, "] is owned by node ", owner->node, " (epoch ",
                         owner->epoch, "): redirected to ", redirect.ip_addresses.size(),
                         " address(es)");
    return NtStatus::BadNetworkName;
}

// MS-SMB2 2.2.10, 3.3.5.7: what the owner of a "scale out" share says of it. Never CLUSTER
// (that promises a Witness service, MS-SWN) and nothing about continuous availability here.
uint32_t scale_out_capabilities(RequestContext& ctx, const TreeConnectRequest& req,
                                const Share& share) {
    if (share.is_ipc || !share.config.scale_out) return 0;
    const Dialect d = ctx.conn.state.dialect;
    uint32_t caps = share_caps::kScaleout;
    if (share.config.asymmetric && uint16_t(d) >= uint16_t(Dialect::Smb302))
        caps |= share_caps::kAsymmetric;
    if (d == Dialect::Smb311 && (req.flags & tree_connect_flags::kRedirectToOwner))
        caps |= share_caps::kRedirectToOwner;
    return caps;
}

}  // namespace

asio::awaitable<NtStatus> tree_connect(RequestContext& ctx) {
    auto& conn = ctx.conn;
    auto& s = *ctx.session;
    auto req = TreeConnectRequest::parse(ctx.msg, conn.state.dialect == Dialect::Smb311);
    if (!req) co_return req.status();

    // 3.1.1: a tree connect of a real user that is neither signed nor encrypted means someone
    // stripped the signature: disconnect (3.3.5.7 step 1).
    if (conn.state.dialect == Dialect::Smb311 && !s.is_anonymous && !s.is_guest &&
        !ctx.header.is_signed() && !ctx.request_encrypted) {
        conn.log.info("unsigned 3.1.1 TREE_CONNECT, disconnecting");
        ctx.suppress_response = true;
        ctx.disconnect_after = true;
        co_return NtStatus::AccessDenied;
    }

    auto names = req->share_path();
    if (!names) co_return names.status();
    auto share = conn.server.find_share(names->share);
    if (!share) {
        conn.log.debug("no share named ", names->share);
        co_return NtStatus::BadNetworkName;
    }
    // Anonymous and guest sessions (only possible with 'map to guest = bad user') reach IPC$ and
    // the shares marked 'guest ok', nothing else.
    if (!share->is_ipc && (s.is_anonymous || s.is_guest) && !share->config.guest_ok) {
        conn.log.refusal("", s.is_anonymous ? "anonymous" : "guest", " session refused on [",
                         share->config.name, "] (not 'guest ok')");
        co_return NtStatus::AccessDenied;
    }
    if (!share->is_ipc && !user_allowed(share->config, s)) {
        conn.log.refusal("user ", s.user, " not in valid users of [", share->config.name, "]");
        co_return NtStatus::AccessDenied;
    }

    if (auto refused = refuse_unowned(ctx, *req, *share)) co_return *refused;

    auto remoted = remoting_token(ctx, *req, *share);
    if (!remoted) co_return remoted.status();

    // Share encryption ("smb encrypt" of the share, else the global value; MS-SMB2 3.3.5.7):
    // "required" refuses a connection or session that cannot encrypt (2.x, no common cipher,
    // anonymous); "desired"/"required" mark the tree SMB2_SHAREFLAG_ENCRYPT_DATA.
    const auto& g = conn.server.config().global;
    const EncryptPolicy policy = share->config.encrypt.value_or(g.encrypt);
    const bool can_encrypt = ctx.channel_encryption != nullptr && g.encrypt != EncryptPolicy::Off;
    if (policy == EncryptPolicy::Required && !can_encrypt) {
        conn.log.refusal("[", share->config.name,
                         "] requires encryption and this session cannot encrypt");
        co_return NtStatus::AccessDenied;
    }

    auto tree = std::make_shared<TreeConnect>();
    tree->encrypt_data = can_encrypt && policy >= EncryptPolicy::Desired;
    tree->reject_unencrypted = can_encrypt && policy == EncryptPolicy::Required;
    tree->share = share;
    tree->remoted_token = std::move(*remoted);
    tree->read_only = share->is_ipc ? false : share->config.read_only;
    // MaximalAccess (2.2.10): what the share lets this user do; file ACLs narrow it later.
    tree->maximal_access = tree->read_only
                               ? (access_mask::kFileGenericRead | access_mask::kFileGenericExecute)
                               : access_mask::kFileAllAccess;
    {
        std::lock_guard lk(s.mu);
        // Abuse limit "max tree connects per session" (MS-SMB2 3.3.5.7 sets no number); the
        // session and its other trees go on working.
        if (const size_t max = conn.server.limits().max_trees_per_session; s.trees.size() >= max) {
            conn.server.limit_hits.hit(metrics::Limit::MaxTreeConnectsPerSession);
            conn.log.refusal("limit 'max tree connects per session' (", max, ") reached; [",
                             share->config.name, "] refused");
            co_return NtStatus::InsufficientResources;
        }
        do {
            tree->id = s.next_tree_id++;
        } while (tree->id == 0 || tree->id == kInvalidTreeId || s.trees.count(tree->id));
        s.trees[tree->id] = tree;
    }
    ctx.response_tree_id = tree->id;

    TreeConnectResponse resp;
    if (share->is_ipc) {
        resp.share_type = share_type::kPipe;
        resp.share_flags = share_flags::kNoCaching;
    } else {
        resp.share_type = share_type::kDisk;
        resp.share_flags = share_flags::kManualCaching;
    }
    if (tree->encrypt_data) resp.share_flags |= share_flags::kEncryptData;
    if (tree->remoted_token) resp.share_flags |= share_flags::kIdentityRemoting;
    resp.capabilities = 0;
    // MS-SMB2 3.3.5.7: CONTINUOUS_AVAILABILITY where persistent handles are granted (a 3.x
    // connection that was offered them).
    if (share->config.continuous_availability && share->journal &&
        (conn.state.server_capabilities & global_caps::kPersistentHandles))
        resp.capabilities |= share_caps::kContinuousAvailability;
    resp.capabilities |= scale_out_capabilities(ctx, *req, *share);
    resp.maximal_access = tree->maximal_access;
    resp.serialize(ctx.body());
    conn.log.debug("tree ", tree->id, " -> [", share->config.name, "]");
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
