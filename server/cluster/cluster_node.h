// One daxsmbd node of a scale-out cluster: share ownership kept in etcd, fed into the
// ShareOwnershipCache that TREE_CONNECT reads. daxsmbd adds no consensus of its own; etcd's
// leases and transactions decide.
//
// Keys, under the key prefix P (default "/daxsmbd/"):
//   P nodes/<node>          {"node","addresses","port"} on the node's lease: membership
//   P nodes/<node>            also lists the scale-out shares the node can serve ("shares")
//   P shares/<share>/owner  {"node","addresses"} on the owner's lease; the key's create revision
//                           is the ownership epoch (it grows with every change of hands)
//   P leader                {"node"} on the placement leader's lease (create-if-absent: the
//                           election; its create revision is the leader's term)
//   P shares/<share>/assign {"node"}: where the placement leader put the share (no lease)
//   P moves/<share>         {"node"}: a `cluster move` request, which the leader consumes
// A node claims a share with a transaction that creates the owner key only when it does not
// exist (compare CREATE revision == 0), so one node at a time owns it. When the owner's lease
// expires etcd deletes its keys; every live node sees the deletion in its watch and tries to
// claim the share (takeover); one transaction wins.
//
// Placement: without an assignment, the first claim wins. `cluster move SHARE NODE` (any node)
// writes moves/<share>; the leader checks that NODE is a live member serving the share and
// writes shares/<share>/assign (else drops the request with a log line), guarded by its term.
// The owner sees the assignment, stops serving and deletes its owner key; only the assigned
// node claims it then. An assignment to a node that is gone or does not serve the share does
// not bind (first claim wins again), and the leader deletes assignments of departed nodes.
//
// Self-fencing: a node may serve its shares only while it is sure that its lease is alive. Its
// deadline is the send time of the last successful keepalive + TTL - margin (margin = TTL/5, at
// least 1 s): etcd counts the TTL from when it received that keepalive, so the lease cannot
// expire, and no other node can take a share over, before the deadline. When the deadline passes
// (also while etcd does not answer at all) or when the watch shows this node's owner key
// deleted, the node stops serving the shares first (the cache no longer says OwnedBySelf, then
// on_lost) and then gets a new lease and claims again.
//
// Threads: everything runs on a strand of the executor given; the callbacks are called on it.
// status() may be called from any thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/cluster/share_ownership.h"

namespace daxsmbd::server {
struct Config;  // server/config.h
}

