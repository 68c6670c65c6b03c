// Leases in the FileTable (MS-SMB2 3.3.5.9.8, 3.3.4.7, 3.3.5.22.2; MS-FSA 2.1.4.12 as Windows
// applies it to leases): grants by what other opens allow, breaks by opens of other lease keys,
// by sharing violations, overwrites and writes, acknowledgments, and disconnected durable opens
// purged instead of broken.
#include <gtest/gtest.h>

#include <vector>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "server/state/file_table.h"

namespace daxsmbd::server {
namespace {

namespace am = protocol::access_mask;
namespace sa = protocol::share_access;
namespace lb = lease_bits;

constexpr uint32_t kShareAll = sa::kRead | sa::kWrite | sa::kDelete;
constexpr uint32_t kRw = am::kFileReadData | am::kFileWriteData;
constexpr uint32_t kR = lb::kReadCaching;
constexpr uint32_t kRh = lb::kReadCaching | lb::kHandleCaching;
constexpr uint32_t kRwh = lb::kReadCaching | lb::kHandleCaching | lb::kWriteCaching;
const FileKey kFile{1, 7};

LeaseId lease_id(uint8_t client, uint8_t key) {
    LeaseId id;
    id.client_guid.fill(std::byte{client});
    id.key.fill(std::byte{key});
    return id;
}

struct LeaseHolder {
    std::vector<LeaseBreak> breaks;
    LeaseBreakNotifier notifier() {
        return [this](const LeaseBreak& b) { breaks.push_back(b); };
    }
};

class LeaseTest : public ::testing::Test {
  protected:
    FileTable files;

