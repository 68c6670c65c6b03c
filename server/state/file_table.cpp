#include "server/state/file_table.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "server/log.h"
#include "server/vfs/metadata.h"
#include "server/vfs/open.h"

namespace daxsmbd::server {

namespace am = protocol::access_mask;
namespace sa = protocol::share_access;

namespace {

// The rights that take part in sharing (MS-FSA 2.1.5.1.2.2).
constexpr uint32_t kReadish = am::kFileReadData | am::kFileExecute;
constexpr uint32_t kWriteish = am::kFileWriteData | am::kFileAppendData;
constexpr uint32_t kSharingRights = kReadish | kWriteish | am::kDelete;

}  // namespace

bool sharing_conflict(const ShareMode& existing, const ShareMode& wanted) {
    // MS-FSA 2.1.5.1.2.2: only opens that touch data (or may delete) are checked, in both
    // directions.
    if (!(wanted.access & kSharingRights) || !(existing.access & kSharingRights)) return false;
    if (!(existing.share_access & sa::kRead) && (wanted.access & kReadish)) return true;
    if (!(existing.share_access & sa::kWrite) && (wanted.access & kWriteish)) return true;
    if (!(existing.share_access & sa::kDelete) && (wanted.access & am::kDelete)) return true;
    if (!(wanted.share_access & sa::kRead) && (existing.access & kReadish)) return true;
    if (!(wanted.share_access & sa::kWrite) && (existing.access & kWriteish)) return true;
    if (!(wanted.share_access & sa::kDelete) && (existing.access & am::kDelete)) return true;
    return false;
}

Status FileTable::check_locked(const FileKey& key, ShareMode mode) const {
    auto it = files_.find(key);
    if (it == files_.end()) return {};
    // MS-FSA 2.1.5.1 phase 6: a link whose delete is pending cannot be opened.
    if (it->second.delete_pending) return Error(NtStatus::DeletePending);
    for (const auto& o : it->second.opens)
        if (sharing_conflict(o.mode, mode)) return Error(NtStatus::SharingViolation);
    return {};
}

Status FileTable::check(const FileKey& key, ShareMode mode) const {
    std::lock_guard lk(mu_);
    return check_locked(key, mode);
}

Result<FileTable::Token> FileTable::add(const FileKey& key, ShareMode mode, bool delete_on_close,
                                        std::string_view path, const OplockOpenIntent* intent) {
    std::lock_guard lk(mu_);
    if (intent) {
        auto it = files_.find(key);
        // Oplocks are broken before share modes are checked: a BATCH holder may close its
        // cached handle on the break, and then the open succeeds (MS-FSA 2.1.5.1.2.1).
        if (it != files_.end() && !it->second.delete_pending) {
            // A sharing violation breaks HANDLE caching too, so that a holder may close the
            // handles it keeps cached (MS-FSA 2.1.5.1.2.1).
            const bool violation = !check_locked(key, mode);
            if (start_breaks_locked(it->second, *intent, violation))
                return Error(NtStatus::OplockBreakInProgress);
        }
    }
    DAX_CHECK(check_locked(key, mode));
    auto& rec = files_[key];
    if (rec.opens.empty() || rec.path.empty()) rec.path = std::string(path);
    Token t = next_token_++;
    OpenRecord r;
    r.token = t;
    r.mode = mode;
    r.delete_on_close = delete_on_close;
    rec.opens.push_back(std::move(r));
    return t;
}

bool FileTable::start_breaks_locked(FileRecord& rec, const OplockOpenIntent& intent,
                                    bool sharing_violation) {
    // MS-FSA 2.1.4.12, Operation OPEN: an open asking only for attributes (and SYNCHRONIZE)
    // that does not overwrite leaves BATCH/EXCLUSIVE oplocks alone; anything else breaks them
    // to LEVEL_II, or to NONE when it overwrites or supersedes the data. LEVEL_II oplocks only
    // break (to NONE, no acknowledgment) for an overwrite.
    constexpr uint32_t kAttributeOnly =
        am::kFileReadAttributes | am::kFileWriteAttributes | am::kSynchronize;
    const bool breaks_exclusive = intent.overwrite || (intent.access & ~kAttributeOnly);
    bool wait = start_lease_breaks_locked(rec, intent, sharing_violation);
    for (auto& o : rec.opens) {
        if (o.lease) continue;
        if (o.breaking || o.purging) {
            wait = wait || breaks_exclusive;
            continue;
        }
        if (o.oplock == oplock::kBatch || o.oplock == oplock::kExclusive) {
            if (!breaks_exclusive) continue;
            // An open that fails with a sharing violation anyway breaks only what lets the
            // holder close a cached handle: a batch oplock, not an exclusive one (Windows;
            // smbtorture smb2.oplock.exclusive1).
            if (sharing_violation && o.oplock == oplock::kExclusive) continue;
            const uint8_t to = intent.overwrite ? oplock::kNone : oplock::kII;
            if (!o.notifier) {  // nobody left to tell: the holder's connection is gone
                if (o.purge && !o.purging) {
                    o.purging = true;
                    o.purge();
                    wait = true;
                    continue;
                }
                set_oplock_locked(o, to);
                continue;
            }
            o.breaking = true;
            o.breaking_to = to;
            o.notifier(to);
            wait = true;
        } else if (o.oplock == oplock::kII && intent.overwrite) {
            set_oplock_locked(o, oplock::kNone);
            if (o.notifier) o.notifier(oplock::kNone);
        }
    }
    return wait;
}

bool FileTable::start_lease_breaks_locked(FileRecord& rec, const OplockOpenIntent& intent,
                                          bool sharing_violation) {
    // MS-FSA 2.1.4.12 (OPEN) as Windows and Samba apply it to leases: an open of another lease
    // key (or of none) that touches data takes WRITE caching away, a sharing violation only
    // HANDLE caching (the open fails anyway; smbtorture smb2.lease.break_twice), a
    // delete-on-close open HANDLE caching too (smb2.lease.unlink), an overwrite everything; the
    // opener waits for the holder's acknowledgment when it loses what it takes away (not for
    // READ caching). An attribute-only open breaks nothing.
    constexpr uint32_t kStatOnly =
        am::kFileReadAttributes | am::kFileWriteAttributes | am::kSynchronize | am::kReadControl;
    if (!intent.overwrite && !(intent.access & ~kStatOnly)) return false;
    uint32_t delay_mask =
        sharing_violation ? lease_bits::kHandleCaching : lease_bits::kWriteCaching;
    if (intent.delete_on_close) delay_mask |= lease_bits::kHandleCaching;
    bool wait = false;
    for (auto& o : rec.opens) {
        if (!o.lease || (intent.lease && *intent.lease == o.lease->id)) continue;
        LeaseRecord& l = *o.lease;
        const uint32_t cur = l.breaking ? l.pending_to : l.state;
        // Without HANDLE caching nothing would let a sharing violation go away: no break.
        if (sharing_violation && !intent.overwrite && !(cur & lease_bits::kHandleCaching)) continue;
        uint32_t to = cur & ~delay_mask;
        if (intent.overwrite) to &= ~(lease_bits::kHandleCaching | lease_bits::kReadCaching);
        if (to != cur && !l.notifier && purge_lease_locked(rec, l)) {
            wait = true;
            continue;
        }
        if (to != cur && break_lease_locked(l, to) && (cur & delay_mask)) wait = true;
        // A break already in flight that takes away what this open needs gone.
        if (l.breaking && (l.state & delay_mask)) wait = true;
    }
    return wait;
}

bool FileTable::break_lease_locked(LeaseRecord& l, uint32_t to, bool next_epoch) {
    if (l.breaking) {
        // MS-SMB2 3.3.4.7: one break at a time; the lower state is offered once this one is
        // acknowledged.
        l.pending_to &= to;
        return true;
    }
    const uint32_t cur = l.state;
    // Breaking from READ caching alone needs no acknowledgment (MS-SMB2 3.3.4.7).
    const bool ack = (cur & (lease_bits::kWriteCaching | lease_bits::kHandleCaching)) != 0;
    if (!l.notifier) {  // nobody left to tell
        set_lease_state_locked(l, to);
        return false;
    }
    if (l.version == 2 && next_epoch) ++l.epoch;
    LeaseBreak b;
    b.key = l.id.key;
    b.version = l.version;
    b.new_epoch = l.epoch;
    b.current_state = cur;
    b.new_state = to;
    b.ack_required = ack;
    if (ack) {
        l.breaking = true;
        l.breaking_to = to;
        l.pending_to = to;
    } else {
        set_lease_state_locked(l, to);
    }
    l.notifier(b);
    return ack;
}

void FileTable::set_lease_state_locked(LeaseRecord& l, uint32_t state) {
    // A directory's READ caching is broken by changes inside it, never by writes.
    if (l.directory) {
        l.state = state;
        return;
    }
    const bool had_read = l.state & lease_bits::kReadCaching;
    const bool has_read = state & lease_bits::kReadCaching;
    if (had_read && !has_read) --level2_oplocks_;
    if (!had_read && has_read) ++level2_oplocks_;
    l.state = state;
}

void FileTable::drop_lease_locked(OpenRecord& o) {
    if (!o.lease) return;
    auto l = std::move(o.lease);
    if (--l->opens > 0) return;
    // The lease's last open is gone (MS-SMB2 3.3.4.17): so is the lease, and any break of it.
    set_lease_state_locked(*l, 0);
    l->breaking = false;
    if (l->directory) --directory_leases_;
    leases_.erase(l->id);
}

Result<std::optional<LeaseGrant>> FileTable::grant_lease(const FileKey& key, Token token,
                                                         const LeaseRequest& req, bool is_directory,
                                                         LeaseBreakNotifier notifier,
                                                         bool directory_leasing) {
    std::lock_guard lk(mu_);
    auto lit = leases_.find(req.id);
    // MS-SMB2 3.3.5.9.8: a lease key names one file.
    if (lit != leases_.end() && !(lit->second->file == key))
        return Error(NtStatus::InvalidParameter);
    if (is_directory && !directory_leasing) return std::optional<LeaseGrant>{};
    auto it = files_.find(key);
    if (it == files_.end()) return std::optional<LeaseGrant>{};
    auto self = std::find_if(it->second.opens.begin(), it->second.opens.end(),
                             [&](const OpenRecord& r) { return r.token == token; });
    if (self == it->second.opens.end()) return std::optional<LeaseGrant>{};
    std::shared_ptr<LeaseRecord> l;
    const bool fresh = lit == leases_.end();
    if (fresh) {
        l = std::make_shared<LeaseRecord>();
        l->id = req.id;
        l->file = key;
        l->version = req.version;
        l->epoch = req.epoch;
        l->parent_key = req.parent_key;
        l->directory = is_directory;
        if (is_directory) ++directory_leases_;
        leases_.emplace(req.id, l);
    } else {
        l = lit->second;
    }
    if (self->lease != l) {
        drop_lease_locked(*self);
        self->lease = l;
        ++l->opens;
    }
    l->notifier = std::move(notifier);
    if (!l->breaking) {
        // Only R, RH, RW and RWH are states (MS-SMB2 2.2.13.2.8); anything else gets nothing.
        uint32_t want = req.state & (lease_bits::kReadCaching | lease_bits::kHandleCaching |
                                     lease_bits::kWriteCaching);
        if (!(want & lease_bits::kReadCaching)) want = 0;
        // MS-SMB2 3.3.5.9.11: a directory is cached for reading and handles, never written.
        if (l->directory) want &= ~lease_bits::kWriteCaching;
        uint32_t allowed = want;
        bool other_leases = false;
        for (const auto& o : it->second.opens) {
            if (o.token == token || o.lease == l) continue;
            // Opens that touch no data (stat opens) leave WRITE caching possible, unless they
            // hold a lease of their own.
            if ((o.mode.access & kSharingRights) || (o.lease && o.lease->state))
                allowed &= ~lease_bits::kWriteCaching;
            if (o.lease && o.lease->state) other_leases = true;
            // Next to an oplock, a lease gets READ caching only (Windows; smbtorture
            // smb2.lease.oplock).
            if (o.oplock != oplock::kNone) allowed &= lease_bits::kReadCaching;
            if (o.breaking || o.oplock == oplock::kBatch || o.oplock == oplock::kExclusive ||
                (o.lease && (o.lease->state & lease_bits::kWriteCaching)))
                allowed = 0;
        }
        // An existing lease is only ever upgraded (MS-FSA 2.1.5.17.2). While other lease keys
        // share the file, only to exactly the state asked for, a strict superset of the held
        // one that the other opens allow, else not at all (Windows; smbtorture
        // smb2.lease.break, upgrade3).
        if (!fresh && other_leases && l->state)
            allowed = (want & ~allowed) == 0 && (want & l->state) == l->state ? want : l->state;
        if ((allowed & l->state) == l->state && allowed != l->state) {
            set_lease_state_locked(*l, allowed);
            if (l->version == 2) ++l->epoch;
        } else if (fresh && l->version == 2) {
            ++l->epoch;
        }
    }
    return std::optional<LeaseGrant>{grant_of(*l)};
}

bool FileTable::purge_lease_locked(FileRecord& rec, const LeaseRecord& l) {
    bool any = false;
    for (auto& o : rec.opens) {
        if (o.lease.get() != &l || !o.purge) continue;
        any = true;
        if (o.purging) continue;
        o.purging = true;
        o.purge();
    }
    return any;
}

LeaseGrant FileTable::grant_of(const LeaseRecord& l) {
    LeaseGrant g;
    g.state = l.state;
    g.breaking = l.breaking;
    g.epoch = l.epoch;
    g.version = l.version;
    g.parent_key = l.parent_key;
    return g;
}

void FileTable::disconnect(const FileKey& key, Token token, std::function<void()> purge) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return;
    for (auto& o : it->second.opens) {
        if (o.token != token) continue;
        o.notifier = nullptr;
        o.purge = std::move(purge);
        o.purging = false;
        if (!o.lease) {
            // A break sent just before the connection was lost can never be acknowledged now.
            if (o.breaking) {
                o.purging = true;
                o.purge();
            }
            break;
        }
        // The lease is only out of reach when all of its opens are.
        bool reachable = false;
        for (const auto& other : it->second.opens)
            if (other.lease == o.lease && !other.purge) reachable = true;
        if (!reachable) {
            o.lease->notifier = nullptr;
            if (o.lease->breaking) purge_lease_locked(it->second, *o.lease);
        }
        break;
    }
}

