#include "server/cluster/cluster_node.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <cerrno>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "server/cluster/etcd_client.h"
#include "server/config.h"
#include "server/log.h"

namespace daxsmbd::server::cluster {

namespace asio = boost::asio;
namespace json = boost::json;
using daxsmbd::cluster::Decoded;
using daxsmbd::cluster::EtcdClient;
using daxsmbd::cluster::EtcdWatchControl;
using daxsmbd::cluster::KeyValue;
using daxsmbd::cluster::WatchEvent;
using daxsmbd::cluster::WatchResponse;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string encode_owner_record(const OwnerRecord& r) {
    json::array addresses;
    for (const auto& a : r.addresses)
        addresses.emplace_back(a);
    json::object o{{"node", r.node}, {"addresses", std::move(addresses)}};
    return json::serialize(o);
}

std::optional<OwnerRecord> decode_owner_record(std::string_view text) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec || !v.is_object()) return std::nullopt;
    const json::object& o = v.get_object();
    auto node = o.find("node");
    if (node == o.end() || !node->value().is_string() || node->value().get_string().empty())
        return std::nullopt;
    OwnerRecord r;
    r.node = std::string(node->value().get_string());
    if (auto a = o.find("addresses"); a != o.end()) {
        if (!a->value().is_array()) return std::nullopt;
        for (const json::value& e : a->value().get_array()) {
            if (!e.is_string()) return std::nullopt;
            r.addresses.emplace_back(e.get_string());
        }
    }
    return r;
}

ClusterSettings cluster_settings(const Config& config,
                                 const std::vector<std::string>& listen_addresses) {
    const GlobalConfig& g = config.global;
    ClusterSettings s;
    for (const auto& url : g.cluster_etcd_endpoints)
        s.endpoints += (s.endpoints.empty() ? "" : ",") + url;
    s.key_prefix = g.cluster_key_prefix;
    s.node_name = g.cluster_node_name;
    s.addresses = g.cluster_addresses.empty() ? listen_addresses : g.cluster_addresses;
    s.lease_ttl_s = g.cluster_lease_ttl_s;
    s.takeover_command = g.cluster_takeover_command;
    for (const auto& share : config.shares)
        if (share.scale_out) s.shares.push_back(share.name);
    return s;
}

bool run_takeover_command(const std::string& command, const std::string& share,
                          const std::string& old_owner, std::chrono::seconds timeout) {
    std::vector<std::string> args = {command, share, old_owner};
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, command.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
        log_error("cluster: cannot run the takeover command ", command);
        return false;
    }
    const auto end = Clock::now() + timeout;
    int status = 0;
    for (;;) {
        const pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) return false;
        if (Clock::now() > end) {
            log_error("cluster: the takeover command ", command, " for share ", share,
                      " did not finish within ", timeout.count(), " s; killed");
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return false;
        }
        std::this_thread::sleep_for(milliseconds(20));
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string format_status(const ClusterStatus& s) {
    std::ostringstream out;
    out << "node " << s.node << ": ";
    if (s.lease == 0)
        out << "no lease yet\n";
    else if (!s.lease_live)
        out << "lease " << s.lease << " given up, getting a new one\n";
    else
        out << "lease " << s.lease << " (ttl " << s.lease_ttl_s << " s), stops serving in "
            << s.deadline_in_ms << " ms without a keepalive\n";
    out << "leader: " << (s.leader.empty() ? "(none yet)" : s.leader);
    if (!s.leader.empty()) out << " (term " << s.leader_term << ")";
    out << "\n";
    out << "nodes:\n";
    for (const auto& n : s.nodes) {
        out << "  " << n.name;
        for (const auto& a : n.addresses)
            out << " " << a;
        if (!n.shares.empty()) {
            out << " serves";
            for (const auto& share : n.shares)
                out << " " << share;
        }
        out << "\n";
    }
    out << "owners:\n";
    for (const auto& o : s.owners) {
        out << "  " << o.share << " " << o.node << " epoch " << o.epoch;
        if (o.is_self) out << " (this node)";
        for (const auto& a : o.addresses)
            out << " " << a;
        out << "\n";
    }
    if (!s.assignments.empty()) {
        out << "assignments:\n";
        for (const auto& [share, node] : s.assignments)
            out << "  " << share << " " << node << "\n";
    }
    return out.str();
}

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
// Between attempts when etcd does not answer, and before a watch is opened again.
constexpr milliseconds kRetryDelay{500};

std::string node_record(const ClusterSettings& s) {
    // The port of the first address, for tools that want one port per node.
    unsigned port = 0;
    if (!s.addresses.empty())
        if (auto ep = parse_endpoint(s.addresses.front())) port = ep->port();
    json::array addresses;
    for (const auto& a : s.addresses)
        addresses.emplace_back(a);
    json::array shares;
    for (const auto& share : s.shares)
        shares.emplace_back(share);
    return json::serialize(json::object{{"node", s.node_name},
                                        {"addresses", std::move(addresses)},
                                        {"port", port},
                                        {"shares", std::move(shares)}});
}

// The "shares" of a node record (empty when it has none: a node of an older version).
std::vector<std::string> node_record_shares(std::string_view text) {
    std::vector<std::string> out;
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec || !v.is_object()) return out;
    const json::object& o = v.get_object();
    if (auto it = o.find("shares"); it != o.end() && it->value().is_array())
        for (const json::value& e : it->value().get_array())
            if (e.is_string()) out.emplace_back(e.get_string());
    return out;
}

