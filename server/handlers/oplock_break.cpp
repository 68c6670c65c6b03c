// OPLOCK_BREAK acknowledgments (MS-SMB2 3.3.5.22): oplock and lease breaks. Both are granted,
// broken and acknowledged in the FileTable (server/state/file_table.h); leases are found by
// Connection.ClientGuid and LeaseKey.
#include "protocol/oplock_break.h"

#include "protocol/create.h"

#include <variant>

#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/log.h"
#include "server/persistent_handles.h"
#include "server/server.h"
#include "server/state/file_table.h"

namespace daxsmbd::server::handlers {

using namespace protocol;

asio::awaitable<NtStatus> oplock_break(RequestContext& ctx) {
    // MS-SMB2 3.3.5.22: StructureSize 36 is a lease acknowledgment except on 2.0.2, where only the
    // 24-byte oplock form exists.
    auto ack = parse_break_acknowledgment(ctx.msg);
    if (!ack) co_return ack.status();
    if (std::holds_alternative<LeaseBreakAcknowledgment>(*ack)) {
        if (ctx.dialect() == Dialect::Smb202) co_return NtStatus::InvalidParameter;
        const auto& lease = std::get<LeaseBreakAcknowledgment>(*ack);
        // MS-SMB2 3.3.5.22.2.
        LeaseId id{ctx.conn.state.client_guid, lease.lease_key};
        auto state = ctx.server.files.acknowledge_lease_break(id, lease.lease_state);
        if (!state) {
            ctx.log().debug("lease break acknowledgment refused: ", status_name(state.status()));
            co_return state.status();
        }
        if (ctx.server.has_persistent_handles())
            co_await ctx.blocking_as_daemon([&] {
                rejournal_persistent_opens(ctx.server, [&](const Open& o) {
                    return o.durable.lease_key == lease.lease_key &&
                           o.durable.client_guid == id.client_guid;
                });
            });
        LeaseBreakResponse resp;
        resp.lease_key = lease.lease_key;
        resp.lease_state = *state;
        resp.serialize(ctx.body());
        co_return NtStatus::Success;
    }
    const auto& oplock = std::get<OplockBreakAcknowledgment>(*ack);
    // MS-SMB2 3.3.5.22.1: the open must exist (FILE_CLOSED otherwise) ...
    auto found = ctx.find_open(oplock.file_id);
    if (!found) co_return found.status();
    const auto& open = *found;
    // ... a LEASE level belongs to the lease form ...
    if (oplock.oplock_level == oplock_level::kLease) co_return NtStatus::InvalidParameter;
    // ... then the level and state checks of the object store's oplock (FileTable). Pipes and
    // opens outside the table hold no oplock and are never breaking.
    if (!open->local.file_registration) co_return NtStatus::InvalidDeviceState;
    const auto& reg = *open->local.file_registration;
    auto level = reg.table().acknowledge_break(reg.key(), reg.token(), oplock.oplock_level);
    if (!level) {
        ctx.log().debug("oplock break acknowledgment for fid ", open->id.volatile_,
                        " refused: ", status_name(level.status()));
        co_return level.status();
    }
    if (open->durable.persistent)
        co_await ctx.blocking_as_daemon([&] {
            rejournal_persistent_opens(ctx.server, [&](const Open& o) { return o.id == open->id; });
        });
    OplockBreakResponse resp;
    resp.oplock_level = *level;
    resp.file_id = open->id;
    resp.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
