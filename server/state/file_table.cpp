#include "server/state/file_table.h"

#include <algorithm>

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
        if (it != files_.end() && !it->second.delete_pending &&
            start_breaks_locked(it->second, *intent))
            return Error(NtStatus::OplockBreakInProgress);
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

bool FileTable::start_breaks_locked(FileRecord& rec, const OplockOpenIntent& intent) {
    // MS-FSA 2.1.4.12, Operation OPEN: an open asking only for attributes (and SYNCHRONIZE)
    // that does not overwrite leaves BATCH/EXCLUSIVE oplocks alone; anything else breaks them
    // to LEVEL_II, or to NONE when it overwrites or supersedes the data. LEVEL_II oplocks only
    // break (to NONE, no acknowledgment) for an overwrite.
    constexpr uint32_t kAttributeOnly =
        am::kFileReadAttributes | am::kFileWriteAttributes | am::kSynchronize;
    const bool breaks_exclusive = intent.overwrite || (intent.access & ~kAttributeOnly);
    bool wait = false;
    for (auto& o : rec.opens) {
        if (o.breaking) {
            wait = wait || breaks_exclusive;
            continue;
        }
        if (o.oplock == oplock::kBatch || o.oplock == oplock::kExclusive) {
            if (!breaks_exclusive) continue;
            const uint8_t to = intent.overwrite ? oplock::kNone : oplock::kII;
            if (!o.notifier) {  // nobody left to tell: the holder's connection is gone
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

void FileTable::set_oplock_locked(OpenRecord& o, uint8_t level) {
    if (o.oplock == oplock::kII) --level2_oplocks_;
    if (level == oplock::kII) ++level2_oplocks_;
    o.oplock = level;
}

void FileTable::wake_if_resolved_locked(FileRecord& rec) {
    if (rec.break_waiters.empty()) return;
    for (const auto& o : rec.opens)
        if (o.breaking) return;
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
        if (o.breaking || o.oplock == oplock::kBatch || o.oplock == oplock::kExclusive)
            other_exclusive = true;
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
                                [](const OpenRecord& o) { return o.breaking; });
    if (!breaking) return false;
    it->second.break_waiters.push_back(std::move(wake));
    return true;
}

void FileTable::expire_breaks(const FileKey& key) {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return;
    for (auto& o : it->second.opens) {
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
    for (auto& o : it->second.opens) {
        if (o.token == except || o.oplock != oplock::kII || o.breaking) continue;
        set_oplock_locked(o, oplock::kNone);
        if (o.notifier) o.notifier(oplock::kNone);
    }
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

FileRegistration::~FileRegistration() {
    release();
}

bool FileRegistration::release() {
    {
        std::lock_guard lk(mu_);
        if (released_) return false;
        released_ = true;
    }
    const bool deleted = table_.remove(key_, token_, [this](const std::string& path) {
        if (!root_) return;
        auto st = delete_if_same_file(*root_, key_, path);
        if (!st)
            log_info("delete on close of '", path, "' failed: ", status_name(st.status()));
        else
            log_debug("deleted '", path, "' (delete on close)");
    });
    if (deleted) table_.file_unlinked(key_);
    return deleted;
}

}  // namespace daxsmbd::server
