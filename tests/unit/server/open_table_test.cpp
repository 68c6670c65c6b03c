#include "server/state/open.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <set>

namespace daxsmbd::server {
namespace {

std::shared_ptr<Open> insert(OpenTable& t, uint64_t session) {
    auto o = std::make_shared<Open>();
    o->session_id = session;
    t.insert(o);
    return o;
}

TEST(OpenTable, PersistentIdsCarryTheEpochAndDifferFromVolatileOnes) {
    OpenTable t(0x1234);
    std::set<uint64_t> volatiles, persistents;
    for (int i = 0; i < 100; ++i) {
        auto o = insert(t, 7);
        EXPECT_EQ(o->id.persistent >> 32, 0x1234u);
        EXPECT_NE(o->id.persistent, o->id.volatile_);
        volatiles.insert(o->id.volatile_);
        persistents.insert(o->id.persistent);
    }
    EXPECT_EQ(volatiles.size(), 100u);
    EXPECT_EQ(persistents.size(), 100u);
    EXPECT_EQ(t.count_for_session(7), 100u);
}

TEST(OpenTable, TwoTablesWithDifferentEpochsNeverShareAPersistentId) {
    // A server restart starts a new epoch: a handle of the earlier run is not found by accident.
    OpenTable before(1), after(2);
    auto a = insert(before, 1);
    auto b = insert(after, 1);
    EXPECT_EQ(a->id.volatile_, b->id.volatile_);
    EXPECT_NE(a->id.persistent, b->id.persistent);
}

TEST(OpenTable, ZeroEpochIsNotUsed) {
    OpenTable t(0);
    auto o = insert(t, 1);
    EXPECT_NE(o->id.persistent >> 32, 0u);
}

TEST(OpenTable, FindRemoveAndCounts) {
    OpenTable t;
    auto a = insert(t, 1);
    auto b = insert(t, 2);
    EXPECT_EQ(t.find(a->id.volatile_), a);
    EXPECT_EQ(t.find(a->id.persistent), nullptr);  // looked up by the volatile half
    EXPECT_EQ(t.remove(a->id.volatile_), a);
    EXPECT_EQ(t.find(a->id.volatile_), nullptr);
    EXPECT_EQ(t.count_for_session(1), 0u);
    auto gone = t.remove_if([](const Open& o) { return o.session_id == 2; });
    ASSERT_EQ(gone.size(), 1u);
    EXPECT_EQ(gone[0], b);
    EXPECT_EQ(t.size(), 0u);
}

TEST(OpenTable, CloseHooksRunBeforeTheDescriptorCloses) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ::close(fds[1]);
    bool open_in_hook = false;
    {
        auto o = std::make_shared<Open>();
        o->local.fd = fds[0];
        o->on_close = [&] { open_in_hook = ::fcntl(fds[0], F_GETFD) >= 0; };
    }
    EXPECT_TRUE(open_in_hook);
    EXPECT_LT(::fcntl(fds[0], F_GETFD), 0);  // closed by LocalOpen
}

}  // namespace
}  // namespace daxsmbd::server
