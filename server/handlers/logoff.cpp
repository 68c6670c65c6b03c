// LOGOFF (MS-SMB2 3.3.5.6): closes the session's opens and trees; the response is still signed
// with the session's key, so the session object lives until the response is sent.
#include "protocol/logoff.h"
#include "server/connection.h"
#include "server/handlers/handlers.h"
#include "server/log.h"
#include "server/server.h"

namespace daxsmbd::server::handlers {

asio::awaitable<NtStatus> logoff(RequestContext& ctx) {
    auto req = protocol::LogoffRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto sid = ctx.session->id;
    ctx.server.opens.remove_if([sid](const Open& o) { return o.session_id == sid; });
    {
        std::lock_guard lk(ctx.session->mu);
        ctx.session->trees.clear();
    }
    ctx.conn.sessions.erase(sid);
    ctx.server.sessions.remove(sid);
    log_debug("conn ", ctx.conn.id, ": logoff session ", std::hex, sid);
    protocol::LogoffResponse{}.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
