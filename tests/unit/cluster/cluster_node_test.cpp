// ClusterNode against a real etcd: membership, one owner per share, takeover after a node stops
// keeping its lease, self-fencing when etcd is gone, and release on stop(). Leases of 3 s
// (etcd 3.4 grants at least about 2 s: 1.5 election timeouts of its default 1 s); every wait
// polls for a condition with a bound of several TTLs and the assertions are on the order of
// events, not on exact times.
#include "server/cluster/cluster_node.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <mutex>
#include <thread>

#include "server/cluster/etcd_client.h"
#include "server/config.h"
#include "tests/support/etcd_process.h"

namespace daxsmbd::server::cluster {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using daxsmbd::cluster::EtcdClient;
using daxsmbd::cluster::test::EtcdProcess;

constexpr unsigned kTtl = 3;
constexpr auto kLong = std::chrono::seconds(6 * kTtl);  // bound of every wait

struct Event {
    std::string node;
    bool gained = false;
    std::string share;
    int64_t epoch = 0;
    Clock::time_point at;
    std::string note;  // what the node's probe said at the time
};

class EventLog {
  public:
    void add(Event e) {
        std::lock_guard lock(mu_);
        events_.push_back(std::move(e));
    }
    std::vector<Event> all() const {
        std::lock_guard lock(mu_);
        return events_;
    }
    std::optional<Event> first(std::string_view node, bool gained, std::string_view share,
                               Clock::time_point after = {}) const {
        std::lock_guard lock(mu_);
        for (const auto& e : events_)
            if (e.node == node && e.gained == gained && e.share == share && e.at >= after) return e;
        return std::nullopt;
    }

  private:
    mutable std::mutex mu_;
    std::vector<Event> events_;
};

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = kLong) {
    const auto end = Clock::now() + limit;
    while (!done()) {
        if (Clock::now() > end) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

// One node with an event loop of its own, as a daxsmbd process has.
class TestNode {
  public:
    TestNode(
        const std::string& name, const std::string& port, const EtcdProcess& etcd,
        std::vector<std::string> shares, EventLog& log, std::string takeover_command = {},
        std::function<std::string()> probe = [] { return std::string(); })
        : name_(name) {
        ClusterSettings s;
        s.endpoints = etcd.url();
        s.key_prefix = "/test/";
        s.node_name = name;
        s.addresses = {"127.0.0.1:" + port, "[::1]:" + port};
        s.lease_ttl_s = kTtl;
        s.shares = std::move(shares);
        s.takeover_command = std::move(takeover_command);
        ClusterNode::Callbacks cb;
        cb.on_lost = [&log, name, probe](const std::string& share) {
            log.add({name, false, share, 0, Clock::now(), probe()});
        };
        cb.on_gained = [&log, name, probe](const std::string& share, int64_t epoch) {
            log.add({name, true, share, epoch, Clock::now(), probe()});
        };
        std::string why;
        node_ = ClusterNode::create(ioc_.get_executor(), s, cache_, cb, &why);
        EXPECT_TRUE(node_) << why;
        thread_ = std::thread([this] { ioc_.run(); });
        if (node_) node_->start();
    }
    ~TestNode() {
        stop();
        work_.reset();
        ioc_.stop();
        thread_.join();
    }
    void stop() {
        if (node_ && !stopped_) node_->stop();
        stopped_ = true;
    }
    ShareServing serving(const std::string& share) const { return cache_.serving(share); }
    std::optional<ShareOwner> owner(const std::string& share) const { return cache_.owner(share); }
    ClusterNode& node() { return *node_; }
    const std::string& name() const { return name_; }

  private:
    std::string name_;
    asio::io_context ioc_;
    asio::executor_work_guard<asio::io_context::executor_type> work_{ioc_.get_executor()};
    ShareOwnershipCache cache_;
    std::unique_ptr<ClusterNode> node_;
    std::thread thread_;
    bool stopped_ = false;
};

// Exactly one of the nodes serves `share` and the others' caches name it as the owner.
bool one_owner(const std::vector<TestNode*>& nodes, const std::string& share) {
    const TestNode* owner = nullptr;
    for (const TestNode* n : nodes) {
        if (n->serving(share) != ShareServing::OwnedBySelf) continue;
        if (owner) return false;
        owner = n;
    }
    if (!owner) return false;
    for (const TestNode* n : nodes) {
        if (n == owner) continue;
        auto o = n->owner(share);
        if (n->serving(share) != ShareServing::OwnedByOther || !o || o->node != owner->name())
            return false;
    }
    return true;
}

class ClusterNodeTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!daxsmbd::cluster::test::etcd_installed())
            GTEST_SKIP() << daxsmbd::cluster::test::kEtcdBinary << " is not installed";
        std::string error;
        ASSERT_TRUE(etcd.start(&error)) << error;
    }
    std::optional<daxsmbd::cluster::KeyValue> read_key(const std::string& key) {
        asio::io_context ioc;
        EtcdClient c(ioc.get_executor(), {{"127.0.0.1", etcd.client_port(), etcd.url()}}, 2s);
        auto r = daxsmbd::cluster::test::run_sync(c.range(key));
        if (!r || r->kvs.empty()) return std::nullopt;
        return r->kvs.front();
    }
    EtcdProcess etcd;
    EventLog log;
};

