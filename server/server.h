// The daemon: configuration, shares, users, event loops and listeners, and the tables shared by
// all connections (sessions, opens).
//
// Threads: one Boost.Asio io_context per event loop ("worker threads", default one per core),
// each run by one thread; connections are assigned round-robin at accept and stay on their
// loop. A small blocking pool runs the metadata system calls a loop must not wait for.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "auth/gss_kerberos.h"
#include "auth/userdb.h"
#include "protocol/header.h"
#include "server/buffer_pool.h"
#include "server/cluster/share_ownership.h"
#include "server/config.h"
#include "server/health/device_health.h"
#include "server/log_rate_limit.h"
#include "server/logon_throttle.h"
#include "server/metrics/limit_hits.h"
#include "server/metrics/registry.h"
#include "server/reload_plan.h"
#include "server/smbd_transport.h"
#include "server/state/file_table.h"
#include "server/state/lock_table.h"
#include "server/state/open.h"
#include "server/state/replay.h"
#include "server/state/session.h"
#include "server/state/share.h"
#include "server/transport.h"
#include "smbdirect/smbd_connection.h"

namespace daxsmbd::smbdirect {
class VerbsDomains;
}

namespace daxsmbd::server {

namespace asio = boost::asio;
class Connection;
namespace io {
class Engine;
}
namespace notify {
class Watcher;
}
namespace metrics {
class HttpEndpoint;
}
namespace cluster {
class ClusterNode;
}

// Abuse limits (architecture.md "Limits on everything a client can make the server hold"),
// taken from the configuration's "max ..." keys (GlobalConfig); the credit window's limit is
// GlobalConfig::max_credits and the authentication deadline GlobalConfig::auth_timeout_s.
struct Limits {
    size_t max_message_size = (8u << 20) + (1u << 20);  // 8 MiB payload + headers
    size_t max_compound_elements = 64;
    size_t max_connections = 4096;
    size_t max_connections_per_address = 1024;
    size_t max_sessions_per_connection = 64;
    size_t max_opens_per_session = 16384;
    size_t max_async_per_connection = 512;
    size_t max_trees_per_session = 1024;
    size_t max_locks_per_open = 16384;
    size_t max_durable_per_client = 16384;
    uint64_t max_bytes_in_flight = 32u << 20;

    static Limits from(const GlobalConfig& g);
};

// How often the "max bytes in flight per connection" backpressure acted (all connections); the
// end-to-end tests and diagnostics read it.
struct BackpressureStats {
    std::atomic<uint64_t> pauses{0};          // times a connection's reader stopped reading
    std::atomic<uint64_t> peak_in_flight{0};  // most bytes one connection had in flight
};

class Server {
  public:
    explicit Server(Config config);
    ~Server();

    // Opens the shares and binds the listeners; fails with a message.
    bool start(std::string* error);
    // Runs the event loops on their threads and blocks until stop().
    void run();
    void stop();
    // A graceful stop's first part (SIGTERM): no new connections, no new requests (a frame read
    // from now on closes its connection unanswered), the requests in processing finish and are
    // answered, for at most `bound`; then every share's file system is synced (syncfs), so
    // that what was acknowledged is on disk. stop() ends the rest.
    struct DrainResult {
        size_t busy_connections = 0;  // connections with requests in processing at the start
        size_t still_busy = 0;        // ... when `bound` ran out
        std::chrono::milliseconds took{0};
    };
    DrainResult drain(std::chrono::milliseconds bound);
    bool draining() const { return draining_.load(std::memory_order_acquire); }
    // Every event loop ran a posted no-op within `within` (none is stuck in a handler or a
    // system call): what the systemd watchdog keep-alive (WATCHDOG=1) stands for.
    bool loops_responsive(std::chrono::milliseconds within);
    // Port actually bound for the first listener (tests bind port 0).
    uint16_t bound_port() const { return bound_port_; }

    const Config& config() const { return config_; }
    const Limits& limits() const { return limits_; }
    const protocol::Guid& guid() const { return guid_; }
    uint64_t start_time() const { return start_time_; }  // FILETIME
    std::string netbios_name() const;

    std::shared_ptr<Share> find_share(std::string_view name) const;  // case-insensitive
    std::vector<std::shared_ptr<Share>> shares() const;
    // {name, path} of every share but IPC$.
    std::vector<std::pair<std::string, std::string>> share_paths() const;

    // Current user record (the database is re-read when its file changes, so
    // daxsmbd-admin changes apply without a restart).
    std::optional<auth::UserRecord> find_user(std::string_view name);

