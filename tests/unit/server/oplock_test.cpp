// Oplocks in the FileTable: grants (MS-FSA 2.1.5.17.2), breaks caused by opens and writes
// (MS-FSA 2.1.4.12), acknowledgments (MS-SMB2 3.3.5.22.1), the waiter of a breaking open and the
// acknowledgment timeout (MS-SMB2 3.3.2.1).
#include <gtest/gtest.h>

#include <vector>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "server/state/file_table.h"

namespace daxsmbd::server {
namespace {

namespace am = protocol::access_mask;
namespace sa = protocol::share_access;

constexpr uint32_t kShareAll = sa::kRead | sa::kWrite | sa::kDelete;
const FileKey kFile{1, 42};

// Records the break notifications one open receives.
struct Holder {
    std::vector<uint8_t> breaks;
    OplockBreakNotifier notifier() {
        return [this](uint8_t level) { breaks.push_back(level); };
    }
};

class OplockTest : public ::testing::Test {
  protected:
    FileTable files;
    FileTable::Token open(uint32_t access = am::kFileReadData | am::kFileWriteData,
                          bool overwrite = false) {
        OplockOpenIntent intent{access, overwrite, std::nullopt};
        auto t = files.add(kFile, ShareMode{access, kShareAll}, false, "f", &intent);
        EXPECT_TRUE(t.ok()) << status_name(t.status());
        return t.ok() ? *t : 0;
    }
    Status try_open(uint32_t access, bool overwrite = false) {
        OplockOpenIntent intent{access, overwrite, std::nullopt};
        auto t = files.add(kFile, ShareMode{access, kShareAll}, false, "f", &intent);
        if (!t) return Error(t.status());
        return {};
    }
};

TEST_F(OplockTest, OnlyOpenGetsWhatItAsks) {
    Holder h;
    auto a = open();
    EXPECT_EQ(files.grant_oplock(kFile, a, oplock::kBatch, false, h.notifier()), oplock::kBatch);
    EXPECT_EQ(files.oplock_level(kFile, a), oplock::kBatch);
}

TEST_F(OplockTest, DirectoriesAndLeaseRequestsGetNone) {
    auto a = open();
    EXPECT_EQ(files.grant_oplock(kFile, a, oplock::kBatch, true, {}), oplock::kNone);
    EXPECT_EQ(files.grant_oplock(kFile, a, protocol::oplock_level::kLease, false, {}),
              oplock::kNone);
}

TEST_F(OplockTest, SecondOpenGetsLevelIIWhenNobodyHoldsAnExclusiveOplock) {
    Holder ha, hb;
    auto a = open();
    EXPECT_EQ(files.grant_oplock(kFile, a, oplock::kNone, false, ha.notifier()), oplock::kNone);
    auto b = open();
    EXPECT_EQ(files.grant_oplock(kFile, b, oplock::kBatch, false, hb.notifier()), oplock::kII);
}

TEST_F(OplockTest, DurableOpenLosingItsConnectionDuringABreakIsPurgedAtOnce) {
    // The break went out just before the holder's connection was lost: no acknowledgment can
    // come, so the disconnected open is closed now instead of after the break timeout.
    Holder ha;
    auto a = open();
    ASSERT_EQ(files.grant_oplock(kFile, a, oplock::kBatch, false, ha.notifier()), oplock::kBatch);
    ASSERT_EQ(try_open(am::kFileReadData).status(), NtStatus::OplockBreakInProgress);
    ASSERT_EQ(ha.breaks.size(), 1u);
    int purged = 0;
    files.disconnect(kFile, a, [&] { ++purged; });
    EXPECT_EQ(purged, 1);
}

TEST_F(OplockTest, ConflictingOpenBreaksBatchToLevelIIAndWaitsForTheAck) {
    Holder ha;
    auto a = open();
    ASSERT_EQ(files.grant_oplock(kFile, a, oplock::kBatch, false, ha.notifier()), oplock::kBatch);

    auto st = try_open(am::kFileReadData);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.status(), NtStatus::OplockBreakInProgress);
    ASSERT_EQ(ha.breaks, std::vector<uint8_t>{oplock::kII});
    // Still breaking: a second attempt waits too and sends no second notification.
    EXPECT_EQ(try_open(am::kFileReadData).status(), NtStatus::OplockBreakInProgress);
    EXPECT_EQ(ha.breaks.size(), 1u);