bool same_share(std::string_view a, std::string_view b) {
    ShareOwnershipCache::NameLess less;
    return !less(a, b) && !less(b, a);
}

std::vector<boost::asio::ip::tcp::endpoint> endpoints_of(const std::vector<std::string>& list) {
    std::vector<boost::asio::ip::tcp::endpoint> out;
    for (const auto& a : list)
        if (auto ep = parse_endpoint(a)) out.push_back(*ep);
    return out;
}

}  // namespace

struct ClusterNode::Impl : std::enable_shared_from_this<ClusterNode::Impl> {
    Impl(asio::any_io_executor ex, ClusterSettings s, ShareOwnershipCache& c, Callbacks cb)
        : strand(asio::make_strand(ex)),
          settings(std::move(s)),
          cache(c),
          callbacks(std::move(cb)),
          keepalive_timer(strand),
          fence_timer(strand),
          retry_timer(strand) {}

    asio::strand<asio::any_io_executor> strand;
    ClusterSettings settings;
    ShareOwnershipCache& cache;
    Callbacks callbacks;
    std::unique_ptr<EtcdClient> client;
    asio::steady_timer keepalive_timer;
    asio::steady_timer fence_timer;
    asio::steady_timer retry_timer;
    std::shared_ptr<EtcdWatchControl> watch_control;

    std::atomic<bool> stopping{false};
    std::atomic<bool> paused{false};
    bool stopped = false;

    // The lease; lease_generation grows with every grant, so that a call begun under one
    // lease does not act for the next.
    int64_t lease_id = 0;
    bool lease_live = false;
    uint64_t lease_generation = 0;
    std::chrono::seconds ttl{0};
    std::chrono::seconds margin{1};
    Clock::time_point deadline{};
    bool node_recorded = false;
    bool old_lease_released = false;  // the lease given up was revoked (or had expired)

    using NameLess = ShareOwnershipCache::NameLess;
    struct NodeInfo {
        std::vector<std::string> addresses;
        std::vector<std::string> shares;
    };
    std::map<std::string, int64_t, NameLess> owned;  // share -> epoch
    std::map<std::string, NodeInfo> nodes;           // from the watch
    // Placement (see the header): the leader's assignments and the move requests.
    std::map<std::string, std::string, NameLess> assignments;  // share -> node
    std::map<std::string, std::string, NameLess> moves;        // share -> node asked for
    std::string leader;
    int64_t leader_term = 0;
    bool leading = false;
    bool placing = false;      // place() runs
    bool place_again = false;  // something changed while it ran
    // The last owner seen of each share (the takeover command's OLD_OWNER).
    std::map<std::string, std::string, ShareOwnershipCache::NameLess> previous_owner;
    // Claims won whose takeover command runs: share -> still valid (false once the claim was
    // lost meanwhile: the key deleted, or the lease given up).
    std::map<std::string, bool, ShareOwnershipCache::NameLess> takeovers;

    mutable std::mutex status_mu;
    ClusterStatus published;  // what status() returns, refreshed after every change
    Clock::time_point published_deadline{};

    std::string owner_key(std::string_view share) const {
        return settings.key_prefix + "shares/" + std::string(share) + "/owner";
    }
    std::string node_key() const { return settings.key_prefix + "nodes/" + settings.node_name; }
    std::string leader_key() const { return settings.key_prefix + "leader"; }
    std::string assign_key(std::string_view share) const {
        return settings.key_prefix + "shares/" + std::string(share) + "/assign";
    }
    std::string move_key(std::string_view share) const {
        return settings.key_prefix + "moves/" + std::string(share);
    }
    // The share of "P shares/<share>/<suffix>", or "" for any other key.
    std::string share_of(std::string_view key, std::string_view suffix) const {
        const std::string prefix = settings.key_prefix + "shares/";
        if (!key.starts_with(prefix) || !key.ends_with(suffix) ||
            key.size() <= prefix.size() + suffix.size())
            return {};
        return std::string(key.substr(prefix.size(), key.size() - prefix.size() - suffix.size()));
    }
    // Whether live node `node` lists `share` among the shares it serves.
    bool serves(const std::string& node, std::string_view share) const {
        auto n = nodes.find(node);
        return n != nodes.end() && std::any_of(n->second.shares.begin(), n->second.shares.end(),
                                               [&](const auto& s) { return same_share(s, share); });
    }
    // Whether the placement lets this node hold `share`: no assignment, one to this node, or
    // one to a node that is gone or does not serve the share.
    bool may_hold(const std::string& share) const {
        auto a = assignments.find(share);
        return a == assignments.end() || a->second == settings.node_name ||
               !serves(a->second, share);
    }
    bool configured(std::string_view share) const {
        ShareOwnershipCache::NameLess less;
        return std::any_of(settings.shares.begin(), settings.shares.end(),
                           [&](const auto& s) { return !less(s, share) && !less(share, s); });
    }

