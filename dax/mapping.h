// File mappings for the DAX path: one FileMap per file (device, inode), shared by every open of
// that file, made of fixed-size chunks mapped with libpmem2 on demand (a file that maps with
// MAP_SYNC; an ordinary file mapped page-granular for tests gets a plain shared mmap instead,
// because libpmem2's MAP_SYNC attempt on it opens a hole in the address space: map_piece).
//
// Chunks: chunk i maps file bytes [i*C, min((i+1)*C, mappable end)), C = MapOptions::chunk_size.
// A file larger than any single mapping works chunk by chunk. Each chunk's mapping sits in a
// reserved address range about twice as large as what was mapped first (at most the chunk size),
// so growth of the file maps only the new tail into that range (existing pages, their page-table
// entries and pins stay); only a chunk that outgrows its reservation is remapped. libpmem2 maps
// whole pages that lie inside the file, so the mappable end is the file size rounded down to a
// page: a request touching the partial last page (or beyond the chunk table) is not served here and
// goes to the block path.
//
// Lifetime of a chunk mapping (no shared counter that every core hits): each chunk carries a
// per-CPU pin count (dax/sharded_counter.h). A user pins the chunk (adds 1 to its CPU's shard with
// a seq_cst RMW, then re-checks that the chunk is still the published, live one) and unpins on
// the same shard. Retiring a chunk (truncate, growth, media error) unpublishes it and marks it
// retired; whoever then sees a pin sum of zero (the retirer, or the last unpinner) flushes its
// dirty lines and unmaps it. The Chunk objects themselves are recycled, never freed, while the
// FileMap lives, so a racing pin on a stale pointer touches valid memory and backs off.
// A MappedRange (pinned piece of one chunk) is what READ/WRITE copy through and what an RDMA
// transport registers: the mapping cannot go away while a MappedRange exists.
//
// Durability: writes with write_through are flushed and fenced before write() returns; other
// writes mark 64 KiB granules dirty and persist() (FLUSH, CLOSE) flushes them. On a mapping
// without MAP_SYNC (regular files, tests) persistence also needs msync, which persist does.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "dax/flush.h"
#include "dax/sharded_counter.h"
#include "dax/stats.h"

struct pmem2_map;
struct pmem2_vm_reservation;

namespace daxsmbd::dax {

struct MapOptions {
    size_t chunk_size = size_t(1) << 30;  // multiple of the page size
    size_t max_chunks = 1024;             // files beyond max_chunks * chunk_size: block path
    // true: only MAP_SYNC mappings (persistent memory; libpmem2 cache-line granularity).
    // false: any file, mapped page-granular (tests on ordinary file systems).
    bool require_sync = true;
    FlushKind flush = FlushKind::Clflush;  // a resolved kind (dax/flush.h)
    // prefault(): bytes from the start of a chunk whose page tables are populated ahead of the
    // I/O ("dax prefault"; 0 = none). Bounded because populating costs the same kernel work as
    // the faults it saves (for 4 KiB pages about 2 us each under a VM, 16384 of them per 64 MiB)
    // and page-table memory (128 KiB per 64 MiB), while a large file may be used only in a small
    // part: what lies beyond faults on first touch as before.
    size_t prefault_bytes = size_t(64) << 20;
    // Where the map counts what it did (MapRegistry: the registry's); null: a count of its own.
    Stats* stats = nullptr;

    bool operator==(const MapOptions&) const = default;
};

// The identity and change marks of a file as statx reports them: a cached FileMap
// (MapRegistry) is reused at a reopen only when the file is still the same one and nothing
// changed it since its last close (size, mtime, ctime: any write or truncation, through this
// server or not, moves them).
struct FileStamp {
    uint64_t device = 0;  // makedev(stx_dev_major, stx_dev_minor)
    uint64_t inode = 0;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    uint32_t nlink = 0;

    static std::optional<FileStamp> of(int fd);
    bool same_file(const FileStamp& o) const { return device == o.device && inode == o.inode; }
    bool unchanged(const FileStamp& o) const {
        return same_file(o) && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns;
    }
};

class FileMap;
struct Chunk;
struct MapPiece;

// A pinned range of one chunk. Movable; unpins when destroyed.
class MappedRange {
  public:
    MappedRange() = default;
    MappedRange(MappedRange&& o) noexcept { *this = std::move(o); }
    MappedRange& operator=(MappedRange&& o) noexcept;
    ~MappedRange() { reset(); }
    void reset();

    std::span<std::byte> bytes() const { return bytes_; }
    uint64_t file_offset() const { return file_offset_; }
    // The whole mapping of the chunk as it was when pinned (it holds bytes()): mapped for as
    // long as the pin lasts. What an RDMA transport registers, once for many requests.
    std::span<std::byte> mapping() const { return mapping_; }
    explicit operator bool() const { return chunk_ != nullptr; }