FileTable::Held FileTable::reconnect(const FileKey& key, Token token,
                                     OplockBreakNotifier oplock_notifier,
                                     LeaseBreakNotifier lease_notifier) {
    std::lock_guard lk(mu_);
    Held h;
    auto it = files_.find(key);
    if (it == files_.end()) return h;
    for (auto& o : it->second.opens) {
        if (o.token != token) continue;
        o.purge = nullptr;
        o.purging = false;
        o.notifier = std::move(oplock_notifier);
        h.oplock = o.oplock;
        if (o.lease) {
            o.lease->notifier = std::move(lease_notifier);
            h.oplock = oplock::kLease;
            h.lease = grant_of(*o.lease);
        }
        break;
    }
    return h;
}

FileTable::Held FileTable::held(const FileKey& key, Token token) const {
    std::lock_guard lk(mu_);
    Held h;
    auto it = files_.find(key);
    if (it == files_.end()) return h;
    for (const auto& o : it->second.opens) {
        if (o.token != token) continue;
        h.oplock = o.oplock;
        if (o.lease) {
            h.oplock = oplock::kLease;
            h.lease = grant_of(*o.lease);
        }
    }
    return h;
}

Result<uint32_t> FileTable::acknowledge_lease_break(const LeaseId& id, uint32_t state) {
    std::lock_guard lk(mu_);
    auto lit = leases_.find(id);
    if (lit == leases_.end()) return Error(NtStatus::ObjectNameNotFound);
    LeaseRecord& l = *lit->second;
    // MS-SMB2 3.3.5.22.2.
    if (!l.breaking) return Error(NtStatus::Unsuccessful);
    if (state & ~l.breaking_to) return Error(NtStatus::RequestNotAccepted);
    l.breaking = false;
    set_lease_state_locked(l, state);
    if (state & ~l.pending_to) {
        // A lower state became needed while this break was in flight: the next break keeps
        // READ caching while the lease still holds more than that, as Windows breaks in steps
        // (RH to R, acknowledged, then R to none; smbtorture smb2.lease.breaking3).
        const uint32_t needed = state & l.pending_to;
        uint32_t next = needed;
        if (state & ~lease_bits::kReadCaching) next |= state & lease_bits::kReadCaching;
        // The lower state stays needed after this step. The steps carry the epoch of the
        // break they continue (smbtorture smb2.lease.v2_breaking3).
        if (break_lease_locked(l, next, false)) l.pending_to = needed;
    }
    auto fit = files_.find(l.file);
    if (fit != files_.end()) wake_if_resolved_locked(fit->second);
    return state;
}