    void publish_status();
    void lose(const std::string& share, std::string_view why);
    void fence(std::string_view why);
    void note_owner(const std::string& share, const KeyValue& kv);
    void serve(const std::string& share, const KeyValue& kv);
    void start_takeover(const std::string& share, const KeyValue& kv);
    void finish_takeover(const std::string& share, const KeyValue& kv, uint64_t generation,
                         bool ok);
    asio::awaitable<void> release_and_retry(std::string share, int64_t epoch);
    void apply_event(const WatchEvent& ev);
    void apply_owner_event(const std::string& share, const WatchEvent& ev);
    void apply_placement_event(const WatchEvent& ev);
    void note_leader(const KeyValue& kv);
    void reconcile(const std::string& share);
    void reconcile_all();
    void release(const std::string& share, int64_t epoch);
    void change_shares(std::vector<std::string> next);
    asio::awaitable<void> republish_node();
    asio::awaitable<void> release_owner_key(std::string share, int64_t epoch);
    void spawn_campaign();
    void spawn_place();
    asio::awaitable<void> campaign();
    asio::awaitable<void> place();
    asio::awaitable<MoveResult> ask_move(std::string share, std::string node);
    bool on_watch(const WatchResponse& w);
    void spawn_claim(const std::string& share);

    asio::awaitable<void> sleep(asio::steady_timer& t, milliseconds d);
    asio::awaitable<void> claim(std::string share);
    asio::awaitable<bool> acquire_lease();
    asio::awaitable<void> keep_lease();
    asio::awaitable<void> lease_loop();
    asio::awaitable<void> fence_loop();
    asio::awaitable<int64_t> resync();
    asio::awaitable<void> watch_loop();
    asio::awaitable<void> stop_on_strand();
};

void ClusterNode::Impl::publish_status() {
    ClusterStatus s;
    s.node = settings.node_name;
    for (const auto& [name, info] : nodes)
        s.nodes.push_back({name, info.addresses, info.shares});
    s.leader = leader;
    s.leader_term = leader_term;
    for (const auto& [share, node] : assignments)
        s.assignments.emplace_back(share, node);
    s.lease = lease_id;
    s.lease_live = lease_live;
    s.lease_ttl_s = unsigned(ttl.count());
    for (const auto& [share, epoch] : owned)
        s.owned.push_back(share);
    std::lock_guard lock(status_mu);
    published = std::move(s);
    published_deadline = deadline;  // deadline_in_ms is computed when asked
}

// Stops serving `share`: the cache first (TREE_CONNECT refuses from now on), then the server
// disconnects the trees.
void ClusterNode::Impl::lose(const std::string& share, std::string_view why) {
    auto it = owned.find(share);
    if (it == owned.end()) return;
    const int64_t epoch = it->second;
    owned.erase(it);
    cache.remove(share, epoch);
    log_info("cluster: no longer serving share ", share, " (epoch ", epoch, "): ", why);
    if (callbacks.on_lost) callbacks.on_lost(share);
    publish_status();
}

void ClusterNode::Impl::fence(std::string_view why) {
    if (!lease_live) return;
    lease_live = false;
    leading = false;  // the leader key goes with the lease
    log_info("cluster: lease ", lease_id, " of node ", settings.node_name, " given up: ", why);
    std::vector<std::string> shares;
    for (const auto& [share, epoch] : owned)
        shares.push_back(share);
    for (const auto& share : shares)
        lose(share, why);
    for (auto& [share, valid] : takeovers)
        valid = false;
    keepalive_timer.cancel();  // the lease loop gets a new lease now
    publish_status();
}

// Records what an owner key says: in the cache, and for this node's own key on its live lease
// as a share gained.
void ClusterNode::Impl::note_owner(const std::string& share, const KeyValue& kv) {
    auto record = decode_owner_record(kv.value);
    if (!record) {
        log_error("cluster: owner record of share ", share, " is not valid: ", kv.value);
        return;
    }
    const bool self = record->node == settings.node_name;
    const bool mine = self && lease_live && kv.lease == lease_id;
    if (self && !mine) {
        // This node's key from a lease it gave up: it expires (or was revoked); until then
        // nobody serves the share, and a redirect to this node would only come back here.
        cache.remove(share, kv.create_revision);
        return;
    }
    ShareOwner owner{record->node, endpoints_of(record->addresses), kv.create_revision, mine};
    if (!mine) {
        if (auto it = owned.find(share); it != owned.end() && it->second < kv.create_revision)
            lose(share, "owned by " + record->node + " now");
        previous_owner[share] = record->node;
        cache.update(share, std::move(owner));
        return;
    }
    if (owned.contains(share) || takeovers.contains(share)) return;
    if (!may_hold(share)) {  // claimed before this node saw the assignment elsewhere
        release(share, kv.create_revision);
        return;
    }
    if (!settings.takeover_command.empty()) {
        start_takeover(share, kv);
        return;
    }
    serve(share, kv);
}

// This node's claim on `share` holds (and the takeover command, if any, succeeded): the cache
// says OwnedBySelf, then the server hears of it.
void ClusterNode::Impl::serve(const std::string& share, const KeyValue& kv) {
    ShareOwner owner{settings.node_name, endpoints_of(settings.addresses), kv.create_revision,
                     true};
    cache.update(share, std::move(owner));
    owned[share] = kv.create_revision;
    log_info("cluster: serving share ", share, " (epoch ", kv.create_revision, ")");
    if (callbacks.on_gained) callbacks.on_gained(share, kv.create_revision);
    publish_status();
}