    Result<FileTable::Token> try_open(std::optional<LeaseId> lease, uint32_t access = kRw,
                                      uint32_t share = kShareAll, bool overwrite = false) {
        OplockOpenIntent intent{access, overwrite, lease};
        return files.add(kFile, ShareMode{access, share}, false, "f", &intent);
    }
    FileTable::Token open_with(const LeaseId& id, uint32_t state, LeaseHolder& h, uint32_t* granted,
                               uint32_t share = kShareAll) {
        auto t = try_open(id, kRw, share);
        EXPECT_TRUE(t.ok()) << status_name(t.status());
        if (!t) return 0;
        LeaseRequest req;
        req.id = id;
        req.state = state;
        req.version = 2;
        auto g = files.grant_lease(kFile, *t, req, false, h.notifier());
        EXPECT_TRUE(g.ok());
        EXPECT_TRUE(g.ok() && g->has_value());
        if (g.ok() && g->has_value()) *granted = (*g)->state;
        return *t;
    }
};

TEST_F(LeaseTest, SoleOpenGetsWhatItAsksAndInvalidStatesGetNothing) {
    LeaseHolder h;
    uint32_t got = 0;
    auto t = open_with(lease_id(1, 1), kRwh, h, &got);
    EXPECT_EQ(got, kRwh);
    files.remove(kFile, t, {});
    EXPECT_EQ(files.lease_count(), 0u);
    // HANDLE or WRITE caching without READ caching is no lease state.
    open_with(lease_id(1, 2), lb::kHandleCaching | lb::kWriteCaching, h, &got);
    EXPECT_EQ(got, 0u);
}

TEST_F(LeaseTest, OtherLeaseKeyBreaksWriteCachingAndWaitsForTheAcknowledgment) {
    LeaseHolder a, b;
    uint32_t got = 0;
    open_with(lease_id(1, 1), kRwh, a, &got);
    ASSERT_EQ(got, kRwh);
    // The same lease key breaks nothing.
    auto same = try_open(lease_id(1, 1));
    ASSERT_TRUE(same.ok());
    EXPECT_TRUE(a.breaks.empty());
    // Another key: WRITE caching goes, acknowledged; the opener waits.
    EXPECT_EQ(try_open(lease_id(2, 2)).status(), NtStatus::OplockBreakInProgress);
    ASSERT_EQ(a.breaks.size(), 1u);
    EXPECT_EQ(a.breaks[0].current_state, kRwh);
    EXPECT_EQ(a.breaks[0].new_state, kRh);
    EXPECT_TRUE(a.breaks[0].ack_required);
    bool woken = false;
    EXPECT_TRUE(files.when_breaks_resolved(kFile, [&] { woken = true; }));
    EXPECT_EQ(files.acknowledge_lease_break(lease_id(1, 1), kRwh).status(),
              NtStatus::RequestNotAccepted);
    auto acked = files.acknowledge_lease_break(lease_id(1, 1), kRh);
    ASSERT_TRUE(acked.ok());
    EXPECT_TRUE(woken);
    EXPECT_EQ(files.acknowledge_lease_break(lease_id(1, 1), kRh).status(), NtStatus::Unsuccessful);
    EXPECT_EQ(files.acknowledge_lease_break(lease_id(9, 9), 0).status(),
              NtStatus::ObjectNameNotFound);
    // The retry gets in, and its lease shares READ and HANDLE caching.
    open_with(lease_id(2, 2), kRwh, b, &got);
    EXPECT_EQ(got, kRh);
    EXPECT_EQ(files.lease_state(lease_id(1, 1)), kRh);
}

TEST_F(LeaseTest, SharingViolationBreaksHandleCachingSoTheHolderMayClose) {
    LeaseHolder a;
    uint32_t got = 0;
    // A denies writers: a writer's open is a sharing violation, so HANDLE caching breaks too.
    auto t = open_with(lease_id(1, 1), kRh, a, &got, sa::kRead);
    ASSERT_EQ(got, kRh);
    EXPECT_EQ(try_open(std::nullopt).status(), NtStatus::OplockBreakInProgress);
    ASSERT_EQ(a.breaks.size(), 1u);
    EXPECT_EQ(a.breaks[0].new_state, kR);
    ASSERT_TRUE(files.acknowledge_lease_break(lease_id(1, 1), kR).ok());
    // Still open: now the plain sharing violation.
    EXPECT_EQ(try_open(std::nullopt).status(), NtStatus::SharingViolation);
    files.remove(kFile, t, {});
    EXPECT_TRUE(try_open(std::nullopt).ok());
}

TEST_F(LeaseTest, WriteBreaksReadCachingOfOtherKeysAndOverwriteBreaksEverything) {
    LeaseHolder a, b;
    uint32_t got = 0;
    open_with(lease_id(1, 1), kR, a, &got);
    auto tb = open_with(lease_id(2, 2), kRh, b, &got);
    ASSERT_EQ(got, kRh);
    files.break_level2_oplocks(kFile, tb);
    ASSERT_EQ(a.breaks.size(), 1u);
    EXPECT_EQ(a.breaks[0].new_state, 0u);
    EXPECT_FALSE(a.breaks[0].ack_required);  // from READ caching alone
    EXPECT_TRUE(b.breaks.empty());           // the writer's own lease stays
    // An overwrite by a third open takes READ and HANDLE caching from B; it only waits for
    // WRITE caching (or HANDLE caching on a sharing violation), so it goes on at once.
    EXPECT_TRUE(try_open(std::nullopt, kRw, kShareAll, true).ok());
    ASSERT_EQ(b.breaks.size(), 1u);
    EXPECT_EQ(b.breaks[0].new_state, 0u);
    EXPECT_TRUE(b.breaks[0].ack_required);
}

TEST_F(LeaseTest, BreakOfADisconnectedDurableOpenPurgesIt) {
    LeaseHolder a;
    uint32_t got = 0;
    auto t = open_with(lease_id(1, 1), kRwh, a, &got);
    int purged = 0;
    files.disconnect(kFile, t, [&] { ++purged; });
    EXPECT_EQ(try_open(lease_id(2, 2)).status(), NtStatus::OplockBreakInProgress);
    EXPECT_EQ(purged, 1);
    EXPECT_TRUE(a.breaks.empty());  // nobody to tell
    bool woken = false;
    EXPECT_TRUE(files.when_breaks_resolved(kFile, [&] { woken = true; }));
    files.remove(kFile, t, {});  // what the purge does, posted elsewhere
    EXPECT_TRUE(woken);
    EXPECT_TRUE(try_open(lease_id(2, 2)).ok());
}

TEST_F(LeaseTest, UpgradeNextToAnotherLeaseKeyIsAllOrNothing) {
    LeaseHolder a, b;
    uint32_t got = 0;
    open_with(lease_id(1, 1), kR, a, &got);
    open_with(lease_id(2, 2), kR, b, &got);
    ASSERT_EQ(got, kR);
    // WRITE caching cannot sit next to the other lease: no part of RWH is granted.
    open_with(lease_id(1, 1), kRwh, a, &got);
    EXPECT_EQ(got, kR);
    // READ and HANDLE caching can: the upgrade goes through (smbtorture smb2.lease.upgrade3).
    open_with(lease_id(1, 1), kRh, a, &got);
    EXPECT_EQ(got, kRh);
    EXPECT_TRUE(a.breaks.empty());
    EXPECT_TRUE(b.breaks.empty());
}

TEST_F(LeaseTest, SharingViolationKeepsWriteCaching) {
    LeaseHolder a;
    uint32_t got = 0;
    open_with(lease_id(1, 1), kRwh, a, &got);
    // The opener shares only reading with A's writer: only HANDLE caching is broken, the open
    // fails anyway (smbtorture smb2.lease.break_twice).
    EXPECT_EQ(try_open(lease_id(2, 2), kRw, sa::kRead).status(), NtStatus::OplockBreakInProgress);
    ASSERT_EQ(a.breaks.size(), 1u);
    EXPECT_EQ(a.breaks[0].new_state, lb::kReadCaching | lb::kWriteCaching);
    ASSERT_TRUE(files.acknowledge_lease_break(lease_id(1, 1), a.breaks[0].new_state).ok());
    EXPECT_EQ(try_open(lease_id(2, 2), kRw, sa::kRead).status(), NtStatus::SharingViolation);
    EXPECT_EQ(a.breaks.size(), 1u);
}

TEST_F(LeaseTest, BreakThatBecameLowerInFlightGoesOnInSteps) {
    LeaseHolder a;
    uint32_t got = 0;
    open_with(lease_id(1, 1), kRwh, a, &got);
    EXPECT_EQ(try_open(std::nullopt).status(), NtStatus::OplockBreakInProgress);
    // An overwrite while RWH -> RH is in flight sends nothing now.
    EXPECT_EQ(try_open(std::nullopt, kRw, kShareAll, true).status(),
              NtStatus::OplockBreakInProgress);
    ASSERT_EQ(a.breaks.size(), 1u);
    // Acknowledged: RH -> R first, acknowledged too, then R -> none without acknowledgment
    // (Windows; smbtorture smb2.lease.breaking3).
    ASSERT_TRUE(files.acknowledge_lease_break(lease_id(1, 1), kRh).ok());
    ASSERT_EQ(a.breaks.size(), 2u);
    EXPECT_EQ(a.breaks[1].current_state, kRh);
    EXPECT_EQ(a.breaks[1].new_state, kR);
    EXPECT_TRUE(a.breaks[1].ack_required);
    // The steps keep the epoch of the break they continue (smbtorture smb2.lease.v2_breaking3).
    EXPECT_EQ(a.breaks[1].new_epoch, a.breaks[0].new_epoch);
    ASSERT_TRUE(files.acknowledge_lease_break(lease_id(1, 1), kR).ok());
    ASSERT_EQ(a.breaks.size(), 3u);
    EXPECT_EQ(a.breaks[2].new_state, 0u);
    EXPECT_FALSE(a.breaks[2].ack_required);
    EXPECT_EQ(a.breaks[2].new_epoch, a.breaks[0].new_epoch);
    EXPECT_EQ(files.lease_state(lease_id(1, 1)), 0u);
    EXPECT_FALSE(files.when_breaks_resolved(kFile, [] {}));
}

TEST_F(LeaseTest, UnacknowledgedBreakDropsTheWholeLease) {
    LeaseHolder a;
    uint32_t got = 0;
    open_with(lease_id(1, 1), kRwh, a, &got);
    EXPECT_EQ(try_open(lease_id(2, 2)).status(), NtStatus::OplockBreakInProgress);
    files.expire_breaks(kFile);  // MS-SMB2 3.3.2.5 (smbtorture smb2.lease.timeout)
    EXPECT_EQ(files.lease_state(lease_id(1, 1)), 0u);
    EXPECT_EQ(files.acknowledge_lease_break(lease_id(1, 1), kRh).status(), NtStatus::Unsuccessful);
}

TEST_F(LeaseTest, RenameAndDeleteOnCloseBreakHandleCachingOfOtherKeys) {
    LeaseHolder a, b;
    uint32_t got = 0;
    auto ta = open_with(lease_id(1, 1), kRh, a, &got);
    open_with(lease_id(2, 2), kRh, b, &got);
    ASSERT_EQ(got, kRh);
    // A rename through A: B loses HANDLE caching, A keeps it; the rename waits for B.
    EXPECT_TRUE(files.break_handle_caching(kFile, ta));
    EXPECT_TRUE(a.breaks.empty());
    ASSERT_EQ(b.breaks.size(), 1u);
    EXPECT_EQ(b.breaks[0].new_state, kR);
    EXPECT_TRUE(b.breaks[0].ack_required);
    EXPECT_TRUE(files.break_handle_caching(kFile, ta));  // still in flight
    ASSERT_TRUE(files.acknowledge_lease_break(lease_id(2, 2), kR).ok());
    EXPECT_FALSE(files.break_handle_caching(kFile, ta));
    // A delete-on-close open breaks HANDLE caching of A too and waits (smbtorture
    // smb2.lease.unlink).
    OplockOpenIntent unlink{am::kDelete, false, std::nullopt, true};
    EXPECT_EQ(files.add(kFile, ShareMode{am::kDelete, kShareAll}, true, "f", &unlink).status(),
              NtStatus::OplockBreakInProgress);
    ASSERT_EQ(a.breaks.size(), 1u);
    EXPECT_EQ(a.breaks[0].new_state, kR);
}

TEST_F(LeaseTest, LeaseKeyOnAnotherFileIsRefused) {
    LeaseHolder a;
    uint32_t got = 0;
    open_with(lease_id(1, 1), kRwh, a, &got);
    const FileKey other{1, 8};
    OplockOpenIntent intent{kRw, false, lease_id(1, 1)};
    auto t = files.add(other, ShareMode{kRw, kShareAll}, false, "g", &intent);
    ASSERT_TRUE(t.ok());
    LeaseRequest req;
    req.id = lease_id(1, 1);
    req.state = kRwh;
    EXPECT_EQ(files.grant_lease(other, *t, req, false, a.notifier()).status(),
              NtStatus::InvalidParameter);
}

// Directory leases (MS-SMB2 3.3.5.9.11 with SMB2_GLOBAL_CAP_DIRECTORY_LEASING).
class DirectoryLeaseTest : public ::testing::Test {
  protected:
    FileTable files;
    const FileKey kDir{1, 9};

