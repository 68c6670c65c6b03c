#include "protocol/echo.h"
#include "server/handlers/handlers.h"

namespace daxsmbd::server::handlers {

// MS-SMB2 3.3.5.17: ECHO needs no session; the response is the 4-byte body.
asio::awaitable<NtStatus> echo(RequestContext& ctx) {
    auto req = protocol::EchoRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    protocol::EchoResponse{}.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
