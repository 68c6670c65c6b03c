// FileTable: what the object store knows about each open *file* (not each handle): the live opens
// with their granted access and share access, and whether the file's delete is pending
// (MS-FSA 2.1.1.5 File.OpenList, 2.1.1.4 Link.IsDeleted / File.PendingDelete).
//
// Keyed by (device, inode), so every path, hard link, share or case spelling that reaches the same
// on-disk file meets the same share modes. One table serves the whole server
// (Server::files); tests make their own.
//
// Lifetime: an open joins the table through FileTable::add() and leaves it through remove(); a
// FileRegistration (held by struct Open) does the remove() when it is released or destroyed, so
// an open that disappears by any path (CLOSE, tree disconnect, logoff, connection loss) leaves
// the table. When the last open of a file leaves and the file's delete is pending, the file is
// deleted while the table is locked, so no new open of the same file can slip in between.
//
// Oplocks (MS-FSA 2.1.1.10 Stream.Oplock, MS-SMB2 3.3.1.10 Open.OplockLevel/OplockState) live
// here too, per open, because granting and breaking them is decided by the same list of opens
// that share modes use, under the same lock: an open that would break another open's
// BATCH/EXCLUSIVE oplock is refused by add() with OplockBreakInProgress until the holder
// acknowledges the break, closes, or its acknowledgment times out; the opener then waits for
// when_breaks_resolved() and tries again (MS-FSA 2.1.4.12, MS-SMB2 3.3.5.9 and 3.3.4.6).
// Leases (MS-SMB2 3.3.1.12) take part the same way: a lease is shared by the opens naming its
// ClientGuid + LeaseKey, and opens of the same lease never break it.
//
// Threads: every member function locks the table; call them from the blocking pool or the event
// loop (they do no I/O except the deleter that remove() runs). Break notifiers and waiters are
// called with the table locked: they must only post work elsewhere, never call back into it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/create.h"
#include "protocol/create_contexts.h"
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

// Oplock levels are MS-SMB2 2.2.13's (protocol/create.h).
namespace oplock = protocol::oplock_level;

// What a new open of a file means for the oplocks other opens hold (MS-FSA 2.1.4.12, Operation
// OPEN): its access, whether it overwrites or supersedes the data, and the lease it asks for
// (opens of the same lease never break each other).
struct LeaseId {
    protocol::Guid client_guid{};  // Connection.ClientGuid (MS-SMB2 3.3.1.12 LeaseTable)
    protocol::Guid key{};          // LeaseKey
    bool operator==(const LeaseId&) const = default;
};
struct LeaseIdHash {
    size_t operator()(const LeaseId& id) const;
};

struct OplockOpenIntent {
    uint32_t access = 0;  // desired access, generic bits mapped
    bool overwrite = false;
    std::optional<LeaseId> lease;
    bool delete_on_close = false;  // FILE_DELETE_ON_CLOSE: HANDLE caching of others breaks
};

// Sends a break notification for one open to `new_level` (posts to the holder's connection).
using OplockBreakNotifier = std::function<void(uint8_t new_level)>;

// Lease states are MS-SMB2 2.2.13.2.8's READ (1), HANDLE (2) and WRITE (4) caching bits.
namespace lease_bits = protocol::lease_state;

// A lease request of a CREATE (MS-SMB2 3.3.5.9.8 v1, 3.3.5.9.11 v2).
struct LeaseRequest {
    LeaseId id;
    uint32_t state = 0;
    uint8_t version = 1;
    uint16_t epoch = 0;                        // v2
    std::optional<protocol::Guid> parent_key;  // v2 ParentLeaseKey
};
// What the open's lease is after the request (the response's lease context).
struct LeaseGrant {
    uint32_t state = 0;
    bool breaking = false;  // SMB2_LEASE_FLAG_BREAK_IN_PROGRESS
    uint16_t epoch = 0;
    uint8_t version = 1;
    std::optional<protocol::Guid> parent_key;
};
// One Lease Break Notification (MS-SMB2 2.2.23.2, 3.3.4.7).
struct LeaseBreak {
    protocol::Guid key{};
    uint8_t version = 1;
    uint16_t new_epoch = 0;  // v2 only
    uint32_t current_state = 0;
    uint32_t new_state = 0;
    bool ack_required = false;
};
using LeaseBreakNotifier = std::function<void(const LeaseBreak&)>;