TEST_F(ClusterNodeTest, MembershipRecordAppears) {
    TestNode a("node-a", "4450", etcd, {}, log);
    ASSERT_TRUE(eventually([&] { return read_key("/test/nodes/node-a").has_value(); }));
    auto kv = read_key("/test/nodes/node-a");
    ASSERT_TRUE(kv);
    EXPECT_NE(kv->lease, 0);  // on the node's lease: it goes when the node does
    auto record = decode_owner_record(kv->value);
    ASSERT_TRUE(record) << kv->value;
    EXPECT_EQ(record->node, "node-a");
    EXPECT_EQ(record->addresses, (std::vector<std::string>{"127.0.0.1:4450", "[::1]:4450"}));
    ASSERT_TRUE(eventually([&] {
        auto s = a.node().status();
        return s.lease_live && s.nodes.size() == 1 && s.nodes[0].name == "node-a";
    }));
    auto s = a.node().status();
    EXPECT_EQ(s.lease, kv->lease);
    EXPECT_EQ(s.lease_ttl_s, kTtl);
    EXPECT_GT(s.deadline_in_ms, 0);
    EXPECT_LE(s.deadline_in_ms, int64_t(kTtl) * 1000);
}

TEST_F(ClusterNodeTest, TwoNodesOneOwnerPerShare) {
    TestNode a("node-a", "4450", etcd, {"s1", "s2"}, log);
    TestNode b("node-b", "4451", etcd, {"s1", "s2"}, log);
    for (const std::string share : {"s1", "s2"}) {
        ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, share); })) << share;
        TestNode& owner = a.serving(share) == ShareServing::OwnedBySelf ? a : b;
        TestNode& other = &owner == &a ? b : a;
        auto o = other.owner(share);
        ASSERT_TRUE(o);
        EXPECT_FALSE(o->is_self);
        const std::string port = &owner == &a ? "4450" : "4451";
        ASSERT_EQ(o->addresses.size(), 2u);  // the owner's addresses, for the redirect
        EXPECT_EQ(o->addresses[0], *parse_endpoint("127.0.0.1:" + port));
        EXPECT_EQ(o->addresses[1], *parse_endpoint("[::1]:" + port));
        auto key = read_key("/test/shares/" + share + "/owner");
        ASSERT_TRUE(key);
        EXPECT_EQ(o->epoch, key->create_revision);  // the epoch is the key's create revision
        auto gained = log.first(owner.name(), true, share);
        ASSERT_TRUE(gained);
        EXPECT_EQ(gained->epoch, key->create_revision);
        EXPECT_FALSE(log.first(other.name(), true, share));
    }
    ASSERT_TRUE(eventually([&] { return a.node().status().nodes.size() == 2; }));
    auto status = a.node().status();
    EXPECT_EQ(status.owners.size(), 2u);
    EXPECT_EQ(status.owned.size() + b.node().status().owned.size(), 2u);
}

