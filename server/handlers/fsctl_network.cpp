// FSCTLs about the connection rather than a file (MS-SMB2 3.3.5.15.9, 3.3.5.15.11,
// 3.3.5.15.12): the check of the NEGOTIATE exchange, the interfaces a multichannel client may
// bind to, and the resiliency of a handle.
#include <algorithm>
#include <mutex>

#include <arpa/inet.h>

#include "protocol/negotiate.h"
#include "server/connection_state.h"
#include "server/handlers/fsctl.h"
#include "server/log.h"
#include "server/net_interfaces.h"
#include "server/server.h"

namespace daxsmbd::server::handlers::fsctls {

using namespace protocol;

namespace {

// ---- FSCTL_VALIDATE_NEGOTIATE_INFO (MS-SMB2 3.3.5.15.12) ----

NtStatus disconnect(RequestContext& ctx, const char* why) {
    ctx.log().info("FSCTL_VALIDATE_NEGOTIATE_INFO: ", why, ", disconnecting");
    ctx.suppress_response = true;
    ctx.disconnect_after = true;
    return NtStatus::AccessDenied;
}

}  // namespace

NtStatus validate_negotiate(RequestContext& ctx, const IoctlRequest& req) {
    auto& st = ctx.conn.state;
    // Every failure terminates the connection without a response: a mismatch means someone
    // tampered with the NEGOTIATE exchange.
    if (st.dialect == Dialect::Smb311) return disconnect(ctx, "not used with 3.1.1");
    if (req.max_output_response < ValidateNegotiateInfoResponse::kSize)
        return disconnect(ctx, "MaxOutputResponse too small");
    auto in = ValidateNegotiateInfoRequest::decode(req.input);
    if (!in) return disconnect(ctx, "malformed request");
    // This server implements 3.1.1, so the list must be the one the client negotiated with.
    if (in->dialects != st.client_dialects) return disconnect(ctx, "dialect list differs");
    const auto& g = ctx.server.config().global;
    uint16_t best = 0;
    for (uint16_t d : in->dialects) {
        const bool known = d == 0x0202 || d == 0x0210 || d == 0x0300 || d == 0x0302 || d == 0x0311;
        if (known && d >= uint16_t(g.min_protocol) && d <= uint16_t(g.max_protocol))
            best = std::max(best, d);
    }
    if (best == 0 || best != uint16_t(st.dialect)) return disconnect(ctx, "dialect differs");
    if (in->guid != st.client_guid) return disconnect(ctx, "ClientGuid differs");
    if (in->security_mode != st.client_security_mode)
        return disconnect(ctx, "SecurityMode differs");
    if (in->capabilities != st.client_capabilities) return disconnect(ctx, "Capabilities differ");

    ValidateNegotiateInfoResponse resp;
    resp.capabilities = st.server_capabilities;
    resp.guid = ctx.server.guid();
    resp.security_mode = st.server_security_mode;
    resp.dialect = uint16_t(st.dialect);
    ByteVector out;
    ByteWriter w(out);
    resp.encode(w);
    return reply(ctx, req, kPlaceholderFileId, out);
}

asio::awaitable<NtStatus> query_network_interface_info(RequestContext& ctx,
                                                       const IoctlRequest& req) {
    // MS-SMB2 3.3.5.15.11: the addresses a multichannel client may bind further
    // channels from; refused where SMB2_GLOBAL_CAP_MULTI_CHANNEL was not offered.
    if (!(ctx.conn.state.server_capabilities & global_caps::kMultiChannel))
        co_return NtStatus::NotSupported;
    const auto& listen = ctx.server.config().global.interfaces;
    auto list = co_await ctx.blocking([&listen] { return query_network_interfaces(listen); });
    // RDMA_CAPABLE only where an SMB Direct listener is, with the RDMA port's link speed.
    const auto rdma = ctx.server.rdma_addresses();
    for (auto& e : list) {
        char text[INET6_ADDRSTRLEN] = {};
        const int af = e.family == sockaddr_family::kInterNetwork ? AF_INET : AF_INET6;
        if (!inet_ntop(af, e.address.data(), text, sizeof text)) continue;
        for (const auto& [addr, speed] : rdma)
            if (addr == text) {
                e.capability |= interface_capability::kRdmaCapable;
                if (speed) e.link_speed = speed;
            }
    }
    ByteVector out;
    ByteWriter w(out);
    NetworkInterfaceInfo::encode_list(w, list);
    if (out.size() > req.max_output_response) co_return NtStatus::BufferTooSmall;
    co_return reply(ctx, req, req.file_id, out);
}

// MS-SMB2 3.3.5.15.9. What resiliency gives here is lock sequence replay detection
// (3.3.5.14); the open is not yet kept for a reconnect after its connection is lost (durable and
// resilient reconnects come with durable handles), so a client that loses its connection loses
// the handle as it would without resiliency.
NtStatus request_resiliency(RequestContext& ctx, const IoctlRequest& req, Open& open) {
    // <388>: Windows fails it on 2.0.2.
    if (ctx.dialect() == Dialect::Smb202) return NtStatus::InvalidDeviceRequest;
    auto r = NetworkResiliencyRequest::decode(req.input);
    if (!r) return NtStatus::InvalidParameter;
    // MaxResiliencyTimeout: 5 minutes; a timeout of 0 means 2 minutes (Windows' values, <389>).
    constexpr uint32_t kMaxResiliencyTimeoutMs = 300'000;
    constexpr uint32_t kDefaultResiliencyTimeoutMs = 120'000;
    if (r->timeout > kMaxResiliencyTimeoutMs) return NtStatus::InvalidParameter;
    {
        std::lock_guard lk(open.mu);
        open.is_resilient = true;
        open.resiliency_timeout_ms = r->timeout ? r->timeout : kDefaultResiliencyTimeoutMs;
    }
    ctx.log().debug("'", open.local.path, "' is resilient (", open.resiliency_timeout_ms, " ms)");
    return reply(ctx, req, open.id, {});
}

}  // namespace daxsmbd::server::handlers::fsctls
