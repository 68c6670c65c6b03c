#include "dax/mapping.h"

#include <fcntl.h>
#include <libpmem2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <thread>
#include <unordered_map>
#include <utility>

#include "dax/detect.h"
#include "dax/media_guard.h"
#include "dax/stats.h"

namespace daxsmbd::dax {

// One mapping inside a chunk's reserved range: libpmem2's (a file that maps with MAP_SYNC), or,
// for a page-granular map of an ordinary file (MapOptions::require_sync false), a plain shared
// mmap (see FileMap::map_piece for why libpmem2 is not asked to map such a file).
struct MapPiece {
    pmem2_map* map = nullptr;  // null: our own mmap
    std::byte* addr = nullptr;
    size_t len = 0;
    bool map_sync = false;  // cache flush alone makes stores durable
};

struct Chunk {
    // The chunk's address range is reserved beyond what is mapped (`reserved` bytes from base), so
    // that growth of the file maps only the new tail behind the mapped bytes (`pieces`, in file
    // order), leaving the existing pages, their page-table entries and every pin where they are.
    pmem2_vm_reservation* rsv = nullptr;
    size_t reserved = 0;
    // The reservation is never released (a failed mapping may have left part of it to someone
    // else: FileMap::map_piece); it is held for good when the chunk is unmapped.
    bool rsv_held = false;
    std::vector<MapPiece> pieces;
    std::byte* base = nullptr;
    // Bytes mapped from base (a page multiple). Grows (release) under FileMap::mu_ while pins
    // exist; a pinner checks it (acquire) after pinning.
    std::atomic<size_t> length{0};
    uint64_t file_offset = 0;  // file offset of base
    size_t index = 0;          // slot
    bool map_sync = false;     // cache flush alone makes stores durable
    ShardedCounter pins;
    std::atomic<bool> retired{false};
    bool reclaimed = true;  // guarded by FileMap::mu_; true = not mapped
    // Prefault claimed for this mapping: 0 none, 1 read, 2 write (FileMap::claim_prefault).
    std::atomic<uint8_t> prefaulted{0};
};

struct FileMap::Slot {
    std::atomic<Chunk*> chunk{nullptr};
    // Dirty granules of this slot's file range (written without write-through, not yet
    // persisted). Allocated with the slot's first mapping, kept across remaps.
    std::atomic<std::atomic<uint64_t>*> dirty{nullptr};
    std::unique_ptr<std::atomic<uint64_t>[]> dirty_storage;  // owner of `dirty`, under mu_
};

namespace {

constexpr size_t kGranule = 64 * 1024;
// Reservations are multiples of this and aligned to it (huge-page faults need a 2 MiB aligned
// address), at least this large, and twice what is mapped at first so that appends extend the
// mapping in place and a remap happens only when the file has doubled.
constexpr size_t kReserveAlign = size_t(2) << 20;

size_t round_up(size_t v, size_t to) {
    return (v + to - 1) / to * to;
}

// A reservation of `size` bytes at a 2 MiB aligned address when one is free (the probe mapping
// is released before the reservation takes the aligned part of it; should another thread take
// that range in between, any address will do). libpmem2 maps the size rounded up to 2 MiB plus
// 2 MiB at the address it is given (and keeps the alignment slack), so the probe covers that
// from the aligned address on: with only 2 MiB to spare the aligned attempt failed whenever the
// next mapping up was adjacent (top-down placement: usually), and the fallback is aligned only
// where the kernel aligns large anonymous mappings itself (Linux 6.7 and later).
int reserve_address_range(pmem2_vm_reservation** rsv, size_t size) {
    const size_t probe_len = round_up(size, kReserveAlign) + 2 * kReserveAlign;
    void* probe =
        ::mmap(nullptr, probe_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (probe != MAP_FAILED) {
        void* aligned = reinterpret_cast<void*>(round_up(uintptr_t(probe), kReserveAlign));
        ::munmap(probe, probe_len);
        if (pmem2_vm_reservation_new(rsv, aligned, size) == 0) return 0;
    }
    return pmem2_vm_reservation_new(rsv, nullptr, size);
}

// madvise advice of Linux 5.14 (include/uapi/asm-generic/mman-common.h), for older headers.
#ifdef MADV_POPULATE_READ
constexpr int kMadvPopulateRead = MADV_POPULATE_READ;
#else
constexpr int kMadvPopulateRead = 22;
#endif
#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;
#endif

// Cleared at the first EINVAL: a kernel before 5.14 (unknown advice) or mappings it cannot
// populate; every later prefault is then skipped and pages fault on first touch as without it.
std::atomic<bool> g_populate_available{true};

// Populates the page tables of [addr, addr + len) (page aligned). Errors other than EINVAL
// (EFAULT: the file shrank under the range, EHWPOISON: a media error) only end the prefault;
// the I/O that touches such a page gets the error as before.
bool populate(void* addr, size_t len, bool for_write) {
    if (!g_populate_available.load(std::memory_order_relaxed)) return false;
    if (::madvise(addr, len, for_write ? kMadvPopulateWrite : kMadvPopulateRead) == 0) return true;
    if (errno == EINVAL) g_populate_available.store(false, std::memory_order_relaxed);
    return false;
}

int64_t ns_of(const statx_timestamp& t) {
    return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

std::string pmem2_error(const char* what, int rc) {
    return std::string(what) + ": " + pmem2_errormsg() + " (" + std::to_string(rc) + ")";
}

// Whether the kernel maps this file with MAP_SYNC (on a DAX file system, over persistent memory):
// 1 yes, -1 no, 0 unknown (the probe failed for another reason: ask again next time). Asked with
// a mapping at an address of the kernel's choosing, so a refusal leaves no trace.
int probe_map_sync(int fd, bool writable, std::string* why) {
    if (maps_with_map_sync(fd, writable)) return 1;
    if (errno == EOPNOTSUPP || errno == EINVAL) return -1;
    if (why) *why = std::string("MAP_SYNC probe: ") + std::strerror(errno);
    return 0;
}

// Reservations that are never released (Chunk::rsv_held), kept reachable.
std::mutex g_held_mu;
std::vector<pmem2_vm_reservation*> g_held_reservations;

void hold_reservation(pmem2_vm_reservation* rsv, Stats& stats) {
    std::lock_guard lk(g_held_mu);
    g_held_reservations.push_back(rsv);
    stats.held_reservations.add(1);
}

// After a failed MAP_FIXED mapping at [addr, addr + len) inside a reservation. Linux unmaps the
// target range before the file system's mmap hook runs, and leaves it unmapped when the hook
// fails; until something covers it again, any thread's mmap may be placed there (a new thread's
// stack, a malloc arena). Covers the range again where it is entirely free. Otherwise it is
// still ours (the call failed before unmapping) or partly someone else's by now, with no way to
// tell: false, and the reservation must never be released, since that would unmap whatever lies
// there.
bool cover_after_failed_map(std::byte* addr, size_t len) {
    void* p = ::mmap(addr, len, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == addr) return true;
    if (p != MAP_FAILED) ::munmap(p, len);  // a kernel before 4.17 took the address as a hint
    return false;
}

struct FlushCtx {
    const Flusher* flusher;
};

void flush_as_copy(void* ctx, void* dst, const void*, size_t len) {
    static_cast<FlushCtx*>(ctx)->flusher->flush(dst, len);
}

void pmem_copy(void* ctx, void* dst, const void* src, size_t len) {
    static_cast<FlushCtx*>(ctx)->flusher->copy_to_pmem(dst, src, len);
}

}  // namespace

// ---- FileStamp

std::optional<FileStamp> FileStamp::of(int fd) {
    struct statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) != 0) return std::nullopt;
    FileStamp s;
    s.device = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    s.inode = stx.stx_ino;
    s.size = stx.stx_size;
    s.mtime_ns = ns_of(stx.stx_mtime);
    s.ctime_ns = ns_of(stx.stx_ctime);
    s.nlink = stx.stx_nlink;
    return s;
}

// ---- MappedRange

MappedRange& MappedRange::operator=(MappedRange&& o) noexcept {
    if (this != &o) {
        reset();
        owner_ = std::exchange(o.owner_, nullptr);
        chunk_ = std::exchange(o.chunk_, nullptr);
        shard_ = o.shard_;
        bytes_ = o.bytes_;
        mapping_ = o.mapping_;
        file_offset_ = o.file_offset_;
        rdma_ = std::exchange(o.rdma_, false);
    }
    return *this;
}

void MappedRange::reset() {
    if (chunk_) {
        owner_->unpin(chunk_, shard_);
        if (rdma_) owner_->rdma_pins_.fetch_sub(1, std::memory_order_seq_cst);
    }
    rdma_ = false;
    chunk_ = nullptr;
    owner_ = nullptr;
    bytes_ = {};
}

// ---- FileMap

std::shared_ptr<FileMap> FileMap::create(int fd, const MapOptions& options) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) return nullptr;
    int own = -1;
    bool writable = false;
    if ((flags & O_ACCMODE) == O_RDWR) {
        own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        writable = true;
    } else {
        // The mapping serves every open of the file, so it wants a read-write descriptor even
        // when the first open is read-only.
        const std::string proc = "/proc/self/fd/" + std::to_string(fd);
        own = ::open(proc.c_str(), O_RDWR | O_CLOEXEC);
        writable = own >= 0;
        if (own < 0 && (flags & O_ACCMODE) == O_RDONLY) own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    }
    if (own < 0) return nullptr;
    return std::shared_ptr<FileMap>(new FileMap(own, writable, uint64_t(st.st_size), options));
}