uint32_t FileTable::lease_state(const LeaseId& id) const {
    std::lock_guard lk(mu_);
    auto lit = leases_.find(id);
    return lit == leases_.end() ? 0 : lit->second->state;
}

bool FileTable::break_directory_leases(const FileKey& dir, const std::optional<LeaseId>& except) {
    if (!has_directory_leases()) return false;
    bool wait = false;
    BreakExpiry expiry;
    {
        std::lock_guard lk(mu_);
        auto it = files_.find(dir);
        if (it == files_.end()) return false;
        for (auto& o : it->second.opens) {
            if (!o.lease || !o.lease->directory || (except && *except == o.lease->id)) continue;
            LeaseRecord& l = *o.lease;
            // Each lease once, however many of its opens the directory has.
            if ((l.breaking ? l.pending_to : l.state) == 0) continue;
            if (break_lease_locked(l, 0)) wait = true;
        }
        if (wait) expiry = break_expiry_;
    }
    if (expiry) expiry(dir);
    return wait;
}

void FileTable::set_break_expiry(BreakExpiry expiry) {
    std::lock_guard lk(mu_);
    break_expiry_ = std::move(expiry);
}

void break_parent_directory_leases(FileTable& files, const vfs::ShareRoot& root,
                                   std::string_view child_path,
                                   const std::optional<LeaseId>& except) {
    if (!files.has_directory_leases() || child_path.empty()) return;
    const size_t slash = child_path.rfind('/');
    const std::string_view parent =
        slash == std::string_view::npos ? std::string_view{} : child_path.substr(0, slash);
    auto fd = vfs::open_beneath(root, parent, O_PATH | O_DIRECTORY);
    if (!fd) return;  // gone meanwhile: so is its lease's reason to exist
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return;
    files.break_directory_leases(FileKey{uint64_t(st.st_dev), uint64_t(st.st_ino)}, except);
}