// The command runs on a thread of its own (it may take long: fencing storage), and its result
// comes back to the strand.
void ClusterNode::Impl::start_takeover(const std::string& share, const KeyValue& kv) {
    takeovers[share] = true;
    auto it = previous_owner.find(share);
    const std::string old_owner = it == previous_owner.end() ? std::string() : it->second;
    log_info("cluster: running the takeover command for share ", share, " (old owner '", old_owner,
             "')");
    std::thread([self = shared_from_this(), share, kv, old_owner, g = lease_generation] {
        const bool ok = run_takeover_command(self->settings.takeover_command, share, old_owner,
                                             self->settings.takeover_timeout);
        asio::post(self->strand,
                   [self, share, kv, g, ok] { self->finish_takeover(share, kv, g, ok); });
    }).detach();
}

void ClusterNode::Impl::finish_takeover(const std::string& share, const KeyValue& kv,
                                        uint64_t generation, bool ok) {
    auto it = takeovers.find(share);
    const bool valid = it != takeovers.end() && it->second;
    if (it != takeovers.end()) takeovers.erase(it);
    if (stopping || !lease_live || generation != lease_generation) return;
    if (!valid) {
        // The claim was lost meanwhile, or a reload dropped the share: in the latter case the
        // key is still this node's and goes now (for a lost claim the delete finds nothing).
        if (!configured(share)) release(share, kv.create_revision);
        return;
    }
    if (ok && !may_hold(share)) {
        release(share, kv.create_revision);
        return;
    }
    if (ok) {
        serve(share, kv);
        return;
    }
    log_error("cluster: the takeover command failed for share ", share,
              "; releasing it and trying again in ", ttl.count(), " s");
    asio::co_spawn(
        strand,
        [self = shared_from_this(), share, epoch = kv.create_revision] {
            return self->release_and_retry(share, epoch);
        },
        asio::detached);
}

asio::awaitable<void> ClusterNode::Impl::release_and_retry(std::string share, int64_t epoch) {
    (void)co_await client->delete_if_created(owner_key(share), epoch);
    asio::steady_timer later(strand);
    co_await sleep(later, milliseconds(ttl));
    if (!stopping && !cache.owner(share)) co_await claim(share);
}

void ClusterNode::Impl::spawn_claim(const std::string& share) {
    asio::co_spawn(
        strand, [self = shared_from_this(), share] { return self->claim(share); }, asio::detached);
}

asio::awaitable<void> ClusterNode::Impl::claim(std::string share) {
    if (!lease_live || stopping || paused || !may_hold(share)) co_return;
    const uint64_t generation = lease_generation;
    const int64_t lease = lease_id;
    const std::string value = encode_owner_record({settings.node_name, settings.addresses});
    auto t = co_await client->create_if_absent(owner_key(share), value, lease);
    if (stopping || !lease_live || generation != lease_generation) co_return;
    if (!t) {
        log_debug("cluster: claim of share ", share, " failed: ", t.error);
        co_return;
    }
    if (t->succeeded) {
        // The put of the transaction created the key at the transaction's revision.
        KeyValue kv{owner_key(share), value, t->revision, t->revision, 1, lease};
        note_owner(share, kv);
    } else if (!t->range_kvs.empty()) {
        note_owner(share, t->range_kvs.front());
    }
}

asio::awaitable<void> ClusterNode::Impl::sleep(asio::steady_timer& t, milliseconds d) {
    t.expires_after(d);
    co_await t.async_wait(kTuple);
}

asio::awaitable<bool> ClusterNode::Impl::acquire_lease() {
    if (lease_id != 0 && !old_lease_released) {
        // A lease given up may still live in etcd (fencing comes before expiry): revoking it
        // releases its shares now rather than at expiry. Best effort; an answer (revoked, or
        // not found: expired) means there is nothing left to release.
        old_lease_released =
            bool(co_await client->post(daxsmbd::cluster::encode_lease_revoke(lease_id)));
        if (stopping) co_return false;
    }
    const Clock::time_point sent = Clock::now();
    auto g = co_await client->lease_grant(settings.lease_ttl_s);
    if (stopping) co_return false;
    if (!g || g->ttl <= 0) {
        log_debug("cluster: lease grant failed: ", g ? "no TTL" : g.error);
        co_return false;
    }
    lease_id = g->id;
    old_lease_released = false;
    ttl = std::chrono::seconds(g->ttl);
    margin = std::max(std::chrono::seconds(1), std::chrono::seconds(g->ttl / 5));
    deadline = sent + ttl - margin;
    lease_live = true;
    ++lease_generation;
    fence_timer.cancel();  // re-armed for the new deadline
    auto put = co_await client->put(node_key(), node_record(settings), lease_id);
    node_recorded = bool(put);
    publish_status();
    for (const auto& share : settings.shares)
        spawn_claim(share);
    spawn_campaign();
    // After a lease given up, the watch may have missed changes while this node was cut off
    // (or hang on a connection that is gone): read everything again.
    if (lease_generation > 1 && watch_control) watch_control->cancel();
    co_return true;
}