FileMap::FileMap(int own_fd, bool writable, uint64_t size, const MapOptions& options)
    : fd_(own_fd),
      writable_(writable),
      opts_(options),
      own_stats_(options.stats ? nullptr : std::make_unique<Stats>()),
      stats_(options.stats ? options.stats : own_stats_.get()),
      flusher_(options.flush),
      page_(size_t(::sysconf(_SC_PAGESIZE))),
      granule_(std::min(kGranule, options.chunk_size)),
      size_(size),
      slots_(new Slot[options.max_chunks]) {
    install_media_guard();
}

FileMap::~FileMap() {
    {
        std::lock_guard lk(mu_);
        for (size_t i = 0; i < opts_.max_chunks; ++i)
            if (slots_[i].chunk.load()) retire(i);
    }
    // No MappedRange can outlive the map (its users hold the map), so everything is reclaimed.
    for (Chunk* c : all_chunks_)
        delete c;
    ::close(fd_);
}

uint64_t FileMap::mappable_end() const {
    return size() & ~uint64_t(page_ - 1);
}

size_t FileMap::live_chunks() const {
    std::lock_guard lk(mu_);
    size_t n = 0;
    for (size_t i = 0; i < opts_.max_chunks; ++i)
        n += slots_[i].chunk.load() != nullptr;
    return n;
}