    // Kerberos acceptor credentials (the keytab), when Kerberos is enabled; acquired at start().
    std::shared_ptr<const auth::KerberosCredentials> kerberos_credentials() const {
        return kerberos_;
    }
    LogonThrottle& logon_throttle() { return throttle_; }
    // Per-address budget for the log lines clients can cause (ConnectionLog::refusal).
    AddressLogLimits& address_log_limits() { return address_log_limits_; }
    // Which node serves each "scale out" share (TREE_CONNECT reads it, MS-SMB2 3.3.5.7): fed
    // by the cluster's ownership records when a cluster is configured (attach_feed); without
    // one, this node serves every share unless an entry says otherwise (the tests set entries
    // here directly).
    cluster::ShareOwnershipCache& share_ownership() { return share_ownership_; }
    // The scale-out cluster node ("cluster etcd endpoints"; server/cluster/cluster_node.h),
    // which feeds share_ownership(); null without a cluster. Runs on a thread of its own.
    cluster::ClusterNode* cluster_node() { return cluster_.get(); }
    // What daxsmbd-admin cluster status prints; nullopt without a cluster.
    std::optional<std::string> cluster_status_text() const;

    // What every connection of this server shares, owned here (two servers in one process share
    // nothing). Lock order, outermost first: OpenTable, FileTable, LockTable; BufferPool's lock
    // is a leaf. `buffers` is declared first: everything below may hold its buffers.
    BufferPool buffers;
    // SMB Direct: the pool's slabs registered with each RDMA device (server/smbd_transport.h),
    // and the counters of every SMB Direct connection.
    RdmaRegistrations rdma_memory{buffers};
    smbdirect::SmbdCounters smbd_counters;

  private:
    // Before the opens, whose change-notify entries it serves.
    std::once_flag notify_once_;
    std::unique_ptr<notify::Watcher> notify_;

  public:
    FileTable files;  // share modes, delete-on-close and oplocks of every open file
    LockTable locks;  // byte-range locks
    SessionTable sessions;
    OpenTable opens;
    // DH2Q CREATEs still in progress, which a replay of them is told to retry (MS-SMB2 3.3.5.9.10).
    PendingCreates pending_creates;
    // One FileMap per open file on a DAX share, and those of recently closed files ("dax map
    // cache files"/"dax map cache size"; swept for deleted files every kDaxSweepInterval).
    dax::MapRegistry dax_maps;
    asio::thread_pool& pool() { return pool_; }
    // The change-notify watcher (server/notify), made on first use; null when inotify is
    // unavailable.
    notify::Watcher* notify_watcher();
    // The io_uring engine of event loop `i` (tests look at its counters).
    io::Engine& engine(size_t i) { return *engines_.at(i); }
    size_t loop_count() const { return loops_.size(); }

    void connection_closed(Connection& c);
    // Every connection accepted and not yet closed, by id (daxsmbd-admin status).
    std::vector<std::shared_ptr<Connection>> live_connections();
    // The connections that asked for leases, per ClientGuid, oldest first (by connection id):
    // a lease break goes out on the first of them that works (MS-SMB2 3.3.4.7; Windows sends
    // it there whichever connection made the open, smbtorture smb2.lease.v2_complex1).
    void add_lease_connection(const protocol::Guid& client, uint64_t connection_id,
                              std::weak_ptr<Connection> connection);
    std::vector<std::shared_ptr<Connection>> lease_connections(const protocol::Guid& client);
    // Ends a session for all its channels (LOGOFF, failed re-authentication, PreviousSessionId,
    // its last channel closed): Deleted, its opens closed, its trees gone, out of the table.
    // Channels on other connections notice at their next request (USER_SESSION_DELETED).
    // Ends session `s` with its opens; `keep_durable` (the connection was lost, or a new
    // session replaced it) keeps its durable opens, disconnected, for their reconnect.
    void end_session(Session& s, bool keep_durable = false);
    // The administrator's close-session (daxsmbd-admin): ends session `id` as a LOGOFF would,
    // with its opens (durable ones too: the point is to free what the session holds) and trees,
    // and closes the connections it was the last session of, so the client notices at once.
    // The user (domain\\user) it belonged to, or nullopt when there is no such session.
    std::optional<std::string> close_session(uint64_t id);
    // daxsmbd-admin debug-connection: one log line per request of connection `id` (on) or only
    // at "log level = 3" again (off). False when there is no such connection.
    bool trace_connection(uint64_t id, bool on);
    // Applies a configuration read anew (SIGHUP, daxsmbd-admin reload; server/reload.cpp) as
    // server/reload_plan.h says: every added or changed share is opened first, and if one
    // cannot be, nothing changes. One reload at a time.
    ReloadOutcome reload(const Config& next);
    // Ends every tree connect of share `name` (case-insensitive) with its opens, as a
    // TREE_DISCONNECT would: the clients' next requests on them get STATUS_NETWORK_NAME_DELETED
    // (MS-SMB2 3.3.5.2.11). For a share that is removed or no longer served here. Returns
    // how many tree connects ended.
    size_t end_share_trees(std::string_view name);
    // Arms the expiry of a disconnected durable open (OpenTable::disconnect_durable).
    void keep_disconnected(const std::shared_ptr<Open>& open);
    BackpressureStats& backpressure() { return backpressure_; }
    // The request and I/O metrics, one shard per event loop (server/metrics/registry.h).
    metrics::Registry metrics;
    // How often each abuse limit acted (daxsmbd_limit_hits_total).
    metrics::LimitHits limit_hits;
    // The health of the shares' block devices ("device health interval"; server/health).
    health::DeviceHealthMonitor device_health;
    // What GET /metrics answers (server/metrics/server_metrics.cpp): the registry merged, and
    // the server's gauges and counters read at this moment.
    std::string metrics_text();
    // The port of the "metrics address" endpoint; 0 when it is off.
    uint16_t metrics_port() const;
    size_t connection_count();
    uint64_t connections_accepted() const { return connections_accepted_.load(); }
    uint64_t connections_refused() const { return connections_refused_.load(); }
    // A share is continuously available (its persistent handles are journaled).
    bool has_persistent_handles() const { return has_persistent_handles_; }
    // Accepts connections on one more listener (tests: SMB Direct over the emulated provider).
    // After start().
    void add_listener(std::unique_ptr<Listener> listener);
    // The addresses with an SMB Direct listener (FSCTL_QUERY_NETWORK_INTERFACE_INFO marks
    // them RDMA capable), with their link speed in bits/s.
    std::vector<std::pair<std::string, uint64_t>> rdma_addresses() const;