TEST_F(ClusterNodeTest, PausedOwnerFencesItselfBeforeTheTakeover) {
    TestNode a("node-a", "4450", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return a.serving("s1") == ShareServing::OwnedBySelf; }));
    TestNode b("node-b", "4451", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, "s1"); }));
    const int64_t first_epoch = a.owner("s1")->epoch;

    a.node().set_lease_paused(true);  // as if node-a were SIGSTOPped
    ASSERT_TRUE(eventually([&] { return b.serving("s1") == ShareServing::OwnedBySelf; }));
    auto lost = log.first("node-a", false, "s1");
    auto gained = log.first("node-b", true, "s1");
    ASSERT_TRUE(lost);
    ASSERT_TRUE(gained);
    EXPECT_LT(lost->at, gained->at);  // node-a stopped serving before node-b started
    EXPECT_GT(gained->epoch, first_epoch);
    EXPECT_NE(a.serving("s1"), ShareServing::OwnedBySelf);

    // Back alive, node-a gets a lease again and sees node-b as the owner.
    a.node().set_lease_paused(false);
    ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, "s1"); }));
    EXPECT_EQ(b.serving("s1"), ShareServing::OwnedBySelf);
    EXPECT_TRUE(eventually([&] { return a.node().status().lease_live; }));
}

TEST_F(ClusterNodeTest, BothNodesFenceWhileEtcdIsStoppedAndOneOwnsAfter) {
    TestNode a("node-a", "4450", etcd, {"s1", "s2"}, log);
    TestNode b("node-b", "4451", etcd, {"s1", "s2"}, log);
    ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, "s1") && one_owner({&a, &b}, "s2"); }));
    const auto paused_at = Clock::now();
    etcd.pause();
    ASSERT_TRUE(eventually([&] {
        for (auto* n : {&a, &b})
            for (const std::string s : {"s1", "s2"})
                if (n->serving(s) == ShareServing::OwnedBySelf) return false;
        return true;
    }));
    // Every gain has its loss, each before etcd (had it run) could have expired the lease: the
    // deadline is at most the last keepalive before the pause + TTL - 1 s.
    for (const Event& g : log.all()) {
        if (!g.gained) continue;
        auto l = log.first(g.node, false, g.share, g.at);
        ASSERT_TRUE(l) << g.node << " " << g.share;
        EXPECT_LT(l->at, paused_at + std::chrono::seconds(kTtl)) << g.node << " " << g.share;
    }
    const auto resumed_at = Clock::now();
    etcd.resume();
    for (const std::string share : {"s1", "s2"}) {
        ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, share); })) << share;
        EXPECT_TRUE(log.first(a.serving(share) == ShareServing::OwnedBySelf ? "node-a" : "node-b",
                              true, share, resumed_at));
    }
}

TEST_F(ClusterNodeTest, EtcdKilledAndRestartedLeavesOneOwner) {
    TestNode a("node-a", "4450", etcd, {"s1"}, log);
    TestNode b("node-b", "4451", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, "s1"); }));
    TestNode& owner = a.serving("s1") == ShareServing::OwnedBySelf ? a : b;
    const auto killed_at = Clock::now();
    etcd.kill();
    ASSERT_TRUE(eventually([&] { return owner.serving("s1") != ShareServing::OwnedBySelf; }));
    auto lost = log.first(owner.name(), false, "s1", killed_at);
    ASSERT_TRUE(lost);
    EXPECT_LT(lost->at, killed_at + std::chrono::seconds(kTtl));
    std::string error;
    ASSERT_TRUE(etcd.start(&error)) << error;  // same data and ports
    ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, "s1"); }));
}

TEST_F(ClusterNodeTest, StopReleasesTheSharesAtOnce) {
    TestNode a("node-a", "4450", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return a.serving("s1") == ShareServing::OwnedBySelf; }));
    TestNode b("node-b", "4451", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, "s1"); }));
    a.stop();
    EXPECT_TRUE(log.first("node-a", false, "s1"));  // stopped serving before it returned
    auto key = read_key("/test/shares/s1/owner");   // revoked: node-a's key is gone already
    if (key) {
        EXPECT_EQ(decode_owner_record(key->value)->node, "node-b");
    }
    EXPECT_FALSE(read_key("/test/nodes/node-a"));
    EXPECT_TRUE(eventually([&] { return b.serving("s1") == ShareServing::OwnedBySelf; }));
}