  private:
    friend class FileMap;
    FileMap* owner_ = nullptr;
    Chunk* chunk_ = nullptr;
    size_t shard_ = 0;
    std::span<std::byte> bytes_;
    std::span<std::byte> mapping_;
    uint64_t file_offset_ = 0;
    bool rdma_ = false;  // pinned by pin_for_rdma (counted in FileMap::rdma_pins_)
};

enum class IoOutcome {
    Done,        // served from the mapping
    Fallback,    // not servable here (range, mapping refused, file changed): use the block path
    MediaError,  // SIGBUS inside the file's data: STATUS_UNEXPECTED_IO_ERROR for this request
};

struct IoResult {
    IoOutcome outcome = IoOutcome::Fallback;
    size_t bytes = 0;
    std::string why;  // for the log line of a Fallback or MediaError
    // A Fallback by design (the range is not mappable: partial last page, beyond the chunk
    // table), as opposed to a failure worth an info-level log line.
    bool routine = false;
};

class FileMap {
  public:
    // `fd`: an open of the file (any access mode; a read-write descriptor is reopened through
    // /proc/self/fd when it is not one, and without it the map only serves reads).
    static std::shared_ptr<FileMap> create(int fd, const MapOptions& options);
    ~FileMap();
    FileMap(const FileMap&) = delete;
    FileMap& operator=(const FileMap&) = delete;

    // Pins the mapped bytes from `offset` up to `len` bytes, stopping at the chunk's end (a range
    // spanning chunks takes several pins). nullopt when not servable (see IoResult::why).
    std::optional<MappedRange> pin(uint64_t offset, size_t len, bool for_write,
                                   std::string* why = nullptr);

    // A pin for a device to move data into or out of (RDMA placing straight into the mapping):
    // as pin(), but the whole range in one pin (nullopt when it spans chunks), within the end of
    // file (a write first allocates up to offset + len, as write() would), and refused while a
    // truncation of this server is fenced (fence_rdma). A device cannot take a SIGBUS: a page
    // gone under it breaks its whole connection, so the range must exist for as long as the pin.
    // write_through: a size the allocation moved is made durable too (as write() does).
    std::optional<MappedRange> pin_for_rdma(uint64_t offset, size_t len, bool for_write,
                                            bool write_through = false, std::string* why = nullptr);
    // A device placed bytes into `range` (pinned for writing by pin_for_rdma): flushed and
    // fenced now with write_through, else marked for persist(); counted as a write.
    IoResult landed(const MappedRange& range, bool write_through);
    // Before this server truncates the file: new pin_for_rdma calls are refused and the pins
    // already held are waited for (at most `wait`; false when some still remain), until
    // lift_rdma_fence(). Blocking: call it off the event loop, as the truncation itself.
    bool fence_rdma(std::chrono::milliseconds wait);
    void lift_rdma_fence() { rdma_fenced_.store(false, std::memory_order_seq_cst); }

    // READ: copies file bytes at `offset` into `dst`, stopping at end of file (bytes = 0 at or
    // past it). All or nothing: a range the mapping cannot serve entirely is a Fallback.
    IoResult read(uint64_t offset, std::span<std::byte> dst);
    // WRITE: copies `src` into the file at `offset`, allocating (fallocate) when it grows the
    // file. write_through: flushed and fenced (durable) before returning.
    IoResult write(uint64_t offset, std::span<const std::byte> src, bool write_through);
    // FLUSH/CLOSE: makes every write so far durable. False when some range could not be flushed
    // (the mapping went away with a media error): the caller then falls back to fsync.
    bool persist();
    // Some write without write-through is not persisted yet.
    bool dirty() const;

    // The file was truncated (or set) to `new_size` by someone using this server: drops the
    // mappings that cover anything at or past it. Call after the ftruncate.
    void truncated(uint64_t new_size);
    // Something outside this FileMap changed the file: drop every mapping; re-read the size.
    void invalidate();

    // Populates the page tables of the chunk holding `offset`, from the chunk's start up to
    // options().prefault_bytes (and the mappable end), mapping the chunk if needed:
    // MADV_POPULATE_WRITE (for_write; only the file's data ranges, holes stay holes) or
    // MADV_POPULATE_READ (Linux >= 5.14; older kernels: nothing happens). Data is not changed.
    // Blocking (the kernel work of every fault it saves): run it off the event loop. Returns
    // the bytes populated.
    size_t prefault(uint64_t offset, bool for_write);
    // True for the one caller that should run prefault(offset, for_write) for the current
    // mapping of offset's chunk (a remapped chunk starts over; a write prefault also follows a
    // read one, because read-populated pages still fault at their first write). Lock-free.
    bool claim_prefault(uint64_t offset, bool for_write);