std::optional<LeaseId> FileTable::parent_lease(const FileKey& key, Token token) const {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return std::nullopt;
    for (const auto& o : it->second.opens) {
        if (o.token != token || !o.lease || !o.lease->parent_key) continue;
        return LeaseId{o.lease->id.client_guid, *o.lease->parent_key};
    }
    return std::nullopt;
}

size_t FileTable::lease_count() const {
    std::lock_guard lk(mu_);
    return leases_.size();
}

size_t LeaseIdHash::operator()(const LeaseId& id) const {
    uint64_t a = 0, b = 0;
    std::memcpy(&a, id.key.data(), 8);
    std::memcpy(&b, id.client_guid.data(), 8);
    return std::hash<uint64_t>()(a * 0x9E3779B97F4A7C15ull ^ b);
}

void FileTable::set_oplock_locked(OpenRecord& o, uint8_t level) {
    if (o.oplock == oplock::kII) --level2_oplocks_;
    if (level == oplock::kII) ++level2_oplocks_;
    o.oplock = level;
}

void FileTable::wake_if_resolved_locked(FileRecord& rec) {
    if (rec.break_waiters.empty()) return;
    for (const auto& o : rec.opens)
        if (o.breaking_any()) return;
    auto waiters = std::move(rec.break_waiters);
    rec.break_waiters.clear();
    for (auto& w : waiters)
        w();
}