TEST_F(ClusterNodeTest, TakeoverCommandRunsBeforeTheNewOwnerServes) {
    daxsmbd::test_support::TempDir dir("daxsmbd-takeover");
    ASSERT_TRUE(dir.ok());
    dir.file("fence.sh", "#!/bin/sh\necho \"$1 $2\" >> " + dir.at("fenced") + "\n");
    ASSERT_EQ(chmod(dir.at("fence.sh").c_str(), 0755), 0);
    TestNode a("node-a", "4450", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return a.serving("s1") == ShareServing::OwnedBySelf; }));
    TestNode b("node-b", "4451", etcd, {"s1"}, log, dir.at("fence.sh"),
               [&] { return dir.read("fenced"); });
    ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, "s1"); }));
    EXPECT_FALSE(dir.exists("fenced"));  // node-b claimed nothing yet
    a.node().set_lease_paused(true);
    ASSERT_TRUE(eventually([&] { return b.serving("s1") == ShareServing::OwnedBySelf; }));
    auto gained = log.first("node-b", true, "s1");
    ASSERT_TRUE(gained);
    EXPECT_EQ(gained->note, "s1 node-a\n");  // the command had run, with the old owner
    a.node().set_lease_paused(false);
}

// Both nodes know the leader, and it is one of them.
bool leader_known(TestNode& a, TestNode& b) {
    const std::string la = a.node().status().leader, lb = b.node().status().leader;
    return !la.empty() && la == lb && (la == a.name() || la == b.name());
}

TEST_F(ClusterNodeTest, MoveHandsTheShareToTheNodeAskedFor) {
    TestNode a("node-a", "4450", etcd, {"s1"}, log);
    TestNode b("node-b", "4451", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return one_owner({&a, &b}, "s1") && leader_known(a, b); }));
    TestNode& from = a.serving("s1") == ShareServing::OwnedBySelf ? a : b;
    TestNode& to = &from == &a ? b : a;
    const int64_t first_epoch = from.owner("s1")->epoch;
    ASSERT_TRUE(eventually([&] { return from.node().status().nodes.size() == 2; }));
    // Asked on the node that gives the share up: it waits until its cache names the new owner.
    auto r = from.node().move_share("s1", to.name(), kLong);
    ASSERT_TRUE(r.ok) << r.message;
    EXPECT_NE(r.message.find("moved to node " + to.name()), std::string::npos) << r.message;
    ASSERT_TRUE(eventually([&] { return to.serving("s1") == ShareServing::OwnedBySelf; }));
    EXPECT_TRUE(one_owner({&a, &b}, "s1"));
    auto lost = log.first(from.name(), false, "s1");
    auto gained = log.first(to.name(), true, "s1");
    ASSERT_TRUE(lost);
    ASSERT_TRUE(gained);
    EXPECT_LE(lost->at, gained->at);  // never two nodes serving
    EXPECT_GT(gained->epoch, first_epoch);
    auto assign = read_key("/test/shares/s1/assign");
    ASSERT_TRUE(assign);
    EXPECT_EQ(decode_owner_record(assign->value)->node, to.name());
    EXPECT_EQ(assign->lease, 0);               // the placement outlives leases
    EXPECT_FALSE(read_key("/test/moves/s1"));  // the leader consumed the request
    auto status = from.node().status();
    ASSERT_EQ(status.assignments.size(), 1u);
    EXPECT_EQ(status.assignments[0], (std::pair<std::string, std::string>{"s1", to.name()}));
    // Asking again for where it is already answers at once.
    auto again = to.node().move_share("s1", to.name(), kLong);
    EXPECT_TRUE(again.ok);
    EXPECT_NE(again.message.find("already"), std::string::npos) << again.message;
}