class FileTable {
  public:
    using Token = uint64_t;               // identifies one open inside the table
    static constexpr Token kNoToken = 0;  // names no open (tokens start at 1)
    // Deletes the file at `path` (share-relative, as last recorded for the file).
    using Deleter = std::function<void(const std::string& path)>;

    FileTable() = default;
    FileTable(const FileTable&) = delete;
    FileTable& operator=(const FileTable&) = delete;

    // Adds an open of file `key`, reached through `path`. `delete_on_close` is the open's
    // FILE_DELETE_ON_CLOSE (MS-FSA Open.Mode): when that open leaves, the file's delete becomes
    // pending. Fails, leaving the table unchanged, with
    //   DeletePending     the file's delete is pending (MS-FSA 2.1.5.1, Link.IsDeleted)
    //   SharingViolation  a live open conflicts (MS-FSA 2.1.5.1.2.2)
    //   OplockBreakInProgress  (only with `intent`) another open's oplock must be broken first:
    //                     the breaks are started (notifiers called); wait with
    //                     when_breaks_resolved() and call add() again
    Result<Token> add(const FileKey& key, ShareMode mode, bool delete_on_close,
                      std::string_view path, const OplockOpenIntent* intent = nullptr);

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
    // Calls `wake` once, from whichever thread makes the delete of `key` pending (a disposition
    // set, or the close of a delete-on-close open); dropped when the file's last open goes.
    // False (and `wake` not kept) when the file has no open in the table or its delete is
    // pending already.
    bool when_delete_pending(const FileKey& key, std::function<void()> wake);

    // Sets or clears one open's own delete-on-close flag (the FILE_DELETE_ON_CLOSE of add()).
    Status set_delete_on_close(const FileKey& key, Token token, bool on);

    // Records the path the file is now reached by (after a rename), used by the deleter.
    void set_path(const FileKey& key, std::string_view path);
    std::string path(const FileKey& key) const;

    // Oplocks -------------------------------------------------------------------------------
    // Grants open `token` the highest oplock up to `requested` that its file allows now
    // (MS-FSA 2.1.5.17.2): BATCH/EXCLUSIVE only to the file's only open, LEVEL_II when no other
    // open holds or is breaking a BATCH/EXCLUSIVE oplock, else NONE. `notifier` is kept to
    // break it later. Returns the granted level.
    uint8_t grant_oplock(const FileKey& key, Token token, uint8_t requested, bool is_directory,
                         OplockBreakNotifier notifier);
    // The oplock level open `token` holds now (its old level while a break is in progress).
    uint8_t oplock_level(const FileKey& key, Token token) const;
    // An OPLOCK_BREAK acknowledgment (MS-SMB2 3.3.5.22.1): InvalidOplockProtocol for a level the
    // held oplock cannot go to, InvalidDeviceState when no break is in progress, else the open
    // now holds `level` and the new level is returned.
    Result<uint8_t> acknowledge_break(const FileKey& key, Token token, uint8_t level);
    // Calls `wake` once no open of `key` is breaking any more (at once, returning false, when
    // none is now; else later, from whichever thread ends the last break, returning true).
    bool when_breaks_resolved(const FileKey& key, std::function<void()> wake);
    // The acknowledgment timer expired (MS-SMB2 3.3.2.1): breaking opens of `key` lose their
    // oplock as if they had acknowledged NONE.
    void expire_breaks(const FileKey& key);
    // A write, truncate or byte-range lock through open `except` (MS-FSA 2.1.4.12, Operation
    // WRITE/SET_INFORMATION/LOCK): every LEVEL_II oplock, the writer's own too, is broken to
    // NONE, which needs no acknowledgment (MS-SMB2 3.3.4.6); READ caching leases of other
    // lease keys break to NONE (acknowledged when they lose HANDLE caching too).
    void break_level2_oplocks(const FileKey& key, Token except);

    // A rename of the file through open `token` (MS-FSA 2.1.5.15.12 with 2.1.4.12, as Windows
    // and Samba apply it): HANDLE caching of leases of other lease keys is broken, so that
    // their holders may close the handles they keep under the old name; disconnected durable
    // opens of such leases are purged. True when an acknowledgment (or a purge) is awaited:
    // wait with when_breaks_resolved() and call again.
    bool break_handle_caching(const FileKey& key, Token token);