// Under mu_. Maps file bytes [file_offset, file_offset + len) at `rsv_offset` inside the
// reservation. False when refused; `*held` then says whether the reservation must be held for
// good instead of released (cover_after_failed_map).
//
// No MAP_FIXED mapping of the file may fail where it can be avoided: a failed one unmaps its range
// first (cover_after_failed_map), and the next MAP_FIXED into that range maps the file over
// whatever another thread put there meanwhile. libpmem2 always tries MAP_SYNC first with
// MAP_FIXED and, refused, maps again without it: on a file that is not DAX that is exactly this
// sequence (it killed freshly started threads by mapping the file over their stacks). So whether
// the file maps with MAP_SYNC is probed once, without MAP_FIXED, and libpmem2 is asked only when
// it does; an ordinary file that may be mapped page-granular (require_sync false) is mapped here
// with one plain shared mmap, and one that may not is refused without any mapping attempt.
bool FileMap::map_piece(pmem2_vm_reservation* rsv, size_t rsv_offset, uint64_t file_offset,
                        size_t len, MapPiece* out, bool* held, std::string* why) {
    std::byte* const addr =
        static_cast<std::byte*>(pmem2_vm_reservation_get_address(rsv)) + rsv_offset;
    if (map_sync_ == 0) {
        map_sync_ = probe_map_sync(fd_, writable_, why);
        if (map_sync_ == 0) return false;
    }
    if (map_sync_ < 0 && opts_.require_sync) {
        if (why) *why = "MAP_SYNC refused for this file (it is not on a DAX file system)";
        return false;
    }
    if (map_sync_ < 0) {
        void* p = ::mmap(addr, len, writable_ ? PROT_READ | PROT_WRITE : PROT_READ,
                         MAP_SHARED | MAP_FIXED, fd_, off_t(file_offset));
        if (p == MAP_FAILED) {
            if (why) *why = std::string("mmap: ") + std::strerror(errno);
            *held = !cover_after_failed_map(addr, len);
            return false;
        }
        *out = MapPiece{nullptr, addr, len, false};
        return true;
    }
    // libpmem2 checks the range against the file size before mapping; a file truncated since
    // size_ was read is refused here instead, before any mapping is tried.
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || uint64_t(st.st_size) < file_offset + len) {
        if (why) *why = "file shorter than the range to map (truncated meanwhile)";
        return false;
    }
    pmem2_config* cfg = nullptr;
    pmem2_source* src = nullptr;
    pmem2_map* map = nullptr;
    int rc = pmem2_config_new(&cfg);
    if (rc == 0)
        rc = pmem2_config_set_required_store_granularity(
            cfg, opts_.require_sync ? PMEM2_GRANULARITY_CACHE_LINE : PMEM2_GRANULARITY_PAGE);
    if (rc == 0) rc = pmem2_config_set_offset(cfg, size_t(file_offset));
    if (rc == 0) rc = pmem2_config_set_length(cfg, len);
    if (rc == 0) rc = pmem2_config_set_vm_reservation(cfg, rsv, rsv_offset);
    if (rc == 0 && !writable_) rc = pmem2_config_set_protection(cfg, PMEM2_PROT_READ);
    if (rc == 0) rc = pmem2_source_from_fd(&src, fd_);
    const bool tried = rc == 0;
    if (rc == 0) rc = pmem2_map_new(&map, cfg, src);
    if (rc != 0 && why) *why = pmem2_error("libpmem2 mapping refused", rc);
    if (src) pmem2_source_delete(&src);
    if (cfg) pmem2_config_delete(&cfg);
    if (rc != 0) {
        if (tried) *held = !cover_after_failed_map(addr, len);
        return false;
    }
    *out =
        MapPiece{map, static_cast<std::byte*>(pmem2_map_get_address(map)), pmem2_map_get_size(map),
                 pmem2_map_get_store_granularity(map) != PMEM2_GRANULARITY_PAGE};
    return true;
}

Chunk* FileMap::map_chunk(size_t index, std::string* why) {
    const uint64_t start = uint64_t(index) * opts_.chunk_size;
    const uint64_t end = std::min<uint64_t>(start + opts_.chunk_size, mappable_end());
    if (end <= start) {
        if (why) *why = "range beyond the mappable end of the file";
        return nullptr;
    }
    const size_t len = size_t(end - start);
    const size_t reserve =
        std::min(opts_.chunk_size, round_up(std::max(2 * len, kReserveAlign), kReserveAlign));
    pmem2_vm_reservation* rsv = nullptr;
    if (int rc = reserve_address_range(&rsv, reserve); rc != 0) {
        if (why) *why = pmem2_error("address range reservation", rc);
        return nullptr;
    }
    MapPiece piece;
    bool held = false;
    if (!map_piece(rsv, 0, start, len, &piece, &held, why)) {
        if (held)
            hold_reservation(rsv, stats());
        else
            pmem2_vm_reservation_delete(&rsv);
        return nullptr;
    }

    Slot& slot = slots_[index];
    if (!slot.dirty_storage) {
        const size_t words = (opts_.chunk_size / granule_ + 63) / 64;
        slot.dirty_storage.reset(new std::atomic<uint64_t>[words]);
        for (size_t w = 0; w < words; ++w)
            slot.dirty_storage[w].store(0);
        slot.dirty.store(slot.dirty_storage.get(), std::memory_order_release);
    }
    Chunk* c;
    if (!free_chunks_.empty()) {
        c = free_chunks_.back();
        free_chunks_.pop_back();
    } else {
        c = new Chunk;
        all_chunks_.push_back(c);
    }
    c->rsv = rsv;
    c->reserved = pmem2_vm_reservation_get_size(rsv);
    c->rsv_held = false;
    c->pieces.assign(1, piece);
    c->base = static_cast<std::byte*>(pmem2_vm_reservation_get_address(rsv));
    c->length.store(piece.len, std::memory_order_release);
    c->file_offset = start;
    c->index = index;
    c->map_sync = piece.map_sync;
    c->reclaimed = false;
    c->prefaulted.store(0, std::memory_order_relaxed);
    c->retired.store(false, std::memory_order_seq_cst);
    slot.chunk.store(c, std::memory_order_seq_cst);
    stats().maps.add(1);
    return c;
}

// Under mu_. Maps the chunk's file range up to `need_end` (and on to the mappable end) behind
// what is mapped, inside its reservation. False when the reservation is too small or libpmem2
// refuses: the caller remaps the chunk.
bool FileMap::extend_chunk(Chunk* c, uint64_t need_end) {
    const size_t have = c->length.load(std::memory_order_relaxed);
    const uint64_t end = std::min<uint64_t>(
        {c->file_offset + c->reserved, c->file_offset + opts_.chunk_size, mappable_end()});
    if (end < need_end || end <= c->file_offset + have) return false;
    MapPiece piece;
    bool held = false;
    if (!map_piece(c->rsv, have, c->file_offset + have, size_t(end - c->file_offset - have), &piece,
                   &held, nullptr)) {
        c->rsv_held |= held;
        return false;
    }
    if (piece.map_sync != c->map_sync) {
        // Cannot happen for one file; a chunk keeps one durability rule, so remap instead.
        if (piece.map) pmem2_map_delete(&piece.map);
        return false;
    }
    c->pieces.push_back(piece);
    c->length.store(have + piece.len, std::memory_order_release);
    stats().extends.add(1);
    return true;
}