uint8_t FileTable::grant_oplock(const FileKey& key, Token token, uint8_t requested,
                                bool is_directory, OplockBreakNotifier notifier) {
    // MS-SMB2 3.3.5.9: directories get no oplock; LEASE (0xFF) is answered by the lease
    // code, which does not exist yet, so it gets NONE too.
    if (is_directory) return oplock::kNone;
    if (requested != oplock::kII && requested != oplock::kExclusive && requested != oplock::kBatch)
        return oplock::kNone;
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return oplock::kNone;
    OpenRecord* self = nullptr;
    bool others = false, other_exclusive = false;
    for (auto& o : it->second.opens) {
        if (o.token == token) {
            self = &o;
            continue;
        }
        others = true;
        if (o.breaking_any() || o.oplock == oplock::kBatch || o.oplock == oplock::kExclusive ||
            (o.lease && (o.lease->state & lease_bits::kWriteCaching)))
            other_exclusive = true;
        // An oplock next to a HANDLE caching lease is not granted (Windows; smbtorture
        // smb2.lease.oplock).
        if (o.lease && (o.lease->state & lease_bits::kHandleCaching)) other_exclusive = true;
    }
    if (!self) return oplock::kNone;
    // MS-FSA 2.1.5.17.2: BATCH and EXCLUSIVE only for the stream's only open; LEVEL_II (also
    // what a BATCH/EXCLUSIVE request gets when others have the file open) only while nobody
    // else holds or is breaking an exclusive one.
    uint8_t level = requested;
    if (level != oplock::kII && others) level = oplock::kII;
    if (level == oplock::kII && other_exclusive) level = oplock::kNone;
    set_oplock_locked(*self, level);
    self->notifier = std::move(notifier);
    return level;
}

