// The scale-out cluster end to end (README "Cluster"): a private etcd (tests/support/
// etcd_process.h) and two servers, A on 127.0.0.2 and B on 127.0.0.3, both configured with
// "cluster etcd endpoints" and the scale-out share `data`. Ownership and membership appear in
// etcd's view (daxsmbd-admin cluster status); B redirects a TREE_CONNECT to A, the owner;
// when A stops renewing its lease (as a SIGSTOPped process would), A fences itself (its tree on
// `data` ends: NETWORK_NAME_DELETED) and B takes the share over with a higher epoch;
// `daxsmbd-admin cluster move` (the control socket's command) moves the share from A to B.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "protocol/access_mask.h"
#include "protocol/error.h"
#include "protocol/tree_connect.h"
#include "server/cluster/cluster_node.h"
#include "server/cluster/share_ownership.h"
#include "server/control/commands.h"
#include "server/control/control_socket.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"
#include "tests/support/etcd_process.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
using namespace std::chrono_literals;
using server::cluster::ShareServing;
namespace am = protocol::access_mask;

constexpr unsigned kTtl = 2;  // seconds: etcd 3.4 grants no less than its minimum TTL anyway

std::unique_ptr<TestServer> cluster_server(const std::string& etcd, const char* address,
                                           const char* node) {
    TestServer::Options o;
    o.configure = [=](server::Config& c) {
        c.global.interfaces = {address};
        c.global.cluster_etcd_endpoints = {etcd};
        c.global.cluster_node_name = node;
        c.global.cluster_lease_ttl_s = kTtl;
        c.shares.front().scale_out = true;
        c.shares.front().asymmetric = true;
    };
    return std::make_unique<TestServer>(o);
}

// Polls `cond` every 50 ms for at most `bound`.
template <class F>
bool eventually(F cond, std::chrono::milliseconds bound) {
    const auto end = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < end) {
        if (cond()) return true;
        std::this_thread::sleep_for(50ms);
    }
    return cond();
}

ShareServing serving(TestServer& s) {
    return s.server().share_ownership().serving("data");
}

std::unique_ptr<Smb2Client> logged_on(const char* host, uint16_t port) {
    auto c = std::make_unique<Smb2Client>();
    if (!c->connect(host, port)) return nullptr;
    if (!c->negotiate().ok()) return nullptr;
    if (!c->session_setup("alice", "pw").ok()) return nullptr;
    return c;
}

std::string first_redirect_address(const RawReply& r) {
    auto redirect = Smb2Client::share_redirect(r);
    if (!redirect || !redirect->has_value() || (*redirect)->ip_addresses.empty()) return {};
    return redirect_ip_text((*redirect)->ip_addresses.front());
}

class E2eCluster : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!cluster::test::etcd_installed())
            GTEST_SKIP() << "etcd is not installed (Debian package etcd-server)";
        std::string error;
        ASSERT_TRUE(etcd_.start(&error)) << error;
        // A first, so that A owns the share; then B.
        a_ = cluster_server(etcd_.url(), "127.0.0.2", "node-a");
        ASSERT_TRUE(a_->ok()) << a_->error();
        ASSERT_TRUE(eventually([&] { return serving(*a_) == ShareServing::OwnedBySelf; }, 10s));
        b_ = cluster_server(etcd_.url(), "127.0.0.3", "node-b");
        ASSERT_TRUE(b_->ok()) << b_->error();
        ASSERT_TRUE(eventually([&] { return serving(*b_) == ShareServing::OwnedByOther; }, 10s));
    }

    cluster::test::EtcdProcess etcd_;
    std::unique_ptr<TestServer> a_, b_;
};

