// LOGOFF (MS-SMB2 3.3.5.6): ends the session for all its channels, with its opens and trees;
// the response is still signed with this channel's key (RequestContext::channel_signer keeps it).
#include "protocol/logoff.h"
#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/log.h"
#include "server/server.h"

namespace daxsmbd::server::handlers {

asio::awaitable<NtStatus> logoff(RequestContext& ctx) {
    auto req = protocol::LogoffRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto sid = ctx.session->id;
    const size_t channels = ctx.session->channel_count();
    ctx.server.end_session(*ctx.session);
    ctx.conn.channels.erase(sid);
    ctx.log().debug("logoff session ", std::hex, sid, std::dec, " (", channels, " channel(s))");
    protocol::LogoffResponse{}.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