void FileMap::retire(size_t index) {
    Chunk* c = slots_[index].chunk.exchange(nullptr, std::memory_order_seq_cst);
    if (!c) return;
    c->retired.store(true, std::memory_order_seq_cst);
    try_reclaim(c);
}

// Under mu_. Unmaps a retired chunk once no pin is left; its dirty lines are flushed first (the
// dirty bits stay: a newer mapping of the same range may have set them too).
void FileMap::try_reclaim(Chunk* c) {
    if (c->reclaimed || !c->retired.load(std::memory_order_seq_cst)) return;
    if (c->pins.sum(std::memory_order_seq_cst) != 0) return;
    c->reclaimed = true;
    flush_dirty_of(c, false);
    // libpmem2's pieces give their range back to the reservation; ours go with its release (or
    // are unmapped now when the reservation is held).
    for (auto it = c->pieces.rbegin(); it != c->pieces.rend(); ++it) {
        if (it->map)
            pmem2_map_delete(&it->map);
        else if (c->rsv_held)
            ::munmap(it->addr, it->len);
    }
    c->pieces.clear();
    if (c->rsv_held)
        hold_reservation(c->rsv, stats());
    else
        pmem2_vm_reservation_delete(&c->rsv);
    c->rsv = nullptr;
    c->base = nullptr;
    c->length.store(0, std::memory_order_relaxed);
    free_chunks_.push_back(c);
    stats().unmaps.add(1);
}

void FileMap::unpin(Chunk* c, size_t shard) {
    c->pins.add_to(shard, -1, std::memory_order_seq_cst);
    if (c->retired.load(std::memory_order_seq_cst)) {
        std::lock_guard lk(mu_);
        try_reclaim(c);
    }
}

std::optional<MappedRange> FileMap::pin(uint64_t offset, size_t len, bool for_write,
                                        std::string* why) {
    if (for_write && !writable_) {
        if (why) *why = "no read-write descriptor for the mapping";
        return std::nullopt;
    }
    const size_t index = size_t(offset / opts_.chunk_size);
    if (index >= opts_.max_chunks) {
        if (why) *why = "offset beyond the chunk table";
        return std::nullopt;
    }
    const uint64_t chunk_end = uint64_t(index + 1) * opts_.chunk_size;
    const uint64_t need_end = std::min<uint64_t>(offset + len, chunk_end);
    if (need_end > mappable_end()) {
        if (why) *why = "range beyond the mappable end of the file";
        return std::nullopt;
    }
    Slot& slot = slots_[index];
    for (int attempt = 0; attempt < 8; ++attempt) {
        Chunk* c = slot.chunk.load(std::memory_order_acquire);
        if (!c || c->file_offset + c->length.load(std::memory_order_acquire) < need_end) {
            std::lock_guard lk(mu_);
            c = slot.chunk.load(std::memory_order_acquire);
            if (!c || c->file_offset + c->length.load(std::memory_order_acquire) < need_end) {
                // Growth: the chunk's mapping is extended in place, or, when it has outgrown
                // its reservation, only this chunk is remapped.
                if (!c || !extend_chunk(c, need_end)) {
                    if (c) retire(index);
                    c = map_chunk(index, why);
                    if (!c) return std::nullopt;
                }
            }
        }
        const size_t shard = c->pins.add(1, std::memory_order_seq_cst);
        if (!c->retired.load(std::memory_order_seq_cst) &&
            slot.chunk.load(std::memory_order_seq_cst) == c &&
            c->file_offset + c->length.load(std::memory_order_acquire) >= need_end) {
            MappedRange r;
            r.owner_ = this;
            r.chunk_ = c;
            r.shard_ = shard;
            r.file_offset_ = offset;
            r.bytes_ = std::span<std::byte>(c->base + (offset - c->file_offset),
                                            size_t(need_end - offset));
            r.mapping_ = std::span<std::byte>(c->base, c->length.load(std::memory_order_acquire));
            return r;
        }
        // Lost a race with a retire (or a recycled Chunk): undo and look again.
        unpin(c, shard);
    }
    if (why) *why = "mapping kept changing";
    return std::nullopt;
}

void FileMap::mark_dirty(size_t index, uint64_t chunk_off, size_t len) {
    std::atomic<uint64_t>* bits = slots_[index].dirty.load(std::memory_order_acquire);
    if (!bits || len == 0) return;
    const size_t first = size_t(chunk_off / granule_);
    const size_t last = size_t((chunk_off + len - 1) / granule_);
    for (size_t g = first; g <= last; ++g) {
        const uint64_t bit = uint64_t(1) << (g % 64);
        // Only write the shared word when the bit is not set yet (rewrites stay read-only).
        if (!(bits[g / 64].load(std::memory_order_relaxed) & bit))
            bits[g / 64].fetch_or(bit, std::memory_order_release);
    }
}

bool FileMap::msync_range(const void* addr, size_t len) const {
    const uintptr_t start = uintptr_t(addr) & ~uintptr_t(page_ - 1);
    const size_t span = size_t(uintptr_t(addr) + len - start);
    return ::msync(reinterpret_cast<void*>(start), span, MS_SYNC) == 0;
}