TEST_F(E2eCluster, MembershipAndOwnershipAreInEtcdAndTheNonOwnerRedirects) {
    auto status = b_->server().cluster_status_text();
    ASSERT_TRUE(status);
    EXPECT_NE(status->find("node-a"), std::string::npos) << *status;
    EXPECT_NE(status->find("node-b"), std::string::npos) << *status;
    EXPECT_NE(status->find("127.0.0.2:" + std::to_string(a_->port())), std::string::npos)
        << *status;
    auto owner = b_->server().share_ownership().owner("data");
    ASSERT_TRUE(owner);
    EXPECT_EQ(owner->node, "node-a");
    EXPECT_FALSE(owner->is_self);
    EXPECT_GT(owner->epoch, 0);

    auto c = logged_on("127.0.0.3", b_->port());
    ASSERT_TRUE(c);
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::BadNetworkName);  // no redirect asked for
    auto r = c->tree_connect("data", tree_connect_flags::kRedirectToOwner, {});
    ASSERT_STATUS(r, NtStatus::BadNetworkName);
    EXPECT_EQ(first_redirect_address(r), "127.0.0.2");

    auto on_a = logged_on("127.0.0.2", a_->port());
    ASSERT_TRUE(on_a);
    auto t = on_a->tree_connect("data");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.body.capabilities & share_caps::kScaleout);
}

TEST_F(E2eCluster, OwnerThatStopsRenewingFencesItselfAndTheOtherTakesOver) {
    const int64_t epoch_before = b_->server().share_ownership().owner("data")->epoch;
    auto on_a = logged_on("127.0.0.2", a_->port());
    ASSERT_TRUE(on_a);
    ASSERT_STATUS(on_a->tree_connect("data"), NtStatus::Success);
    auto held = on_a->open("held.txt", am::kFileGenericWrite, create_disposition::kOverwriteIf);
    ASSERT_STATUS(held, NtStatus::Success);

    a_->server().cluster_node()->set_lease_paused(true);
    // A's deadline comes within one TTL; B owns the share once A's lease has expired.
    ASSERT_TRUE(eventually([&] { return serving(*a_) != ShareServing::OwnedBySelf; }, 6s * kTtl));
    ASSERT_TRUE(eventually([&] { return serving(*b_) == ShareServing::OwnedBySelf; }, 8s * kTtl));
    EXPECT_GT(b_->server().share_ownership().owner("data")->epoch, epoch_before);

    // A ended its tree: the client's next request on it finds none, and A serves no new one.
    EXPECT_STATUS(on_a->write(held.body.file_id, 0, pattern(16, 1)), NtStatus::NetworkNameDeleted);
    EXPECT_STATUS(on_a->tree_connect("data"), NtStatus::BadNetworkName);
    auto on_b = logged_on("127.0.0.3", b_->port());
    ASSERT_TRUE(on_b);
    EXPECT_STATUS(on_b->tree_connect("data"), NtStatus::Success);

    // A's lease comes back: the share stays B's, and A redirects to B.
    a_->server().cluster_node()->set_lease_paused(false);
    ASSERT_TRUE(eventually([&] { return serving(*a_) == ShareServing::OwnedByOther; }, 8s * kTtl));
    EXPECT_EQ(a_->server().share_ownership().owner("data")->node, "node-b");
    auto again = logged_on("127.0.0.2", a_->port());
    ASSERT_TRUE(again);
    auto r = again->tree_connect("data", tree_connect_flags::kRedirectToOwner, {});
    ASSERT_STATUS(r, NtStatus::BadNetworkName);
    EXPECT_EQ(first_redirect_address(r), "127.0.0.3");
}

