#include "server/server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <random>

#include "dax/media_guard.h"
#include "server/cluster/cluster_node.h"
#include "server/connection.h"
#include "server/io/block_path.h"
#include "server/io/uring_engine.h"
#include "server/log.h"
#include "server/metrics/http_endpoint.h"
#include "server/notify/watcher.h"
#include "server/persistent_handles.h"
#include "server/state/file_table.h"
#include "server/vfs/fs_credentials.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server {

// How often the DAX map cache looks for files deleted outside this server (a cached map keeps
// a deleted file's blocks allocated): a few statx calls per cached map, on the blocking pool.
constexpr std::chrono::seconds kDaxSweepInterval{10};
// How long a lease break may wait for its acknowledgment (MS-SMB2 3.3.2.5: Windows, 35 s).
constexpr std::chrono::seconds kLeaseBreakTimeout{35};

static uint64_t now_filetime() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 10000000ull + uint64_t(ts.tv_nsec) / 100 + 116444736000000000ull;
}

static LogonThrottle::Settings throttle_settings(const GlobalConfig& g) {
    LogonThrottle::Settings t;
    t.base = std::chrono::milliseconds(g.logon_failure_delay_ms);
    t.cap = std::chrono::milliseconds(g.logon_failure_max_delay_ms);
    t.window = std::chrono::seconds(g.logon_failure_window_s);
    return t;
}

Limits Limits::from(const GlobalConfig& g) {
    Limits l;
    l.max_message_size =
        g.max_message_size ? size_t(g.max_message_size) : size_t(g.max_io_size) + (1u << 20);
    l.max_compound_elements = g.max_compound_length;
    l.max_connections = g.max_connections;
    l.max_connections_per_address = g.max_connections_per_address;
    l.max_sessions_per_connection = g.max_sessions_per_connection;
    l.max_opens_per_session = g.max_opens_per_session;
    l.max_async_per_connection = g.max_async_per_connection;
    l.max_trees_per_session = g.max_trees_per_session;
    l.max_locks_per_open = g.max_locks_per_open;
    l.max_durable_per_client = g.max_durable_per_client;
    l.max_bytes_in_flight = g.max_bytes_in_flight;
    return l;
}

AddressLogLimits* address_log_limits(Server& s) {
    return &s.address_log_limits();
}

Server::Server(Config config)
    : config_(std::move(config)),
      limits_(Limits::from(config_.global)),
      throttle_(throttle_settings(config_.global)) {
    dax_maps.set_cache_limits(dax::MapCacheLimits{config_.global.dax_map_cache_files,
                                                  config_.global.dax_map_cache_bytes});
    // A file this server deletes or replaces leaves the map cache at once.
    unlink_listener_ =
        files.add_unlink_listener([this](const FileKey& k) { dax_maps.forget(k.device, k.inode); });
    std::random_device rd;
    for (auto& b : guid_)
        b = std::byte(rd());
    start_time_ = now_filetime();
}

Server::~Server() {
    stop_cluster();
    metrics_endpoint_.reset();
    device_health.stop();
    // Persistent handles outlive the server: closing them on the way down forgets nothing.
    for (auto& s : shares_)
        if (s->journal) s->journal->freeze();
    files.remove_unlink_listener(unlink_listener_);
    files.set_break_expiry(nullptr);
    stop();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    pool_.join();
}

void Server::schedule_dax_sweep() {
    dax_sweep_timer_->expires_after(kDaxSweepInterval);
    dax_sweep_timer_->async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        asio::post(pool_, [this] {
            vfs::AsDaemon as_daemon;  // a blocking-pool thread may still be some user's
            dax_maps.sweep();
        });
        schedule_dax_sweep();
    });
}

std::string Server::netbios_name() const {
    if (!config_.global.netbios_name.empty()) return config_.global.netbios_name;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string n(host);
    if (auto dot = n.find('.'); dot != std::string::npos) n.resize(dot);
    for (auto& c : n)
        c = char(toupper(uint8_t(c)));
    if (n.size() > 15) n.resize(15);
    return n.empty() ? "DAXSMBD" : n;
}

static bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (tolower(uint8_t(a[i])) != tolower(uint8_t(b[i]))) return false;
    return true;
}

// "dax" / "dax flush" of a share: probe the file system under the share root (MAP_SYNC), then
// resolve the flush instruction against the CPU. `on` without DAX, or a flush kind the CPU lacks
// on a DAX share, stops the server with a message.
bool Server::setup_dax(Share& s, std::string* error) {
    const ShareConfig& sc = s.config;
    if (sc.dax == dax::DaxMode::Off) return true;
    const dax::DetectResult detected = dax::detect_dax(s.root->fd());
    const dax::DaxDecision d = dax::decide(sc.dax, detected);
    if (!d.error.empty()) {
        *error = "share [" + sc.name + "]: " + d.error;
        return false;
    }
    if (!d.use_dax) {
        log_info("share [", sc.name, "]: dax = ", dax::to_string(sc.dax),
                 ": not a DAX file system (", detected.detail, "); block path");
        return true;
    }
    auto kind = dax::resolve_flush_kind(sc.dax_flush, dax::detect_cpu_flush_support());
    if (!kind) {
        *error = "share [" + sc.name +
                 "]: dax flush = " + std::string(dax::to_string(sc.dax_flush)) +
                 ": this CPU does not have it";
        return false;
    }
    dax::MapOptions opts;
    opts.require_sync = true;
    opts.flush = *kind;
    opts.prefault_bytes = sc.dax_prefault;
    s.dax = opts;
    dax::install_media_guard();
    log_info("share [", sc.name, "]: DAX active (MAP_SYNC",
             detected.statx_dax ? ", STATX_ATTR_DAX" : "", "), flush ", dax::to_string(*kind));
    return true;
}

std::shared_ptr<Share> Server::find_share(std::string_view name) const {
    std::lock_guard lk(shares_mu_);
    for (auto& s : shares_)
        if (iequals(s->config.name, name)) return s;
    return nullptr;
}

std::vector<std::shared_ptr<Share>> Server::shares() const {
    std::lock_guard lk(shares_mu_);
    return shares_;
}

std::vector<std::pair<std::string, std::string>> Server::share_paths() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& s : shares())
        if (!s->is_ipc) out.emplace_back(s->config.name, s->config.path);
    return out;
}

void Server::reload_users_if_changed() {
    struct stat st;
    int64_t mtime = -2;
    if (::stat(config_.global.user_database.c_str(), &st) == 0)
        mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (mtime == users_mtime_ns_ && users_) return;
    std::string err;
    auto db = auth::UserDatabase::load(config_.global.user_database, &err);
    if (!db) {
        log_error("user database ", config_.global.user_database, ": ", err);
        if (!users_) users_.reset();
        return;
    }
    users_ = std::move(db);
    users_mtime_ns_ = mtime;
}

std::optional<auth::UserRecord> Server::find_user(std::string_view name) {
    std::lock_guard lk(users_mu_);
    reload_users_if_changed();
    if (!users_) return std::nullopt;
    auto* r = users_->find(name);
    if (!r) return std::nullopt;
    return *r;
}