uint8_t FileTable::oplock_level(const FileKey& key, Token token) const {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return oplock::kNone;
    for (const auto& o : it->second.opens)
        if (o.token == token) return o.oplock;
    return oplock::kNone;
}

Result<uint8_t> FileTable::acknowledge_break(const FileKey& key, Token token, uint8_t level) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return Error(NtStatus::FileClosed);
    auto& rec = it->second;
    auto o = std::find_if(rec.opens.begin(), rec.opens.end(),
                          [&](const OpenRecord& r) { return r.token == token; });
    if (o == rec.opens.end()) return Error(NtStatus::FileClosed);
    // MS-SMB2 3.3.5.22.1, in its order.
    if ((o->oplock == oplock::kExclusive || o->oplock == oplock::kBatch) && level != oplock::kII &&
        level != oplock::kNone)
        return Error(NtStatus::InvalidOplockProtocol);
    if (o->oplock == oplock::kII && level != oplock::kNone)
        return Error(NtStatus::InvalidOplockProtocol);
    // MS-FSA 2.1.5.18: an open without any oplock (a LEVEL_II broken to NONE, which needs no
    // acknowledgment) is refused with INVALID_OPLOCK_PROTOCOL (smbtorture
    // smb2.oplock.levelii500); one that holds an oplock not being broken with
    // INVALID_DEVICE_STATE (MS-SMB2 3.3.5.22.1).
    if (!o->breaking && o->oplock == oplock::kNone) return Error(NtStatus::InvalidOplockProtocol);
    if (!o->breaking) return Error(NtStatus::InvalidDeviceState);
    o->breaking = false;
    // MS-FSA 2.1.5.18: acknowledging a higher level than the break offered ends the oplock.
    if (level > o->breaking_to) {
        set_oplock_locked(*o, oplock::kNone);
        wake_if_resolved_locked(rec);
        return Error(NtStatus::InvalidOplockProtocol);
    }
    set_oplock_locked(*o, level);
    wake_if_resolved_locked(rec);
    return level;
}

bool FileTable::when_breaks_resolved(const FileKey& key, std::function<void()> wake) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return false;
    bool breaking = std::any_of(it->second.opens.begin(), it->second.opens.end(),
                                [](const OpenRecord& o) { return o.breaking_any(); });
    if (!breaking) return false;
    it->second.break_waiters.push_back(std::move(wake));
    return true;
}

