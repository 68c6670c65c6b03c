// etcd v3 JSON gateway codec: request bodies and response decoding without an etcd.
#include "server/cluster/etcd_codec.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

using namespace daxsmbd::cluster;
namespace json = boost::json;

namespace {

json::object body_of(const EtcdCall& call) {
    return json::parse(call.body).as_object();
}

}  // namespace

TEST(EtcdCodec, Base64RoundTripAndStrictness) {
    EXPECT_EQ(base64_encode("foo"), "Zm9v");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_decode("Zm9vYg==").value_or(""), "foob");
    EXPECT_FALSE(base64_decode("Zm9").has_value());
    EXPECT_FALSE(base64_decode("Zm=v").has_value());
    EXPECT_FALSE(base64_decode("Zm9*").has_value());
    EXPECT_FALSE(base64_decode("Zm9=").has_value());  // non-zero bits under the padding
}

TEST(EtcdCodec, PrefixRangeEnd) {
    EXPECT_EQ(prefix_range_end("/daxsmbd/shares/"), "/daxsmbd/shares0");
    EXPECT_EQ(prefix_range_end(std::string("a\xff", 2)), "b");
}

TEST(EtcdCodec, LeaseRequests) {
    auto grant = encode_lease_grant(3);
    EXPECT_EQ(grant.target, "/v3/lease/grant");
    EXPECT_EQ(body_of(grant).at("TTL").as_string(), "3");
    auto keep = encode_lease_keepalive(7587862);
    EXPECT_EQ(keep.target, "/v3/lease/keepalive");
    EXPECT_EQ(body_of(keep).at("ID").as_string(), std::to_string(7587862));
    auto revoke = encode_lease_revoke(42);
    EXPECT_EQ(revoke.target, "/v3/lease/revoke");
    EXPECT_EQ(body_of(revoke).at("ID").as_string(), "42");
}

TEST(EtcdCodec, CreateIfAbsentComparesCreateRevisionZero) {
    auto call = encode_create_if_absent("/p/shares/s/owner", "node1", 77);
    EXPECT_EQ(call.target, "/v3/kv/txn");
    auto o = body_of(call);
    const auto& cmp = o.at("compare").as_array().at(0).as_object();
    EXPECT_EQ(cmp.at("target").as_string(), "CREATE");
    EXPECT_EQ(cmp.at("createRevision").as_string(), "0");
    EXPECT_EQ(cmp.at("key").as_string(), base64_encode("/p/shares/s/owner"));
    const auto& put = o.at("success").as_array().at(0).as_object().at("requestPut").as_object();
    EXPECT_EQ(put.at("value").as_string(), base64_encode("node1"));
    EXPECT_EQ(put.at("lease").as_string(), "77");
    EXPECT_TRUE(o.at("failure").as_array().at(0).as_object().contains("requestRange"));
}

TEST(EtcdCodec, GuardedTxnPutsAndDeletesOnlyUnderTheGuardsCreateRevision) {
    auto call = encode_guarded_txn("/p/leader", 41, {{"/p/shares/s/assign", R"({"node":"b"})"}},
                                   {"/p/moves/s"});
    EXPECT_EQ(call.target, "/v3/kv/txn");
    auto o = body_of(call);
    const auto& cmp = o.at("compare").as_array().at(0).as_object();
    EXPECT_EQ(cmp.at("target").as_string(), "CREATE");
    EXPECT_EQ(cmp.at("key").as_string(), base64_encode("/p/leader"));
    EXPECT_EQ(cmp.at("createRevision").as_string(), "41");
    const auto& ops = o.at("success").as_array();
    ASSERT_EQ(ops.size(), 2u);
    const auto& put = ops.at(0).as_object().at("requestPut").as_object();
    EXPECT_EQ(put.at("key").as_string(), base64_encode("/p/shares/s/assign"));
    EXPECT_EQ(put.at("value").as_string(), base64_encode(R"({"node":"b"})"));
    EXPECT_FALSE(put.contains("lease"));  // a placement outlives leases
    EXPECT_EQ(ops.at(1).as_object().at("requestDeleteRange").as_object().at("key").as_string(),
              base64_encode("/p/moves/s"));
    EXPECT_FALSE(o.contains("failure"));
    EXPECT_EQ(body_of(encode_guarded_txn("/p/leader", 41, {}, {})).at("success").as_array().size(),
              0u);
}