// Flushes the dirty granules of chunk `c` (clear: and clears their bits first). The caller holds
// a pin or mu_ with the chunk not yet unmapped.
bool FileMap::flush_dirty_of(Chunk* c, bool clear) {
    std::atomic<uint64_t>* bits = slots_[c->index].dirty.load(std::memory_order_acquire);
    if (!bits || !c->base) return true;
    bool ok = true;
    FlushCtx ctx{&flusher_};
    const size_t length = c->length.load(std::memory_order_acquire);
    const size_t granules = (length + granule_ - 1) / granule_;
    for (size_t w = 0; w * 64 < granules; ++w) {
        uint64_t word = clear ? bits[w].exchange(0, std::memory_order_acq_rel)
                              : bits[w].load(std::memory_order_acquire);
        while (word) {
            const size_t g = w * 64 + size_t(__builtin_ctzll(word));
            word &= word - 1;
            if (g >= granules) break;
            std::byte* p = c->base + g * granule_;
            const size_t n = std::min(granule_, length - g * granule_);
            if (c->map_sync) {
                ok &= guarded_copy(p, p, n, c->base, length, flush_as_copy, &ctx);
            } else {
                ok &= msync_range(p, n);
            }
        }
    }
    flusher_.drain();
    return ok;
}

void FileMap::refresh_size() {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return;
    if (uint64_t(st.st_size) < size())
        truncated(uint64_t(st.st_size));
    else
        size_.store(uint64_t(st.st_size), std::memory_order_release);
}

IoResult FileMap::read(uint64_t offset, std::span<std::byte> dst) {
    IoResult res;
    Stats& counts = stats();
    if (offset + dst.size() > size()) refresh_size();
    const uint64_t sz = size();
    if (offset >= sz || dst.empty()) {
        res.outcome = IoOutcome::Done;
        return res;
    }
    const size_t n = size_t(std::min<uint64_t>(dst.size(), sz - offset));
    if (offset + n > mappable_end()) {
        res.why = "range reaches into the partial last page";
        res.routine = true;
        counts.fallbacks.add(1);
        return res;
    }
    size_t done = 0;
    while (done < n) {
        auto r = pin(offset + done, n - done, false, &res.why);
        if (!r) {
            counts.fallbacks.add(1);
            return res;
        }
        auto m = r->bytes();
        if (!guarded_copy(dst.data() + done, m.data(), m.size(), m.data(), m.size())) {
            r->reset();
            return media_failure(offset + done, m.size());
        }
        done += m.size();
    }
    res.outcome = IoOutcome::Done;
    res.bytes = n;
    counts.reads.add(1);
    counts.read_bytes.add(int64_t(n));
    return res;
}

bool FileMap::grow_to(uint64_t offset, uint64_t end, bool durable, std::string* why) {
    std::lock_guard lk(mu_);
    if (end <= size()) return true;
    // Allocates the blocks and moves the end of file in one call (the mapping cannot reach past
    // the end of file); a DAX page fault into a hole would allocate too, but a failure there is a
    // SIGBUS instead of an errno.
    if (::fallocate(fd_, 0, off_t(offset), off_t(end - offset)) != 0) {
        if (why) *why = std::string("fallocate: ") + std::strerror(errno);
        return false;
    }
    // The new size is file-system metadata that MAP_SYNC does not cover: a write-through write
    // that extends the file makes it durable here.
    if (durable && ::fdatasync(fd_) != 0) {
        if (why) *why = std::string("fdatasync: ") + std::strerror(errno);
        return false;
    }
    size_.store(std::max(size(), end), std::memory_order_release);
    return true;
}

IoResult FileMap::write(uint64_t offset, std::span<const std::byte> src, bool write_through) {
    IoResult res;
    Stats& counts = stats();
    if (src.empty()) {
        res.outcome = IoOutcome::Done;
        return res;
    }
    const uint64_t end = offset + src.size();
    if (!writable_) {
        res.why = "no read-write descriptor for the mapping";
        counts.fallbacks.add(1);
        return res;
    }
    if (end > uint64_t(opts_.max_chunks) * opts_.chunk_size) {
        res.why = "offset beyond the chunk table";
        res.routine = true;
        counts.fallbacks.add(1);
        return res;
    }
    if (end > size() && !grow_to(offset, end, write_through, &res.why)) {
        counts.fallbacks.add(1);
        return res;
    }
    if (end > mappable_end()) {
        res.why = "range reaches into the partial last page";
        res.routine = true;
        counts.fallbacks.add(1);
        return res;
    }
    FlushCtx ctx{&flusher_};
    size_t done = 0;
    while (done < src.size()) {
        auto r = pin(offset + done, src.size() - done, true, &res.why);
        if (!r) {
            counts.fallbacks.add(1);
            return res;
        }
        auto m = r->bytes();
        if (!guarded_copy(m.data(), src.data() + done, m.size(), m.data(), m.size(), pmem_copy,
                          &ctx)) {
            r->reset();
            return media_failure(offset + done, m.size());
        }
        if (write_through) {
            // MS-SMB2 3.3.5.13 write-through: durable before the response.
            bool ok = true;
            if (r->chunk_->map_sync)
                flusher_.flush(m.data(), m.size());
            else
                ok = msync_range(m.data(), m.size());
            if (!ok) {
                res.why = std::string("msync: ") + std::strerror(errno);
                counts.fallbacks.add(1);
                return res;
            }
        } else {
            // Copy first, then mark: persist() clears a bit before flushing, so a mark after
            // the copy is never lost.
            mark_dirty(r->chunk_->index, offset + done - r->chunk_->file_offset, m.size());
        }
        done += m.size();
    }
    if (write_through) {
        flusher_.drain();
        counts.persists.add(1);
    }
    res.outcome = IoOutcome::Done;
    res.bytes = src.size();
    counts.writes.add(1);
    counts.write_bytes.add(int64_t(src.size()));
    return res;
}

