// The scale-out cluster in the server (README "Cluster"): with "cluster etcd endpoints" set, a
// ClusterNode on a loop and thread of its own keeps this node's lease and share ownership in
// etcd and feeds share_ownership(), which TREE_CONNECT reads; a share this node stops owning
// (self-fencing, takeover by another node) has its tree connects ended.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/address.hpp>

#include "server/cluster/cluster_node.h"
#include "server/log.h"
#include "server/server.h"

namespace daxsmbd::server {

namespace {

// "ADDR:PORT" of every configured listen address and SMB port (a port 0 of the tests: the one
// bound); the wildcard addresses are no address a client can be sent to.
std::vector<std::string> listen_addresses(const GlobalConfig& g, uint16_t bound_port) {
    std::vector<std::string> out;
    for (const auto& a : g.interfaces) {
        boost::system::error_code ec;
        auto addr = boost::asio::ip::make_address(a, ec);
        if (ec || addr.is_unspecified()) continue;
        for (uint16_t port : g.smb_ports) {
            const uint16_t p = port ? port : bound_port;
            out.push_back(addr.is_v6() ? "[" + a + "]:" + std::to_string(p)
                                       : a + ":" + std::to_string(p));
        }
    }
    return out;
}

}  // namespace

bool Server::start_cluster(std::string* error) {
    const GlobalConfig& g = config_.global;
    if (g.cluster_etcd_endpoints.empty()) return true;
    auto settings = cluster::cluster_settings(config_, listen_addresses(g, bound_port_));
    if (settings.addresses.empty()) {
        *error =
            "cluster: no address to publish for this node: set 'cluster addresses' (the "
            "server listens on all addresses)";
        return false;
    }
    cluster_loop_ = std::make_unique<asio::io_context>(1);
    cluster::ClusterNode::Callbacks callbacks;
    callbacks.on_lost = [this](const std::string& share) {
        const size_t trees = end_share_trees(share);
        log_info("cluster: [", share, "] is no longer served by this node (", trees,
                 " tree connects ended)");
    };
    callbacks.on_gained = [](const std::string& share, int64_t epoch) {
        log_info("cluster: this node serves [", share, "] (ownership epoch ", epoch, ")");
    };
    std::string why;
    cluster_ = cluster::ClusterNode::create(cluster_loop_->get_executor(), std::move(settings),
                                            share_ownership_, std::move(callbacks), &why);
    if (!cluster_) {
        *error = "cluster: " + why;
        cluster_loop_.reset();
        return false;
    }
    cluster_thread_ = std::thread([this] {
        auto guard = asio::make_work_guard(*cluster_loop_);
        cluster_loop_->run();
    });
    cluster_->start();
    log_info("cluster: node ", g.cluster_node_name.empty() ? "(host name)" : g.cluster_node_name,
             ", etcd ", g.cluster_etcd_endpoints.front(),
             g.cluster_etcd_endpoints.size() > 1 ? " and more" : "", ", lease ttl ",
             g.cluster_lease_ttl_s, " s");
    return true;
}

void Server::stop_cluster() {
    if (!cluster_) return;
    cluster_->stop();  // revokes the lease: the shares move at once
    cluster_loop_->stop();
    if (cluster_thread_.joinable()) cluster_thread_.join();
    cluster_.reset();
    cluster_loop_.reset();
}

std::optional<std::string> Server::cluster_status_text() const {
    if (!cluster_) return std::nullopt;
    return cluster::format_status(cluster_->status());
}

}  // namespace daxsmbd::server
