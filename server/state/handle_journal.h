// The journal of persistent handles (MS-SMB2 3.3.1.10 Open.IsPersistent) of one continuously
// available share: what a reconnect after a server restart needs to find its handle again (the
// FileId, CreateGuid, owner, file, access, share access, oplock or lease, app instance id and
// version, byte-range locks),
// kept on the share's own volume so that it is exactly as durable as the files it names.
//
// Storage: an append-only log of records, each
//   u32 magic "PHJ1" | u8 kind (1 put, 2 remove) | u8 0 | u16 0 | u32 payload length |
//   u32 CRC-32C of kind, length and payload | payload
// A put replaces any earlier record of the same persistent FileId; a remove forgets it. Reading
// stops at the first record that is incomplete or whose CRC does not match (a write torn by a
// crash), so a crash never yields a half-written handle. At open the live records are compacted
// into a fresh log (written, synced, renamed over the old one), and again when the log grows to
// several times what is live.
//   - On a DAX share the log is a file mapped with MAP_SYNC: a record is copied into the
//     mapping and its cache lines flushed and fenced (dax::Flusher, the DAX write-through path),
//     no system call per record.
//   - Elsewhere it is an ordinary file: write(2) and fdatasync(2).
// A put is durable when put() returns, before the CREATE that made the handle is answered. A
// remove is written without waiting for the media: a remove lost by a power failure brings back
// a closed handle after the restart, which expires unclaimed after its timeout.
//
// Threads: every member locks the journal; put() and remove() do I/O (call them off the event
// loops).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dax/flush.h"
#include "protocol/bytes.h"
#include "protocol/header.h"
#include "protocol/result.h"
#include "server/state/app_instance.h"
#include "server/state/lock_table.h"

namespace daxsmbd::server {

struct PersistentHandle {
    uint64_t persistent_id = 0;  // FileId.Persistent, kept across restarts
    std::string path;            // share-relative on-disk path ("" = the root)
    uint64_t inode = 0;          // the file's identity when the handle was made
    bool is_directory = false;
    uint32_t granted_access = 0;
    uint32_t share_access = 0;
    uint32_t create_options = 0;
    protocol::Guid create_guid{};
    protocol::Guid client_guid{};
    std::string owner;  // durable owner: domain\user
    uint32_t timeout_ms = 0;
    uint8_t oplock = 0;  // oplock level, or kLease with the lease below
    std::optional<protocol::Guid> lease_key;
    uint32_t lease_state = 0;
    uint16_t lease_epoch = 0;
    uint8_t lease_version = 0;
    std::optional<protocol::Guid> parent_lease_key;
    std::optional<protocol::Guid> app_instance_id;
    std::optional<AppInstanceVersion> app_instance_version;
    std::vector<LockRange> locks;  // the byte-range locks the handle holds

    bool operator==(const PersistentHandle&) const = default;
};

// The payload of a put record (fuzzed: tests/fuzz).
protocol::ByteVector encode_persistent_handle(const PersistentHandle& h);
Result<PersistentHandle> decode_persistent_handle(protocol::Bytes payload);

// CRC-32C (Castagnoli), as the log's records carry it.
uint32_t crc32c(protocol::Bytes data, uint32_t crc = 0);

// The records of a log image that are whole and intact, in order: (kind, payload), and where
// the intact part ends. Kinds: 1 put, 2 remove.
struct JournalRecord {
    uint8_t kind = 0;
    protocol::Bytes payload;
};
struct JournalScan {
    std::vector<JournalRecord> records;
    size_t end = 0;
};
JournalScan scan_journal(protocol::Bytes image);
protocol::ByteVector frame_journal_record(uint8_t kind, protocol::Bytes payload);

class HandleJournal {
  public:
    // Opens (creating when missing) the journal in directory `dir` (made when missing, mode
    // 0700). With `pmem` the log is mapped (MAP_SYNC unless `require_sync` is false, for tests
    // on ordinary file systems) and flushed with that Flusher.
    struct Options {
        std::optional<dax::FlushKind> pmem;  // a resolved flush kind: the mapped log
        bool require_sync = true;
        size_t pmem_log_bytes = size_t(1) << 20;  // initial size of the mapped log
    };
    static Result<std::unique_ptr<HandleJournal>> open(const std::string& dir, Options options);
    ~HandleJournal();
    HandleJournal(const HandleJournal&) = delete;
    HandleJournal& operator=(const HandleJournal&) = delete;

    // The handles journaled before this open (what the previous run left).
    std::vector<PersistentHandle> handles() const;

    // Records (or replaces) handle `h`, durably. Errors from the file system (DiskFull, ...).
    Status put(const PersistentHandle& h);
    // Forgets the handle with this persistent FileId (unknown ids are ignored).
    void remove(uint64_t persistent_id);
    // From now on remove() does nothing: the server is stopping, and the handles its teardown
    // closes are to be found again by the next run.
    void freeze();
    size_t size() const;
    bool mapped() const;
    const std::string& log_path() const { return log_path_; }

  private:
    class Log;
    class FileLog;
    class PmemLog;
    HandleJournal(std::string dir, Options options);
    Status compact_locked();
    Status append_locked(uint8_t kind, protocol::Bytes payload, bool sync);

    mutable std::mutex mu_;
    std::string dir_;
    std::string log_path_;
    Options options_;
    std::unique_ptr<Log> log_;
    std::map<uint64_t, protocol::ByteVector> live_;  // persistent id -> put payload
    size_t live_bytes_ = 0;
    size_t log_bytes_ = 0;  // bytes in the current log
    bool frozen_ = false;
};

}  // namespace daxsmbd::server