std::optional<MappedRange> FileMap::pin_for_rdma(uint64_t offset, size_t len, bool for_write,
                                                 bool write_through, std::string* why) {
    auto refuse = [&](const char* w) -> std::optional<MappedRange> {
        if (why) *why = w;
        return std::nullopt;
    };
    if (len == 0) return refuse("nothing to place");
    const uint64_t end = offset + len;
    if (offset / opts_.chunk_size != (end - 1) / opts_.chunk_size)
        return refuse("range spans two chunk mappings");
    // Counted before the fence is looked at: fence_rdma sets the fence, then waits for the
    // count, so one of the two sees the other.
    rdma_pins_.fetch_add(1, std::memory_order_seq_cst);
    auto undo = [&](const char* w) -> std::optional<MappedRange> {
        rdma_pins_.fetch_sub(1, std::memory_order_seq_cst);
        return refuse(w);
    };
    if (rdma_fenced_.load(std::memory_order_seq_cst)) return undo("the file is being truncated");
    if (for_write) {
        if (!writable_) return undo("no read-write descriptor for the mapping");
        std::string grow_why;
        if (end > size() && !grow_to(offset, end, write_through, &grow_why)) {
            if (why) *why = grow_why;
            return undo("the range could not be allocated");
        }
    } else if (end > size()) {
        refresh_size();
        if (end > size()) return undo("range beyond the end of file");
    }
    auto r = pin(offset, len, for_write, why);
    if (!r) {
        rdma_pins_.fetch_sub(1, std::memory_order_seq_cst);
        return std::nullopt;
    }
    if (r->bytes().size() != len) {
        r->reset();
        return undo("range not mapped whole");
    }
    r->rdma_ = true;
    return r;
}

IoResult FileMap::landed(const MappedRange& range, bool write_through) {
    IoResult res;
    auto m = range.bytes();
    Chunk* c = range.chunk_;
    if (write_through) {
        // MS-SMB2 3.3.5.13 write-through: durable before the response. What the device wrote
        // may sit in the CPU caches (a software device copies; a NIC's DMA can land in the
        // last-level cache): flushed like a copy of our own.
        if (c->map_sync) {
            flusher_.flush(m.data(), m.size());
            flusher_.drain();
        } else if (!msync_range(m.data(), m.size())) {
            res.why = std::string("msync: ") + std::strerror(errno);
            return res;
        }
        stats().persists.add(1);
    } else {
        mark_dirty(c->index, range.file_offset() - c->file_offset, m.size());
    }
    res.outcome = IoOutcome::Done;
    res.bytes = m.size();
    stats().writes.add(1);
    stats().write_bytes.add(int64_t(m.size()));
    return res;
}