void FileTable::expire_breaks(const FileKey& key) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return;
    for (auto& o : it->second.opens) {
        if (o.lease && o.lease->breaking) {
            // MS-SMB2 3.3.2.5: a lease whose break is not acknowledged in time loses all
            // caching (smbtorture smb2.lease.timeout).
            log_info("lease break of file ", key.inode, " not acknowledged in time: lease dropped");
            o.lease->breaking = false;
            set_lease_state_locked(*o.lease, 0);
        }
        if (!o.breaking) continue;
        log_info("oplock break of file ", key.inode, " not acknowledged in time: oplock dropped");
        o.breaking = false;
        set_oplock_locked(o, oplock::kNone);
    }
    wake_if_resolved_locked(it->second);
}

void FileTable::break_level2_oplocks(const FileKey& key, Token except) {
    if (level2_oplocks_.load(std::memory_order_relaxed) == 0) return;
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return;
    std::shared_ptr<LeaseRecord> own;
    for (auto& o : it->second.opens)
        if (o.token == except) own = o.lease;
    for (auto& o : it->second.opens) {
        if (o.lease && o.lease != own && o.token != except) {
            const uint32_t cur = o.lease->breaking ? o.lease->pending_to : o.lease->state;
            if (cur & lease_bits::kReadCaching) break_lease_locked(*o.lease, 0);
            continue;
        }
        // The writer's own LEVEL_II oplock breaks too (Windows; smbtorture smb2.oplock.batch1,
        // batch6, brl1): its cached reads are stale as well.
        if (o.oplock != oplock::kII || o.breaking) continue;
        set_oplock_locked(o, oplock::kNone);
        if (o.notifier) o.notifier(oplock::kNone);
    }
}

bool FileTable::break_handle_caching(const FileKey& key, Token token) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return false;
    FileRecord& rec = it->second;
    std::shared_ptr<LeaseRecord> own;
    for (const auto& o : rec.opens)
        if (o.token == token) own = o.lease;
    bool wait = false;
    for (auto& o : rec.opens) {
        if (!o.lease || o.lease == own) continue;
        LeaseRecord& l = *o.lease;
        const uint32_t cur = l.breaking ? l.pending_to : l.state;
        if (cur & lease_bits::kHandleCaching) {
            if (!l.notifier && purge_lease_locked(rec, l)) {
                wait = true;
                continue;
            }
            if (break_lease_locked(l, cur & ~lease_bits::kHandleCaching)) wait = true;
        }
        // A break in flight that still leaves HANDLE caching held.
        if (l.breaking && (l.state & lease_bits::kHandleCaching)) wait = true;
    }
    return wait;
}

bool FileTable::remove(const FileKey& key, Token token, const Deleter& deleter) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return false;
    auto& rec = it->second;
    auto o = std::find_if(rec.opens.begin(), rec.opens.end(),
                          [&](const OpenRecord& r) { return r.token == token; });
    if (o == rec.opens.end()) return false;
    // MS-FSA 2.1.5.4: closing an open that was created with FILE_DELETE_ON_CLOSE marks the file
    // for deletion; the deletion itself waits for the last open.
    if (o->delete_on_close) mark_delete_pending_locked(rec);
    set_oplock_locked(*o, oplock::kNone);
    drop_lease_locked(*o);
    rec.opens.erase(o);
    // A closed open ends its break (MS-SMB2 3.3.4.6: the opener waiting for it goes on).
    wake_if_resolved_locked(rec);
    if (!rec.opens.empty()) return false;
    bool deleted = false;
    if (rec.delete_pending && deleter) {
        deleter(rec.path);
        deleted = true;
    }
    files_.erase(it);
    return deleted;
}

Status FileTable::set_delete_pending(const FileKey& key, bool pending) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return Error(NtStatus::ObjectNameNotFound);
    if (pending)
        mark_delete_pending_locked(it->second);
    else
        it->second.delete_pending = false;
    return {};
}

