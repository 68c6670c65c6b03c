// Which node serves each scale-out share (MS-SMB2 3.3.5.7, STYPE_CLUSTER_SOFS): the local view
// TREE_CONNECT reads, fed by whatever knows the cluster's ownership (a watch on the cluster
// store; the tests set entries directly). TREE_CONNECT never asks the cluster itself.
//
// Threads: read on every TREE_CONNECT of a scale-out share, from any event loop; written by one
// feeder thread (or a test). A reader copies the current snapshot pointer under a shared lock
// and looks the share up in that immutable map; a writer copies the map, changes the copy and
// swaps the pointer, so readers never wait for a writer's work, only for the pointer swap.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daxsmbd::server::cluster {

// The owner of one share.
struct ShareOwner {
    std::string node;  // the owner node's name
    // Where clients reach the owner (IPv4 and IPv6, with the port), in the owner's order.
    std::vector<boost::asio::ip::tcp::endpoint> addresses;
    // Ownership epoch: grows each time the share changes hands (the store's revision of the
    // owner record); an update older than what is known is stale and ignored.
    int64_t epoch = 0;
    bool is_self = false;  // this node is the owner

    bool operator==(const ShareOwner&) const = default;
};

// What this node does with a TREE_CONNECT of a scale-out share.
enum class ShareServing {
    OwnedBySelf,   // serve it
    OwnedByOther,  // STATUS_BAD_NETWORK_NAME, with a redirect to the owner when asked for
    Unknown,       // the cluster knows no owner: STATUS_BAD_NETWORK_NAME without a redirect
};

const char* serving_name(ShareServing s);

// "ADDRESS:PORT" or "[IPV6]:PORT" (PORT 1..65535); nullopt for anything else.
std::optional<boost::asio::ip::tcp::endpoint> parse_endpoint(std::string_view text);

class ShareOwnershipCache {
  public:
    // Share names compare case-insensitively (ASCII), as share names do (MS-SMB2 3.3.5.7).
    struct NameLess {
        using is_transparent = void;
        bool operator()(std::string_view a, std::string_view b) const;
    };
    using Map = std::map<std::string, ShareOwner, NameLess>;

    // --- readers (any thread) ---

    // The owner known for `share`, if any.
    std::optional<ShareOwner> owner(std::string_view share) const;
    // Without an attached feed (no cluster configured) every share is this node's: the
    // cluster is this node alone. With one, a share without an owner entry is Unknown.
    ShareServing serving(std::string_view share) const;
    // Both from one snapshot: what to do, and the owner entry behind it (none for Unknown, and
    // none for OwnedBySelf without a feed and without an entry).
    std::pair<ShareServing, std::optional<ShareOwner>> lookup(std::string_view share) const;
    // The whole map as of now (immutable; for status output and tests).
    std::shared_ptr<const Map> snapshot() const;
    bool feed_attached() const { return feed_attached_.load(std::memory_order_acquire); }

    // --- writer (one feeder thread) ---

    // From now on ownership comes from a feed: shares without an entry are Unknown.
    void attach_feed() { feed_attached_.store(true, std::memory_order_release); }
    // Records `owner` for `share` unless the entry known has a higher epoch (a stale update);
    // returns whether it was recorded.
    bool update(std::string_view share, ShareOwner owner);
    // Forgets the owner of `share` (its owner record was deleted or expired) unless the entry
    // known has a higher epoch than `epoch`; returns whether an entry was removed.
    bool remove(std::string_view share, int64_t epoch);
    // Replaces every entry (a full resynchronisation of the feed).
    void replace_all(Map entries);

    // TREE_CONNECTs of scale-out shares this node did not serve (any thread).
    struct Refusals {
        std::atomic<uint64_t> redirected{0};  // answered with a Share Redirect context
        std::atomic<uint64_t> plain{0};    // owned by another node, no redirect asked or possible
        std::atomic<uint64_t> unknown{0};  // no owner known
    };
    Refusals refusals;

  private:
    // Swaps the snapshot in; the old one is released after the lock.
    void publish(std::shared_ptr<const Map> next);

    std::mutex write_mu_;           // writers one at a time (the feeder, or a test)
    mutable std::shared_mutex mu_;  // guards the pointer only
    std::shared_ptr<const Map> map_ = std::make_shared<const Map>();
    std::atomic<bool> feed_attached_{false};
};

}  // namespace daxsmbd::server::cluster
