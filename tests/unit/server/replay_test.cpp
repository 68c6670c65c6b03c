#include "server/state/replay.h"

#include <gtest/gtest.h>

namespace daxsmbd::server {
namespace {

// Admits a request; returns whether it may run and, through `t`, its count.
bool run(ChannelSequence& cs, uint16_t seq, bool replay, bool modifies,
         std::optional<ChannelSequence::Ticket>* t = nullptr) {
    bool refused = false;
    auto ticket = cs.admit(seq, replay, modifies, &refused);
    if (t) {
        *t = ticket;
    } else if (ticket) {
        cs.finish(*ticket);
    }
    return !refused;
}

// The sequence of smbtorture smb2.replay.channel-sequence (MS-SMB2 3.3.5.2.10).
TEST(ChannelSequence, SixteenBitDifferenceTellsNewerFromStale) {
    ChannelSequence cs;
    cs.reset(0);
    struct Step {
        uint16_t seq;
        bool ok;
    };
    const Step steps[] = {{0, true},      {0x8000, false}, {0x8001, false}, {0xFFFF, false},
                          {0x7FFF, true}, {0x7FFE, false}, {0, false},      {0x8000, true},
                          {0xFFFF, true}, {0, true},       {1, true},       {0, false},
                          {1, true},      {0xFFFF, false}};
    for (const auto& s : steps) {
        EXPECT_EQ(run(cs, s.seq, false, true), s.ok) << s.seq;
        EXPECT_EQ(run(cs, s.seq, true, true), s.ok) << s.seq << " replayed";
    }
    EXPECT_EQ(cs.sequence(), 1);
}

TEST(ChannelSequence, StaleNonModifyingRequestsRunUncounted) {
    ChannelSequence cs;
    cs.reset(5);
    std::optional<ChannelSequence::Ticket> t;
    EXPECT_TRUE(run(cs, 4, false, false, &t));
    EXPECT_FALSE(t.has_value());
    EXPECT_EQ(cs.outstanding(), 0u);
    EXPECT_FALSE(run(cs, 4, false, true));
}

TEST(ChannelSequence, OutstandingRequestsMoveToThePreCountAndAReplayWaitsForThem) {
    ChannelSequence cs;
    cs.reset(0);
    std::optional<ChannelSequence::Ticket> old_one;
    ASSERT_TRUE(run(cs, 0, false, true, &old_one));
    EXPECT_EQ(cs.outstanding(), 1u);
    // The client fails over: sequence 1; the request of sequence 0 is still outstanding.
    std::optional<ChannelSequence::Ticket> newer;
    ASSERT_TRUE(run(cs, 1, false, true, &newer));
    EXPECT_EQ(cs.outstanding(), 1u);
    EXPECT_EQ(cs.outstanding_before(), 1u);
    // A replay could overtake what is outstanding from sequence 0: refused if it modifies.
    EXPECT_FALSE(run(cs, 1, true, true));
    EXPECT_TRUE(run(cs, 1, true, false));
    cs.finish(*old_one);
    EXPECT_EQ(cs.outstanding_before(), 0u);
    EXPECT_TRUE(run(cs, 1, true, true));
    cs.finish(*newer);
    EXPECT_EQ(cs.outstanding(), 0u);
}

// smbtorture smb2.replay.replay7: a long request of sequence 0 ends after the sequence went
// round to 0 again; its end counts down the pre count, nothing wraps below zero.
TEST(ChannelSequence, RequestEndingAfterTheSequenceCameBackCountsDownThePreCount) {
    ChannelSequence cs;
    cs.reset(0);
    std::optional<ChannelSequence::Ticket> notify;
    ASSERT_TRUE(run(cs, 0, false, false, &notify));
    for (uint16_t s : {30000, 60000, 0})
        EXPECT_TRUE(run(cs, s, false, false));
    cs.finish(*notify);
    EXPECT_EQ(cs.outstanding(), 0u);
    EXPECT_EQ(cs.outstanding_before(), 0u);
}

TEST(PendingCreates, OneCreatePerClientAndCreateGuid) {
    PendingCreates p;
    ReplayKey a;
    a.create_guid[0] = std::byte{1};
    ReplayKey b = a;
    b.client[0] = std::byte{2};
    EXPECT_TRUE(p.begin(a));
    EXPECT_FALSE(p.begin(a));
    EXPECT_TRUE(p.contains(a));
    EXPECT_FALSE(p.contains(b));
    EXPECT_TRUE(p.begin(b));
    p.end(a);
    EXPECT_FALSE(p.contains(a));
    EXPECT_TRUE(p.begin(a));
}

}  // namespace
}  // namespace daxsmbd::server
