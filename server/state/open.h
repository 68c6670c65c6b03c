// Open files, directories and pipes (MS-SMB2 3.3.1.10 Open).
//
// Ownership: the server's OpenTable owns every Open (shared_ptr) keyed by its volatile FileId;
// handlers hold a shared_ptr for the duration of a request, so a CLOSE or a connection teardown
// racing with a READ never frees what the READ uses. An Open is used from the event loops of its
// session's channels (multichannel: several loops at once) and from blocking-pool jobs they
// await; `mu` guards the mutable fields a pool job touches, `position` is atomic.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/header.h"
#include "server/state/app_instance.h"
#include "server/state/replay.h"
#include "server/state/session.h"

namespace daxsmbd::server {

namespace vfs {
class DirectoryCursor;
}
namespace rpcpipe {
class PipeEndpoint;
}
namespace notify {
class NotifyEntry;
}
class FileRegistration;  // server/state/file_table.h
namespace io {
class DataPath;  // server/io/data_path.h
}

// What the file system holds for one handle (MS-FSA 2.1.1.6 Open; MS-SMB2 3.3.1.10
// Open.LocalOpen): the descriptor, the file's identity, the share modes it registered, the data
// path, the directory cursor. None of it depends on the session, tree or connection the protocol
// handle is bound to, so a handle that outlives its connection keeps it unchanged.
struct LocalOpen {
    std::string path;  // share-relative on-disk path ("" = share root), '/' separated
    int fd = -1;       // owned; closed by the destructor
    bool is_directory = false;
    uint64_t file_id = 0;  // on-disk id (inode)
    uint64_t device = 0;
    uint32_t share_access = 0;
    bool delete_on_close = false;
    std::atomic<uint64_t> position{0};  // FilePositionInformation
    // Data was written through this open: its close changes the file's times, which breaks
    // the parent directory's leases (as Windows does; smbtorture smb2.lease.v2_request).
    std::atomic<bool> modified{false};
    // Open.Mode (MS-FSA 2.1.1.6) once a FileModeInformation set replaced it; until then
    // (mode_set false) it is the mode bits of the protocol handle's create_options.
    uint32_t mode = 0;
    bool mode_set = false;
    std::string dir_pattern;  // Open.QueryPattern of the enumeration running in `dir`
    std::unique_ptr<vfs::DirectoryCursor> dir;    // QUERY_DIRECTORY state
    std::unique_ptr<rpcpipe::PipeEndpoint> pipe;  // named pipe on IPC$
    // Byte-range locks and change notify (server/state/lock_table.h, server/notify/): whether
    // the close hook that releases this open's locks is installed, and the ChangeNotifyEntry of
    // a directory open (MS-FSA 2.1.5.11), made by its first CHANGE_NOTIFY.
    bool lock_release_hook = false;
    std::shared_ptr<notify::NotifyEntry> notify_entry;
    // Membership in the FileTable (share modes, delete-on-close; server/state/file_table.h).
    // Releasing or destroying it takes the open out of the table and, for the last open of a
    // file whose delete is pending, deletes the file.
    std::shared_ptr<FileRegistration> file_registration;
    // How READ/WRITE/FLUSH/CLOSE reach the data (server/io/data_path.h: the block path, or on a
    // DAX share the file's shared mapping), chosen at CREATE; uses `fd` (and may own more
    // descriptors of the same file). Set before the open is published, then only read
    // (data_path_of() fills it under the Open's `mu` for opens made elsewhere).
    std::shared_ptr<io::DataPath> data;

    // Out of line: the members' types are incomplete here.
    LocalOpen();
    LocalOpen(const LocalOpen&) = delete;
    LocalOpen& operator=(const LocalOpen&) = delete;
    ~LocalOpen();
};

// The protocol handle (MS-SMB2 3.3.1.10 Open): its FileId, what it is bound to (session, tree,
// connection), the access granted at CREATE and the per-handle protocol state; the file-system
// side is `local`. FileId.Persistent (Open.DurableFileId) and FileId.Volatile are distinct
// numbers: a reconnect names the handle by the persistent one and gets a new binding.
struct Open {
    protocol::FileId id;
    uint64_t session_id = 0;
    uint32_t tree_id = 0;
    std::shared_ptr<TreeConnect> tree;
    uint64_t connection_id = 0;

    uint32_t granted_access = 0;
    uint32_t create_options = 0;
    // Guards the mutable fields here and in `local` that a blocking-pool job or another channel
    // touches: the QUERY_INFO / SET_INFO / QUERY_DIRECTORY state, the lock and notify fields.
    std::mutex mu;
    uint32_t ea_index = 0;  // next EA of a FileFullEaInformation enumeration (Open.CurrentEaIndex)
    std::function<void()>
        on_close;  // hooks (notify watches, locks, ...), run before `local` closes
    // Open.IsResilient / Open.ResiliencyTimeout (MS-SMB2 3.3.5.15.9, FSCTL_LMR_REQUEST_RESILIENCY)
    // and Open.LockSequenceArray (3.3.5.14): one entry per bucket 1..64, the bucket's last
    // LockSequenceNumber (0..15) or kNoLockSequence. Guarded by `mu`.
    static constexpr uint8_t kNoLockSequence = 0xFF;
    bool is_resilient = false;
    uint32_t resiliency_timeout_ms = 0;
    std::array<uint8_t, 64> lock_sequence = make_empty_lock_sequence();

