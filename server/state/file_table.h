// FileTable: what the object store knows about each open *file* (not each handle): the live opens
// with their granted access and share access, and whether the file's delete is pending
// (MS-FSA 2.1.1.5 File.OpenList, 2.1.1.4 Link.IsDeleted / File.PendingDelete).
//
// Keyed by (device, inode), so every path, hard link, share or case spelling that reaches the same
// on-disk file meets the same share modes. One table serves the whole server
// (FileTable::global()); tests make their own.
//
// Lifetime: an open joins the table through FileTable::add() and leaves it through remove(); a
// FileRegistration (held by struct Open) does the remove() when it is released or destroyed, so
// an open that disappears by any path (CLOSE, tree disconnect, logoff, connection loss) leaves
// the table. When the last open of a file leaves and the file's delete is pending, the file is
// deleted while the table is locked, so no new open of the same file can slip in between.
//
// Threads: every member function locks the table; call them from the blocking pool or the event
// loop (they do no I/O except the deleter that remove() runs).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/result.h"

namespace daxsmbd::server {

namespace vfs {
class ShareRoot;
}

struct FileKey {
    uint64_t device = 0;  // st_dev
    uint64_t inode = 0;   // st_ino
    bool operator==(const FileKey&) const = default;
};

struct FileKeyHash {
    size_t operator()(const FileKey& k) const {
        return std::hash<uint64_t>()(k.inode * 0x9E3779B97F4A7C15ull ^ k.device);
    }
};

// What an open asks of (or grants to) the other opens of its file.
struct ShareMode {
    uint32_t access = 0;        // granted access (generic bits already mapped)
    uint32_t share_access = 0;  // FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE
};

// MS-FSA 2.1.5.1.2.2: true when an open asking for `wanted` cannot coexist with `existing`.
// Only the data-touching rights (READ_DATA, EXECUTE, WRITE_DATA, APPEND_DATA, DELETE) take part: an
// open with none of them (attributes only, READ_CONTROL, ...) never conflicts and is never
// conflicted with.
bool sharing_conflict(const ShareMode& existing, const ShareMode& wanted);

class FileTable {
  public:
    using Token = uint64_t;  // identifies one open inside the table
    // Deletes the file at `path` (share-relative, as last recorded for the file).
    using Deleter = std::function<void(const std::string& path)>;

    FileTable() = default;
    FileTable(const FileTable&) = delete;
    FileTable& operator=(const FileTable&) = delete;

    static FileTable& global();

    // Adds an open of file `key`, reached through `path`. `delete_on_close` is the open's
    // FILE_DELETE_ON_CLOSE (MS-FSA Open.Mode): when that open leaves, the file's delete becomes
    // pending. Fails, leaving the table unchanged, with
    //   DeletePending     the file's delete is pending (MS-FSA 2.1.5.1, Link.IsDeleted)
    //   SharingViolation  a live open conflicts (MS-FSA 2.1.5.1.2.2)
    Result<Token> add(const FileKey& key, ShareMode mode, bool delete_on_close,
                      std::string_view path);

    // The same checks as add() without adding (DeletePending, SharingViolation or Success).
    Status check(const FileKey& key, ShareMode mode) const;

    // Removes open `token` of `key` (unknown tokens are ignored). If the open had delete_on_close,
    // the file's delete becomes pending first. If it was the file's last open and the delete is
    // pending, `deleter` runs (with the table locked) and true is returned.
    bool remove(const FileKey& key, Token token, const Deleter& deleter);

    // FileDispositionInformation (MS-FSA 2.1.5.15.3): sets or clears the file's pending delete.
    // ObjectNameNotFound when the file has no open in the table (callers hold an open, so this
    // means the key is wrong).
    Status set_delete_pending(const FileKey& key, bool pending);
    bool delete_pending(const FileKey& key) const;

    // Sets or clears one open's own delete-on-close flag (the FILE_DELETE_ON_CLOSE of add()).
    Status set_delete_on_close(const FileKey& key, Token token, bool on);

    // Records the path the file is now reached by (after a rename), used by the deleter.
    void set_path(const FileKey& key, std::string_view path);
    std::string path(const FileKey& key) const;

    size_t open_count(const FileKey& key) const;
    size_t file_count() const;  // files with at least one open

  private:
    struct OpenRecord {
        Token token;
        ShareMode mode;
        bool delete_on_close;
    };
    struct FileRecord {
        std::vector<OpenRecord> opens;
        bool delete_pending = false;
        std::string path;
    };
    Status check_locked(const FileKey& key, ShareMode mode) const;

    mutable std::mutex mu_;
    std::unordered_map<FileKey, FileRecord, FileKeyHash> files_;
    Token next_token_ = 1;
};

// One open's membership in a FileTable. release() (or the destructor) removes the open; when it
// was the last open of a file whose delete is pending, the file is deleted through `root`:
// unlinked (or rmdir'ed) at the recorded path if that name still refers to the same
// (device, inode); otherwise (moved by someone outside SMB) it is left alone and logged.
class FileRegistration {
  public:
    FileRegistration(FileTable& table, FileKey key, FileTable::Token token,
                     std::shared_ptr<const vfs::ShareRoot> root);
    ~FileRegistration();
    FileRegistration(const FileRegistration&) = delete;
    FileRegistration& operator=(const FileRegistration&) = delete;

    // Idempotent; returns true when this call deleted the file. Blocking (may unlink).
    bool release();

    const FileKey& key() const { return key_; }
    FileTable::Token token() const { return token_; }
    FileTable& table() const { return table_; }

  private:
    FileTable& table_;
    FileKey key_;
    FileTable::Token token_;
    std::shared_ptr<const vfs::ShareRoot> root_;
    std::mutex mu_;
    bool released_ = false;
};

// Deletes `path` beneath `root` if it still names file `key` (no symlink followed in the final
// component). Returns Success, or the failure (ObjectNameNotFound when the name now refers to
// another file or nothing). Blocking.
Status delete_if_same_file(const vfs::ShareRoot& root, const FileKey& key, const std::string& path);

}  // namespace daxsmbd::server