TEST_F(E2eCluster, ClusterMoveThroughTheControlSocketMovesTheShareAndItsClients) {
    auto on_a = logged_on("127.0.0.2", a_->port());
    ASSERT_TRUE(on_a);
    ASSERT_STATUS(on_a->tree_connect("data"), NtStatus::Success);
    auto held = on_a->open("held.txt", am::kFileGenericWrite, create_disposition::kOverwriteIf);
    ASSERT_STATUS(held, NtStatus::Success);
    const int64_t epoch_before = b_->server().share_ownership().owner("data")->epoch;

    // Asked on B (any node takes the command); B's membership view must list A and B first.
    ASSERT_TRUE(
        eventually([&] { return b_->server().cluster_node()->status().nodes.size() == 2; }, 10s));
    const std::string path = b_->dir() + "/control";
    std::string error;
    auto socket = server::control::ControlSocket::start(
        path, server::control::server_commands(b_->server()), &error);
    ASSERT_TRUE(socket) << error;
    auto refused = server::control::send_request(path, "cluster move data node-z");
    EXPECT_FALSE(refused.ok);
    EXPECT_NE(refused.text.find("no live node 'node-z'"), std::string::npos) << refused.text;
    auto reply = server::control::send_request(path, "cluster move data node-b");
    ASSERT_TRUE(reply.ok) << reply.text;
    EXPECT_NE(reply.text.find("moved to node node-b"), std::string::npos) << reply.text;
    EXPECT_EQ(serving(*b_), ShareServing::OwnedBySelf);
    EXPECT_GT(b_->server().share_ownership().owner("data")->epoch, epoch_before);

    // A gave the share up: its tree ended, and it now redirects to B.
    ASSERT_TRUE(eventually([&] { return serving(*a_) == ShareServing::OwnedByOther; }, 5s));
    EXPECT_STATUS(on_a->write(held.body.file_id, 0, pattern(16, 1)), NtStatus::NetworkNameDeleted);
    auto again = logged_on("127.0.0.2", a_->port());
    ASSERT_TRUE(again);
    auto r = again->tree_connect("data", tree_connect_flags::kRedirectToOwner, {});
    ASSERT_STATUS(r, NtStatus::BadNetworkName);
    EXPECT_EQ(first_redirect_address(r), "127.0.0.3");
    auto status = server::control::send_request(path, "cluster status");
    ASSERT_TRUE(status.ok);
    EXPECT_NE(status.text.find("assignments:\n  data node-b\n"), std::string::npos) << status.text;
    EXPECT_NE(status.text.find("leader: node-"), std::string::npos) << status.text;
}

TEST_F(E2eCluster, ScaleOutShareAddedByAReloadIsClaimedAndRemovedOneReleased) {
    const std::string extra_dir = a_->dir() + "/extra";
    ASSERT_EQ(::mkdir(extra_dir.c_str(), 0777), 0);
    server::Config next = a_->config();
    server::ShareConfig sc;
    sc.name = "extra";
    sc.path = extra_dir;
    sc.read_only = false;
    sc.scale_out = true;
    next.shares.push_back(sc);
    ASSERT_TRUE(a_->server().reload(next).applied);
    auto& ownership = a_->server().share_ownership();
    ASSERT_TRUE(
        eventually([&] { return ownership.serving("extra") == ShareServing::OwnedBySelf; }, 5s));
    // B does not serve `extra` (not in its configuration) but learns who does.
    ASSERT_TRUE(eventually(
        [&] {
            auto o = b_->server().share_ownership().owner("extra");
            return o && o->node == "node-a";
        },
        5s));
    auto on_a = logged_on("127.0.0.2", a_->port());
    ASSERT_TRUE(on_a);
    EXPECT_STATUS(on_a->tree_connect("extra"), NtStatus::Success);

    ASSERT_TRUE(a_->server().reload(a_->config()).applied);  // `extra` is gone again
    EXPECT_TRUE(eventually([&] { return !b_->server().share_ownership().owner("extra"); }, 5s));
    EXPECT_NE(ownership.serving("extra"), ShareServing::OwnedBySelf);
}

TEST_F(E2eCluster, StoppingTheOwnerHandsTheShareOverAtOnce) {
    a_.reset();  // Server::stop revokes A's lease
    // Well within a TTL: the owner key went with the lease, B claims it from its watch.
    EXPECT_TRUE(eventually([&] { return serving(*b_) == ShareServing::OwnedBySelf; }, 1500ms));
}

}  // namespace
}  // namespace daxsmbd::client