    int woken = 0;
    ASSERT_TRUE(files.when_breaks_resolved(kFile, [&] { ++woken; }));
    EXPECT_EQ(woken, 0);
    auto acked = files.acknowledge_break(kFile, a, oplock::kII);
    ASSERT_TRUE(acked.ok());
    EXPECT_EQ(*acked, oplock::kII);
    EXPECT_EQ(woken, 1);
    EXPECT_EQ(files.oplock_level(kFile, a), oplock::kII);
    // The break is over: the open goes through and gets LEVEL_II next to the other.
    auto b = open(am::kFileReadData);
    EXPECT_EQ(files.grant_oplock(kFile, b, oplock::kBatch, false, {}), oplock::kII);
    EXPECT_FALSE(files.when_breaks_resolved(kFile, [] {}));
}

TEST_F(OplockTest, OverwriteBreaksToNone) {
    Holder ha;
    auto a = open();
    files.grant_oplock(kFile, a, oplock::kExclusive, false, ha.notifier());
    EXPECT_EQ(try_open(am::kFileWriteData, true).status(), NtStatus::OplockBreakInProgress);
    EXPECT_EQ(ha.breaks, std::vector<uint8_t>{oplock::kNone});
    // Acknowledging more than the break offered ends the oplock with an error.
    auto acked = files.acknowledge_break(kFile, a, oplock::kII);
    EXPECT_EQ(acked.status(), NtStatus::InvalidOplockProtocol);
    EXPECT_EQ(files.oplock_level(kFile, a), oplock::kNone);
}

TEST_F(OplockTest, AttributeOnlyOpenDoesNotBreak) {
    Holder ha;
    auto a = open();
    files.grant_oplock(kFile, a, oplock::kBatch, false, ha.notifier());
    EXPECT_TRUE(try_open(am::kFileReadAttributes | am::kSynchronize).ok());
    EXPECT_TRUE(ha.breaks.empty());
    EXPECT_EQ(files.oplock_level(kFile, a), oplock::kBatch);
}

TEST_F(OplockTest, CloseOfTheBreakingOpenWakesTheWaiter) {
    Holder ha;
    auto a = open();
    files.grant_oplock(kFile, a, oplock::kBatch, false, ha.notifier());
    ASSERT_EQ(try_open(am::kFileReadData).status(), NtStatus::OplockBreakInProgress);
    int woken = 0;
    ASSERT_TRUE(files.when_breaks_resolved(kFile, [&] { ++woken; }));
    files.remove(kFile, a, {});
    EXPECT_EQ(woken, 1);
    EXPECT_TRUE(try_open(am::kFileReadData).ok());
}

TEST_F(OplockTest, ExpiredBreakDropsTheOplock) {
    Holder ha;
    auto a = open();
    files.grant_oplock(kFile, a, oplock::kBatch, false, ha.notifier());
    ASSERT_EQ(try_open(am::kFileReadData).status(), NtStatus::OplockBreakInProgress);
    int woken = 0;
    ASSERT_TRUE(files.when_breaks_resolved(kFile, [&] { ++woken; }));
    files.expire_breaks(kFile);
    EXPECT_EQ(woken, 1);
    EXPECT_EQ(files.oplock_level(kFile, a), oplock::kNone);
    // A late acknowledgment finds no oplock any more (MS-FSA 2.1.5.18).
    EXPECT_EQ(files.acknowledge_break(kFile, a, oplock::kNone).status(),
              NtStatus::InvalidOplockProtocol);
}

TEST_F(OplockTest, AcknowledgmentRules) {
    Holder ha;
    auto a = open();
    // No oplock at all: INVALID_OPLOCK_PROTOCOL (MS-FSA 2.1.5.18).
    EXPECT_EQ(files.acknowledge_break(kFile, a, oplock::kNone).status(),
              NtStatus::InvalidOplockProtocol);
    // An oplock that is not being broken: INVALID_DEVICE_STATE (MS-SMB2 3.3.5.22.1).
    files.grant_oplock(kFile, a, oplock::kBatch, false, ha.notifier());
    EXPECT_EQ(files.acknowledge_break(kFile, a, oplock::kII).status(),
              NtStatus::InvalidDeviceState);
    ASSERT_EQ(try_open(am::kFileReadData).status(), NtStatus::OplockBreakInProgress);
    // From BATCH only LEVEL_II or NONE may be acknowledged.
    EXPECT_EQ(files.acknowledge_break(kFile, a, oplock::kExclusive).status(),
              NtStatus::InvalidOplockProtocol);
    auto acked = files.acknowledge_break(kFile, a, oplock::kNone);
    ASSERT_TRUE(acked.ok());
    EXPECT_EQ(*acked, oplock::kNone);
    EXPECT_EQ(files.acknowledge_break(kFile, 999, oplock::kNone).status(), NtStatus::FileClosed);
}

TEST_F(OplockTest, WriteBreaksEveryLevelIIOplockWithoutAck) {
    Holder ha, hb;
    auto a = open();
    files.grant_oplock(kFile, a, oplock::kII, false, ha.notifier());
    auto b = open();
    ASSERT_EQ(files.grant_oplock(kFile, b, oplock::kII, false, hb.notifier()), oplock::kII);
    files.break_level2_oplocks(kFile, b);
    // The writer's own LEVEL_II oplock breaks as well (smbtorture smb2.oplock.batch6).
    EXPECT_EQ(ha.breaks, std::vector<uint8_t>{oplock::kNone});
    EXPECT_EQ(hb.breaks, std::vector<uint8_t>{oplock::kNone});
    EXPECT_EQ(files.oplock_level(kFile, a), oplock::kNone);
    EXPECT_EQ(files.oplock_level(kFile, b), oplock::kNone);
    // Acknowledging a break from LEVEL_II to NONE is a protocol error (smbtorture
    // smb2.oplock.levelii500).
    EXPECT_EQ(files.acknowledge_break(kFile, b, oplock::kNone).status(),
              NtStatus::InvalidOplockProtocol);
    EXPECT_FALSE(files.when_breaks_resolved(kFile, [] {}));  // nothing to wait for
}

TEST_F(OplockTest, OpenWithoutIntentNeverBreaks) {
    Holder ha;
    auto a = open();
    files.grant_oplock(kFile, a, oplock::kBatch, false, ha.notifier());
    auto t = files.add(kFile, ShareMode{am::kFileReadData, kShareAll}, false, "f");
    EXPECT_TRUE(t.ok());
    EXPECT_TRUE(ha.breaks.empty());
}

}  // namespace
}  // namespace daxsmbd::server
