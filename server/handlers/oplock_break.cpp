// OPLOCK_BREAK acknowledgments (MS-SMB2 3.3.5.22). This server grants neither oplocks nor leases
// yet, so no open is ever in the Breaking state and no lease table exists: every acknowledgment
// is one the spec refuses.
#include "protocol/oplock_break.h"

#include <variant>

#include "server/connection.h"
#include "server/handlers/handlers.h"
#include "server/log.h"

namespace daxsmbd::server::handlers {

using namespace protocol;

asio::awaitable<NtStatus> oplock_break(RequestContext& ctx) {
    // MS-SMB2 3.3.5.22: StructureSize 36 is a lease acknowledgment except on 2.0.2, where only the
    // 24-byte oplock form exists.
    auto ack = parse_break_acknowledgment(ctx.msg);
    if (!ack) co_return ack.status();
    if (std::holds_alternative<LeaseBreakAcknowledgment>(*ack)) {
        if (ctx.conn.state.dialect == Dialect::Smb202) co_return NtStatus::InvalidParameter;
        // MS-SMB2 3.3.5.22.2: no lease table for Connection.ClientGuid (no lease was ever
        // granted), so neither the table nor the LeaseKey is found.
        log_debug("conn ", ctx.conn.id, ": lease break acknowledgment without a lease");
        co_return NtStatus::ObjectNameNotFound;
    }
    const auto& oplock = std::get<OplockBreakAcknowledgment>(*ack);
    // MS-SMB2 3.3.5.22.1: the open must exist (FILE_CLOSED otherwise) ...
    auto found = ctx.find_open(oplock.file_id);
    if (!found) co_return found.status();
    // ... and be breaking its oplock; Open.OplockState is never Breaking here.
    log_debug("conn ", ctx.conn.id, ": oplock break acknowledgment without a break");
    co_return NtStatus::InvalidDeviceState;
}

}  // namespace daxsmbd::server::handlers