asio::awaitable<void> ClusterNode::Impl::keep_lease() {
    const uint64_t generation = lease_generation;
    bool last_failed = false;
    while (!stopping && lease_live && generation == lease_generation) {
        // A failed keepalive is tried again sooner: the deadline leaves room for about two.
        co_await sleep(keepalive_timer,
                       last_failed ? milliseconds(ttl) / 6 : milliseconds(ttl) / 3);
        if (stopping || !lease_live || generation != lease_generation) break;
        if (paused) continue;
        const Clock::time_point sent = Clock::now();
        auto k = co_await client->lease_keepalive(lease_id);
        if (stopping || !lease_live || generation != lease_generation) break;
        last_failed = !k;
        if (!k) {
            log_debug("cluster: keepalive failed: ", k.error);
            continue;
        }
        if (k->ttl <= 0) {
            fence("etcd says the lease has expired");
            break;
        }
        deadline = std::max(deadline, sent + ttl - margin);
        publish_status();
        if (!node_recorded)
            node_recorded = bool(co_await client->put(node_key(), node_record(settings), lease_id));
    }
}

asio::awaitable<void> ClusterNode::Impl::lease_loop() {
    auto self = shared_from_this();
    while (!stopping) {
        if (paused) {
            co_await sleep(retry_timer, milliseconds(100));
            continue;
        }
        if (!co_await acquire_lease()) {
            co_await sleep(retry_timer, kRetryDelay);
            continue;
        }
        co_await keep_lease();
    }
}

// Fences at the deadline, whatever the calls in flight do: a keepalive that hangs on a
// stopped etcd does not hold this timer.
asio::awaitable<void> ClusterNode::Impl::fence_loop() {
    auto self = shared_from_this();
    while (!stopping) {
        if (lease_live)
            fence_timer.expires_at(deadline);
        else
            fence_timer.expires_after(std::chrono::hours(1));  // until a grant cancels it
        co_await fence_timer.async_wait(kTuple);
        if (stopping) break;
        if (lease_live && Clock::now() >= deadline)
            fence("no keepalive answered before the deadline");
    }
}

void ClusterNode::Impl::apply_event(const WatchEvent& ev) {
    const std::string_view key = ev.kv.key;
    const std::string nodes_prefix = settings.key_prefix + "nodes/";
    if (key.starts_with(nodes_prefix)) {
        const std::string name(key.substr(nodes_prefix.size()));
        if (ev.type == WatchEvent::Type::remove) {
            nodes.erase(name);
        } else if (auto r = decode_owner_record(ev.kv.value)) {
            nodes[name] = NodeInfo{r->addresses, node_record_shares(ev.kv.value)};
        }
        publish_status();
        // A member that comes or goes changes which assignments bind.
        reconcile_all();
        spawn_place();
        return;
    }
    if (auto share = share_of(key, "/owner"); !share.empty()) {
        apply_owner_event(share, ev);
        return;
    }
    apply_placement_event(ev);
}

void ClusterNode::Impl::apply_owner_event(const std::string& share, const WatchEvent& ev) {
    if (ev.type == WatchEvent::Type::put) {
        note_owner(share, ev.kv);
        return;
    }
    // A deletion: the owner's lease expired or was revoked, the owner released the share to
    // the node the leader assigned it to, or an operator deleted the key.
    const int64_t epoch = ev.prev_kv ? ev.prev_kv->create_revision : ev.kv.mod_revision;
    if (ev.prev_kv)
        if (auto r = decode_owner_record(ev.prev_kv->value)) previous_owner[share] = r->node;
    if (auto t = takeovers.find(share); t != takeovers.end()) t->second = false;
    if (auto it = owned.find(share); it != owned.end() && it->second <= epoch)
        lose(share, "its owner key was deleted");
    cache.remove(share, epoch);
    if (configured(share)) spawn_claim(share);  // takeover (claim() checks the assignment)
}

void ClusterNode::Impl::apply_placement_event(const WatchEvent& ev) {
    const std::string_view key = ev.kv.key;
    const bool removed = ev.type == WatchEvent::Type::remove;
    std::optional<OwnerRecord> record;
    if (!removed) record = decode_owner_record(ev.kv.value);
    if (key == leader_key()) {
        if (record) {
            note_leader(ev.kv);
            return;
        }
        leader.clear();
        leader_term = 0;
        leading = false;
        publish_status();
        spawn_campaign();
        return;
    }
    if (auto share = share_of(key, "/assign"); !share.empty()) {
        if (record)
            assignments[share] = record->node;
        else
            assignments.erase(share);
        publish_status();
        reconcile(share);
        return;
    }
    const std::string moves_prefix = settings.key_prefix + "moves/";
    if (key.starts_with(moves_prefix) && key.size() > moves_prefix.size()) {
        const std::string share(key.substr(moves_prefix.size()));
        if (record)
            moves[share] = record->node;
        else
            moves.erase(share);
        spawn_place();
    }
}

void ClusterNode::Impl::note_leader(const KeyValue& kv) {
    auto r = decode_owner_record(kv.value);
    if (!r) return;
    const bool was = leading;
    leader = r->node;
    leader_term = kv.create_revision;
    // This node's key on a lease it gave up is no mandate: it goes with that lease.
    leading = r->node == settings.node_name && lease_live && kv.lease == lease_id;
    if (leading && !was)
        log_info("cluster: this node is the placement leader (term ", leader_term, ")");
    publish_status();
    if (leading) spawn_place();
}

