// EtcdClient against a real etcd (tests/support/etcd_process.h), and the pure parts of the
// streaming path: the JSON object splitter and the endpoint URLs.
#include "server/cluster/etcd_client.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>

#include "tests/support/etcd_process.h"

namespace daxsmbd::cluster {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using test::EtcdProcess;
using test::run_sync;

#define REQUIRE_ETCD() \
    if (!test::etcd_installed()) GTEST_SKIP() << test::kEtcdBinary << " is not installed"

std::vector<std::string> split_all(std::string_view text, size_t piece) {
    JsonObjectSplitter s;
    std::vector<std::string> out;
    for (size_t i = 0; i < text.size(); i += piece)
        EXPECT_TRUE(s.feed(text.substr(i, piece), out)) << "piece " << piece << " at " << i;
    EXPECT_EQ(s.pending(), 0u);
    return out;
}

TEST(JsonObjectSplitter, FindsObjectsWhateverTheChunking) {
    const std::string a = R"({"result":{"header":{"revision":"4"},"created":true}})";
    const std::string b = R"({"result":{"events":[{"kv":{"key":"e30=","value":"In0ie1wi"}}]}})";
    const std::string c = R"({"s":"brace } and quote \" and backslash \\","t":[{},[]]})";
    const std::string stream = a + "\n" + b + "\r\n  " + c + c;
    for (size_t piece = 1; piece <= stream.size(); ++piece) {
        auto objects = split_all(stream, piece);
        ASSERT_EQ(objects.size(), 4u) << "piece " << piece;
        EXPECT_EQ(objects[0], a);
        EXPECT_EQ(objects[1], b);
        EXPECT_EQ(objects[2], c);
        EXPECT_EQ(objects[3], c);
    }
}

TEST(JsonObjectSplitter, KeepsAnUnfinishedObjectAndRefusesGarbage) {
    JsonObjectSplitter s;
    std::vector<std::string> out;
    EXPECT_TRUE(s.feed(R"({"a":"}")", out));
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(s.pending(), 8u);
    EXPECT_TRUE(s.feed("}", out));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0], R"({"a":"}"})");
    EXPECT_FALSE(s.feed("x{}", out));  // not an object
    EXPECT_TRUE(s.failed());
    EXPECT_FALSE(s.feed("{}", out));  // stays failed
    EXPECT_EQ(out.size(), 1u);

    JsonObjectSplitter small(8);
    EXPECT_FALSE(small.feed(R"({"a":"123456"})", out));
    EXPECT_TRUE(small.failed());
}

TEST(EtcdUrl, ParsesHttpAndRefusesHttps) {
    std::string why;
    auto v4 = parse_etcd_url("http://127.0.0.1:2379", &why);
    ASSERT_TRUE(v4) << why;
    EXPECT_EQ(v4->host, "127.0.0.1");
    EXPECT_EQ(v4->port, 2379);
    auto v6 = parse_etcd_url("http://[::1]:2379/", &why);
    ASSERT_TRUE(v6) << why;
    EXPECT_EQ(v6->host, "::1");
    auto name = parse_etcd_url("http://etcd1.example:23790", &why);
    ASSERT_TRUE(name) << why;
    EXPECT_EQ(name->host, "etcd1.example");
    EXPECT_FALSE(parse_etcd_url("https://127.0.0.1:2379", &why));
    EXPECT_NE(why.find("not supported"), std::string::npos);
    EXPECT_FALSE(parse_etcd_url("127.0.0.1:2379", &why));
    EXPECT_FALSE(parse_etcd_url("http://127.0.0.1", &why));
    EXPECT_FALSE(parse_etcd_url("http://127.0.0.1:0", &why));
    EXPECT_FALSE(parse_etcd_url("http://127.0.0.1:2379/v3", &why));
    EXPECT_FALSE(parse_etcd_url("http://::1:2379", &why));
}