    // Opens the directory for listing with lease `id`, asking `state` (v2, optional parent).
    std::optional<LeaseGrant> open_dir(const LeaseId& id, uint32_t state, LeaseHolder& h,
                                       bool directory_leasing = true) {
        OplockOpenIntent intent{am::kFileReadData, false, id};
        auto t = files.add(kDir, ShareMode{am::kFileReadData, kShareAll}, false, "d", &intent);
        EXPECT_TRUE(t.ok());
        if (!t) return std::nullopt;
        tokens.push_back(*t);
        LeaseRequest req;
        req.id = id;
        req.state = state;
        req.version = 2;
        auto g = files.grant_lease(kDir, *t, req, true, h.notifier(), directory_leasing);
        EXPECT_TRUE(g.ok());
        return g.ok() ? *g : std::nullopt;
    }
    std::vector<FileTable::Token> tokens;
};

TEST_F(DirectoryLeaseTest, DirectoryGetsReadAndHandleCachingNeverWrite) {
    LeaseHolder h;
    EXPECT_FALSE(files.has_directory_leases());
    auto g = open_dir(lease_id(1, 1), kRwh, h);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->state, kRh);
    EXPECT_EQ(g->epoch, 1);
    EXPECT_TRUE(files.has_directory_leases());
    // The lease goes with the directory's last open.
    files.remove(kDir, tokens[0], {});
    EXPECT_FALSE(files.has_directory_leases());
    EXPECT_EQ(files.lease_count(), 0u);
}

TEST_F(DirectoryLeaseTest, WithoutDirectoryLeasingTheDirectoryGetsNoLease) {
    LeaseHolder h;
    EXPECT_FALSE(open_dir(lease_id(1, 1), kRh, h, false).has_value());
    EXPECT_FALSE(files.has_directory_leases());
}

TEST_F(DirectoryLeaseTest, ChangeInsideBreaksEveryLeaseButTheParentKeyOfTheChanger) {
    LeaseHolder a, b;
    ASSERT_EQ(open_dir(lease_id(1, 1), kRh, a)->state, kRh);
    ASSERT_EQ(open_dir(lease_id(2, 2), kR, b)->state, kR);
    // Client 1 creates a file under its own directory lease: only client 2's lease breaks,
    // READ caching alone needs no acknowledgment.
    EXPECT_FALSE(files.break_directory_leases(kDir, lease_id(1, 1)));
    EXPECT_TRUE(a.breaks.empty());
    ASSERT_EQ(b.breaks.size(), 1u);
    EXPECT_EQ(b.breaks[0].current_state, kR);
    EXPECT_EQ(b.breaks[0].new_state, 0u);
    EXPECT_FALSE(b.breaks[0].ack_required);
    EXPECT_EQ(files.lease_state(lease_id(2, 2)), 0u);
    // A change by anyone else breaks client 1's RH to NONE, acknowledged, epoch up; the same
    // lease is not broken twice while that break is in flight.
    bool expiry_armed = false;
    files.set_break_expiry([&](const FileKey& k) { expiry_armed = k == kDir; });
    EXPECT_TRUE(files.break_directory_leases(kDir, std::nullopt));
    EXPECT_TRUE(expiry_armed);
    ASSERT_EQ(a.breaks.size(), 1u);
    EXPECT_EQ(a.breaks[0].current_state, kRh);
    EXPECT_EQ(a.breaks[0].new_state, 0u);
    EXPECT_TRUE(a.breaks[0].ack_required);
    EXPECT_EQ(a.breaks[0].new_epoch, 2);
    files.break_directory_leases(kDir, std::nullopt);
    EXPECT_EQ(a.breaks.size(), 1u);
    ASSERT_TRUE(files.acknowledge_lease_break(lease_id(1, 1), 0).ok());
    // A new request upgrades again (epoch 3), as smbtorture smb2.lease.v2_request expects.
    auto again = open_dir(lease_id(1, 1), kRwh, a);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->state, kRh);
    EXPECT_EQ(again->epoch, 3);
}

