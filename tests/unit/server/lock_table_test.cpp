// Byte-range lock table: MS-FSA 2.1.4.10 conflict rules, 2.1.5.8 / 2.1.5.9 lock and unlock, and
// the behaviours smbtorture smb2.lock checks against Windows.
#include "server/state/lock_table.h"

#include <gtest/gtest.h>

#include <array>

#include "server/rpcpipe/pipe_endpoint.h"  // complete types for constructing an Open
#include "server/state/open.h"
#include "server/vfs/dir.h"

namespace daxsmbd::server {
namespace {

const FileKey kFile{1, 100};
const FileKey kOther{1, 101};
// Owners are only compared; any distinct addresses do.
const int owner_a_storage = 0, owner_b_storage = 0;
const LockOwner A = &owner_a_storage;
const LockOwner B = &owner_b_storage;

LockRange shared(uint64_t off, uint64_t len) {
    return {off, len, false};
}
LockRange excl(uint64_t off, uint64_t len) {
    return {off, len, true};
}

NtStatus lock1(LockTable& t, LockOwner o, LockRange r) {
    std::array<LockRange, 1> rs{r};
    return t.lock(kFile, o, rs).status();
}

TEST(LockRangeValid, SpecBoundaries) {
    // MS-FSA 2.1.5.8: the last byte must not pass 2^64 - 1 (smbtorture smb2.lock.lock:
    // max/0 and max/1 are fine, max/2 and max/max are INVALID_LOCK_RANGE).
    EXPECT_TRUE(lock_range_valid(UINT64_MAX, 0));
    EXPECT_TRUE(lock_range_valid(UINT64_MAX, 1));
    EXPECT_FALSE(lock_range_valid(UINT64_MAX, 2));
    EXPECT_FALSE(lock_range_valid(UINT64_MAX, UINT64_MAX));
    EXPECT_TRUE(lock_range_valid(0, UINT64_MAX));
    EXPECT_TRUE(lock_range_valid(1, UINT64_MAX));  // last byte 2^64 - 1
    EXPECT_FALSE(lock_range_valid(2, UINT64_MAX));
    EXPECT_TRUE(lock_range_valid(0xFFFFFFFF, 0xFFFFFFFF));
}

TEST(LockTable, ExclusiveBlocksOtherOpensAndSecondExclusiveOfOwner) {
    LockTable t;
    EXPECT_EQ(lock1(t, A, excl(0, 10)), NtStatus::Success);
    EXPECT_EQ(lock1(t, B, excl(5, 10)), NtStatus::LockNotGranted);
    EXPECT_EQ(lock1(t, B, shared(9, 1)), NtStatus::LockNotGranted);
    // Two exclusive locks never stack, even on the same open (smb2.lock.stacking).
    EXPECT_EQ(lock1(t, A, excl(0, 10)), NtStatus::LockNotGranted);
    EXPECT_EQ(lock1(t, B, excl(10, 5)), NtStatus::Success);
    EXPECT_EQ(t.lock_count(kFile), 2u);
    // Another file is independent.
    std::array<LockRange, 1> r{excl(0, 10)};
    EXPECT_TRUE(t.lock(kOther, B, r));
}

TEST(LockTable, LocksOfListsOneOwnersLocksOnOneFile) {
    LockTable t;
    const LockRange r1{0, 10, true}, r2{20, 5, false}, r3{40, 1, false};
    ASSERT_TRUE(t.lock(kFile, A, std::vector{r1, r2}).ok());
    ASSERT_TRUE(t.lock(kFile, B, std::vector{r3}).ok());
    ASSERT_TRUE(t.lock(kOther, A, std::vector{r3}).ok());
    EXPECT_EQ(t.locks_of(kFile, A), (std::vector{r1, r2}));
    EXPECT_EQ(t.locks_of(kFile, B), (std::vector{r3}));
    ASSERT_TRUE(t.unlock(kFile, A, 0, 10).ok());
    EXPECT_EQ(t.locks_of(kFile, A), (std::vector{r2}));
    t.release_all(kFile, A);
    EXPECT_TRUE(t.locks_of(kFile, A).empty());
    EXPECT_TRUE(t.locks_of(FileKey{9, 9}, A).empty());
}

TEST(LockTable, StackingRules) {
    LockTable t;
    // Shared on shared (any open), shared on the owner's own exclusive: granted.
    EXPECT_EQ(lock1(t, A, shared(0, 10)), NtStatus::Success);
    EXPECT_EQ(lock1(t, A, shared(0, 10)), NtStatus::Success);
    EXPECT_EQ(lock1(t, B, shared(5, 10)), NtStatus::Success);
    // Exclusive on top of a shared lock: refused, also for the owner.
    EXPECT_EQ(lock1(t, A, excl(0, 10)), NtStatus::LockNotGranted);
    LockTable t2;
    EXPECT_EQ(lock1(t2, A, excl(0, 10)), NtStatus::Success);
    EXPECT_EQ(lock1(t2, A, shared(0, 10)), NtStatus::Success);
    EXPECT_EQ(lock1(t2, A, shared(0, 10)), NtStatus::Success);
    EXPECT_EQ(lock1(t2, B, shared(0, 10)), NtStatus::LockNotGranted);
}

TEST(LockTable, ZeroByteLocksAsOnWindows) {
    // smbtorture smb2.lock.zerobytelength: a zero-byte lock at 10, then a second exclusive lock.
    struct Case {
        LockRange second;
        NtStatus want;
    };
    const Case cases[] = {
        {excl(10, 0), NtStatus::Success},       {excl(9, 1), NtStatus::Success},
        {excl(10, 1), NtStatus::Success},       {excl(11, 1), NtStatus::Success},
        {excl(9, 2), NtStatus::LockNotGranted}, {excl(10, 2), NtStatus::Success},
        {excl(9, 3), NtStatus::LockNotGranted},
    };
    for (LockOwner second_owner : {A, B}) {
        for (const auto& c : cases) {
            LockTable t;
            ASSERT_EQ(lock1(t, A, excl(10, 0)), NtStatus::Success);
            EXPECT_EQ(lock1(t, second_owner, c.second), c.want)
                << c.second.offset << "/" << c.second.length;
            // And the other order.
            LockTable u;
            ASSERT_EQ(lock1(u, A, c.second), NtStatus::Success);
            EXPECT_EQ(lock1(u, second_owner, excl(10, 0)), c.want);
        }
    }
    // {0, 0} never conflicts, not even with itself on two opens (smb2.lock.lock "0/0").
    LockTable t;
    EXPECT_EQ(lock1(t, A, excl(0, 0)), NtStatus::Success);
    EXPECT_EQ(lock1(t, B, excl(0, 0)), NtStatus::Success);
    // A zero-byte lock strictly inside an exclusive range conflicts (smb2.lock.errorcode).
    LockTable e;
    EXPECT_EQ(lock1(e, A, excl(100, 10)), NtStatus::Success);
    EXPECT_EQ(lock1(e, B, excl(102, 0)), NtStatus::LockNotGranted);
    EXPECT_EQ(lock1(e, A, excl(102, 0)), NtStatus::LockNotGranted);
}

TEST(LockTable, HighOffsets) {
    LockTable t;
    EXPECT_EQ(lock1(t, A, excl(UINT64_MAX, 1)), NtStatus::Success);
    EXPECT_EQ(lock1(t, B, excl(UINT64_MAX, 1)), NtStatus::LockNotGranted);
    EXPECT_EQ(lock1(t, B, excl(UINT64_MAX - 1, 1)), NtStatus::Success);
    EXPECT_EQ(lock1(t, B, excl(UINT64_MAX, 2)), NtStatus::InvalidLockRange);
    EXPECT_EQ(t.unlock(kFile, A, UINT64_MAX, 2).status(), NtStatus::InvalidLockRange);
    EXPECT_TRUE(t.unlock(kFile, A, UINT64_MAX, 1));
}

TEST(LockTable, MultiRangeIsAllOrNothing) {
    LockTable t;
    ASSERT_EQ(lock1(t, B, excl(10, 10)), NtStatus::Success);
    std::array<LockRange, 2> two{excl(0, 10), excl(10, 10)};
    EXPECT_EQ(t.lock(kFile, A, two).status(), NtStatus::LockNotGranted);
    // Nothing of the failed request stayed: A's first range is free for B.
    EXPECT_EQ(lock1(t, B, excl(0, 10)), NtStatus::Success);
    EXPECT_EQ(t.lock_count(kFile), 2u);
    // Ranges of one request conflict with each other like any other locks.
    std::array<LockRange, 2> self{excl(100, 10), excl(105, 1)};
    EXPECT_EQ(t.lock(kFile, A, self).status(), NtStatus::LockNotGranted);
    // A dry run answers without keeping anything.
    std::array<LockRange, 1> dry{excl(200, 1)};
    EXPECT_TRUE(t.lock(kFile, A, dry, /*dry_run=*/true));
    EXPECT_EQ(t.lock_count(kFile), 2u);
}

TEST(LockTable, UnlockNeedsExactRangeAndOwnerExclusiveFirst) {
    LockTable t;
    ASSERT_EQ(lock1(t, A, shared(110, 4)), NtStatus::Success);
    ASSERT_EQ(lock1(t, A, shared(112, 4)), NtStatus::Success);
    // No coalescing (smb2.lock.overlap "cannot coalesce read locks").
    EXPECT_EQ(t.unlock(kFile, A, 110, 6).status(), NtStatus::RangeNotLocked);
    // Wrong owner (smb2.lock.lock "wrong handle unlock").
    EXPECT_EQ(t.unlock(kFile, B, 110, 4).status(), NtStatus::RangeNotLocked);
    EXPECT_TRUE(t.unlock(kFile, A, 110, 4));

    // Exclusive + shared stacked: the first unlock removes the exclusive one, so another open
    // can then share the range (smb2.lock.unlock "stacked exclusive/shared").
    LockTable u;
    ASSERT_EQ(lock1(u, A, excl(10, 10)), NtStatus::Success);
    ASSERT_EQ(lock1(u, A, shared(10, 10)), NtStatus::Success);
    EXPECT_EQ(lock1(u, B, shared(5, 10)), NtStatus::LockNotGranted);
    EXPECT_TRUE(u.unlock(kFile, A, 10, 10));
    EXPECT_EQ(lock1(u, B, shared(5, 10)), NtStatus::Success);
    EXPECT_TRUE(u.unlock(kFile, A, 10, 10));
    EXPECT_EQ(u.unlock(kFile, A, 10, 10).status(), NtStatus::RangeNotLocked);
}

TEST(LockTable, IoConflictsPerMsFsa2_1_4_10) {
    LockTable t;
    const FileKey k = kFile;
    // Exclusive lock of A on [0,100): B can neither read nor write, A can do both.
    ASSERT_EQ(lock1(t, A, excl(0, 100)), NtStatus::Success);
    EXPECT_FALSE(t.allows_io(k, B, 50, 10, false));
    EXPECT_FALSE(t.allows_io(k, B, 99, 10, true));
    EXPECT_TRUE(t.allows_io(k, B, 100, 10, true));
    EXPECT_TRUE(t.allows_io(k, A, 50, 10, false));
    EXPECT_TRUE(t.allows_io(k, A, 50, 10, true));
    // Zero-length I/O never conflicts (smb2.lock.zerobyteread).
    EXPECT_TRUE(t.allows_io(k, B, 5, 0, false));
    ASSERT_TRUE(t.unlock(k, A, 0, 100));
    // Shared lock: everybody reads, nobody writes, not even the owner (smb2.lock.rw-shared).
    ASSERT_EQ(lock1(t, A, shared(0, 100)), NtStatus::Success);
    EXPECT_TRUE(t.allows_io(k, B, 0, 100, false));
    EXPECT_TRUE(t.allows_io(k, A, 0, 100, false));
    EXPECT_FALSE(t.allows_io(k, A, 0, 1, true));
    EXPECT_FALSE(t.allows_io(k, B, 99, 1, true));
    // The same device/inode pair through the other overload.
    EXPECT_FALSE(t.allows_io(k.device, k.inode, B, 0, 1, true));
    EXPECT_TRUE(t.allows_io(kOther, B, 0, 1, true));
}

TEST(LockTable, WaiterGrantedOnUnlockInArrivalOrder) {
    LockTable t;
    ASSERT_EQ(lock1(t, A, excl(100, 50)), NtStatus::Success);
    int woken_b = 0, woken_a2 = 0;
    int a2_storage = 0;
    const LockOwner A2 = &a2_storage;
    auto wb = t.lock_or_wait(kFile, B, excl(100, 50), [&] { ++woken_b; });
    ASSERT_TRUE(wb);
    EXPECT_EQ((*wb)->state(), LockWaiter::State::Waiting);
    auto wa2 = t.lock_or_wait(kFile, A2, excl(120, 1), [&] { ++woken_a2; });
    ASSERT_TRUE(wa2);
    EXPECT_EQ(t.waiter_count(kFile), 2u);
    // A non-conflicting request does not queue behind them.
    auto free_now = t.lock_or_wait(kFile, A2, shared(0, 1), [] { FAIL(); });
    ASSERT_TRUE(free_now);
    EXPECT_EQ((*free_now)->state(), LockWaiter::State::Granted);

    ASSERT_TRUE(t.unlock(kFile, A, 100, 50));
    // B came first and got the range; A2 now conflicts with B and keeps waiting.
    EXPECT_EQ((*wb)->state(), LockWaiter::State::Granted);
    EXPECT_EQ(woken_b, 1);
    EXPECT_EQ((*wa2)->state(), LockWaiter::State::Waiting);
    EXPECT_EQ(woken_a2, 0);
    EXPECT_EQ(lock1(t, A, excl(100, 1)), NtStatus::LockNotGranted);
    // Closing B's open releases its lock and grants A2.
    t.release_all(kFile, B);
    EXPECT_EQ((*wa2)->state(), LockWaiter::State::Granted);
    EXPECT_EQ(woken_a2, 1);
    EXPECT_EQ(t.cancel(*wa2), LockWaiter::State::Granted);
}

TEST(LockTable, CancelAndOwnerClose) {
    LockTable t;
    ASSERT_EQ(lock1(t, A, excl(0, 10)), NtStatus::Success);
    int woken = 0;
    auto w = t.lock_or_wait(kFile, B, excl(0, 10), [&] { ++woken; });
    ASSERT_TRUE(w);
    // A pending request holds nothing: unlocking it is RANGE_NOT_LOCKED (smb2.lock.cancel).
    EXPECT_EQ(t.unlock(kFile, B, 0, 10).status(), NtStatus::RangeNotLocked);
    EXPECT_EQ(t.cancel(*w), LockWaiter::State::Cancelled);
    EXPECT_EQ(t.waiter_count(kFile), 0u);
    EXPECT_EQ(woken, 0);
    // Cancelled requests are not granted later.
    ASSERT_TRUE(t.unlock(kFile, A, 0, 10));
    EXPECT_EQ((*w)->state(), LockWaiter::State::Cancelled);
    EXPECT_EQ(t.lock_count(kFile), 0u);

    // The waiting open is closed: its request ends OwnerClosed and is woken.
    ASSERT_EQ(lock1(t, A, excl(0, 10)), NtStatus::Success);
    auto w2 = t.lock_or_wait(kFile, B, excl(0, 10), [&] { ++woken; });
    ASSERT_TRUE(w2);
    t.release_all(kFile, B);
    EXPECT_EQ((*w2)->state(), LockWaiter::State::OwnerClosed);
    EXPECT_EQ(woken, 1);
    EXPECT_EQ(t.lock_count(kFile), 1u);
    t.release_all(kFile, A);
    EXPECT_EQ(t.lock_count(kFile), 0u);
    EXPECT_TRUE(t.allows_io(kFile, B, 0, 10, true));
    // "NT byte range lock bug" (smb2.lock.overlap): locks of a closed open do not linger.
    ASSERT_EQ(lock1(t, A, shared(0, 8)), NtStatus::Success);
    ASSERT_EQ(lock1(t, B, shared(0, 1)), NtStatus::Success);
    t.release_all(kFile, A);
    EXPECT_EQ(lock1(t, A, excl(7, 1)), NtStatus::Success);
}

TEST(LockTable, CloseHookReleasesLocksWhenOpenIsDestroyed) {
    LockTable t;
    int other_hook = 0;
    {
        auto open = std::make_shared<Open>();
        open->local.device = kFile.device;
        open->local.file_id = kFile.inode;
        add_close_hook(*open, [&] { ++other_hook; });
        install_lock_release_hook(*open, t);
        install_lock_release_hook(*open, t);  // idempotent
        ASSERT_EQ(lock1(t, open.get(), excl(0, 10)), NtStatus::Success);
        EXPECT_FALSE(t.allows_io(kFile, B, 0, 1, false));
    }
    EXPECT_EQ(other_hook, 1);
    EXPECT_EQ(t.lock_count(kFile), 0u);
    EXPECT_TRUE(t.allows_io(kFile, B, 0, 1, false));
}

}  // namespace
}  // namespace daxsmbd::server