TEST(EtcdCodec, RangeWithPrefixAndWatchWithPrevKv) {
    auto range = body_of(encode_range("/p/nodes/", true));
    EXPECT_EQ(range.at("range_end").as_string(), base64_encode("/p/nodes0"));
    EXPECT_FALSE(body_of(encode_range("/p/x")).contains("range_end"));
    auto watch = encode_watch("/p/shares/", true, 12);
    EXPECT_EQ(watch.target, "/v3/watch");
    auto watch_body = body_of(watch);
    const auto& create = watch_body.at("create_request").as_object();
    EXPECT_TRUE(create.at("prev_kv").as_bool());
    EXPECT_EQ(create.at("start_revision").as_string(), "12");
    EXPECT_EQ(create.at("range_end").as_string(), base64_encode("/p/shares0"));
}

TEST(EtcdCodec, FailedTxnReportsTheHolder) {
    auto t = decode_txn(
        R"({"header":{"revision":"7"},"responses":[{"response_range":{"header":{"revision":"7"},)"
        R"("kvs":[{"key":"YQ==","value":"Yg==","create_revision":"5","mod_revision":"5",)"
        R"("version":"1","lease":"42"}],"count":"1"}}]})");
    ASSERT_TRUE(t) << t.error;
    EXPECT_FALSE(t->succeeded);
    EXPECT_EQ(t->revision, 7);
    ASSERT_EQ(t->range_kvs.size(), 1u);
    EXPECT_EQ(t->range_kvs[0].key, "a");
    EXPECT_EQ(t->range_kvs[0].value, "b");
    EXPECT_EQ(t->range_kvs[0].create_revision, 5);
    EXPECT_EQ(t->range_kvs[0].lease, 42);
    auto ok = decode_txn(R"({"header":{"revision":"8"},"succeeded":true})");
    ASSERT_TRUE(ok);
    EXPECT_TRUE(ok->succeeded);
}

TEST(EtcdCodec, LeaseResponses) {
    auto g = decode_lease_grant(R"({"header":{"revision":"3"},"ID":"7587862","TTL":"3"})");
    ASSERT_TRUE(g);
    EXPECT_EQ(g->id, 7587862);
    EXPECT_EQ(g->ttl, 3);
    auto expired = decode_lease_keepalive(R"({"result":{"header":{"revision":"3"},"ID":"99"}})");
    ASSERT_TRUE(expired);
    EXPECT_EQ(expired->id, 99);
    EXPECT_EQ(expired->ttl, 0);
}

TEST(EtcdCodec, WatchDeleteWithPrevKv) {
    auto w = decode_watch(
        R"({"result":{"header":{"revision":"9"},"events":[{"type":"DELETE","kv":{"key":"YQ==",)"
        R"("mod_revision":"9"},"prev_kv":{"key":"YQ==","value":"Yg==","create_revision":"5"}},)"
        R"({"kv":{"key":"Yw==","value":"ZA==","create_revision":"9"}}]}})");
    ASSERT_TRUE(w) << w.error;
    EXPECT_EQ(w->revision, 9);
    ASSERT_EQ(w->events.size(), 2u);
    EXPECT_EQ(w->events[0].type, WatchEvent::Type::remove);
    ASSERT_TRUE(w->events[0].prev_kv);
    EXPECT_EQ(w->events[0].prev_kv->create_revision, 5);
    EXPECT_EQ(w->events[1].type, WatchEvent::Type::put);
    EXPECT_EQ(w->events[1].kv.value, "d");
    auto created = decode_watch(R"({"result":{"header":{"revision":"4"},"created":true}})");
    ASSERT_TRUE(created);
    EXPECT_TRUE(created->created);
}

TEST(EtcdCodec, ErrorsAndMalformedInput) {
    auto e = decode_put(R"({"error":"etcdserver: requested lease not found","code":5})");
    EXPECT_FALSE(e);
    EXPECT_EQ(e.error, "etcdserver: requested lease not found");
    EXPECT_FALSE(decode_range("{not json"));
    EXPECT_FALSE(decode_range(R"({"kvs":[{"key":"not base64!"}]})"));
    EXPECT_FALSE(decode_range(R"({"header":{"revision":"12x"}})"));
    EXPECT_FALSE(decode_watch(R"({"header":{"revision":"1"}})"));  // stream form lacks result
    EXPECT_FALSE(decode_watch(R"({"result":{"events":[{"type":"BOGUS","kv":{}}]}})"));
}
