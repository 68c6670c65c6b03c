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

FileTable& FileTable::global() {
    static FileTable table;
    return table;
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
                                        std::string_view path) {
    std::lock_guard lk(mu_);
    DAX_CHECK(check_locked(key, mode));
    auto& rec = files_[key];
    if (rec.opens.empty() || rec.path.empty()) rec.path = std::string(path);
    Token t = next_token_++;
    rec.opens.push_back(OpenRecord{t, mode, delete_on_close});
    return t;
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
    if (o->delete_on_close) rec.delete_pending = true;
    rec.opens.erase(o);
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
    it->second.delete_pending = pending;
    return {};
}

bool FileTable::delete_pending(const FileKey& key) const {
    std::lock_guard lk(mu_);
    auto it = files_.find(key);
    return it != files_.end() && it->second.delete_pending;
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
    return table_.remove(key_, token_, [this](const std::string& path) {
        if (!root_) return;
        auto st = delete_if_same_file(*root_, key_, path);
        if (!st)
            log_info("delete on close of '", path, "' failed: ", status_name(st.status()));
        else
            log_debug("deleted '", path, "' (delete on close)");
    });
}

}  // namespace daxsmbd::server