// A share as configured: its root opened (as the daemon), DAX decided, the block path's
// polling checked. Null with a message when the share cannot be served.
std::shared_ptr<Share> Server::open_share(const ShareConfig& sc, std::string* error) {
    auto s = std::make_shared<Share>();
    s->config = sc;
    vfs::ShareOptions so{sc.case_sensitive, {}};
    // The journal of a continuously available share lives in its root, out of clients' sight.
    if (sc.continuous_availability) so.reserved_root_name = kServerStateDirectory;
    auto root = vfs::ShareRoot::open(sc.path, so);
    if (!root) {
        *error = "share [" + sc.name + "]: cannot open path " + sc.path + ": " +
                 std::string(status_name(root.status()));
        return nullptr;
    }
    s->root = std::make_shared<vfs::ShareRoot>(std::move(*root));
    if (!setup_dax(*s, error)) return nullptr;
    // Block path options (server/io/block_path.h): polling needs O_DIRECT and a device with
    // poll queues; otherwise say so once and complete by interrupt.
    if (sc.io_poll && !sc.direct_io) {
        log_info("share [", sc.name, "]: io poll = yes needs direct io = yes; not polling");
    } else if (sc.io_poll) {
        std::string why;
        s->io_poll_usable = io::device_has_poll_queues(sc.path, &why);
        if (!s->io_poll_usable)
            log_info("share [", sc.name, "]: io poll = yes, but ", why,
                     "; completing by interrupt");
    }
    return s;
}

bool Server::start(std::string* error) {
    g_log_level = int(config_.global.log_level);
    {
        std::lock_guard lk(users_mu_);
        reload_users_if_changed();
        if (!users_) {
            *error = "cannot load user database " + config_.global.user_database;
            return false;
        }
    }
    if (config_.global.auth_kerberos) {
        std::string why;
        kerberos_ = auth::KerberosCredentials::acquire(config_.global.kerberos_keytab, &why);
        if (!kerberos_) {
            *error = "Kerberos: " + why;
            return false;
        }
        log_info("Kerberos: keytab ", config_.global.kerberos_keytab, ", realm ",
                 config_.global.realm, ", ", config_.global.kerberos_user_map.size(),
                 " explicit principal mappings");
    }
    auto ipc = std::make_shared<Share>();
    ipc->config.name = "IPC$";
    ipc->config.comment = "IPC Service (" + config_.global.server_string + ")";
    ipc->config.browseable = false;
    ipc->is_ipc = true;
    shares_.push_back(ipc);
    for (auto& sc : config_.shares) {
        auto s = open_share(sc, error);
        if (!s) return false;
        shares_.push_back(std::move(s));
    }

    unsigned n = config_.global.worker_threads ? config_.global.worker_threads
                                               : std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < n; ++i)
        loops_.push_back(std::make_unique<asio::io_context>(1));
    std::vector<std::string> share_names;
    for (size_t i = 0; i < shares_.size(); ++i) {
        shares_[i]->metrics_index = i;
        share_names.push_back(shares_[i]->config.name);
    }
    metrics.configure(n, std::move(share_names));
    io::EngineOptions eo;
    eo.blocking_pool = &pool_;
    eo.buffers = &buffers;
    eo.keep_loop_credentials = config_.global.transport_rdma;
    for (auto& sh : shares_) {
        eo.sqpoll = eo.sqpoll || sh->config.io_sqpoll;
        eo.iopoll = eo.iopoll || sh->io_poll_usable;
    }
    engine_sqpoll_ = eo.sqpoll;
    engine_iopoll_ = eo.iopoll;
    for (unsigned i = 0; i < n; ++i) {
        engines_.push_back(std::make_unique<io::Engine>(loops_[i]->get_executor(), eo));
        // Every loop's SQPOLL ring shares the first one's kernel thread.
        if (i == 0) eo.sqpoll_attach_fd = engines_[0]->sqpoll_fd();
    }

    // Directory lease breaks that no operation waits for end after the break timeout
    // (MS-SMB2 3.3.2.5) if nobody acknowledges them.
    files.set_break_expiry([this](const FileKey& dir) {
        auto timer = std::make_shared<asio::steady_timer>(*loops_[0], kLeaseBreakTimeout);
        timer->async_wait([this, timer, dir](const boost::system::error_code& ec) {
            if (!ec) files.expire_breaks(dir);
        });
    });

    if (!open_persistent_handles(error)) return false;
    if (!open_listeners(error)) return false;
    if (!start_cluster(error)) return false;
    device_health.set_shares(share_paths());
    if (config_.global.device_health_interval_s > 0)
        device_health.start(std::chrono::seconds(config_.global.device_health_interval_s));
    if (!config_.global.metrics_address.empty()) {
        metrics_endpoint_ = metrics::HttpEndpoint::start(
            config_.global.metrics_address, [this] { return metrics_text(); }, error);
        if (!metrics_endpoint_) return false;
        log_info("metrics on http://", config_.global.metrics_address, "/metrics (port ",
                 metrics_endpoint_->port(), ")");
    }
    for (auto& l : listeners_)
        asio::co_spawn(*loops_[0], accept_loop(*l), asio::detached);
    return true;
}