    // Leases --------------------------------------------------------------------------------
    // The lease open `token` asks for (MS-SMB2 3.3.5.9.8, 3.3.5.9.11; MS-FSA 2.1.5.17.2): the
    // open joins lease `req.id` (made here when new), and the lease is upgraded to what the
    // file allows now: WRITE caching only when no open of another lease or without one has
    // the file open, nothing while another open holds an exclusive oplock or WRITE lease, and
    // never below what the lease holds. A lease that is breaking stays as it is and says so.
    // InvalidParameter when the lease already belongs to another file. A directory gets a
    // lease only with `directory_leasing` (the connection was offered
    // SMB2_GLOBAL_CAP_DIRECTORY_LEASING), and never WRITE caching (MS-SMB2 3.3.5.9.11); else
    // none (nullopt).
    Result<std::optional<LeaseGrant>> grant_lease(const FileKey& key, Token token,
                                                  const LeaseRequest& req, bool is_directory,
                                                  LeaseBreakNotifier notifier,
                                                  bool directory_leasing = false);
    // A LEASE_BREAK acknowledgment (MS-SMB2 3.3.5.22.2): ObjectNameNotFound for an unknown
    // lease, Unsuccessful when none of its breaks is in progress, RequestNotAccepted for a
    // state the break did not offer; else the lease now holds `state` (returned). A later
    // break that came while this one was in flight is sent now.
    Result<uint32_t> acknowledge_lease_break(const LeaseId& id, uint32_t state);
    // The state of lease `id` now (0 when unknown).
    uint32_t lease_state(const LeaseId& id) const;

    // Directory leases -----------------------------------------------------------------------
    // Whether any directory holds a lease, so that the common case (none) costs a load.
    bool has_directory_leases() const {
        return directory_leases_.load(std::memory_order_relaxed) != 0;
    }
    // Something inside directory `dir` changed: a name was created, removed or renamed, or a
    // child's data or attributes changed (MS-FSA 2.1.4.13, as Windows breaks directory
    // leases). Every lease on `dir` except `except` (the ParentLeaseKey the changing open
    // named, so that a client's own changes keep its directory cache) is broken to NONE. The
    // change does not wait for it; true when an acknowledgment is awaited (expire_breaks()
    // after the break timeout ends it).
    bool break_directory_leases(const FileKey& dir, const std::optional<LeaseId>& except);
    // The parent directory's lease named by open `token`'s lease (its ParentLeaseKey, of the
    // same client), if any.
    std::optional<LeaseId> parent_lease(const FileKey& key, Token token) const;
    // Called (outside the table lock) with a directory whose lease break awaits an
    // acknowledgment that no operation waits for: the owner arms the break timeout
    // (MS-SMB2 3.3.2.5) and then calls expire_breaks(). Unset: such breaks wait forever.
    using BreakExpiry = std::function<void(const FileKey&)>;
    void set_break_expiry(BreakExpiry expiry);

    // Durable opens (MS-SMB2 3.3.5.9.6 ff.) ----------------------------------------------------
    // Open `token` lost its connection but stays, durable: no break can reach it any more, so a
    // break it would need runs `purge` instead (posted elsewhere; it closes the open, whose
    // leaving the table lets the waiting opener go on), as Windows closes a disconnected
    // durable handle whose oplock or lease is broken.
    void disconnect(const FileKey& key, Token token, std::function<void()> purge);
    // A reconnect re-bound open `token`: breaks reach it through the new notifiers again. Its
    // oplock level and lease now (kLease with the lease in `lease`).
    struct Held {
        uint8_t oplock = oplock::kNone;
        std::optional<LeaseGrant> lease;
    };
    Held reconnect(const FileKey& key, Token token, OplockBreakNotifier oplock_notifier,
                   LeaseBreakNotifier lease_notifier);
    // The oplock or lease open `token` holds (for granting durability, MS-SMB2 3.3.5.9.6).
    Held held(const FileKey& key, Token token) const;
    size_t lease_count() const;

    size_t open_count(const FileKey& key) const;
    size_t file_count() const;  // files with at least one open

    // Files this server unlinked (the last close of a file whose delete was pending) or whose
    // name it gave to another file (a rename or hard link replacing it): the listeners drop
    // what they keep for closed files (the DAX map cache holds the inode, and so its blocks,
    // while it lives). Listeners run on the thread that unlinked, under no table lock.
    using UnlinkListener = std::function<void(const FileKey&)>;
    uint64_t add_unlink_listener(UnlinkListener listener);
    void remove_unlink_listener(uint64_t id);  // returns once no call of it is running
    void file_unlinked(const FileKey& key);

