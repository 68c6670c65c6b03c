// Byte-range locks (MS-FSA 2.1.1.7 ByteRangeLock, 2.1.4.10, 2.1.5.8, 2.1.5.9): one lock list per
// on-disk file, shared by every open of that file on every connection, with the queue of
// blocked lock requests waiting for a range to become free.
//
// Keyed by (device, inode) like the FileTable, so every path and every share that reaches the
// same file meets the same locks. An owner is the Open that took the lock (its address, compared
// only, never dereferenced); SMB2 has no lock key or pid in the lock context (smbtorture
// smb2.lock.context), so the open alone identifies the locker.
//
// Lifetime: locks and queued requests of an open are dropped by release_all(), which the LOCK
// handler arranges to run when the Open is destroyed (install_lock_release_hook), so an owner
// address is never reused while it still has entries here.
//
// Threads: every member function locks the table; wake callbacks run after the lock is dropped,
// on the thread that released the conflicting range, and must only post to the waiter's loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "protocol/result.h"
#include "server/state/file_table.h"

namespace daxsmbd::server {

struct Open;

// MS-FSA ByteRangeLock.OwnerOpen.
using LockOwner = const void*;

struct LockRange {
    uint64_t offset = 0;
    uint64_t length = 0;
    bool exclusive = false;
    bool operator==(const LockRange&) const = default;
};

// MS-FSA 2.1.5.8 / 2.1.5.9: a range whose last byte lies past 2^64 - 1 is
// STATUS_INVALID_LOCK_RANGE; zero-length ranges are valid anywhere.
constexpr bool lock_range_valid(uint64_t offset, uint64_t length) {
    return length == 0 || length - 1 <= UINT64_MAX - offset;
}

struct HeldLock {
    LockRange range;
    LockOwner owner = nullptr;
};

// MS-FSA 2.1.4.10: whether an access to [offset, offset + length) by `owner` conflicts with
// `lock`. `exclusive` is the access's intent (write or exclusive lock), `lock_intent` tells a
// lock request from I/O. The {0, 0} range and a lock on {0, 0} never overlap anything.
bool range_conflicts(const HeldLock& lock, uint64_t offset, uint64_t length, bool exclusive,
                     bool lock_intent, LockOwner owner);

// A lock request parked until its range is free (MS-FSA 2.1.5.8 "wait until there are no
// overlapping ByteRangeLocks or until the operation is canceled").
class LockWaiter {
  public:
    enum class State {
        Waiting,      // queued
        Granted,      // the lock is held now, by the waiter's owner
        OwnerClosed,  // the requesting open went away while waiting
        Cancelled,    // withdrawn by cancel()
    };
    State state() const { return state_.load(std::memory_order_acquire); }

  private:
    friend class LockTable;
    FileKey key_;
    LockOwner owner_ = nullptr;
    LockRange range_;
    std::function<void()> wake_;
    std::atomic<State> state_{State::Waiting};
};

class LockTable {
  public:
    LockTable() = default;
    LockTable(const LockTable&) = delete;
    LockTable& operator=(const LockTable&) = delete;

    // Takes every range for `owner`, or none (MS-SMB2 3.3.5.14.2: on a failure the locks taken
    // by the same request are released; done atomically here so that no other open ever sees a
    // partial set). Errors: InvalidLockRange, LockNotGranted (MS-FSA 2.1.4.10 conflict).
    // With `dry_run` nothing is kept: the answer says whether the ranges could be taken now.
    // `max_per_owner` ("max locks per open"): when the owner would hold more locks on the file
    // than that, nothing is taken and the answer is InsufficientResources.
    Status lock(const FileKey& key, LockOwner owner, std::span<const LockRange> ranges,
                bool dry_run = false, size_t max_per_owner = SIZE_MAX);