// Makes this node's hold of `share` agree with the placement: gives it up when the leader put
// it elsewhere, claims it when it is free and this node may hold it.
void ClusterNode::Impl::reconcile(const std::string& share) {
    if (auto it = owned.find(share); it != owned.end()) {
        if (may_hold(share)) return;
        const int64_t epoch = it->second;
        lose(share, "the placement leader moved it to node " + assignments[share]);
        release(share, epoch);
        return;
    }
    if (configured(share) && !takeovers.contains(share) && !cache.owner(share) && may_hold(share))
        spawn_claim(share);
}

void ClusterNode::Impl::reconcile_all() {
    const std::vector<std::string> shares = settings.shares;
    for (const auto& share : shares)
        reconcile(share);
}

// Deletes this node's owner key of `share` (still of epoch `epoch`), so that the node the
// leader assigned it to can claim it. When etcd does not answer, the key goes with the lease.
void ClusterNode::Impl::release(const std::string& share, int64_t epoch) {
    asio::co_spawn(
        strand,
        [self = shared_from_this(), share, epoch] { return self->release_owner_key(share, epoch); },
        asio::detached);
}

asio::awaitable<void> ClusterNode::Impl::release_owner_key(std::string share, int64_t epoch) {
    const std::string key = owner_key(share);
    auto t = co_await client->delete_if_created(key, epoch);
    if (!t)
        log_error("cluster: releasing share ", share, " failed: ", t.error,
                  " (its owner key goes with this node's lease)");
}

void ClusterNode::Impl::change_shares(std::vector<std::string> next) {
    std::vector<std::string> gone;
    for (const auto& share : settings.shares)
        if (std::none_of(next.begin(), next.end(),
                         [&](const auto& n) { return same_share(n, share); }))
            gone.push_back(share);
    settings.shares = std::move(next);
    for (const auto& share : gone) {
        if (auto t = takeovers.find(share); t != takeovers.end()) t->second = false;
        auto it = owned.find(share);
        if (it == owned.end()) continue;
        const int64_t epoch = it->second;
        lose(share, "no longer a scale-out share of this node");
        release(share, epoch);
    }
    asio::co_spawn(
        strand, [self = shared_from_this()] { return self->republish_node(); }, asio::detached);
    reconcile_all();
    publish_status();
}

// The node record again (its list of shares changed). A failure leaves node_recorded false:
// the keepalive loop puts it then.
asio::awaitable<void> ClusterNode::Impl::republish_node() {
    if (!lease_live || stopping) co_return;
    const std::string key = node_key();
    const std::string value = node_record(settings);
    const int64_t lease = lease_id;
    auto p = co_await client->put(key, value, lease);
    node_recorded = bool(p);
}

void ClusterNode::Impl::spawn_campaign() {
    asio::co_spawn(
        strand, [self = shared_from_this()] { return self->campaign(); }, asio::detached);
}

// The election: the leader key created on this node's lease if there is none.
asio::awaitable<void> ClusterNode::Impl::campaign() {
    if (!lease_live || stopping || paused || leading) co_return;
    const uint64_t generation = lease_generation;
    // Named values only in these coroutines: GCC 12 mishandles braced temporaries in them.
    OwnerRecord record;
    record.node = settings.node_name;
    const std::string value = encode_owner_record(record);
    const std::string key = leader_key();
    auto t = co_await client->create_if_absent(key, value, lease_id);
    if (stopping || !lease_live || generation != lease_generation || !t) co_return;
    if (t->succeeded) {
        KeyValue kv;
        kv.key = key;
        kv.value = value;
        kv.create_revision = t->revision;
        kv.mod_revision = t->revision;
        kv.version = 1;
        kv.lease = lease_id;
        note_leader(kv);
    } else if (!t->range_kvs.empty()) {
        note_leader(t->range_kvs.front());
    }
}

void ClusterNode::Impl::spawn_place() {
    if (!leading) return;
    if (placing) {
        place_again = true;
        return;
    }
    placing = true;
    asio::co_spawn(
        strand, [self = shared_from_this()] { return self->place(); }, asio::detached);
}

// The leader's work: every move request becomes an assignment (or is dropped when its node
// does not serve the share), and assignments of departed nodes are deleted. Every write is
// guarded by the leader's term: a deposed leader changes nothing.
asio::awaitable<void> ClusterNode::Impl::place() {
    do {
        place_again = false;
        // Copies: the maps change while the calls run.
        std::vector<std::pair<std::string, std::string>> requests(moves.begin(), moves.end());
        for (size_t i = 0; i < requests.size() && leading && !stopping; ++i) {
            const std::string share = requests[i].first;
            const std::string node = requests[i].second;
            std::vector<std::pair<std::string, std::string>> puts;
            if (serves(node, share)) {
                OwnerRecord record;
                record.node = node;
                puts.emplace_back(assign_key(share), encode_owner_record(record));
                log_info("cluster: placement: share ", share, " goes to node ", node);
            } else {
                log_error("cluster: placement: share ", share, " cannot move to node ", node,
                          ": no live node of that name serves it");
            }
            std::vector<std::string> deletes;
            deletes.push_back(move_key(share));
            const std::string guard = leader_key();
            auto t = co_await client->guarded_txn(guard, leader_term, std::move(puts),
                                                  std::move(deletes));
            if (!t) log_debug("cluster: placement of share ", share, " failed: ", t.error);
        }
        std::vector<std::pair<std::string, std::string>> placed(assignments.begin(),
                                                                assignments.end());
        for (size_t i = 0; i < placed.size() && leading && !stopping; ++i) {
            const std::string share = placed[i].first;
            const std::string node = placed[i].second;
            if (nodes.contains(node)) continue;
            log_info("cluster: placement: node ", node, " left; share ", share,
                     " goes to the first claim");
            std::vector<std::pair<std::string, std::string>> none;
            std::vector<std::string> deletes;
            deletes.push_back(assign_key(share));
            const std::string guard = leader_key();
            auto t = co_await client->guarded_txn(guard, leader_term, std::move(none),
                                                  std::move(deletes));
            if (!t) log_debug("cluster: placement of share ", share, " failed: ", t.error);
        }
    } while (place_again && leading && !stopping);
    placing = false;
}