  private:
    struct LeaseRecord {
        LeaseId id;
        FileKey file;
        uint32_t state = 0;
        bool breaking = false;     // Lease.Breaking
        uint32_t breaking_to = 0;  // what the notification in flight offered
        uint32_t pending_to = 0;   // what the file needs now (at most breaking_to)
        uint16_t epoch = 0;
        uint8_t version = 1;
        std::optional<protocol::Guid> parent_key;
        size_t opens = 0;
        bool directory = false;       // a directory lease (counted in directory_leases_)
        LeaseBreakNotifier notifier;  // of the lease's most recent open
    };
    struct OpenRecord {
        Token token = 0;
        ShareMode mode;
        bool delete_on_close = false;
        uint8_t oplock = oplock::kNone;
        bool breaking = false;                // Open.OplockState == Breaking
        uint8_t breaking_to = oplock::kNone;  // the level the break notification offered
        OplockBreakNotifier notifier;
        std::shared_ptr<LeaseRecord> lease;
        std::function<void()> purge;  // disconnected durable open (disconnect())
        bool purging = false;         // purge() ran: the open leaves soon
        bool breaking_any() const { return breaking || purging || (lease && lease->breaking); }
    };
    struct FileRecord {
        std::vector<OpenRecord> opens;
        bool delete_pending = false;
        std::string path;
        std::vector<std::function<void()>> break_waiters;
        std::vector<std::function<void()>> delete_waiters;  // when_delete_pending
    };
    static void mark_delete_pending_locked(FileRecord& rec);
    Status check_locked(const FileKey& key, ShareMode mode) const;
    // Starts the breaks `intent` causes; true when the opener has to wait.
    bool start_breaks_locked(FileRecord& rec, const OplockOpenIntent& intent,
                             bool sharing_violation);
    bool start_lease_breaks_locked(FileRecord& rec, const OplockOpenIntent& intent,
                                   bool sharing_violation);
    void set_oplock_locked(OpenRecord& o, uint8_t level);
    void set_lease_state_locked(LeaseRecord& l, uint32_t state);
    // Breaks lease `l` to `to` (a subset of what it holds); true when an acknowledgment is
    // awaited. A v2 lease's epoch goes up unless `next_epoch` is false.
    bool break_lease_locked(LeaseRecord& l, uint32_t to, bool next_epoch = true);
    void drop_lease_locked(OpenRecord& o);
    // Closes the disconnected durable opens of lease `l`; true when there were any.
    bool purge_lease_locked(FileRecord& rec, const LeaseRecord& l);
    static LeaseGrant grant_of(const LeaseRecord& l);
    static void wake_if_resolved_locked(FileRecord& rec);

    mutable std::mutex mu_;
    std::unordered_map<FileKey, FileRecord, FileKeyHash> files_;
    std::mutex listeners_mu_;
    std::vector<std::pair<uint64_t, UnlinkListener>> unlink_listeners_;
    uint64_t next_listener_ = 1;
    // LEVEL_II oplocks granted and not yet broken, so that a WRITE on a server without any
    // (the common case) does not take the table lock.
    // READ caching leases count too.
    std::atomic<size_t> level2_oplocks_{0};
    std::unordered_map<LeaseId, std::shared_ptr<LeaseRecord>, LeaseIdHash> leases_;
    std::atomic<size_t> directory_leases_{0};  // LeaseRecords of directories
    BreakExpiry break_expiry_;
    Token next_token_ = 1;
};

// The change of `child_path` (share-relative, on-disk spelling) breaks the leases of its parent
// directory (FileTable::break_directory_leases), `except` the changing open's ParentLeaseKey.
// Opens the parent (O_PATH) only when some directory holds a lease; runs on the blocking pool.
void break_parent_directory_leases(FileTable& files, const vfs::ShareRoot& root,
                                   std::string_view child_path,
                                   const std::optional<LeaseId>& except);

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
    // This open changes the file's data or locks (WRITE, end-of-file/allocation, LOCK): the
    // other opens' LEVEL_II oplocks break to NONE (FileTable::break_level2_oplocks).
    void break_others_level2_oplocks() { table_.break_level2_oplocks(key_, token_); }
    // This open changed its file's data, attributes or name: the leases of the directory
    // holding `path` (the name it had or has now) break, except the one its own lease names
    // as its parent. Blocking (opens the directory), only when a directory holds a lease.
    void break_parent_directory_leases(std::string_view path) const;
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