    // One range, waiting if it conflicts. The returned waiter is Granted when the lock could be
    // taken at once (`wake` is then never called) and Waiting otherwise; `wake` runs once, with
    // the table unlocked, when the state leaves Waiting through an unlock, a release_all() or a
    // close of the waiter's own owner. Errors: InvalidLockRange, InsufficientResources (the owner
    // already holds `max_per_owner` locks on the file; checked when the request arrives).
    Result<std::shared_ptr<LockWaiter>> lock_or_wait(const FileKey& key, LockOwner owner,
                                                     const LockRange& range,
                                                     std::function<void()> wake,
                                                     size_t max_per_owner = SIZE_MAX);
    // Withdraws a waiting request; returns the state it ended in (Cancelled, or Granted /
    // OwnerClosed when that happened first; a Granted lock then belongs to the owner).
    LockWaiter::State cancel(const std::shared_ptr<LockWaiter>& waiter);

    // MS-FSA 2.1.5.9: removes the owner's lock with exactly this offset and length, the exclusive
    // one first when both kinds are stacked. Errors: InvalidLockRange, RangeNotLocked.
    Status unlock(const FileKey& key, LockOwner owner, uint64_t offset, uint64_t length);

    // Drops every lock and queued request of `owner` on the file (CLOSE, MS-FSA 2.1.5.5) and
    // grants what can be granted now.
    void release_all(const FileKey& key, LockOwner owner);

    // MS-FSA 2.1.5.3 / 2.1.5.4 via 2.1.4.10 with LockIntent FALSE: false when a READ (write
    // false) or WRITE of [offset, offset + length) through `owner` conflicts with a byte-range
    // lock, i.e. the request fails with STATUS_FILE_LOCK_CONFLICT. Zero-length I/O never
    // conflicts (smbtorture smb2.lock.zerobyteread). Cheap when the file has no locks.
    bool allows_io(uint64_t device, uint64_t inode, LockOwner owner, uint64_t offset,
                   uint64_t length, bool write) const;
    bool allows_io(const FileKey& key, LockOwner owner, uint64_t offset, uint64_t length,
                   bool write) const {
        return allows_io(key.device, key.inode, owner, offset, length, write);
    }

    // The locks `owner` holds on the file, oldest first (what a persistent handle journals).
    std::vector<LockRange> locks_of(const FileKey& key, LockOwner owner) const;

    // For tests and diagnostics.
    size_t lock_count(const FileKey& key) const;
    // Every file's locks and waiting LOCK requests summed (metrics; walks the table).
    struct Totals {
        size_t locks = 0;
        size_t waiters = 0;
    };
    Totals totals() const;
    size_t waiter_count(const FileKey& key) const;

  private:
    struct FileLocks {
        std::vector<HeldLock> locks;
        std::deque<std::shared_ptr<LockWaiter>> waiters;
    };
    using WakeList = std::vector<std::shared_ptr<LockWaiter>>;

    static bool conflicts_any(const FileLocks& f, const LockRange& r, LockOwner owner);
    static size_t held_by(const FileLocks& f, LockOwner owner);
    // Grants queued requests that no longer conflict, in arrival order; collects the ones whose
    // state changed.
    static void grant_waiters(FileLocks& f, WakeList& woken);
    void drop_if_empty(const FileKey& key);
    static void run_wakes(const WakeList& woken);

    mutable std::mutex mu_;
    std::unordered_map<FileKey, FileLocks, FileKeyHash> files_;
    // Files with at least one lock: lets allows_io() skip the mutex when nothing is locked.
    std::atomic<size_t> locked_files_{0};
};

// Open::on_close is a single std::function; this adds `hook` to whatever is installed already
// (both run, the newest first). Call it from the open's loop, like every other Open mutation.
void add_close_hook(Open& open, std::function<void()> hook);

// Arranges, once per open, for its byte-range locks and queued lock requests to be released when
// the Open is destroyed (CLOSE, tree disconnect, logoff, connection loss).
void install_lock_release_hook(Open& open, LockTable& table);

}  // namespace daxsmbd::server