    // A WRITE through the mapping changes no timestamp once the page is mapped writable (only
    // the first write fault of a page does): sets the file's mtime (and ctime) to now, as a
    // write(2) would.
    void touch_mtime();
    // statx of the map's own descriptor (MapRegistry's validation).
    std::optional<FileStamp> stamp() const { return FileStamp::of(fd_); }
    // Bytes currently mapped (all chunks): what the map cache's size bound counts.
    uint64_t mapped_bytes() const;

    uint64_t size() const { return size_.load(std::memory_order_acquire); }
    bool writable() const { return writable_; }
    const MapOptions& options() const { return opts_; }
    size_t live_chunks() const;  // currently mapped chunks (tests)
    Stats& stats() const { return *stats_; }

  private:
    friend class MappedRange;
    struct Slot;
    FileMap(int own_fd, bool writable, uint64_t size, const MapOptions& options);

    void unpin(Chunk* c, size_t shard);
    void retire(size_t index);  // under mu_
    void try_reclaim(Chunk* c);
    Chunk* map_chunk(size_t index, std::string* why);  // under mu_
    bool extend_chunk(Chunk* c, uint64_t need_end);    // under mu_
    bool map_piece(pmem2_vm_reservation* rsv, size_t rsv_offset, uint64_t file_offset, size_t len,
                   MapPiece* out, bool* held, std::string* why);  // under mu_
    uint64_t mappable_end() const;
    void mark_dirty(size_t index, uint64_t chunk_off, size_t len);
    bool flush_dirty_of(Chunk* c, bool clear);
    bool msync_range(const void* addr, size_t len) const;
    bool grow_to(uint64_t offset, uint64_t end, bool durable, std::string* why);
    IoResult media_failure(uint64_t offset, size_t len);
    void refresh_size();

    const int fd_;
    const bool writable_;
    const MapOptions opts_;
    std::unique_ptr<Stats> own_stats_;  // when MapOptions::stats is null
    Stats* stats_;
    const Flusher flusher_;
    const size_t page_;
    const size_t granule_;
    std::atomic<uint64_t> size_;
    std::unique_ptr<Slot[]> slots_;

    // RDMA pins held now, and whether a truncation is fenced (fence_rdma .. lift_rdma_fence).
    std::atomic<int64_t> rdma_pins_{0};
    std::atomic<bool> rdma_fenced_{false};

    mutable std::mutex mu_;  // publishing/retiring chunks, growth, the free list
    int map_sync_ = 0;       // under mu_: the file maps with MAP_SYNC (1), not (-1), unknown
    std::vector<Chunk*> all_chunks_;  // every Chunk object ever made (freed by ~FileMap)
    std::vector<Chunk*> free_chunks_;
};

// How many closed files keep their maps ("dax map cache files", "dax map cache size").
struct MapCacheLimits {
    size_t max_files = 64;                    // 0: no cache, a map goes with its file's last open
    uint64_t max_bytes = uint64_t(16) << 30;  // mapped bytes of the cached maps, in total
};

// FileMaps by file: every open of one file gets the same map (CREATE). When the file's last open
// goes, its map is persisted (the writes without write-through made durable, as at CLOSE) and
// kept, with its page tables, in a bounded LRU cache of closed files, so that the next open of
// the file finds its pages mapped instead of faulting each one again. A cached map is reused
// only when the file is unchanged since (FileStamp: same inode, size, mtime and ctime); a file
// changed by anyone else gets a new map. The cache never holds a deleted file for long: a map
// whose file has no link left is not cached, forget() drops one at once (this server deleted or
// replaced the file), and sweep() drops those whose file was deleted by someone else.
class MapRegistry {
  public:
    explicit MapRegistry(MapCacheLimits limits = {});
    ~MapRegistry();
    MapRegistry(const MapRegistry&) = delete;
    MapRegistry& operator=(const MapRegistry&) = delete;

    void set_cache_limits(MapCacheLimits limits);  // evicts what no longer fits

    // The map of file (device, inode) for a new open with descriptor `fd`: the one in use, a
    // cached one that is still valid, or a new one (nullptr: not mappable). Blocking (statx,
    // maybe mapping work): call it off the event loop.
    std::shared_ptr<FileMap> acquire(uint64_t device, uint64_t inode, int fd,
                                     const MapOptions& options);
    std::shared_ptr<FileMap> find(uint64_t device, uint64_t inode);  // in use by an open
    size_t size();                                                   // files in use
    size_t cached_files();                                           // closed files kept
    uint64_t cached_bytes();
    // This server unlinked or replaced the file: its cached map goes now (it holds the inode,
    // and so its blocks, while it lives), and a map in use is not cached at its last close.
    void forget(uint64_t device, uint64_t inode);
    // Drops the cached maps of files that lost their last link (deleted outside this server).
    // A few statx calls per cached map: call it off the event loop, now and then.
    void sweep();
    // What the maps of this registry did (the server's DAX counters).
    Stats& stats();

    struct State;  // shared with the opens' references (the cache outlives no one)

  private:
    std::shared_ptr<State> state_;
};

}  // namespace daxsmbd::dax
