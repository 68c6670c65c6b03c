// The share ownership cache (server/cluster/share_ownership.h): serving states with and without
// a feed, case-insensitive names, epochs that refuse stale updates and removals, snapshots that
// stay valid across updates, concurrent readers against one writer, and endpoint parsing.
#include "server/cluster/share_ownership.h"

#include <gtest/gtest.h>

#include <thread>

namespace daxsmbd::server::cluster {
namespace {

namespace ip = boost::asio::ip;

ShareOwner owner_of(std::string node, int64_t epoch, bool self,
                    std::string addr = "127.0.0.3:445") {
    ShareOwner o;
    o.node = std::move(node);
    o.epoch = epoch;
    o.is_self = self;
    o.addresses.push_back(*parse_endpoint(addr));
    return o;
}

TEST(ShareOwnership, WithoutFeedEveryShareIsOwnedBySelf) {
    ShareOwnershipCache c;
    EXPECT_FALSE(c.feed_attached());
    EXPECT_EQ(c.serving("data"), ShareServing::OwnedBySelf);
    EXPECT_FALSE(c.owner("data"));
    // An entry still counts without a feed (tests set entries directly).
    ASSERT_TRUE(c.update("data", owner_of("b", 1, false)));
    EXPECT_EQ(c.serving("data"), ShareServing::OwnedByOther);
    EXPECT_EQ(c.serving("other"), ShareServing::OwnedBySelf);
}

TEST(ShareOwnership, WithFeedUnknownUntilAnOwnerIsKnown) {
    ShareOwnershipCache c;
    c.attach_feed();
    EXPECT_EQ(c.serving("data"), ShareServing::Unknown);
    ASSERT_TRUE(c.update("data", owner_of("a", 5, true)));
    EXPECT_EQ(c.serving("data"), ShareServing::OwnedBySelf);
    ASSERT_TRUE(c.update("data", owner_of("b", 7, false)));
    EXPECT_EQ(c.serving("data"), ShareServing::OwnedByOther);
    EXPECT_EQ(c.owner("data")->node, "b");
    EXPECT_EQ(c.owner("data")->epoch, 7);
    ASSERT_TRUE(c.remove("data", 7));
    EXPECT_EQ(c.serving("data"), ShareServing::Unknown);
    EXPECT_FALSE(c.remove("data", 7));  // nothing left to remove
}

TEST(ShareOwnership, NamesAreCaseInsensitive) {
    ShareOwnershipCache c;
    c.attach_feed();
    ASSERT_TRUE(c.update("Data", owner_of("b", 1, false)));
    EXPECT_EQ(c.serving("DATA"), ShareServing::OwnedByOther);
    EXPECT_EQ(c.serving("data"), ShareServing::OwnedByOther);
    EXPECT_EQ(c.serving("dat"), ShareServing::Unknown);
    EXPECT_EQ(c.serving("datax"), ShareServing::Unknown);
    ASSERT_TRUE(c.update("dAtA", owner_of("a", 2, true)));
    EXPECT_EQ(c.snapshot()->size(), 1u);  // the same share, replaced
    EXPECT_EQ(c.serving("Data"), ShareServing::OwnedBySelf);
}

TEST(ShareOwnership, StaleEpochsAreIgnored) {
    ShareOwnershipCache c;
    c.attach_feed();
    ASSERT_TRUE(c.update("s", owner_of("b", 10, false)));
    EXPECT_FALSE(c.update("s", owner_of("a", 9, true)));  // older than what is known
    EXPECT_EQ(c.owner("s")->node, "b");
    EXPECT_TRUE(
        c.update("s", owner_of("b", 10, false, "127.0.0.4:445")));  // same epoch: new addresses
    EXPECT_EQ(c.owner("s")->addresses.at(0).address().to_string(), "127.0.0.4");
    EXPECT_FALSE(c.remove("s", 9));  // the delete of an older owner record
    EXPECT_EQ(c.serving("s"), ShareServing::OwnedByOther);
    EXPECT_TRUE(c.remove("s", 11));
}

TEST(ShareOwnership, SnapshotsSurviveUpdates) {
    ShareOwnershipCache c;
    ASSERT_TRUE(c.update("s", owner_of("b", 1, false)));
    auto before = c.snapshot();
    ASSERT_TRUE(c.update("s", owner_of("c", 2, false)));
    ASSERT_TRUE(c.update("t", owner_of("c", 2, false)));
    EXPECT_EQ(before->size(), 1u);
    EXPECT_EQ(before->at("s").node, "b");
    EXPECT_EQ(c.snapshot()->size(), 2u);
    ShareOwnershipCache::Map fresh;
    fresh["u"] = owner_of("a", 3, true);
    c.replace_all(std::move(fresh));
    EXPECT_FALSE(c.owner("s"));
    EXPECT_EQ(c.serving("u"), ShareServing::OwnedBySelf);
}

TEST(ShareOwnership, ReadersSeeWholeEntriesWhileOneWriterMovesTheShare) {
    ShareOwnershipCache c;
    c.attach_feed();
    ASSERT_TRUE(c.update("s", owner_of("n0", 0, true)));
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> reads{0};
    std::atomic<bool> torn{false};
    std::vector<std::thread> readers;
    for (int t = 0; t < 3; ++t) {
        readers.emplace_back([&] {
            int64_t last = 0;
            while (!stop.load()) {
                auto o = c.owner("s");
                if (!o || o->node != "n" + std::to_string(o->epoch) || o->epoch < last) torn = true;
                if (o) last = o->epoch;
                ++reads;
            }
        });
    }
    // The readers run before the writer starts: on a loaded host the 2000 updates could
    // otherwise be over before any reader thread was scheduled.
    while (reads.load() == 0)
        std::this_thread::yield();
    for (int64_t e = 1; e <= 2000; ++e)
        ASSERT_TRUE(c.update("s", owner_of("n" + std::to_string(e), e, e % 2 == 0)));
    stop = true;
    for (auto& r : readers)
        r.join();
    EXPECT_FALSE(torn.load());
    EXPECT_GT(reads.load(), 0u);
    EXPECT_EQ(c.owner("s")->epoch, 2000);
}

TEST(ShareOwnership, ParseEndpoint) {
    auto v4 = parse_endpoint("127.0.0.3:4455");
    ASSERT_TRUE(v4);
    EXPECT_TRUE(v4->address().is_v4());
    EXPECT_EQ(v4->address().to_string(), "127.0.0.3");
    EXPECT_EQ(v4->port(), 4455);
    auto v6 = parse_endpoint("[fd00::5]:445");
    ASSERT_TRUE(v6);
    EXPECT_TRUE(v6->address().is_v6());
    EXPECT_EQ(v6->address().to_string(), "fd00::5");
    EXPECT_EQ(v6->port(), 445);
    for (const char* bad :
         {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:44x",
          "fd00::5:445", "[127.0.0.1]:445", "[fd00::5]445", "host.example:445", "[fd00::5"})
        EXPECT_FALSE(parse_endpoint(bad)) << bad;
}

TEST(ShareOwnership, LookupGivesTheStateAndTheEntryBehindIt) {
    ShareOwnershipCache c;
    auto [self, none] = c.lookup("s");  // no feed, no entry
    EXPECT_EQ(self, ShareServing::OwnedBySelf);
    EXPECT_FALSE(none);
    ASSERT_TRUE(c.update("s", owner_of("b", 4, false, "[fd00::3]:445")));
    auto [other, entry] = c.lookup("S");
    EXPECT_EQ(other, ShareServing::OwnedByOther);
    ASSERT_TRUE(entry);
    EXPECT_EQ(entry->node, "b");
    EXPECT_EQ(entry->epoch, 4);
    EXPECT_TRUE(entry->addresses.at(0).address().is_v6());
    c.attach_feed();
    auto [unknown, nothing] = c.lookup("t");
    EXPECT_EQ(unknown, ShareServing::Unknown);
    EXPECT_FALSE(nothing);
}

TEST(ShareOwnership, ServingNames) {
    EXPECT_STREQ(serving_name(ShareServing::OwnedBySelf), "owned by this node");
    EXPECT_STREQ(serving_name(ShareServing::OwnedByOther), "owned by another node");
    EXPECT_STREQ(serving_name(ShareServing::Unknown), "no owner known");
}

}  // namespace
}  // namespace daxsmbd::server::cluster