  private:
    asio::awaitable<void> accept_loop(Listener& listener);
    void admit_connection(std::unique_ptr<Transport> transport, size_t loop);
    bool open_listeners(std::string* error);
    // Continuously available shares: their journals, and the handles an earlier run left.
    bool open_persistent_handles(std::string* error);
    // "server smb transports = rdma": SMB Direct listeners (server/rdma_listeners.cpp).
    void open_rdma_listeners();
    // Logs, per DAX share, how RDMA reaches its files through `device`.
    void probe_dax_shares(smbdirect::VerbsDomains& domains, const std::string& device);
    void schedule_dax_sweep();
    void reload_users_if_changed();
    bool setup_dax(Share& share, std::string* error);
    std::shared_ptr<Share> open_share(const ShareConfig& sc, std::string* error);
    // Server::reload: opens what the plan adds or changes and swaps it in.
    bool open_reloaded_shares(const ReloadPlan& plan, std::vector<std::shared_ptr<Share>>& out,
                              std::string* error);

    Config config_;
    Limits limits_;
    protocol::Guid guid_{};
    uint64_t start_time_ = 0;
    // IPC$ first, then the configured shares; replaced by reload() (under shares_mu_).
    mutable std::mutex shares_mu_;
    std::vector<std::shared_ptr<Share>> shares_;
    std::mutex reload_mu_;  // one reload() at a time
    // The io_uring rings every engine has (set up at start from the shares' options).
    bool engine_sqpoll_ = false;
    bool engine_iopoll_ = false;

    std::vector<std::unique_ptr<asio::io_context>> loops_;
    // One io_uring engine per loop (server/io), destroyed before the loops (declared after).
    std::vector<std::unique_ptr<io::Engine>> engines_;
    std::vector<std::thread> threads_;
    std::vector<std::unique_ptr<Listener>> listeners_;
    std::unique_ptr<asio::steady_timer> dax_sweep_timer_;  // on loop 0 (declared after loops_)
    uint64_t unlink_listener_ = 0;                         // in `files`
    BackpressureStats backpressure_;
    std::atomic<size_t> next_loop_{0};
    std::atomic<uint64_t> next_connection_id_{1};
    std::atomic<uint64_t> connections_accepted_{0};
    std::atomic<uint64_t> connections_refused_{0};  // by "max connections" limits
    // "metrics address": the HTTP endpoint, stopped first in ~Server (it reads everything).
    std::unique_ptr<metrics::HttpEndpoint> metrics_endpoint_;
    asio::thread_pool pool_{4};
    uint16_t bound_port_ = 0;
    bool has_persistent_handles_ = false;
    std::atomic<bool> draining_{false};
    mutable std::mutex rdma_mu_;
    std::vector<std::pair<std::string, uint64_t>> rdma_addresses_;

    std::mutex conn_mu_;
    std::map<std::string, size_t> connections_per_address_;
    size_t connections_ = 0;
    std::map<uint64_t, std::weak_ptr<Connection>> live_connections_;
    // add_lease_connection(), under conn_mu_.
    std::map<protocol::Guid, std::vector<std::pair<uint64_t, std::weak_ptr<Connection>>>>
        lease_connections_;

    std::shared_ptr<const auth::KerberosCredentials> kerberos_;
    LogonThrottle throttle_;
    AddressLogLimits address_log_limits_;
    cluster::ShareOwnershipCache share_ownership_;
    // The cluster node and its loop (server/cluster_start.cpp); the node goes first (it feeds
    // share_ownership_, declared before it).
    bool start_cluster(std::string* error);
    void stop_cluster();
    std::unique_ptr<asio::io_context> cluster_loop_;
    std::unique_ptr<cluster::ClusterNode> cluster_;
    std::thread cluster_thread_;

    std::mutex users_mu_;
    std::optional<auth::UserDatabase> users_;
    int64_t users_mtime_ns_ = -1;
};

}  // namespace daxsmbd::server