    // Durability (MS-SMB2 3.3.1.10 Open.IsDurable, DurableOpenTimeout, DurableOwner, CreateGuid,
    // Open.ClientGuid): a durable open outlives the loss of its connection, disconnected, for
    // `timeout_ms`, and a CREATE with a reconnect context from the same user re-binds it. Set
    // at CREATE before the open is published; `disconnected` and `generation` change under the
    // OpenTable's lock (OpenTable::disconnect_durable / reconnect).
    struct Durability {
        uint8_t version = 0;  // 0: not durable; 1: DHnQ; 2: DH2Q
        uint32_t timeout_ms = 0;
        std::optional<protocol::Guid> create_guid;  // v2
        std::string owner;                          // the session's domain\user
        protocol::Guid client_guid{};
        std::optional<protocol::Guid> lease_key;        // the open's lease, if any
        std::optional<protocol::Guid> app_instance_id;  // Open.AppInstanceId
        // Open.ApplicationInstanceVersionHigh/Low (3.1.1 APP_INSTANCE_VERSION).
        std::optional<AppInstanceVersion> app_instance_version;
        bool disconnected = false;
        uint64_t generation = 0;  // bumped by each disconnect and reconnect
        // Open.IsPersistent (MS-SMB2 3.3.5.9.10): on a continuously available share, journaled
        // (server/state/handle_journal.h) so that it survives a restart of the server.
        bool persistent = false;
        std::string share;  // the share's name (a restored open has no tree until reconnected)
        // Counted in its client's durable handles (OpenTable::claim_durable); under the
        // OpenTable's lock.
        bool counted = false;
    };
    Durability durable;

    // Replay detection (server/state/replay.h): Open.ChannelSequence and its request counts
    // (MS-SMB2 3.3.5.2.10); whether a replayed DH2Q CREATE may still be answered with this open
    // (Open.IsReplayEligible, 3.3.5.9.10: until a request uses it, which shows the client got
    // the CREATE response) and what that response carried.
    // `replay` is set before the open is published (a DH2Q's, durable or not).
    ChannelSequence channel_sequence;
    std::optional<ReplayRecord> replay;
    std::atomic<bool> replay_eligible{false};

    LocalOpen local;

    Open();
    ~Open();

  private:
    static constexpr std::array<uint8_t, 64> make_empty_lock_sequence() {
        std::array<uint8_t, 64> a{};
        a.fill(kNoLockSequence);
        return a;
    }
};

class OpenTable {
  public:
    // `epoch` is the high half of every persistent FileId this table assigns (nonzero; a random
    // value per server start unless a test fixes it).
    OpenTable();
    explicit OpenTable(uint32_t epoch);

    // Registers an open and assigns its FileId: a volatile id unique in this table, and the
    // persistent id (epoch << 32) + volatile, which never equals a volatile one and does not
    // repeat across server starts, so a reconnect naming a handle of an earlier run finds nothing.
    void insert(const std::shared_ptr<Open>& open);
    std::shared_ptr<Open> find(uint64_t volatile_id);
    std::shared_ptr<Open> remove(uint64_t volatile_id);
    // All opens matching a predicate (teardown of a tree, session or connection).
    std::vector<std::shared_ptr<Open>> remove_if(const std::function<bool(const Open&)>& pred);
    bool any_of(const std::function<bool(const Open&)>& pred);
    std::shared_ptr<Open> find_first(const std::function<bool(const Open&)>& pred);
    std::vector<std::shared_ptr<Open>> find_all(const std::function<bool(const Open&)>& pred);
    // A persistent handle of an earlier run (server/persistent_handles.h), disconnected: it
    // keeps its FileId.Persistent and gets a new volatile id. The table's own epoch moves away
    // from that handle's, so that no new FileId can equal it.
    void insert_restored(const std::shared_ptr<Open>& open, uint64_t persistent_id);
    // A handle named by a client (MS-SMB2 3.3.5.9.7 / 3.3.5.9.12 reconnects): the open whose
    // FileId.Persistent is `persistent_id`, connected or not.
    std::shared_ptr<Open> find_persistent(uint64_t persistent_id);
    // The durable opens of session `session_id` lose their session, tree and connection and
    // stay in the table, disconnected (returned). Pipes are never durable.
    std::vector<std::shared_ptr<Open>> disconnect_durable(uint64_t session_id);
    // Binds disconnected open `open` to a new session, tree and connection; false when it is
    // no longer disconnected (another reconnect won, or it expired).
    bool reconnect(const std::shared_ptr<Open>& open, uint64_t session_id,
                   std::shared_ptr<TreeConnect> tree, uint64_t connection_id);
    // Removes `open` if it is still disconnected since disconnect number `generation`.
    std::shared_ptr<Open> remove_disconnected(uint64_t volatile_id, uint64_t generation);
    size_t disconnected_count();
    // Counts open `open` (in the table) among the durable handles of its client `client`
    // unless that client holds `max` already ("max durable handles per client"): false then,
    // and the open is not to be made durable. The count drops when the open leaves the table.
    bool claim_durable(const std::shared_ptr<Open>& open, const protocol::Guid& client, size_t max);
    size_t durable_count(const protocol::Guid& client);
    size_t size();
    // Opens of one session (the "max opens per session" limit), without a scan.
    size_t count_for_session(uint64_t session_id);

  private:
    void uncount(const Open& o);          // mu_ held
    void uncount_durable(const Open& o);  // mu_ held

    std::mutex mu_;
    std::unordered_map<uint64_t, std::shared_ptr<Open>> opens_;
    std::unordered_map<uint64_t, size_t> per_session_;
    uint64_t next_ = 1;
    uint64_t epoch_;  // epoch << 32
    // Restored persistent handles: FileId.Persistent -> volatile id (entries of closed ones
    // are dropped when looked up).
    std::unordered_map<uint64_t, uint64_t> restored_;
    std::map<protocol::Guid, size_t> durable_per_client_;
};

}  // namespace daxsmbd::server