bool FileMap::fence_rdma(std::chrono::milliseconds wait) {
    rdma_fenced_.store(true, std::memory_order_seq_cst);
    const auto until = std::chrono::steady_clock::now() + wait;
    while (rdma_pins_.load(std::memory_order_seq_cst) != 0) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// A SIGBUS during a copy: if the file no longer reaches the range, it changed under us (someone
// truncated it): drop the mappings and let the block path answer. Otherwise the media failed:
// drop the chunk and fail the request.
IoResult FileMap::media_failure(uint64_t offset, size_t len) {
    IoResult res;
    Stats& counts = stats();
    const uint64_t before = size();
    refresh_size();
    if (offset + len > size() || size() < before) {
        invalidate();
        res.why = "file changed under the mapping (SIGBUS past the end of file)";
        counts.fallbacks.add(1);
        return res;
    }
    {
        std::lock_guard lk(mu_);
        retire(size_t(offset / opts_.chunk_size));
    }
    res.outcome = IoOutcome::MediaError;
    res.why = "SIGBUS on the mapping at file offset " + std::to_string(offset) + " (media error)";
    counts.media_errors.add(1);
    return res;
}

bool FileMap::persist() {
    bool ok = true;
    for (size_t i = 0; i < opts_.max_chunks; ++i) {
        std::atomic<uint64_t>* bits = slots_[i].dirty.load(std::memory_order_acquire);
        if (!bits) continue;
        const size_t words = (opts_.chunk_size / granule_ + 63) / 64;
        bool any = false;
        for (size_t w = 0; w < words && !any; ++w)
            any = bits[w].load() != 0;
        if (!any) continue;
        const uint64_t start = uint64_t(i) * opts_.chunk_size;
        const uint64_t mend = mappable_end();
        if (start >= mend) {
            // Truncated away: nothing left to make durable.
            for (size_t w = 0; w < words; ++w)
                bits[w].store(0);
            continue;
        }
        auto r = pin(start, size_t(std::min<uint64_t>(opts_.chunk_size, mend - start)), false);
        if (!r) {
            ok = false;
            continue;
        }
        ok &= flush_dirty_of(r->chunk_, true);
    }
    stats().persists.add(1);
    return ok;
}

bool FileMap::dirty() const {
    for (size_t i = 0; i < opts_.max_chunks; ++i) {
        const std::atomic<uint64_t>* bits = slots_[i].dirty.load(std::memory_order_acquire);
        if (!bits) continue;
        const size_t words = (opts_.chunk_size / granule_ + 63) / 64;
        for (size_t w = 0; w < words; ++w)
            if (bits[w].load(std::memory_order_relaxed)) return true;
    }
    return false;
}

void FileMap::truncated(uint64_t new_size) {
    std::lock_guard lk(mu_);
    size_.store(new_size, std::memory_order_release);
    const uint64_t mend = new_size & ~uint64_t(page_ - 1);
    for (size_t i = 0; i < opts_.max_chunks; ++i) {
        const uint64_t start = uint64_t(i) * opts_.chunk_size;
        if (std::atomic<uint64_t>* bits = slots_[i].dirty.load()) {
            // Granules wholly past the new end have nothing left to flush (and flushing a
            // truncated page would fault).
            const size_t granules = opts_.chunk_size / granule_;
            if (start >= mend) {
                for (size_t w = 0; w < (granules + 63) / 64; ++w)
                    bits[w].store(0);
            } else if (start + opts_.chunk_size > mend) {
                for (size_t g = size_t((mend - start + granule_ - 1) / granule_); g < granules; ++g)
                    bits[g / 64].fetch_and(~(uint64_t(1) << (g % 64)));
            }
        }
        Chunk* c = slots_[i].chunk.load();
        if (c && c->file_offset + c->length.load(std::memory_order_relaxed) > mend) retire(i);
    }
}

void FileMap::invalidate() {
    {
        std::lock_guard lk(mu_);
        for (size_t i = 0; i < opts_.max_chunks; ++i)
            retire(i);
    }
    struct stat st {};
    if (::fstat(fd_, &st) == 0) size_.store(uint64_t(st.st_size), std::memory_order_release);
}

size_t FileMap::prefault(uint64_t offset, bool for_write) {
    if (opts_.prefault_bytes == 0 || (for_write && !writable_)) return 0;
    const size_t index = size_t(offset / opts_.chunk_size);
    if (index >= opts_.max_chunks) return 0;
    const uint64_t start = uint64_t(index) * opts_.chunk_size;
    const uint64_t end = std::min<uint64_t>(
        {start + opts_.chunk_size, start + opts_.prefault_bytes, mappable_end()});
    if (end <= start) return 0;
    // The pin keeps the chunk mapped while the kernel populates it (a truncation meanwhile
    // retires it; the unmap waits for the unpin).
    auto r = pin(start, size_t(end - start), for_write);
    if (!r) return 0;
    std::byte* const base = r->bytes().data();
    if (!for_write) {
        // A read fault on a hole maps the zero page: no side effect on the file.
        if (!populate(base, size_t(end - start), false)) return 0;
        stats().prefaults.add(1);
        return size_t(end - start);
    }
    // A write fault on a hole allocates its blocks: only the file's data ranges (SEEK_DATA /
    // SEEK_HOLE) are populated for writing, so that a sparse file stays sparse.
    size_t done = 0;
    uint64_t pos = start;
    while (pos < end) {
        const off_t data = ::lseek(fd_, off_t(pos), SEEK_DATA);
        if (data < 0 || uint64_t(data) >= end) break;
        const off_t hole = ::lseek(fd_, data, SEEK_HOLE);
        const uint64_t seg_end = hole < 0 ? end : std::min<uint64_t>(uint64_t(hole), end);
        // Whole pages inside the data range (blocks smaller than a page: rounded inwards).
        const uint64_t a = round_up(size_t(data), page_);
        const uint64_t b = seg_end & ~uint64_t(page_ - 1);
        if (b > a) {
            if (!populate(base + (a - start), size_t(b - a), true)) return done;
            done += size_t(b - a);
        }
        pos = std::max<uint64_t>(seg_end, pos + page_);
    }
    if (done) stats().prefaults.add(1);
    return done;
}

bool FileMap::claim_prefault(uint64_t offset, bool for_write) {
    if (opts_.prefault_bytes == 0 || (for_write && !writable_) ||
        !g_populate_available.load(std::memory_order_relaxed))
        return false;
    const size_t index = size_t(offset / opts_.chunk_size);
    if (index >= opts_.max_chunks) return false;
    // Chunk objects live as long as the map (recycled, never freed), so a stale pointer is safe
    // to look at; a claim on a chunk being retired only prefaults its successor.
    Chunk* c = slots_[index].chunk.load(std::memory_order_acquire);
    if (!c) return false;
    const uint8_t want = for_write ? 2 : 1;
    uint8_t have = c->prefaulted.load(std::memory_order_relaxed);
    while (have < want)
        if (c->prefaulted.compare_exchange_weak(have, want, std::memory_order_relaxed)) return true;
    return false;
}

void FileMap::touch_mtime() {
    const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    (void)::futimens(fd_, times);
}

uint64_t FileMap::mapped_bytes() const {
    std::lock_guard lk(mu_);
    uint64_t n = 0;
    for (size_t i = 0; i < opts_.max_chunks; ++i)
        if (Chunk* c = slots_[i].chunk.load()) n += c->length.load(std::memory_order_relaxed);
    return n;
}

// ---- MapRegistry

namespace {

struct RegistryKey {
    uint64_t device, inode;
    bool operator==(const RegistryKey&) const = default;
};
struct RegistryKeyHash {
    size_t operator()(const RegistryKey& k) const {
        return std::hash<uint64_t>()(k.inode * 0x9E3779B97F4A7C15ull ^ k.device);
    }
};

using Victims = std::vector<std::shared_ptr<FileMap>>;

}  // namespace

struct MapRegistry::State {
    struct Entry {
        std::weak_ptr<FileMap> active;    // the opens' reference (a Lease), while the file is open
        std::shared_ptr<FileMap> cached;  // the file is closed and its map kept
        FileStamp stamp;                  // the file at the cached map's last close
        uint64_t bytes = 0;               // mapped bytes of `cached`
        std::list<RegistryKey>::iterator lru;
        bool forgotten = false;  // unlinked or replaced while in use: not cached at its close
    };

    std::mutex mu;
    MapCacheLimits limits;
    Stats stats;
    std::unordered_map<RegistryKey, Entry, RegistryKeyHash> entries;
    std::list<RegistryKey> lru;  // keys of the cached maps, most recently closed first
    uint64_t bytes = 0;          // mapped bytes of the cached maps

    // Under mu. The cached map of `e` leaves the cache (into `victims`, destroyed by the caller
    // after mu is released: unmapping is not done under the registry's lock).
    void uncache(Entry& e, Victims& victims) {
        if (!e.cached) return;
        lru.erase(e.lru);
        bytes -= e.bytes;
        e.bytes = 0;
        victims.push_back(std::move(e.cached));
        e.cached.reset();
    }
    // Under mu. Forgets `it` when nothing is left of it.
    void erase_if_unused(decltype(entries)::iterator it) {
        if (!it->second.cached && it->second.active.expired()) entries.erase(it);
    }
    // Under mu. Least recently closed first, until the cache fits its limits.
    void evict(Victims& victims) {
        while (!lru.empty() && (lru.size() > limits.max_files || bytes > limits.max_bytes)) {
            auto it = entries.find(lru.back());
            uncache(it->second, victims);
            erase_if_unused(it);
        }
    }
    void closed(const RegistryKey& key, std::shared_ptr<FileMap> map);
};

namespace {

// What the opens of a file hold (through an aliasing shared_ptr<FileMap>): when the last one
// goes, the map goes back to the registry, which caches or drops it.
struct Lease {
    std::shared_ptr<MapRegistry::State> state;
    RegistryKey key;
    std::shared_ptr<FileMap> map;
    ~Lease() { state->closed(key, std::move(map)); }
};

}  // namespace

void MapRegistry::State::closed(const RegistryKey& key, std::shared_ptr<FileMap> map) {
    Victims victims;  // declared before the lock: destroyed after it is released
    // CLOSE persisted the open's writes already; an open that ended without CLOSE (session or
    // connection teardown) relied on the map's destruction for that, which a cached map
    // postpones: persist here, as that destruction did. A map that cannot persist is dropped
    // (its destructor tries once more).
    const bool persisted = !map->dirty() || map->persist();
    const std::optional<FileStamp> st = persisted ? map->stamp() : std::nullopt;
    const uint64_t mapped = map->mapped_bytes();
    std::lock_guard lk(mu);
    auto it = entries.find(key);
    if (it == entries.end()) {
        victims.push_back(std::move(map));
        return;
    }
    Entry& e = it->second;
    // Not kept: a deleted file (its blocks stay allocated while mapped), nothing mapped, a newer
    // map of the file in use or cached already (an open raced with this close).
    const bool keep = st && st->nlink > 0 && !e.forgotten && mapped > 0 && limits.max_files > 0 &&
                      mapped <= limits.max_bytes && !e.cached && e.active.expired();
    if (!keep) {
        victims.push_back(std::move(map));
        erase_if_unused(it);
        return;
    }
    e.cached = std::move(map);
    e.stamp = *st;
    e.bytes = mapped;
    lru.push_front(key);
    e.lru = lru.begin();
    bytes += mapped;
    evict(victims);
}

MapRegistry::MapRegistry(MapCacheLimits limits) : state_(std::make_shared<State>()) {
    state_->limits = limits;
}

MapRegistry::~MapRegistry() {
    // Opens may outlive the registry (their references keep its state): nothing is cached any
    // more, and the cached maps go now.
    set_cache_limits(MapCacheLimits{0, 0});
}

void MapRegistry::set_cache_limits(MapCacheLimits limits) {
    Victims victims;
    std::lock_guard lk(state_->mu);
    state_->limits = limits;
    state_->evict(victims);
}

std::shared_ptr<FileMap> MapRegistry::acquire(uint64_t device, uint64_t inode, int fd,
                                              const MapOptions& requested) {
    Victims victims;  // destroyed after the lock is released
    State& st = *state_;
    MapOptions options = requested;
    if (!options.stats) options.stats = &st.stats;
    const RegistryKey key{device, inode};
    std::lock_guard lk(st.mu);
    auto it = st.entries.try_emplace(key).first;
    State::Entry& e = it->second;
    if (auto m = e.active.lock()) return m;

    std::shared_ptr<FileMap> map;
    if (e.cached) {
        // A cached map serves the file only as it was at its last close: the same inode, still
        // linked, and no write or truncation since by anyone (size, mtime, ctime); the same
        // options (the file reached through another share); and writable when this open is.
        const FileStamp closed_as = e.stamp;
        map = e.cached;
        st.uncache(e, victims);
        victims.pop_back();  // `map` holds it; only a rejected one goes to the victims
        const std::optional<FileStamp> now = FileStamp::of(fd);
        const std::optional<FileStamp> own = map->stamp();
        const int flags = ::fcntl(fd, F_GETFL);
        const bool rdwr = flags >= 0 && (flags & O_ACCMODE) == O_RDWR;
        const bool valid = now && own && own->nlink > 0 && own->same_file(*now) &&
                           closed_as.unchanged(*now) && map->options() == options &&
                           (map->writable() || !rdwr);
        if (valid) {
            options.stats->map_cache_hits.add(1);
        } else {
            victims.push_back(std::move(map));
            map.reset();
        }
    }
    if (!map) map = FileMap::create(fd, options);
    if (!map) {
        st.erase_if_unused(it);
        return nullptr;
    }
    // Built in place: a temporary Lease would report a close when destroyed.
    std::shared_ptr<Lease> lease(new Lease{state_, key, map});
    std::shared_ptr<FileMap> handle(lease, map.get());
    e.active = handle;
    e.forgotten = false;
    return handle;
}

Stats& MapRegistry::stats() {
    return state_->stats;
}

std::shared_ptr<FileMap> MapRegistry::find(uint64_t device, uint64_t inode) {
    std::lock_guard lk(state_->mu);
    auto it = state_->entries.find(RegistryKey{device, inode});
    return it == state_->entries.end() ? nullptr : it->second.active.lock();
}

size_t MapRegistry::size() {
    std::lock_guard lk(state_->mu);
    size_t n = 0;
    for (const auto& [key, e] : state_->entries)
        n += !e.active.expired();
    return n;
}

size_t MapRegistry::cached_files() {
    std::lock_guard lk(state_->mu);
    return state_->lru.size();
}

uint64_t MapRegistry::cached_bytes() {
    std::lock_guard lk(state_->mu);
    return state_->bytes;
}

void MapRegistry::forget(uint64_t device, uint64_t inode) {
    Victims victims;
    std::lock_guard lk(state_->mu);
    auto it = state_->entries.find(RegistryKey{device, inode});
    if (it == state_->entries.end()) return;
    it->second.forgotten = true;
    state_->uncache(it->second, victims);
    state_->erase_if_unused(it);
}

void MapRegistry::sweep() {
    Victims victims;
    std::lock_guard lk(state_->mu);
    for (auto k = state_->lru.begin(); k != state_->lru.end();) {
        auto it = state_->entries.find(*k++);  // uncache() erases the current list node
        const std::optional<FileStamp> own = it->second.cached->stamp();
        if (own && own->nlink > 0) continue;
        state_->uncache(it->second, victims);
        state_->erase_if_unused(it);
    }
}

}  // namespace daxsmbd::dax
