// Oplocks, leases and durable handles of CREATE (see create_caching.h).
#include "server/handlers/create_caching.h"

#include <algorithm>

#include "protocol/negotiate.h"
#include "server/connection_state.h"
#include "server/log.h"
#include "server/server.h"
#include "server/state/file_table.h"
#include "server/vfs/case_fold.h"
#include "server/vfs/metadata.h"

namespace daxsmbd::server::handlers {

using namespace protocol;

namespace {

// MS-SMB2 3.3.5.9.10: a DH2Q timeout of 0 gets the server's default; Windows and Samba keep a
// disconnected durable handle 60 s by default and at most 300 s.
constexpr uint32_t kDefaultDurableTimeoutMs = 60'000;
constexpr uint32_t kMaxDurableTimeoutMs = 300'000;

LeaseContext lease_response(const LeaseId& id, const LeaseGrant& g) {
    LeaseContext c;
    c.version = g.version;
    c.lease_key = id.key;
    c.lease_state = g.state;
    c.flags = g.breaking ? lease_flags::kBreakInProgress : 0;
    if (g.version == 2) {
        c.epoch = g.epoch;
        if (g.parent_key) {
            c.parent_lease_key = *g.parent_key;
            c.flags |= lease_flags::kParentLeaseKeySet;
        }
    }
    return c;
}

// MS-SMB2 3.3.5.9.6 / 3.3.5.9.10: durability needs a batch oplock or HANDLE caching.
bool may_be_durable(const FileTable::Held& h) {
    if (h.oplock == oplock_level::kBatch) return true;
    return h.lease && (h.lease->state & lease_state::kHandleCaching);
}

// MS-SMB2 3.3.5.9.10: a DH2Q asking for persistence on a continuously available share, on a
// connection that was offered persistent handles.
bool persistent_granted(const RequestContext& ctx, const CreateContextRequests& c) {
    if (!c.durable_v2 || !(c.durable_v2->flags & durable_flags::kPersistent)) return false;
    const auto& share = ctx.tree->share;
    return share && share->config.continuous_availability && share->journal &&
           (ctx.conn.state.server_capabilities & global_caps::kPersistentHandles);
}

void grant_durability(RequestContext& ctx, const CreateContextRequests& c,
                      const std::shared_ptr<Open>& open, const FileTable::Held& held,
                      CreateGrants& grants) {
    if ((!c.durable_v1 && !c.durable_v2) || open->local.is_directory) return;
    if (!ctx.server.config().global.durable_handles) return;
    // A persistent handle needs no batch oplock or HANDLE lease (3.3.5.9.10).
    const bool persistent = persistent_granted(ctx, c);
    if (!persistent && !may_be_durable(held)) return;
    const size_t max = ctx.server.limits().max_durable_per_client;
    if (!ctx.server.opens.claim_durable(open, ctx.conn.state.client_guid, max)) {
        ctx.server.limit_hits.hit(metrics::Limit::MaxDurableHandlesPerClient);
        ctx.log().info("limit 'max durable handles per client' (", max, ") reached; '",
                       open->local.path, "' opened without durability");
        return;
    }
    auto& d = open->durable;
    d.owner = durable_owner(*ctx.session);
    d.client_guid = ctx.conn.state.client_guid;
    d.share = ctx.tree->share->config.name;
    if (held.lease) d.lease_key = c.lease->lease_key;
    if (c.durable_v2) {
        d.version = 2;
        d.persistent = persistent;
        d.create_guid = c.durable_v2->create_guid;
        d.timeout_ms = c.durable_v2->timeout ? std::min(c.durable_v2->timeout, kMaxDurableTimeoutMs)
                                             : kDefaultDurableTimeoutMs;
        DurableHandleResponseV2 r;
        r.timeout = d.timeout_ms;
        r.flags = persistent ? durable_flags::kPersistent : 0;
        grants.durable_v2 = r;
    } else {
        d.version = 1;
        d.timeout_ms = kDefaultDurableTimeoutMs;
        grants.durable_v1 = true;
    }
}

// MS-SMB2 3.3.5.9.7 / 3.3.5.9.12: the checks that make a reconnect name a disconnected open.
NtStatus check_reconnect(RequestContext& ctx, std::string_view name, const CreateContextRequests& c,
                         const std::shared_ptr<Open>& open) {
    auto not_found = [&](const char* why) {
        ctx.log().debug("durable reconnect refused: ", why);
        return NtStatus::ObjectNameNotFound;
    };
    if (!open || !open->durable.version) return not_found("no durable open with that FileId");
    const auto& d = open->durable;
    if (c.reconnect_v2 && (d.version != 2 || d.create_guid != c.reconnect_v2->create_guid))
        return not_found("CreateGuid differs");
    if (c.reconnect_v1 && d.version != 1) return not_found("not a v1 durable open");
    // A reconnect is matched by its lease context whatever its OplockLevel says.
    const bool lease_asked = c.lease.has_value();
    if (d.lease_key) {
        if (!lease_asked || c.lease->lease_key != *d.lease_key)
            return not_found("lease key differs");
        if (d.client_guid != ctx.conn.state.client_guid) return not_found("ClientGuid differs");
        // MS-SMB2 3.3.5.9.7 / 3.3.5.9.12: the lease's file name must be the request's (an
        // oplock reconnect ignores the name).
        std::string wanted(name);
        std::replace(wanted.begin(), wanted.end(), '\\', '/');
        if (!vfs::equal_ignore_case(wanted, open->local.path)) {
            ctx.log().debug("durable reconnect refused: the lease is on another name");
            return NtStatus::InvalidParameter;
        }
    } else if (lease_asked) {
        return not_found("the open has no lease");
    }
    if (d.owner != durable_owner(*ctx.session)) {
        ctx.log().refusal("user ", ctx.session->user,
                          ": durable reconnect of another user's open "
                          "refused");
        return NtStatus::AccessDenied;
    }
    if (!vfs::equal_ignore_case(d.share, ctx.tree->share->config.name))
        return not_found("the open is on another share");
    if (!d.disconnected) return not_found("the open is still connected");
    return NtStatus::Success;
}

// The response to a CREATE that names an existing open (reconnect, replay): its times and
// sizes now, its FileId.
asio::awaitable<void> respond_existing(RequestContext& ctx, const std::shared_ptr<Open>& open,
                                       CreateResponse resp, const CreateGrants& grants) {
    const int fd = open->local.fd;
    auto info = co_await ctx.blocking([fd] { return vfs::query_info(fd); });
    if (info) fill_times(resp, *info);
    resp.file_id = open->id;
    resp.contexts = encode_create_response_contexts({}, 0, info ? *info : vfs::FileInfo{}, grants);
    resp.serialize(ctx.body());
    ctx.created_file_id = open->id;
}

bool holds_lease(const Open& o) {
    const auto& reg = o.local.file_registration;
    return reg && reg->table().held(reg->key(), reg->token()).lease.has_value();
}

}  // namespace

Result<size_t> close_earlier_app_instance(RequestContext& ctx,
                                          const CreateContextRequests& contexts,
                                          std::string_view name) {
    if (!contexts.app_instance_id) return size_t(0);
    std::string wanted(name);
    std::replace(wanted.begin(), wanted.end(), '\\', '/');
    const auto& share = ctx.tree->share->config.name;
    const protocol::Guid& client = ctx.conn.state.client_guid;
    auto earlier = [&](const Open& o) {
        return o.durable.app_instance_id == contexts.app_instance_id &&
               o.durable.client_guid != client &&
               vfs::equal_ignore_case(o.tree ? o.tree->share->config.name : o.durable.share,
                                      share) &&
               vfs::equal_ignore_case(o.local.path, wanted);
    };
    // MS-SMB2 3.3.5.9.13: a newer instance may take over; an older or the same one may not.
    const auto& version = contexts.app_instance_version;
    if (version && ctx.dialect() == Dialect::Smb311) {
        for (const auto& o : ctx.server.opens.find_all(earlier)) {
            if (o->durable.app_instance_version && *o->durable.app_instance_version >= *version) {
                ctx.log().refusal("CREATE of '", wanted,
                                  "' refused: an open of a newer or the same application instance "
                                  "version holds it");
                return Error(NtStatus::FileForcedClosed);
            }
        }
    }
    auto closed = ctx.server.opens.remove_if(earlier);
    for (const auto& o : closed)
        ctx.log().info("open of '", o->local.path,
                       "' closed: a new instance of its application "
                       "opened it");
    return closed.size();
}

std::string durable_owner(const Session& s) {
    return s.domain + "\\" + s.user;
}

std::optional<LeaseId> requested_lease(const RequestContext& ctx, const CreateRequest& req,
                                       const CreateContextRequests& contexts) {
    if (req.requested_oplock_level != oplock_level::kLease || !contexts.lease) return std::nullopt;
    if (!(ctx.conn.state.server_capabilities & global_caps::kLeasing)) return std::nullopt;
    return LeaseId{ctx.conn.state.client_guid, contexts.lease->lease_key};
}

Status grant_caching(RequestContext& ctx, const CreateRequest& req,
                     const CreateContextRequests& contexts, const std::shared_ptr<Open>& open,
                     uint8_t& level, CreateGrants& grants) {
    level = oplock_level::kNone;
    if (!open->local.file_registration) return {};
    const auto& reg = *open->local.file_registration;
    FileTable& files = reg.table();
    if (auto id = requested_lease(ctx, req, contexts)) {
        LeaseRequest lr;
        lr.id = *id;
        lr.state = contexts.lease->lease_state;
        // A v2 context on a 2.1 connection is answered as v1 (MS-SMB2 3.3.5.9.11).
        lr.version = contexts.lease->version == 2 && ctx.dialect() >= Dialect::Smb300 ? 2 : 1;
        lr.epoch = contexts.lease->epoch;
        if (lr.version == 2 && (contexts.lease->flags & lease_flags::kParentLeaseKeySet))
            lr.parent_key = contexts.lease->parent_lease_key;
        const bool directory_leasing =
            ctx.conn.state.server_capabilities & global_caps::kDirectoryLeasing;
        DAX_TRY(auto g, files.grant_lease(
                            reg.key(), reg.token(), lr, open->local.is_directory,
                            ctx.conn.lease_break_notifier(ctx.session_id, ctx.tree->encrypt_data),
                            directory_leasing));
        if (g) {
            level = oplock_level::kLease;
            grants.lease = lease_response(*id, *g);
        }
    } else if (req.requested_oplock_level != oplock_level::kNone &&
               req.requested_oplock_level != oplock_level::kLease) {
        level = files.grant_oplock(
            reg.key(), reg.token(), req.requested_oplock_level, open->local.is_directory,
            ctx.conn.oplock_break_notifier(ctx.session_id, open->id, ctx.tree->encrypt_data));
    }
    // Open.ClientGuid (MS-SMB2 3.3.5.9), which tells another instance of an application from
    // this client's own reopen.
    open->durable.client_guid = ctx.conn.state.client_guid;
    open->durable.app_instance_id = contexts.app_instance_id;
    if (contexts.app_instance_id && ctx.dialect() == Dialect::Smb311)
        open->durable.app_instance_version = contexts.app_instance_version;
    grant_durability(ctx, contexts, open, files.held(reg.key(), reg.token()), grants);
    return {};
}

asio::awaitable<NtStatus> reconnect_durable(RequestContext& ctx, const CreateRequest& req,
                                            const CreateContextRequests& c) {
    const FileId fid = c.reconnect_v1 ? *c.reconnect_v1 : c.reconnect_v2->file_id;
    auto open = ctx.server.opens.find_persistent(fid.persistent);
    if (NtStatus st = check_reconnect(ctx, req.name, c, open); st != NtStatus::Success)
        co_return st;
    if (!ctx.server.opens.reconnect(open, ctx.session_id, ctx.tree, ctx.conn.id))
        co_return NtStatus::ObjectNameNotFound;  // lost a race with its expiry or another reconnect
    CreateResponse resp;
    resp.create_action = create_action::kOpened;
    // No durable response context on a reconnect: Windows and Samba send none (smbtorture
    // smb2.durable-v2-open.reopen2 checks it).
    CreateGrants grants;
    if (const auto& reg = open->local.file_registration) {
        auto held = reg->table().reconnect(
            reg->key(), reg->token(),
            ctx.conn.oplock_break_notifier(ctx.session_id, open->id, ctx.tree->encrypt_data),
            ctx.conn.lease_break_notifier(ctx.session_id, ctx.tree->encrypt_data));
        resp.oplock_level = held.oplock;
        if (held.lease)
            grants.lease = lease_response(
                LeaseId{ctx.conn.state.client_guid, *open->durable.lease_key}, *held.lease);
    }
    co_await respond_existing(ctx, open, std::move(resp), grants);
    ctx.log().info("user ", ctx.session->user, ": durable handle '", open->local.path,
                   "' reconnected (v", int(open->durable.version), ")");
    co_return NtStatus::Success;
}

std::optional<ReplayKey> replay_key(const RequestContext& ctx, const CreateContextRequests& c) {
    if (!c.durable_v2) return std::nullopt;
    return ReplayKey{ctx.conn.state.client_guid, c.durable_v2->create_guid};
}

ReplayMatch replayed_create(RequestContext& ctx, const CreateContextRequests& c) {
    ReplayMatch m;
    const auto key = replay_key(ctx, c);
    if (!key) return m;
    const bool replay = ctx.header.flags & flags::kReplayOperation;
    // The original CREATE is still in progress (waiting for a break): the client retries once
    // it completed. Windows would answer a replay with ACCESS_DENIED or SHARING_VIOLATION;
    // FILE_NOT_AVAILABLE is what the client's retry loop expects (Samba does the same,
    // smbtorture smb2.replay.dhv2-pending*-sane).
    if (ctx.server.pending_creates.contains(*key)) {
        m.refusal = NtStatus::FileNotAvailable;
        return m;
    }
    auto found = ctx.server.opens.find_first([&](const Open& o) {
        return o.replay_eligible.load(std::memory_order_acquire) && o.replay &&
               o.replay->key == *key;
    });
    if (!found) return m;
    // MS-SMB2 3.3.5.9.10: the CreateGuid of an open the client may still replay, without
    // SMB2_FLAGS_REPLAY_OPERATION, is a duplicate; a replay is answered with that open, on
    // the session that made it.
    if (!replay || found->session_id != ctx.session_id) {
        m.refusal = NtStatus::DuplicateObjectId;
        return m;
    }
    // A replay asking for a lease names the open's lease or none (smbtorture
    // smb2.replay.replay-dhv2-oplock-lease, replay-dhv2-lease3).
    if (c.lease && (found->replay->lease_key != c.lease->lease_key || !holds_lease(*found))) {
        m.refusal = NtStatus::AccessDenied;
        return m;
    }
    m.open = std::move(found);
    return m;
}

asio::awaitable<NtStatus> respond_replayed(RequestContext& ctx, const CreateRequest& req,
                                           const CreateContextRequests& c,
                                           const std::shared_ptr<Open>& open) {
    // The response of the original CREATE, as the replay asks: its CreateAction, the open's
    // lease as it is now, the OplockLevel the replay asks for and durability only when that
    // level could have had it (Samba answers so; smbtorture smb2.replay.replay-dhv2-oplock2).
    CreateResponse resp;
    CreateGrants grants;
    resp.create_action = open->replay->create_action;
    resp.oplock_level = req.requested_oplock_level;
    const bool level_may_be_durable = req.requested_oplock_level == oplock_level::kBatch ||
                                      req.requested_oplock_level == oplock_level::kLease;
    if (const auto& reg = open->local.file_registration; reg && c.lease) {
        auto held = reg->table().held(reg->key(), reg->token());
        if (held.lease)
            grants.lease = lease_response(LeaseId{ctx.conn.state.client_guid, c.lease->lease_key},
                                          *held.lease);
    }
    if (open->durable.version == 2 && level_may_be_durable) {
        DurableHandleResponseV2 r;
        r.timeout = open->durable.timeout_ms;
        grants.durable_v2 = r;
    }
    co_await respond_existing(ctx, open, std::move(resp), grants);
    ctx.log().debug("replayed CREATE of '", open->local.path, "' answered with fid ",
                    open->id.volatile_);
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