bool Server::open_persistent_handles(std::string* error) {
    for (auto& s : shares_) {
        if (s->is_ipc || !s->config.continuous_availability) continue;
        auto j = open_share_journal(*s);
        if (!j) {
            *error = "share [" + s->config.name + "]: continuous availability: cannot open " +
                     s->config.path + "/" + kServerStateDirectory + ": " +
                     std::string(status_name(j.status()));
            return false;
        }
        s->journal = std::move(*j);
        if (!has_persistent_handles_) {
            auto g = stable_server_guid(*s);
            if (g)
                guid_ = *g;
            else
                log_info("share [", s->config.name, "]: cannot keep the server GUID (",
                         status_name(g.status()), "); a random one this run");
        }
        has_persistent_handles_ = true;
        log_info("share [", s->config.name, "]: continuously available, persistent handles in ",
                 s->journal->log_path(), s->journal->mapped() ? " (mapped)" : "");
        restore_persistent_handles(*this, s);
    }
    return true;
}

void Server::add_listener(std::unique_ptr<Listener> listener) {
    // On loop 0, where the other listeners' accept loops run.
    asio::post(*loops_[0], [this, l = std::move(listener)]() mutable {
        listeners_.push_back(std::move(l));
        asio::co_spawn(*loops_[0], accept_loop(*listeners_.back()), asio::detached);
    });
}

std::vector<std::pair<std::string, uint64_t>> Server::rdma_addresses() const {
    std::lock_guard lk(rdma_mu_);
    return rdma_addresses_;
}

bool Server::open_listeners(std::string* error) {
    if (config_.global.transport_rdma) open_rdma_listeners();
    if (!config_.global.transport_tcp) return true;
    std::vector<std::string> addrs = config_.global.interfaces;
    if (addrs.empty()) addrs = {"0.0.0.0", "::"};
    for (auto port : config_.global.smb_ports) {
        for (auto& a : addrs) {
            boost::system::error_code ec;
            auto addr = asio::ip::make_address(a, ec);
            if (ec) {
                *error = "interfaces: not an IP address: " + a;
                return false;
            }
            std::string why;
            auto l =
                TcpListener::open(*loops_[0], addr, port, limits_.max_message_size, buffers, &why);
            if (!l) {
                // An IPv6 wildcard on a host without IPv6 is not fatal when IPv4 is bound.
                if (addr.is_v6() && config_.global.interfaces.empty()) continue;
                *error = "cannot listen on " + a + " port " + std::to_string(port) + ": " + why;
                return false;
            }
            if (!bound_port_) bound_port_ = (*l)->port();
            log_info("listening on ", a, " port ", (*l)->port());
            listeners_.push_back(std::move(*l));
        }
    }
    return true;
}

asio::awaitable<void> Server::accept_loop(Listener& listener) {
    for (;;) {
        size_t loop = next_loop_++ % loops_.size();
        auto t = co_await listener.accept(*loops_[loop]);
        if (!t) {
            if (t.status() == NtStatus::Cancelled) co_return;
            // The RDMA device under an SMB Direct listener went away (logged by it).
            if (t.status() == NtStatus::InvalidDeviceState) co_return;
            continue;  // logged by the listener
        }
        admit_connection(std::move(*t), loop);
    }
}

