// TREE_DISCONNECT (MS-SMB2 3.3.5.8): closes the opens of the tree.
#include "protocol/tree_disconnect.h"
#include "server/handlers/handlers.h"
#include "server/server.h"

namespace daxsmbd::server::handlers {

asio::awaitable<NtStatus> tree_disconnect(RequestContext& ctx) {
    auto req = protocol::TreeDisconnectRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto sid = ctx.session->id;
    auto tid = ctx.tree->id;
    ctx.server.opens.remove_if(
        [sid, tid](const Open& o) { return o.session_id == sid && o.tree_id == tid; });
    {
        std::lock_guard lk(ctx.session->mu);
        ctx.session->trees.erase(tid);
    }
    protocol::TreeDisconnectResponse{}.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
