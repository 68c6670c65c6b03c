#include "server/state/lock_table.h"

#include <algorithm>

#include "server/state/open.h"

namespace daxsmbd::server {

bool range_conflicts(const HeldLock& lock, uint64_t offset, uint64_t length, bool exclusive,
                     bool lock_intent, LockOwner owner) {
    // MS-FSA 2.1.4.10: the {0, 0} range conflicts with nothing, and a lock on {0, 0} overlaps
    // nothing.
    if (offset == 0 && length == 0) return false;
    if (lock.range.offset == 0 && lock.range.length == 0) return false;
    // Last bytes, computed as in the spec: offset + length - 1. For a zero-length range this is
    // offset - 1, which makes a zero-length lock at O collide only with ranges that contain both
    // O - 1 and O (smbtorture smb2.lock.zerobytelength). Offsets are validated, so a zero-length
    // range at 0 is the only wrap-around and it was handled above.
    const uint64_t last1 = offset + length - 1;
    const uint64_t last2 = lock.range.offset + lock.range.length - 1;
    if (!(offset <= last2 && last1 >= lock.range.offset)) return false;
    if (lock.range.exclusive) {
        // Exclusive locks block every access through other opens; the owner itself may read,
        // write and stack shared locks, but never a second overlapping exclusive lock.
        if (lock.owner != owner) return true;
        return exclusive && lock_intent;
    }
    // A shared lock blocks every access with exclusive intent (writes too, even the owner's).
    return exclusive;
}

bool LockTable::conflicts_any(const FileLocks& f, const LockRange& r, LockOwner owner) {
    for (const auto& l : f.locks)
        if (range_conflicts(l, r.offset, r.length, r.exclusive, true, owner)) return true;
    return false;
}

void LockTable::grant_waiters(FileLocks& f, WakeList& woken) {
    // MS-FSA 2.1.5.8: a waiting request proceeds once nothing overlapping conflicts. Earlier
    // requests are granted first, and a request granted in this pass counts for the later ones.
    for (auto it = f.waiters.begin(); it != f.waiters.end();) {
        auto& w = *it;
        if (conflicts_any(f, w->range_, w->owner_)) {
            ++it;
            continue;
        }
        f.locks.push_back(HeldLock{w->range_, w->owner_});
        w->state_.store(LockWaiter::State::Granted, std::memory_order_release);
        woken.push_back(w);
        it = f.waiters.erase(it);
    }
}

void LockTable::drop_if_empty(const FileKey& key) {
    auto it = files_.find(key);
    if (it == files_.end()) return;
    if (it->second.locks.empty() && it->second.waiters.empty()) files_.erase(it);
}

void LockTable::run_wakes(const WakeList& woken) {
    for (const auto& w : woken)
        if (w->wake_) w->wake_();
}

size_t LockTable::held_by(const FileLocks& f, LockOwner owner) {
    return size_t(std::count_if(f.locks.begin(), f.locks.end(),
                                [owner](const HeldLock& l) { return l.owner == owner; }));
}

Status LockTable::lock(const FileKey& key, LockOwner owner, std::span<const LockRange> ranges,
                       bool dry_run, size_t max_per_owner) {
    for (const auto& r : ranges)
        if (!lock_range_valid(r.offset, r.length)) return Error(NtStatus::InvalidLockRange);
    std::lock_guard lk(mu_);
    auto& f = files_[key];
    const size_t before = f.locks.size();
    if (max_per_owner != SIZE_MAX && held_by(f, owner) + ranges.size() > max_per_owner) {
        drop_if_empty(key);
        return Error(NtStatus::InsufficientResources);
    }
    for (const auto& r : ranges) {
        // Earlier ranges of the same request take part in the check (an exclusive range
        // followed by an overlapping one conflicts with itself, as on Windows).
        if (conflicts_any(f, r, owner)) {
            f.locks.resize(before);
            drop_if_empty(key);
            return Error(NtStatus::LockNotGranted);
        }
        f.locks.push_back(HeldLock{r, owner});
    }
    if (dry_run) {
        f.locks.resize(before);
        drop_if_empty(key);
        return {};
    }
    if (before == 0 && !f.locks.empty()) locked_files_.fetch_add(1, std::memory_order_relaxed);
    return {};
}

Result<std::shared_ptr<LockWaiter>> LockTable::lock_or_wait(const FileKey& key, LockOwner owner,
                                                            const LockRange& range,
                                                            std::function<void()> wake,
                                                            size_t max_per_owner) {
    if (!lock_range_valid(range.offset, range.length)) return Error(NtStatus::InvalidLockRange);
    auto w = std::make_shared<LockWaiter>();
    w->key_ = key;
    w->owner_ = owner;
    w->range_ = range;
    std::lock_guard lk(mu_);
    auto& f = files_[key];
    if (max_per_owner != SIZE_MAX && held_by(f, owner) + 1 > max_per_owner) {
        drop_if_empty(key);
        return Error(NtStatus::InsufficientResources);
    }
    // A request queued behind others still takes the lock at once when it does not conflict:
    // MS-FSA 2.1.5.8 only waits for overlapping locks.
    if (!conflicts_any(f, range, owner)) {
        if (f.locks.empty()) locked_files_.fetch_add(1, std::memory_order_relaxed);
        f.locks.push_back(HeldLock{range, owner});
        w->state_.store(LockWaiter::State::Granted, std::memory_order_release);
        return w;
    }
    w->wake_ = std::move(wake);
    f.waiters.push_back(w);
    return w;
}

LockWaiter::State LockTable::cancel(const std::shared_ptr<LockWaiter>& waiter) {
    std::lock_guard lk(mu_);
    if (waiter->state() != LockWaiter::State::Waiting) return waiter->state();
    auto it = files_.find(waiter->key_);
    if (it != files_.end()) {
        auto& q = it->second.waiters;
        q.erase(std::remove(q.begin(), q.end(), waiter), q.end());
        drop_if_empty(waiter->key_);
    }
    waiter->state_.store(LockWaiter::State::Cancelled, std::memory_order_release);
    return LockWaiter::State::Cancelled;
}

Status LockTable::unlock(const FileKey& key, LockOwner owner, uint64_t offset, uint64_t length) {
    if (!lock_range_valid(offset, length)) return Error(NtStatus::InvalidLockRange);
    WakeList woken;
    {
        std::lock_guard lk(mu_);
        auto it = files_.find(key);
        if (it == files_.end()) return Error(NtStatus::RangeNotLocked);
        auto& locks = it->second.locks;
        // MS-FSA 2.1.5.9: exact offset and length of one of the owner's locks; when an exclusive
        // and shared locks are stacked on the range, the exclusive one goes first.
        auto victim = locks.end();
        for (auto l = locks.begin(); l != locks.end(); ++l) {
            if (l->owner != owner || l->range.offset != offset || l->range.length != length)
                continue;
            victim = l;
            if (l->range.exclusive) break;
        }
        if (victim == locks.end()) return Error(NtStatus::RangeNotLocked);
        locks.erase(victim);
        grant_waiters(it->second, woken);
        if (locks.empty()) locked_files_.fetch_sub(1, std::memory_order_relaxed);
        drop_if_empty(key);
    }
    run_wakes(woken);
    return {};
}

void LockTable::release_all(const FileKey& key, LockOwner owner) {
    WakeList woken;
    {
        std::lock_guard lk(mu_);
        auto it = files_.find(key);
        if (it == files_.end()) return;
        auto& f = it->second;
        const bool had_locks = !f.locks.empty();
        std::erase_if(f.locks, [&](const HeldLock& l) { return l.owner == owner; });
        for (auto w = f.waiters.begin(); w != f.waiters.end();) {
            if ((*w)->owner_ != owner) {
                ++w;
                continue;
            }
            (*w)->state_.store(LockWaiter::State::OwnerClosed, std::memory_order_release);
            woken.push_back(*w);
            w = f.waiters.erase(w);
        }
        grant_waiters(f, woken);
        if (had_locks && f.locks.empty()) locked_files_.fetch_sub(1, std::memory_order_relaxed);
        if (!had_locks && !f.locks.empty()) locked_files_.fetch_add(1, std::memory_order_relaxed);
        drop_if_empty(key);
    }
    run_wakes(woken);
}

bool LockTable::allows_io(uint64_t device, uint64_t inode, LockOwner owner, uint64_t offset,
                          uint64_t length, bool write) const {
    if (length == 0) return true;
    if (locked_files_.load(std::memory_order_relaxed) == 0) return true;
    // A range running past 2^64 - 1 is clamped: the READ/WRITE handlers refuse such offsets
    // before asking, this only keeps the arithmetic defined.
    if (length - 1 > UINT64_MAX - offset) length = UINT64_MAX - offset + 1;
    std::lock_guard lk(mu_);
    auto it = files_.find(FileKey{device, inode});
    if (it == files_.end()) return true;
    for (const auto& l : it->second.locks)
        if (range_conflicts(l, offset, length, write, false, owner)) return false;
    return true;
}

std::vector<LockRange> LockTable::locks_of(const FileKey& key, LockOwner owner) const {
    std::vector<LockRange> out;
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return out;
    for (const HeldLock& l : it->second.locks)
        if (l.owner == owner) out.push_back(l.range);
    return out;
}

size_t LockTable::lock_count(const FileKey& key) const {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    return it == files_.end() ? 0 : it->second.locks.size();
}

LockTable::Totals LockTable::totals() const {
    std::lock_guard lk(mu_);
    Totals t;
    for (const auto& [key, f] : files_) {
        t.locks += f.locks.size();
        t.waiters += f.waiters.size();
    }
    return t;
}

size_t LockTable::waiter_count(const FileKey& key) const {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    return it == files_.end() ? 0 : it->second.waiters.size();
}

void add_close_hook(Open& open, std::function<void()> hook) {
    std::lock_guard lk(open.mu);
    if (!open.on_close) {
        open.on_close = std::move(hook);
        return;
    }
    open.on_close = [hook = std::move(hook), prev = std::move(open.on_close)] {
        hook();
        prev();
    };
}

void install_lock_release_hook(Open& open, LockTable& table) {
    {
        std::lock_guard lk(open.mu);
        if (open.local.lock_release_hook) return;
        open.local.lock_release_hook = true;
    }
    const FileKey key{open.local.device, open.local.file_id};
    const LockOwner owner = &open;
    add_close_hook(open, [&table, key, owner] { table.release_all(key, owner); });
}

}  // namespace daxsmbd::server