bool ClusterNode::Impl::on_watch(const WatchResponse& w) {
    if (stopping) return false;
    // Canceled by etcd (for instance compacted past the revision asked for): read everything
    // again and watch from there.
    if (w.canceled || w.compact_revision != 0) return false;
    for (const auto& ev : w.events)
        apply_event(ev);
    return true;
}

// Reads every key under the prefix and replaces the cache with what it says; the revision to
// watch from, or 0 when etcd did not answer.
asio::awaitable<int64_t> ClusterNode::Impl::resync() {
    auto r = co_await client->range(settings.key_prefix, true);
    if (stopping || !r) co_return 0;
    ShareOwnershipCache::Map entries;
    std::map<std::string, KeyValue, NameLess> mine;
    std::optional<KeyValue> leader_kv;
    nodes.clear();
    assignments.clear();
    moves.clear();
    const std::string nodes_prefix = settings.key_prefix + "nodes/";
    const std::string moves_prefix = settings.key_prefix + "moves/";
    for (const KeyValue& kv : r->kvs) {
        const std::string_view key = kv.key;
        auto record = decode_owner_record(kv.value);
        if (!record) continue;
        if (key.starts_with(nodes_prefix)) {
            nodes[std::string(key.substr(nodes_prefix.size()))] =
                NodeInfo{record->addresses, node_record_shares(kv.value)};
        } else if (key == leader_key()) {
            leader_kv = kv;
        } else if (auto share = share_of(key, "/assign"); !share.empty()) {
            assignments[share] = record->node;
        } else if (key.starts_with(moves_prefix) && key.size() > moves_prefix.size()) {
            moves[std::string(key.substr(moves_prefix.size()))] = record->node;
        } else if (auto share = share_of(key, "/owner"); !share.empty()) {
            if (record->node == settings.node_name) {
                if (lease_live && kv.lease == lease_id) mine[share] = kv;
                continue;  // this node's keys go through note_owner (gained) below
            }
            entries[share] = ShareOwner{record->node, endpoints_of(record->addresses),
                                        kv.create_revision, false};
            previous_owner[share] = record->node;
        }
    }
    std::vector<std::string> lost;
    for (const auto& [share, epoch] : owned)
        if (!mine.contains(share)) lost.push_back(share);
    for (const auto& share : lost)
        lose(share, "its owner key is gone");
    for (const auto& [share, epoch] : owned)
        entries[share] =
            ShareOwner{settings.node_name, endpoints_of(settings.addresses), epoch, true};
    cache.replace_all(std::move(entries));
    for (const auto& [share, kv] : mine)
        note_owner(share, kv);
    if (leader_kv) {
        note_leader(*leader_kv);
    } else {
        leader.clear();
        leader_term = 0;
        leading = false;
        spawn_campaign();
    }
    reconcile_all();
    spawn_place();
    publish_status();
    co_return r->revision;
}

asio::awaitable<void> ClusterNode::Impl::watch_loop() {
    auto self = shared_from_this();
    while (!stopping) {
        const int64_t revision = co_await resync();
        if (stopping) break;
        if (revision == 0) {
            co_await sleep(retry_timer, kRetryDelay);
            continue;
        }
        watch_control = std::make_shared<EtcdWatchControl>();
        const std::string why = co_await client->watch(
            settings.key_prefix, true, revision + 1,
            [this](const WatchResponse& w) { return on_watch(w); }, watch_control);
        if (stopping) break;
        if (!why.empty()) log_debug("cluster: watch ended: ", why);
        // A watch this node cancelled (to resynchronise) is opened again at once; one that
        // failed after a pause, so that a refusing etcd is not asked ten times a second.
        asio::steady_timer pause(strand);
        co_await sleep(pause, why.empty() ? milliseconds(100) : kRetryDelay);
    }
}

asio::awaitable<void> ClusterNode::Impl::stop_on_strand() {
    if (stopped) co_return;
    stopped = true;
    stopping = true;
    std::vector<std::string> shares;
    for (const auto& [share, epoch] : owned)
        shares.push_back(share);
    for (const auto& share : shares)
        lose(share, "the node stops");
    lease_live = false;
    keepalive_timer.cancel();
    fence_timer.cancel();
    retry_timer.cancel();
    if (watch_control) watch_control->cancel();
    if (lease_id != 0) {
        auto r = co_await client->lease_revoke(lease_id);
        if (!r) log_error("cluster: revoking lease ", lease_id, " failed: ", r.error);
    }
    publish_status();
}

