// What a request and its handler see of the connection it arrived on (MS-SMB2 3.3.1.7
// Connection): the negotiated state, the credit window, the channels and bindings, and the few
// operations a handler may ask of it. The transport, the sequence of stages a request goes
// through and the response path stay in Connection (server/connection.h), which handlers do not
// include.
//
// Everything here is used on the connection's own event loop only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/kdf.h"
#include "auth/signing.h"
#include "auth/spnego.h"
#include "protocol/header.h"
#include "protocol/result.h"
#include "server/credits.h"
#include "server/log.h"
#include "server/log_rate_limit.h"
#include "server/state/file_table.h"
#include "server/state/session.h"

namespace daxsmbd::server {

namespace asio = boost::asio;
class Server;
class RequestContext;
class Connection;
class RdmaChannel;
namespace io {
class Engine;  // server/io/uring_engine.h
}
namespace metrics {
struct LoopShard;  // server/metrics/registry.h
}

struct NegotiatedState {
    protocol::Dialect dialect = protocol::Dialect::None;
    protocol::Guid client_guid{};
    uint32_t client_capabilities = 0;
    uint16_t client_security_mode = 0;
    std::vector<uint16_t> client_dialects;
    uint32_t server_capabilities = 0;
    uint16_t server_security_mode = 0;
    bool supports_multi_credit = false;
    uint32_t max_transact_size = 65536;
    uint32_t max_read_size = 65536;
    uint32_t max_write_size = 65536;
    // 3.1.1 negotiate contexts (MS-SMB2 3.3.5.4).
    uint16_t cipher_id = 0;                        // 0 = no encryption
    std::optional<uint16_t> signing_algorithm_id;  // from SIGNING_CAPABILITIES
    std::optional<auth::PreauthHash> preauth;      // Connection.PreauthIntegrityHashValue
};

// Log lines about one connection, prefixed "conn <id> <peer>: ".
// The server's per-address budget for refusal lines (defined beside the Server).
AddressLogLimits* address_log_limits(Server& s);

class ConnectionLog {
  public:
    // Refusals a client can repeat: at most this many lines per window per connection (the
    // address as a whole has AddressLogLimits' budget).
    static constexpr unsigned kRefusalsPerWindow = 20;
    static constexpr std::chrono::seconds kRefusalWindow{10};

    ConnectionLog(uint64_t id, std::string_view peer, AddressLogLimits* address_limits = nullptr,
                  std::string_view address = {})
        : prefix_("conn " + std::to_string(id) + " " + std::string(peer) + ": "),
          address_limits_(address_limits),
          address_(address) {}
    ~ConnectionLog();
    ConnectionLog(const ConnectionLog&) = delete;
    ConnectionLog& operator=(const ConnectionLog&) = delete;

    template <class... Args>
    void info(const Args&... a) const {
        log_info(prefix_, a...);
    }
    template <class... Args>
    void debug(const Args&... a) const {
        log_debug(prefix_, a...);
    }
    template <class... Args>
    void error(const Args&... a) const {
        log_error(prefix_, a...);
    }
    // An INFO line the client causes and may repeat in a loop (refused CREATE, bad signature,
    // failed logon): rate-limited per connection and per address, the suppressed count
    // reported with the next line written. At log level 2 and above nothing is suppressed.
    template <class... Args>
    void refusal(const Args&... a) const {
        if (g_log_level.load(std::memory_order_relaxed) < int(LogLevel::Info)) return;
        if (debug_enabled()) return log_info(prefix_, a...);
        auto suppressed = admit_refusal();
        if (!suppressed) return;
        if (*suppressed == 0) return log_info(prefix_, a...);
        log_info(prefix_, a..., " (suppressed ", *suppressed, " similar lines before this one)");
    }
    const std::string& prefix() const { return prefix_; }

  private:
    // The lines suppressed before this one, or nullopt when this one is suppressed too.
    std::optional<uint64_t> admit_refusal() const;