bool FileTable::delete_pending(const FileKey& key) const {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    return it != files_.end() && it->second.delete_pending;
}

bool FileTable::when_delete_pending(const FileKey& key, std::function<void()> wake) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end() || it->second.delete_pending) return false;
    it->second.delete_waiters.push_back(std::move(wake));
    return true;
}

void FileTable::mark_delete_pending_locked(FileRecord& rec) {
    rec.delete_pending = true;
    // The wakers only post to their loops: safe under the table lock.
    for (auto& w : rec.delete_waiters)
        w();
    rec.delete_waiters.clear();
}

Status FileTable::set_delete_on_close(const FileKey& key, Token token, bool on) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return Error(NtStatus::ObjectNameNotFound);
    for (auto& o : it->second.opens) {
        if (o.token == token) {
            o.delete_on_close = on;
            return {};
        }
    }
    return Error(NtStatus::ObjectNameNotFound);
}

void FileTable::set_path(const FileKey& key, std::string_view path) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it != files_.end()) it->second.path = std::string(path);
}

std::string FileTable::path(const FileKey& key) const {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    return it == files_.end() ? std::string() : it->second.path;
}

size_t FileTable::open_count(const FileKey& key) const {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    return it == files_.end() ? 0 : it->second.opens.size();
}

uint64_t FileTable::add_unlink_listener(UnlinkListener listener) {
    std::lock_guard lk(listeners_mu_);
    unlink_listeners_.emplace_back(next_listener_, std::move(listener));
    return next_listener_++;
}

void FileTable::remove_unlink_listener(uint64_t id) {
    std::lock_guard lk(listeners_mu_);
    std::erase_if(unlink_listeners_, [id](const auto& l) { return l.first == id; });
}

void FileTable::file_unlinked(const FileKey& key) {
    std::lock_guard lk(listeners_mu_);
    for (const auto& [id, listener] : unlink_listeners_)
        listener(key);
}

size_t FileTable::file_count() const {
    std::lock_guard lk(mu_);
    return files_.size();
}

// ---------------------------------------------------------------------------------------------

Status delete_if_same_file(const vfs::ShareRoot& root, const FileKey& key,
                           const std::string& path) {
    // The share root has no parent in the share and is never deleted.
    if (path.empty()) return Error(NtStatus::AccessDenied);
    DAX_TRY(auto parent, vfs::open_parent_beneath(root, path));
    DAX_TRY(auto info, vfs::query_info_at(parent.dir.get(), parent.name));
    if (info.device != key.device || info.file_id != key.inode)
        return Error(NtStatus::ObjectNameNotFound);
    return vfs::unlink_beneath(root, path);
}

FileRegistration::FileRegistration(FileTable& table, FileKey key, FileTable::Token token,
                                   std::shared_ptr<const vfs::ShareRoot> root)
    : table_(table), key_(key), token_(token), root_(std::move(root)) {}

void FileRegistration::break_parent_directory_leases(std::string_view path) const {
    if (!table_.has_directory_leases() || !root_) return;
    server::break_parent_directory_leases(table_, *root_, path, table_.parent_lease(key_, token_));
}

FileRegistration::~FileRegistration() {
    release();
}

bool FileRegistration::release() {
    {
        std::lock_guard lk(mu_);
        if (released_) return false;
        released_ = true;
    }
    // A delete breaks the parent directory's leases, but not the one the deleting open named.
    std::optional<LeaseId> parent_lease;
    if (table_.has_directory_leases()) parent_lease = table_.parent_lease(key_, token_);
    std::string deleted_path;
    const bool deleted = table_.remove(key_, token_, [&](const std::string& path) {
        if (!root_) return;
        auto st = delete_if_same_file(*root_, key_, path);
        if (!st) {
            log_info("delete on close of '", path, "' failed: ", status_name(st.status()));
            return;
        }
        log_debug("deleted '", path, "' (delete on close)");
        deleted_path = path;
    });
    if (deleted) table_.file_unlinked(key_);
    if (!deleted_path.empty())
        server::break_parent_directory_leases(table_, *root_, deleted_path, parent_lease);
    return deleted;
}

}  // namespace daxsmbd::server