ClusterNode::ClusterNode(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

ClusterNode::~ClusterNode() {
    impl_->stopping = true;
    asio::post(impl_->strand, [impl = impl_] {
        impl->keepalive_timer.cancel();
        impl->fence_timer.cancel();
        impl->retry_timer.cancel();
        if (impl->watch_control) impl->watch_control->cancel();
    });
}

std::unique_ptr<ClusterNode> ClusterNode::create(asio::any_io_executor executor,
                                                 ClusterSettings settings,
                                                 ShareOwnershipCache& cache, Callbacks callbacks,
                                                 std::string* why) {
    if (settings.node_name.empty() || settings.node_name.find('/') != std::string::npos) {
        *why = "cluster node name must be non-empty and without '/'";
        return nullptr;
    }
    if (settings.key_prefix.empty() || settings.key_prefix.back() != '/') {
        *why = "cluster key prefix must end with '/'";
        return nullptr;
    }
    if (settings.lease_ttl_s < 2) {
        *why = "cluster lease ttl must be at least 2 s (etcd's minimum)";
        return nullptr;
    }
    milliseconds timeout = settings.call_timeout;
    if (timeout.count() == 0)
        timeout = std::clamp(milliseconds(settings.lease_ttl_s * 1000 / 4), milliseconds(500),
                             milliseconds(5000));
    auto impl = std::make_shared<Impl>(executor, std::move(settings), cache, std::move(callbacks));
    impl->client = EtcdClient::from_urls(impl->strand, impl->settings.endpoints, timeout, why);
    if (!impl->client) return nullptr;
    impl->publish_status();
    return std::unique_ptr<ClusterNode>(new ClusterNode(std::move(impl)));
}

void ClusterNode::start() {
    impl_->cache.attach_feed();
    asio::co_spawn(impl_->strand, impl_->lease_loop(), asio::detached);
    asio::co_spawn(impl_->strand, impl_->fence_loop(), asio::detached);
    asio::co_spawn(impl_->strand, impl_->watch_loop(), asio::detached);
}

asio::awaitable<void> ClusterNode::async_stop() {
    co_await asio::co_spawn(impl_->strand, impl_->stop_on_strand(), asio::use_awaitable);
}

void ClusterNode::stop() {
    auto done = asio::co_spawn(impl_->strand, impl_->stop_on_strand(), asio::use_future);
    done.get();
}

ClusterStatus ClusterNode::status() const {
    ClusterStatus s;
    {
        std::lock_guard lock(impl_->status_mu);
        s = impl_->published;
        s.deadline_in_ms =
            std::chrono::duration_cast<milliseconds>(impl_->published_deadline - Clock::now())
                .count();
    }
    // The owners come from the cache, which is what TREE_CONNECT answers from.
    auto snapshot = impl_->cache.snapshot();
    for (const auto& [share, owner] : *snapshot) {
        ClusterStatus::Owner o{share, owner.node, {}, owner.epoch, owner.is_self};
        for (const auto& ep : owner.addresses)
            o.addresses.push_back(ep.address().is_v6()
                                      ? "[" + ep.address().to_string() +
                                            "]:" + std::to_string(ep.port())
                                      : ep.address().to_string() + ":" + std::to_string(ep.port()));
        s.owners.push_back(std::move(o));
    }
    return s;
}

// The request is checked against this node's view and written on the strand; then this
// node's cache, fed by the watch, tells when the new owner holds the share.
asio::awaitable<ClusterNode::MoveResult> ClusterNode::Impl::ask_move(std::string share,
                                                                     std::string node) {
    MoveResult r;
    if (!serves(node, share)) {
        r.message = "no live node '" + node + "' serves share " + share;
        co_return r;
    }
    if (auto o = cache.owner(share); o && o->node == node) {
        r.ok = true;
        r.message = "share " + share + " is on node " + node + " already (epoch " +
                    std::to_string(o->epoch) + ")\n";
        co_return r;
    }
    OwnerRecord record;
    record.node = node;
    const std::string key = move_key(share);
    const std::string value = encode_owner_record(record);
    auto p = co_await client->put(key, value);
    if (!p) {
        r.message = "etcd: " + p.error;
        co_return r;
    }
    r.ok = true;
    co_return r;
}

ClusterNode::MoveResult ClusterNode::move_share(const std::string& share, const std::string& node,
                                                milliseconds timeout) {
    auto impl = impl_;
    auto asked = asio::co_spawn(impl->strand, impl->ask_move(share, node), asio::use_future);
    MoveResult r = asked.get();
    if (!r.ok || !r.message.empty()) return r;
    const auto end = Clock::now() + timeout;
    while (Clock::now() < end) {
        if (auto o = impl->cache.owner(share); o && o->node == node) {
            r.message = "share " + share + " moved to node " + node + " (epoch " +
                        std::to_string(o->epoch) + ")\n";
            return r;
        }
        std::this_thread::sleep_for(milliseconds(50));
    }
    const std::string leader = status().leader;
    r.ok = false;
    r.message = "share " + share + " is not on node " + node + " after " +
                std::to_string(timeout.count()) +
                " ms (placement leader: " + (leader.empty() ? "none" : leader) +
                "; the request stays in etcd)";
    return r;
}

void ClusterNode::set_shares(std::vector<std::string> shares) {
    asio::post(impl_->strand, [impl = impl_, shares = std::move(shares)]() mutable {
        impl->change_shares(std::move(shares));
    });
}

void ClusterNode::set_lease_paused(bool paused) {
    impl_->paused = paused;
}

}  // namespace daxsmbd::server::cluster