void Server::admit_connection(std::unique_ptr<Transport> t, size_t loop) {
    const std::string addr = t->peer_address();
    const char* refused_by = nullptr;
    size_t limit = 0;
    {
        std::lock_guard lk(conn_mu_);
        auto it = connections_per_address_.find(addr);
        size_t from_addr = it == connections_per_address_.end() ? 0 : it->second;
        if (connections_ >= limits_.max_connections) {
            refused_by = "max connections total";
            limit_hits.hit(metrics::Limit::MaxConnectionsTotal);
            limit = limits_.max_connections;
        } else if (from_addr >= limits_.max_connections_per_address) {
            refused_by = "max connections per address";
            limit_hits.hit(metrics::Limit::MaxConnectionsPerAddress);
            limit = limits_.max_connections_per_address;
        } else {
            ++connections_;
            ++connections_per_address_[addr];
        }
    }
    if (refused_by) {
        connections_refused_.fetch_add(1, std::memory_order_relaxed);
        log_info("refusing connection from ", addr, ": limit '", refused_by, "' (", limit,
                 ") reached");
        t->close();
        return;
    }
    auto conn = std::make_shared<Connection>(*this, loops_[loop]->get_executor(), std::move(t),
                                             next_connection_id_++);
    conn->io_engine = engines_[loop].get();
    // Without "metrics address" nobody reads the counters: the request path skips them.
    if (metrics_endpoint_) conn->metrics_shard = &metrics.shard(loop);
    connections_accepted_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard lk(conn_mu_);
        live_connections_[conn->id] = conn;
    }
    conn->log.debug("accepted");
    asio::co_spawn(loops_[loop]->get_executor(), conn->run(), [conn](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                conn->log.error(x.what());
            }
        }
        conn->close("connection ended");
    });
}

notify::Watcher* Server::notify_watcher() {
    std::call_once(notify_once_, [this] {
        auto w = notify::Watcher::create();
        if (w) notify_ = std::move(*w);
    });
    return notify_.get();
}

size_t Server::connection_count() {
    std::lock_guard lk(conn_mu_);
    return connections_;
}

uint16_t Server::metrics_port() const {
    return metrics_endpoint_ ? metrics_endpoint_->port() : 0;
}

void Server::connection_closed(Connection& c) {
    std::lock_guard lk(conn_mu_);
    if (connections_) --connections_;
    live_connections_.erase(c.id);
    auto it = connections_per_address_.find(c.peer_address());
    if (it != connections_per_address_.end() && it->second && --it->second == 0)
        connections_per_address_.erase(it);
    auto lc = lease_connections_.find(c.state.client_guid);
    if (lc != lease_connections_.end()) {
        std::erase_if(lc->second, [&](const auto& e) { return e.first == c.id; });
        if (lc->second.empty()) lease_connections_.erase(lc);
    }
}

std::vector<std::shared_ptr<Connection>> Server::live_connections() {
    std::vector<std::shared_ptr<Connection>> out;
    std::lock_guard lk(conn_mu_);
    for (const auto& [id, weak] : live_connections_)
        if (auto c = weak.lock()) out.push_back(std::move(c));
    return out;
}

void Server::add_lease_connection(const protocol::Guid& client, uint64_t connection_id,
                                  std::weak_ptr<Connection> connection) {
    std::lock_guard lk(conn_mu_);
    auto& list = lease_connections_[client];
    auto pos = std::find_if(list.begin(), list.end(),
                            [&](const auto& e) { return e.first >= connection_id; });
    if (pos != list.end() && pos->first == connection_id) return;
    list.insert(pos, {connection_id, std::move(connection)});
}

std::vector<std::shared_ptr<Connection>> Server::lease_connections(const protocol::Guid& client) {
    std::vector<std::shared_ptr<Connection>> out;
    std::lock_guard lk(conn_mu_);
    auto it = lease_connections_.find(client);
    if (it == lease_connections_.end()) return out;
    for (const auto& [cid, weak] : it->second)
        if (auto c = weak.lock()) out.push_back(std::move(c));
    return out;
}