TEST(EtcdClient, FromUrlsSplitsTheList) {
    asio::io_context ioc;
    std::string why;
    auto c =
        EtcdClient::from_urls(ioc.get_executor(), "http://127.0.0.1:1, http://[::1]:2 ", 1s, &why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->endpoints().size(), 2u);
    EXPECT_FALSE(EtcdClient::from_urls(ioc.get_executor(), "http://a:1,https://b:2", 1s, &why));
    EXPECT_NE(why.find("https://b:2"), std::string::npos);
    EXPECT_FALSE(EtcdClient::from_urls(ioc.get_executor(), " , ", 1s, &why));
}

class EtcdClientTest : public ::testing::Test {
  protected:
    void SetUp() override {
        REQUIRE_ETCD();
        std::string error;
        ASSERT_TRUE(etcd.start(&error)) << error;
    }
    EtcdEndpoint endpoint() const { return {"127.0.0.1", etcd.client_port(), etcd.url()}; }
    EtcdProcess etcd;
};

TEST_F(EtcdClientTest, KeyValueAndTransactions) {
    asio::io_context ioc;
    EtcdClient c(ioc.get_executor(), {endpoint()}, 2s);
    auto body = [&]() -> asio::awaitable<void> {
        auto put = co_await c.put("/t/a", "one");
        EXPECT_TRUE(put) << put.error;
        auto got = co_await c.range("/t/", true);
        EXPECT_TRUE(got) << got.error;
        if (got) {
            EXPECT_EQ(got->kvs.size(), 1u);
            EXPECT_EQ(got->kvs.at(0).value, "one");
        }
        auto first = co_await c.create_if_absent("/t/owner", "n1", 0);
        EXPECT_TRUE(first && first->succeeded) << first.error;
        auto second = co_await c.create_if_absent("/t/owner", "n2", 0);
        EXPECT_TRUE(second && !second->succeeded) << second.error;
        if (!first || !second || second->range_kvs.size() != 1) co_return;
        EXPECT_EQ(second->range_kvs[0].value, "n1");  // the holder, in the same round trip
        EXPECT_EQ(second->range_kvs[0].create_revision, first->revision);
        auto wrong = co_await c.delete_if_created("/t/owner", first->revision + 100);
        EXPECT_TRUE(wrong && !wrong->succeeded);
        auto right = co_await c.delete_if_created("/t/owner", first->revision);
        EXPECT_TRUE(right && right->succeeded);
        auto gone = co_await c.range("/t/owner");
        EXPECT_TRUE(gone && gone->kvs.empty());
    };
    auto f = asio::co_spawn(ioc, body(), asio::use_future);
    ioc.run();
    f.get();
}

TEST_F(EtcdClientTest, LeaseLifecycle) {
    asio::io_context ioc;
    EtcdClient c(ioc.get_executor(), {endpoint()}, 2s);
    auto body = [&]() -> asio::awaitable<void> {
        auto lease = co_await c.lease_grant(5);
        EXPECT_TRUE(lease) << lease.error;
        if (!lease) co_return;
        EXPECT_NE(lease->id, 0);
        EXPECT_EQ(lease->ttl, 5);
        auto put = co_await c.put("/t/live", "x", lease->id);
        EXPECT_TRUE(put) << put.error;
        auto kept = co_await c.lease_keepalive(lease->id);
        EXPECT_TRUE(kept) << kept.error;
        if (kept) {
            EXPECT_EQ(kept->id, lease->id);
            EXPECT_GT(kept->ttl, 0);
        }
        auto revoked = co_await c.lease_revoke(lease->id);
        EXPECT_TRUE(revoked) << revoked.error;
        auto gone = co_await c.range("/t/live");  // revoking deletes the keys at once
        EXPECT_TRUE(gone && gone->kvs.empty());
        auto expired = co_await c.lease_keepalive(lease->id);
        EXPECT_TRUE(expired) << expired.error;
        if (expired) {
            EXPECT_EQ(expired->ttl, 0);  // a dead lease: keepalive answers TTL 0
        }
        auto unknown = co_await c.put("/t/x", "y", lease->id);
        EXPECT_FALSE(unknown);
        EXPECT_NE(unknown.error.find("lease not found"), std::string::npos) << unknown.error;
    };
    auto f = asio::co_spawn(ioc, body(), asio::use_future);
    ioc.run();
    f.get();
}