TEST_F(ClusterNodeTest, MoveToANodeThatDoesNotServeTheShareIsRefused) {
    TestNode a("node-a", "4450", etcd, {"s1"}, log);
    TestNode c("node-c", "4452", etcd, {"s2"}, log);
    ASSERT_TRUE(eventually([&] {
        return a.serving("s1") == ShareServing::OwnedBySelf && a.node().status().nodes.size() == 2;
    }));
    auto r = a.node().move_share("s1", "node-c", kLong);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.message.find("no live node 'node-c' serves share s1"), std::string::npos)
        << r.message;
    r = a.node().move_share("s1", "node-z", kLong);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(a.serving("s1"), ShareServing::OwnedBySelf);
    EXPECT_FALSE(read_key("/test/moves/s1"));
    EXPECT_FALSE(read_key("/test/shares/s1/assign"));
}

TEST_F(ClusterNodeTest, LeaderGoneTheOtherLeadsAndAssignmentsOfTheGoneAreDropped) {
    TestNode a("node-a", "4450", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return a.serving("s1") == ShareServing::OwnedBySelf; }));
    ASSERT_TRUE(eventually([&] { return a.node().status().leader == "node-a"; }));
    {
        TestNode b("node-b", "4451", etcd, {"s1"}, log);
        ASSERT_TRUE(
            eventually([&] { return leader_known(a, b) && a.node().status().nodes.size() == 2; }));
        auto r = a.node().move_share("s1", "node-b", kLong);
        ASSERT_TRUE(r.ok) << r.message;
        EXPECT_EQ(b.serving("s1"), ShareServing::OwnedBySelf);
        // node-a's own claim would not bind while the assignment names a live node-b.
        EXPECT_NE(a.serving("s1"), ShareServing::OwnedBySelf);
        a.stop();  // the leader stops: node-b leads and keeps its share
        ASSERT_TRUE(eventually([&] { return b.node().status().leader == "node-b"; }));
        EXPECT_EQ(b.serving("s1"), ShareServing::OwnedBySelf);
    }
    // node-b stopped as well: its assignment went with it... on the next leader. Start node-c:
    // it leads, drops the assignment of the departed node-b and claims the share.
    TestNode c("node-c", "4452", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return c.serving("s1") == ShareServing::OwnedBySelf; }));
    EXPECT_EQ(c.node().status().leader, "node-c");
    EXPECT_TRUE(eventually([&] { return !read_key("/test/shares/s1/assign"); }));
}

TEST_F(ClusterNodeTest, SharesChangedByAReloadAreClaimedAndReleased) {
    TestNode a("node-a", "4450", etcd, {"s1"}, log);
    ASSERT_TRUE(eventually([&] { return a.serving("s1") == ShareServing::OwnedBySelf; }));
    a.node().set_shares({"s1", "s2"});
    ASSERT_TRUE(eventually([&] { return a.serving("s2") == ShareServing::OwnedBySelf; }));
    ASSERT_TRUE(eventually([&] {
        auto kv = read_key("/test/nodes/node-a");
        return kv && kv->value.find(R"("shares":["s1","s2"])") != std::string::npos;
    }));
    a.node().set_shares({"s2"});
    ASSERT_TRUE(eventually([&] { return !read_key("/test/shares/s1/owner"); }));
    EXPECT_NE(a.serving("s1"), ShareServing::OwnedBySelf);
    EXPECT_TRUE(log.first("node-a", false, "s1"));
    EXPECT_EQ(a.serving("s2"), ShareServing::OwnedBySelf);
    TestNode b("node-b", "4451", etcd, {"s1"}, log);  // the released share is free to claim
    EXPECT_TRUE(eventually([&] { return b.serving("s1") == ShareServing::OwnedBySelf; }));
}

TEST(TakeoverCommand, ExitStatusAndTimeout) {
    daxsmbd::test_support::TempDir dir("daxsmbd-takeover");
    ASSERT_TRUE(dir.ok());
    dir.file("ok.sh", "#!/bin/sh\n[ \"$1\" = s1 ] && [ \"$2\" = old ]\n");
    dir.file("slow.sh", "#!/bin/sh\nexec sleep 30\n");
    ASSERT_EQ(chmod(dir.at("ok.sh").c_str(), 0755), 0);
    ASSERT_EQ(chmod(dir.at("slow.sh").c_str(), 0755), 0);
    EXPECT_TRUE(run_takeover_command(dir.at("ok.sh"), "s1", "old", 10s));
    EXPECT_FALSE(run_takeover_command(dir.at("ok.sh"), "s2", "old", 10s));  // exit status 1
    EXPECT_FALSE(run_takeover_command(dir.at("absent.sh"), "s1", "old", 10s));
    const auto start = Clock::now();
    EXPECT_FALSE(run_takeover_command(dir.at("slow.sh"), "s1", "old", 1s));  // killed
    EXPECT_LT(Clock::now() - start, 25s);
}