void Server::end_session(Session& s, bool keep_durable) {
    s.state = Session::State::Deleted;
    if (keep_durable)
        for (auto& o : opens.disconnect_durable(s.id))
            keep_disconnected(o);
    opens.remove_if([id = s.id](const Open& o) { return o.session_id == id; });
    {
        std::lock_guard lk(s.mu);
        s.trees.clear();
    }
    sessions.remove(s.id);
}

std::optional<std::string> Server::close_session(uint64_t id) {
    auto s = sessions.find(id);
    if (!s || s->state.load() != Session::State::Valid) return std::nullopt;
    std::string user = s->domain.empty() ? s->user : s->domain + "\\" + s->user;
    log_info("session 0x", std::hex, id, std::dec, " of ", user, " closed by the administrator");
    // Each channel belongs to its connection's loop: drop it there, and the connection with it
    // when nothing else is left on it. The session itself goes at once, so that a request
    // arriving meanwhile finds it gone (STATUS_USER_SESSION_DELETED).
    for (const auto& c : live_connections())
        asio::post(c->executor, [c, id] {
            if (c->channels.erase(id) && c->channels.empty())
                c->close("its session was closed by the administrator");
        });
    end_session(*s);
    return user;
}

bool Server::trace_connection(uint64_t id, bool on) {
    for (const auto& c : live_connections())
        if (c->id == id) {
            c->trace_requests.store(on, std::memory_order_relaxed);
            return true;
        }
    return false;
}

void Server::keep_disconnected(const std::shared_ptr<Open>& open) {
    // MS-SMB2 3.3.7.1: a disconnected durable open lives until its timeout, or until a break
    // it cannot receive closes it (FileTable::disconnect); a reconnect bumps its generation, so
    // whatever fires after that finds nothing to do.
    const uint64_t vid = open->id.volatile_;
    const uint64_t gen = open->durable.generation;
    auto exec = loops_[0]->get_executor();
    auto purge = [this, vid, gen](const char* why) {
        auto o = opens.remove_disconnected(vid, gen);
        if (o) log_info("durable handle '", o->local.path, "' closed (", why, ")");
    };
    if (auto& reg = open->local.file_registration)
        reg->table().disconnect(reg->key(), reg->token(), [exec, purge] {
            asio::post(exec, [purge] { purge("broken while disconnected"); });
        });
    auto timer = std::make_shared<asio::steady_timer>(exec);
    timer->expires_after(std::chrono::milliseconds(open->durable.timeout_ms));
    timer->async_wait([timer, purge](const boost::system::error_code& ec) {
        if (!ec) purge("not reconnected in time");
    });
    log_info("durable handle '", open->local.path, "' kept for ", open->durable.timeout_ms,
             " ms after its connection was lost");
}

void Server::run() {
    if (config_.global.dax_map_cache_files > 0 &&
        std::any_of(shares_.begin(), shares_.end(), [](const auto& s) { return s->dax; })) {
        dax_sweep_timer_ = std::make_unique<asio::steady_timer>(*loops_[0]);
        schedule_dax_sweep();
    }
    for (size_t i = 1; i < loops_.size(); ++i) {
        threads_.emplace_back([this, i] {
            if (config_.global.transport_rdma) vfs::keep_credentials_on_this_thread();
            auto guard = asio::make_work_guard(*loops_[i]);
            loops_[i]->run();
        });
    }
    if (config_.global.transport_rdma) vfs::keep_credentials_on_this_thread();
    auto guard = asio::make_work_guard(*loops_[0]);
    loops_[0]->run();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
}

void Server::stop() {
    // First: the lease is revoked, so that another node takes the scale-out shares over at once.
    stop_cluster();
    for (auto& l : loops_)
        l->stop();
}

}  // namespace daxsmbd::server