    std::string prefix_;
    AddressLogLimits* address_limits_;
    std::string address_;
    mutable LogRateLimiter limiter_{kRefusalsPerWindow, kRefusalWindow};
};

class ConnectionState {
  public:
    ConnectionState(Server& s, asio::any_io_executor ex, uint64_t cid, std::string_view peer,
                    std::string_view peer_address)
        : server(s),
          executor(std::move(ex)),
          id(cid),
          log(cid, peer, address_log_limits(s), peer_address),
          peer_(peer),
          peer_address_(peer_address) {}
    virtual ~ConnectionState() = default;
    ConnectionState(const ConnectionState&) = delete;
    ConnectionState& operator=(const ConnectionState&) = delete;

    Server& server;
    asio::any_io_executor executor;
    const uint64_t id;
    const ConnectionLog log;
    // The io_uring engine of this connection's event loop (set by the server at accept).
    io::Engine* io_engine = nullptr;
    // The metrics shard of this connection's event loop (server/metrics/registry.h), set by the
    // server at accept; its requests count there.
    metrics::LoopShard* metrics_shard = nullptr;
    // The RDMA transfers of an SMB Direct connection (server/transport.h); null on TCP.
    RdmaChannel* rdma = nullptr;
    // The peer's address and port, for log lines.
    const std::string& peer() const { return peer_; }
    // The address only, for per-address limits and the logon throttle.
    const std::string& peer_address() const { return peer_address_; }

    bool negotiated() const {
        return state.dialect != protocol::Dialect::None &&
               state.dialect != protocol::Dialect::Wildcard;
    }
    NegotiatedState state;
    CreditWindow credits;
    // Channels of this connection by SessionId (MS-SMB2 3.3.1.7 Connection.SessionTable):
    // sessions set up here and sessions bound here from another connection.
    std::map<uint64_t, Channel> channels;
    // The channel of `session_id`, or null; the entry of a session that ended meanwhile (LOGOFF
    // or a failed re-authentication on another channel) is dropped here.
    Channel* channel(uint64_t session_id);
    // Bindings in progress (MS-SMB2 3.3.5.5.2): the session, the authentication exchange and,
    // on 3.1.1, its PreauthSession.PreauthIntegrityHashValue (Connection.PreauthSessionTable).
    struct PendingBind {
        std::shared_ptr<Session> session;
        std::unique_ptr<auth::SpnegoAcceptor> acceptor;
        std::optional<auth::PreauthHash> preauth;
    };
    std::map<uint64_t, PendingBind> pending_binds;
    // Signing algorithm sessions of this connection use (MS-SMB2 3.1.4.1).
    auth::SigningAlgorithm signing_algorithm() const;

    virtual bool closed() const = 0;
    // This connection, for a session's channel list (MS-SMB2 3.3.1.8 Session.ChannelList).
    virtual std::weak_ptr<Connection> weak_self() = 0;
    // Ends this connection's side of a channel: the session ends with it when it was the last.
    virtual void release_channel(uint64_t session_id) = 0;
    // A notifier for the FileTable that sends an Oplock Break Notification for open `file_id`
    // of session `session_id` (MS-SMB2 2.2.23.1, 3.3.4.6): safe to call from any thread and
    // after the connection is gone, when the break goes out on another channel of the session.
    // `tree_encrypts`: the open's share requires encryption (Share.EncryptData).
    virtual OplockBreakNotifier oplock_break_notifier(uint64_t session_id, protocol::FileId file_id,
                                                      bool tree_encrypts) = 0;
    // The same for a lease (MS-SMB2 2.2.23.2, 3.3.4.7): Lease Break Notifications carry the
    // lease key, not a FileId.
    virtual LeaseBreakNotifier lease_break_notifier(uint64_t session_id, bool tree_encrypts) = 0;
    // Called by RequestContext::go_async (see there for the statuses it fails with).
    virtual asio::awaitable<Status> go_async(RequestContext& ctx) = 0;
    // Checks the signature of request element `elem` with `signer` (MS-SMB2 3.3.5.2.4).
    virtual Status verify_signature(auth::Signer& signer, protocol::Bytes elem,
                                    const protocol::Header& hdr) = 0;

  private:
    std::string peer_;
    std::string peer_address_;
};

}  // namespace daxsmbd::server