TEST(ClusterSettingsFromConfig, TakesTheClusterKeysAndTheScaleOutShares) {
    auto parsed = Config::parse(
        "[global]\ncluster etcd endpoints = http://10.0.0.1:2379 http://10.0.0.2:2379\n"
        "cluster node name = n1\ncluster lease ttl = 4\n"
        "[a]\npath = /a\nscale out = yes\n[b]\npath = /b\n[c]\npath = /c\nscale out = yes\n",
        "t.conf");
    ASSERT_TRUE(std::holds_alternative<Config>(parsed));
    const Config& config = std::get<Config>(parsed);
    ClusterSettings s = cluster_settings(config, {"10.0.0.11:445"});
    EXPECT_EQ(s.endpoints, "http://10.0.0.1:2379,http://10.0.0.2:2379");
    EXPECT_EQ(s.node_name, "n1");
    EXPECT_EQ(s.key_prefix, "/daxsmbd/");
    EXPECT_EQ(s.lease_ttl_s, 4u);
    EXPECT_EQ(s.shares, (std::vector<std::string>{"a", "c"}));
    EXPECT_EQ(s.addresses, std::vector<std::string>{"10.0.0.11:445"});  // the listen addresses
    Config explicit_addresses = config;
    explicit_addresses.global.cluster_addresses = {"192.0.2.1:445"};
    EXPECT_EQ(cluster_settings(explicit_addresses, {"10.0.0.11:445"}).addresses,
              std::vector<std::string>{"192.0.2.1:445"});
}

TEST(ClusterStatusText, ShowsLeaseNodesAndOwners) {
    ClusterStatus s;
    s.node = "n1";
    s.lease = 77;
    s.lease_live = true;
    s.lease_ttl_s = 10;
    s.deadline_in_ms = 7900;
    s.nodes = {{"n1", {"10.0.0.1:445"}, {"a", "c"}}, {"n2", {"10.0.0.2:445"}, {}}};
    s.owners = {{"a", "n1", {"10.0.0.1:445"}, 12, true}, {"c", "n2", {"10.0.0.2:445"}, 15, false}};
    s.leader = "n2";
    s.leader_term = 9;
    s.assignments = {{"c", "n2"}};
    EXPECT_EQ(format_status(s),
              "node n1: lease 77 (ttl 10 s), stops serving in 7900 ms without a keepalive\n"
              "leader: n2 (term 9)\n"
              "nodes:\n  n1 10.0.0.1:445 serves a c\n  n2 10.0.0.2:445\n"
              "owners:\n  a n1 epoch 12 (this node) 10.0.0.1:445\n  c n2 epoch 15 10.0.0.2:445\n"
              "assignments:\n  c n2\n");
    s.leader.clear();
    EXPECT_NE(format_status(s).find("leader: (none yet)"), std::string::npos);
    s.lease_live = false;
    EXPECT_NE(format_status(s).find("given up"), std::string::npos);
}

TEST(OwnerRecord, RoundTripAndRejects) {
    OwnerRecord r{"n1", {"10.0.0.1:445", "[fe80::1]:445"}};
    auto back = decode_owner_record(encode_owner_record(r));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->node, "n1");
    EXPECT_EQ(back->addresses, r.addresses);
    EXPECT_FALSE(decode_owner_record("[]"));
    EXPECT_FALSE(decode_owner_record(R"({"addresses":[]})"));
    EXPECT_FALSE(decode_owner_record(R"({"node":""})"));
    EXPECT_FALSE(decode_owner_record(R"({"node":"n","addresses":[1]})"));
    EXPECT_TRUE(decode_owner_record(R"({"node":"n","port":445})"));
}

}  // namespace
}  // namespace daxsmbd::server::cluster