TEST_F(DirectoryLeaseTest, UnacknowledgedDirectoryBreakExpires) {
    LeaseHolder a;
    ASSERT_EQ(open_dir(lease_id(1, 1), kRh, a)->state, kRh);
    EXPECT_TRUE(files.break_directory_leases(kDir, std::nullopt));
    files.expire_breaks(kDir);
    EXPECT_EQ(files.lease_state(lease_id(1, 1)), 0u);
    // Nothing is in flight any more: an acknowledgment now is out of place.
    EXPECT_EQ(files.acknowledge_lease_break(lease_id(1, 1), 0).status(), NtStatus::Unsuccessful);
}

TEST_F(DirectoryLeaseTest, ParentLeaseOfAFileOpenIsItsParentKeyOfTheSameClient) {
    LeaseHolder h;
    OplockOpenIntent intent{kRw, false, lease_id(1, 5)};
    auto t = files.add(kFile, ShareMode{kRw, kShareAll}, false, "d/f", &intent);
    ASSERT_TRUE(t.ok());
    EXPECT_FALSE(files.parent_lease(kFile, *t).has_value());
    LeaseRequest req;
    req.id = lease_id(1, 5);
    req.state = kRwh;
    req.version = 2;
    req.parent_key = lease_id(0, 1).key;
    ASSERT_TRUE(files.grant_lease(kFile, *t, req, false, h.notifier()).ok());
    auto p = files.parent_lease(kFile, *t);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(*p, lease_id(1, 1));
}

}  // namespace
}  // namespace daxsmbd::server