// Polls `done` every 20 ms until it holds or `limit` passes.
asio::awaitable<bool> wait_for(std::function<bool()> done, std::chrono::milliseconds limit) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) co_return false;
        t.expires_after(20ms);
        co_await t.async_wait(asio::use_awaitable);
    }
    co_return true;
}

TEST_F(EtcdClientTest, WatchDeliversPutAndDeleteAndCancels) {
    asio::io_context ioc;
    EtcdClient c(ioc.get_executor(), {endpoint()}, 2s);
    auto control = std::make_shared<EtcdWatchControl>();
    bool created = false;
    std::vector<WatchEvent> events;
    std::optional<std::string> ended;
    auto on_response = [&](const WatchResponse& w) {
        created = created || w.created;
        events.insert(events.end(), w.events.begin(), w.events.end());
        return true;
    };
    asio::co_spawn(ioc, c.watch("/w/", true, 0, on_response, control),
                   [&](std::exception_ptr, std::string why) { ended = why; });
    auto body = [&]() -> asio::awaitable<void> {
        EXPECT_TRUE(co_await wait_for([&] { return created; }, 10s));
        EXPECT_TRUE(co_await c.put("/w/a", "1"));
        EXPECT_TRUE(co_await c.put("/other", "2"));  // outside the prefix
        EXPECT_TRUE(co_await c.remove("/w/a"));
        EXPECT_TRUE(co_await wait_for([&] { return events.size() >= 2; }, 10s));
        control->cancel();
        EXPECT_TRUE(co_await wait_for([&] { return ended.has_value(); }, 10s));
    };
    auto f = asio::co_spawn(ioc, body(), asio::use_future);
    ioc.run();
    f.get();
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].type, WatchEvent::Type::put);
    EXPECT_EQ(events[0].kv.key, "/w/a");
    EXPECT_EQ(events[0].kv.value, "1");
    EXPECT_EQ(events[1].type, WatchEvent::Type::remove);
    ASSERT_TRUE(events[1].prev_kv);
    EXPECT_EQ(events[1].prev_kv->value, "1");
    EXPECT_EQ(ended.value_or("?"), "");  // cancelled, not failed
}

TEST_F(EtcdClientTest, FailsOverFromAClosedPort) {
    asio::io_context ioc;
    const EtcdEndpoint closed{"127.0.0.1", test::free_loopback_port(), "http://closed"};
    EtcdClient c(ioc.get_executor(), {closed, endpoint()}, 2s);
    auto put = run_sync(c.put("/f/a", "b"));
    ASSERT_TRUE(put) << put.error;
    auto got = run_sync(c.range("/f/a"));
    ASSERT_TRUE(got) << got.error;
    ASSERT_EQ(got->kvs.size(), 1u);
    EXPECT_EQ(got->kvs[0].value, "b");

    EtcdClient dead(ioc.get_executor(), {closed}, 2s);
    auto refused = run_sync(dead.range("/f/a"));
    EXPECT_FALSE(refused);
    EXPECT_NE(refused.error.find("connect"), std::string::npos) << refused.error;
}

TEST_F(EtcdClientTest, TimesOutAgainstAStoppedEtcd) {
    asio::io_context ioc;
    EtcdClient c(ioc.get_executor(), {endpoint()}, 500ms);
    etcd.pause();
    const auto start = std::chrono::steady_clock::now();
    auto got = run_sync(c.range("/x"));
    auto kept = run_sync(c.lease_keepalive(1));
    const auto took = std::chrono::steady_clock::now() - start;
    etcd.resume();
    EXPECT_FALSE(got);
    EXPECT_NE(got.error.find("timeout"), std::string::npos) << got.error;
    EXPECT_FALSE(kept);
    // Bounded: two calls of at most the timeout each (the bound is generous for a loaded host).
    EXPECT_LT(took, 20s);
    auto after = run_sync(c.range("/x"));  // answers again once resumed
    EXPECT_TRUE(after) << after.error;
}

}  // namespace
}  // namespace daxsmbd::cluster