namespace daxsmbd::server::cluster {

struct ClusterSettings {
    std::string endpoints;  // comma/space separated http:// URLs of the etcd gateway
    std::string key_prefix = "/daxsmbd/";
    std::string node_name;
    std::vector<std::string> addresses;  // where clients reach this node, "ADDR:PORT"
    unsigned lease_ttl_s = 10;
    std::vector<std::string> shares;  // the scale-out shares this node can serve
    // One etcd call on one endpoint; 0: TTL/4, within 0.5 s .. 5 s.
    std::chrono::milliseconds call_timeout{0};
    // Run as `command SHARE OLD_OWNER` before this node serves a share it has just claimed
    // (OLD_OWNER: the node that owned it last as far as this node saw, or "" when none was
    // seen): where storage fencing of the old owner belongs. Exit status 0 lets the node serve
    // the share; anything else, or no exit within the timeout (then SIGKILL), releases the
    // claim, and this node tries again one TTL later. Empty: none.
    std::string takeover_command;
    std::chrono::seconds takeover_timeout{30};
};

// The value of an owner or node record.
struct OwnerRecord {
    std::string node;
    std::vector<std::string> addresses;  // "ADDR:PORT"
};
std::string encode_owner_record(const OwnerRecord& r);
// {"node": string, "addresses": [string...]} (other members ignored); nullopt otherwise.
std::optional<OwnerRecord> decode_owner_record(std::string_view json);

// What `daxsmbd-admin cluster status` shows.
struct ClusterStatus {
    struct Node {
        std::string name;
        std::vector<std::string> addresses;
        std::vector<std::string> shares;  // the scale-out shares it can serve
    };
    struct Owner {
        std::string share;
        std::string node;
        std::vector<std::string> addresses;
        int64_t epoch = 0;
        bool is_self = false;
    };
    std::string node;  // this node
    std::vector<Node> nodes;
    std::vector<Owner> owners;
    int64_t lease = 0;  // this node's lease id (0: none yet)
    bool lease_live = false;
    unsigned lease_ttl_s = 0;  // as granted
    // Milliseconds until this node fences itself (negative: passed); meaningful while live.
    int64_t deadline_in_ms = 0;
    std::vector<std::string> owned;  // the shares this node serves now
    std::string leader;              // the placement leader ("" while none is known)
    int64_t leader_term = 0;
    std::vector<std::pair<std::string, std::string>> assignments;  // share -> node
};

// This node's settings from the configuration: the [global] cluster keys and the shares with
// "scale out = yes"; `listen_addresses` ("ADDR:PORT", what the server listens on) stand in for
// an empty "cluster addresses". Meaningful when "cluster etcd endpoints" is set.
ClusterSettings cluster_settings(const Config& config,
                                 const std::vector<std::string>& listen_addresses);

// Runs `command share old_owner` (no shell) and waits at most `timeout` for it; true when it
// exited with status 0.
bool run_takeover_command(const std::string& command, const std::string& share,
                          const std::string& old_owner, std::chrono::seconds timeout);

// The text of `daxsmbd-admin cluster status`: this node's lease, the nodes and the owners.
std::string format_status(const ClusterStatus& s);

class ClusterNode {
  public:
    struct Callbacks {
        // This node must stop serving `share` (disconnect its trees); the cache already says so.
        std::function<void(const std::string& share)> on_lost;
        // This node owns `share` from ownership epoch `epoch` on; the cache already says so.
        std::function<void(const std::string& share, int64_t epoch)> on_gained;
    };

    // `cache` must outlive the node. Null with `why` set when the settings are not usable.
    static std::unique_ptr<ClusterNode> create(boost::asio::any_io_executor executor,
                                               ClusterSettings settings, ShareOwnershipCache& cache,
                                               Callbacks callbacks, std::string* why);
    // Destroy after stop() or once the executor no longer runs.
    ~ClusterNode();
    ClusterNode(const ClusterNode&) = delete;
    ClusterNode& operator=(const ClusterNode&) = delete;

    // Attaches the cache's feed and starts the lease, the claims and the watch.
    void start();
    // Stops serving every share (on_lost for each), revokes the lease (so that other nodes can
    // take the shares over at once) and ends the timers and the watch.
    boost::asio::awaitable<void> async_stop();
    // The same, waiting for it; not from a thread that runs the executor.
    void stop();

    ClusterStatus status() const;

    // A reload changed which shares are scale-out: this node gives up the ones no longer in
    // `shares` (their trees end, their owner keys are deleted), publishes the new list in its
    // node record and claims the new ones as at start.
    void set_shares(std::vector<std::string> shares);

    // `daxsmbd-admin cluster move`: asks the placement leader to move `share` to `node` and
    // waits at most `timeout` until this node's cache names `node` as the owner. Not from a
    // thread that runs the executor.
    struct MoveResult {
        bool ok = false;
        std::string message;  // a line for the operator
    };
    MoveResult move_share(const std::string& share, const std::string& node,
                          std::chrono::milliseconds timeout);

    // Test hook: while paused the node sends no lease traffic (grant, keepalive, revoke) and
    // claims nothing, as a SIGSTOPped process would, but its deadline timer still runs.
    void set_lease_paused(bool paused);

    struct Impl;

  private:
    explicit ClusterNode(std::shared_ptr<Impl> impl);
    std::shared_ptr<Impl> impl_;
};

}  // namespace daxsmbd::server::cluster
