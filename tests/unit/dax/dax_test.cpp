// The DAX module on ordinary files: libpmem2 maps them page-granular when MAP_SYNC is not
// required (MapOptions::require_sync = false), which exercises everything but the cache-flush
// durability itself (that is the VM test's job, tests/vm/).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dax/detect.h"
#include "dax/flush.h"
#include "dax/mapping.h"
#include "dax/media_guard.h"
#include "dax/stats.h"
#include "mmap_interposer.h"

namespace daxsmbd::dax {
namespace {

constexpr size_t kChunk = 64 * 1024;

class TempFile {
  public:
    explicit TempFile(size_t size) {
        char tmpl[] = "/var/tmp/daxtest-XXXXXX";
        fd_ = ::mkstemp(tmpl);
        path_ = tmpl;
        EXPECT_GE(fd_, 0);
        EXPECT_EQ(::ftruncate(fd_, off_t(size)), 0);
    }
    ~TempFile() {
        ::close(fd_);
        ::unlink(path_.c_str());
    }
    int fd() const { return fd_; }
    const std::string& path() const { return path_; }

  private:
    int fd_ = -1;
    std::string path_;
};

// What the tests' maps count (each test compares before and after).
Stats& test_stats() {
    static Stats stats;
    return stats;
}

MapOptions test_options() {
    MapOptions o;
    o.stats = &test_stats();
    o.chunk_size = kChunk;
    o.max_chunks = 64;
    o.require_sync = false;
    o.flush = *resolve_flush_kind(FlushKind::Auto, detect_cpu_flush_support());
    return o;
}

std::vector<std::byte> pattern(size_t n, unsigned seed) {
    std::vector<std::byte> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = std::byte((i * 131 + seed * 7 + (i >> 12)) & 0xff);
    return v;
}

std::vector<std::byte> pread_all(int fd, uint64_t off, size_t n) {
    std::vector<std::byte> v(n);
    EXPECT_EQ(::pread(fd, v.data(), n, off_t(off)), ssize_t(n));
    return v;
}

// ---- flush selection

TEST(DaxFlush, ParsesAndNamesEveryKind) {
    for (auto name : {"auto", "clwb", "clflushopt", "clflush", "ntstore"}) {
        auto k = parse_flush_kind(name);
        ASSERT_TRUE(k) << name;
        EXPECT_EQ(to_string(*k), name);
    }
    EXPECT_FALSE(parse_flush_kind("sfence"));
    EXPECT_FALSE(parse_flush_kind(""));
}

TEST(DaxFlush, AutoPrefersClwbThenClflushoptThenClflush) {
    CpuFlushSupport all{true, true, true, true};
    EXPECT_EQ(resolve_flush_kind(FlushKind::Auto, all), FlushKind::Clwb);
    CpuFlushSupport no_clwb{true, true, false, true};
    EXPECT_EQ(resolve_flush_kind(FlushKind::Auto, no_clwb), FlushKind::Clflushopt);
    CpuFlushSupport only_clflush{true, false, false, true};
    EXPECT_EQ(resolve_flush_kind(FlushKind::Auto, only_clflush), FlushKind::Clflush);
    EXPECT_FALSE(resolve_flush_kind(FlushKind::Auto, CpuFlushSupport{}));
}

TEST(DaxFlush, ExplicitKindTheCpuLacksIsRefused) {
    CpuFlushSupport only_clflush{true, false, false, true};
    EXPECT_FALSE(resolve_flush_kind(FlushKind::Clwb, only_clflush));
    EXPECT_FALSE(resolve_flush_kind(FlushKind::Clflushopt, only_clflush));
    EXPECT_EQ(resolve_flush_kind(FlushKind::Clflush, only_clflush), FlushKind::Clflush);
    EXPECT_EQ(resolve_flush_kind(FlushKind::NtStore, only_clflush), FlushKind::NtStore);
    EXPECT_FALSE(
        resolve_flush_kind(FlushKind::NtStore, CpuFlushSupport{true, false, false, false}));
}

// Every kind this CPU has copies exactly (the non-temporal copy has unaligned head and tail
// paths) and its flush/fence runs without faulting.
TEST(DaxFlush, EverySupportedKindCopiesAndFlushes) {
    const auto cpu = detect_cpu_flush_support();
    int tried = 0;
    for (FlushKind k :
         {FlushKind::Clwb, FlushKind::Clflushopt, FlushKind::Clflush, FlushKind::NtStore}) {
        auto r = resolve_flush_kind(k, cpu);
        if (!r) continue;
        ++tried;
        Flusher f(*r);
        EXPECT_EQ(f.kind(), k);
        for (size_t off : {0, 1, 7, 15, 16, 63}) {
            for (size_t len : {0, 1, 15, 16, 17, 100, 4096 + 3}) {
                std::vector<std::byte> src = pattern(len, unsigned(off + len));
                std::vector<std::byte> dst(len + 128, std::byte{0xEE});
                f.copy_to_pmem(dst.data() + off, src.data(), len);
                f.persist(dst.data() + off, len);
                EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + long(off)))
                    << to_string(k) << " off " << off << " len " << len;
                for (size_t i = 0; i < off; ++i)
                    ASSERT_EQ(dst[i], std::byte{0xEE});
                for (size_t i = off + len; i < dst.size(); ++i)
                    ASSERT_EQ(dst[i], std::byte{0xEE});
            }
        }
    }
    EXPECT_GE(tried, 2);  // clflush and ntstore exist on every x86-64 CPU
}

// ---- detection

TEST(DaxDetect, OrdinaryFileSystemHasNoMapSync) {
    int dir = ::open("/var/tmp", O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dir, 0);
    DetectResult d = detect_dax(dir);
    ::close(dir);
    EXPECT_FALSE(d.map_sync);
    EXPECT_NE(d.detail.find("MAP_SYNC"), std::string::npos) << d.detail;
}

TEST(DaxDetect, DecisionPerMode) {
    DetectResult no;
    no.detail = "MAP_SYNC mapping refused: Operation not supported";
    DetectResult yes;
    yes.map_sync = true;
    EXPECT_FALSE(decide(DaxMode::Off, yes).use_dax);
    EXPECT_TRUE(decide(DaxMode::Auto, yes).use_dax);
    EXPECT_TRUE(decide(DaxMode::On, yes).use_dax);
    EXPECT_FALSE(decide(DaxMode::Auto, no).use_dax);
    EXPECT_TRUE(decide(DaxMode::Auto, no).error.empty());
    EXPECT_FALSE(decide(DaxMode::On, no).use_dax);
    EXPECT_NE(decide(DaxMode::On, no).error.find("not DAX-capable"), std::string::npos);
    // statx's flag alone is only a hint: without MAP_SYNC there is no DAX.
    DetectResult hint_only;
    hint_only.statx_dax = true;
    EXPECT_FALSE(decide(DaxMode::Auto, hint_only).use_dax);
    EXPECT_EQ(parse_dax_mode("on"), DaxMode::On);
    EXPECT_EQ(parse_dax_mode("auto"), DaxMode::Auto);
    EXPECT_EQ(parse_dax_mode("no"), DaxMode::Off);
    EXPECT_FALSE(parse_dax_mode("maybe"));
}

// ---- mappings

TEST(DaxMap, RequiringMapSyncOnAnOrdinaryFileFallsBack) {
    TempFile f(4 * kChunk);
    MapOptions o = test_options();
    o.require_sync = true;
    auto m = FileMap::create(f.fd(), o);
    ASSERT_TRUE(m);
    std::vector<std::byte> buf(4096);
    const auto before = test_stats().snapshot().fallbacks;
    IoResult r = m->read(0, buf);
    EXPECT_EQ(r.outcome, IoOutcome::Fallback);
    EXPECT_NE(r.why.find("MAP_SYNC"), std::string::npos) << r.why;
    EXPECT_EQ(test_stats().snapshot().fallbacks, before + 1);
}

// ---- the address space around mappings

// True when this binary's mmap wrapper (mmap_interposer.h) sees the calls.
bool interposer_works() {
    void* p = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) ::munmap(p, 4096);
    return testing::mmap_interposer_active();
}

// A MAP_FIXED mmap that the file system refuses (MAP_SYNC on a file that is not DAX) has already
// unmapped its target range when it fails: until the next call fills the range again, another
// thread's mmap (a new thread's stack, a malloc arena) can land there, and the next MAP_FIXED
// then maps the file over that thread's memory. This killed a freshly started thread in
// DaxMap.ConcurrentReadersWritersAndTruncate (SIGSEGV in its TLS, SIGBUS on its truncated "stack")
// about once in 40 runs. So no fixed mapping of the file may fail: not while serving an ordinary
// file page-granular, nor when MAP_SYNC is required and the file cannot give it.
TEST(DaxAddressSpace, NoFixedMappingOfTheFileFails) {
    if (!interposer_works()) GTEST_SKIP() << "mmap wrapper not linked (sanitizer build)";
    TempFile f(4 * kChunk);
    const auto data = pattern(kChunk, 3);
    testing::reset_failed_fixed_file_mmaps();
    {
        auto m = FileMap::create(f.fd(), test_options());
        ASSERT_TRUE(m);
        ASSERT_EQ(m->write(kChunk / 2, data, true).outcome, IoOutcome::Done);   // two chunks
        ASSERT_EQ(m->write(4 * kChunk, data, false).outcome, IoOutcome::Done);  // growth
        ASSERT_EQ(::ftruncate(f.fd(), off_t(kChunk)), 0);
        m->truncated(kChunk);
        std::vector<std::byte> buf(kChunk / 2);
        ASSERT_EQ(m->read(kChunk / 2, buf).outcome, IoOutcome::Done);
        EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin()));
        ASSERT_EQ(m->write(3 * kChunk, data, false).outcome, IoOutcome::Done);  // regrowth
    }
    EXPECT_EQ(testing::failed_fixed_file_mmaps(), 0u);
    {
        MapOptions o = test_options();
        o.require_sync = true;
        auto m = FileMap::create(f.fd(), o);
        ASSERT_TRUE(m);
        std::vector<std::byte> buf(4096);
        EXPECT_EQ(m->read(0, buf).outcome, IoOutcome::Fallback);
        EXPECT_EQ(m->write(0, buf, true).outcome, IoOutcome::Fallback);
    }
    EXPECT_EQ(testing::failed_fixed_file_mmaps(), 0u);
}

// Chunk mappings start at a 2 MiB aligned address (where the file offset allows, a DAX fault can
// then map a whole 2 MiB page), at the first try: the aligned reservation must fit inside the
// probed free range. libpmem2 asks for the size rounded up to 2 MiB plus 2 MiB at the aligned
// address; a probe only 2 MiB larger than the size failed whenever the next mapping up was
// adjacent (the usual case of top-down placement), and the reservation went wherever the kernel
// put it (unaligned, before Linux 6.7 aligned large anonymous mappings).
TEST(DaxAddressSpace, ReservationsAreAlignedAtTheFirstTry) {
    if (!interposer_works()) GTEST_SKIP() << "mmap wrapper not linked (sanitizer build)";
    for (size_t chunk : {kChunk, size_t(4) << 20, size_t(16) << 20}) {
        SCOPED_TRACE(chunk);
        TempFile f(chunk);
        MapOptions o = test_options();
        o.chunk_size = chunk;
        auto m = FileMap::create(f.fd(), o);
        ASSERT_TRUE(m);
        testing::reset_failed_noreplace_mmaps();
        for (int i = 0; i < 8; ++i) {
            // Something placed just above the next reservation, as in a busy process.
            void* neighbour = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            auto r = m->pin(0, 4096, false);
            ASSERT_TRUE(r);
            EXPECT_EQ(uintptr_t(r->bytes().data()) % (size_t(2) << 20), 0u);
            r->reset();
            m->invalidate();  // the next pin maps the chunk again
            ::munmap(neighbour, 4096);
        }
        EXPECT_EQ(testing::failed_noreplace_mmaps(), 0u);
    }
}

// When a fixed mapping into a chunk's reserved range fails after all, and what the failure
// unmapped was taken by someone else meanwhile, the reservation is never released (that would
// unmap the other one's memory): it is held for good and counted. The request falls back.
// The first mapping of a new map fails as injected (fill_hole: someone takes the hole); the
// read falls back, and the next one is served from a new mapping. The map is gone afterwards.
void fail_first_mapping_then_serve(bool fill_hole) {
    TempFile f(4 * kChunk);
    std::vector<std::byte> buf(4096);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    testing::inject_fixed_file_mmap_failure(fill_hole, 0x5a);
    EXPECT_EQ(m->read(0, buf).outcome, IoOutcome::Fallback);
    EXPECT_EQ(m->read(0, buf).outcome, IoOutcome::Done);
}

TEST(DaxAddressSpace, AFailedMappingNeverUnmapsWhatFilledItsHole) {
    if (!interposer_works()) GTEST_SKIP() << "mmap wrapper not linked (sanitizer build)";
    const auto before = test_stats().snapshot();
    fail_first_mapping_then_serve(true);
    ASSERT_NE(testing::injected_hole(), nullptr);
    auto* hole = static_cast<unsigned char*>(testing::injected_hole());
    const size_t len = testing::injected_hole_length();
    std::vector<unsigned char> resident((len + 4095) / 4096);
    ASSERT_EQ(::mincore(hole, len, resident.data()), 0) << "the foreign mapping was unmapped";
    EXPECT_EQ(hole[0], 0x5a);
    ::munmap(hole, len);
    EXPECT_EQ(test_stats().snapshot().held_reservations - before.held_reservations, 1);
}

// A hole nobody filled is covered again: the reservation stays whole and is released as usual.
TEST(DaxAddressSpace, AFailedMappingMendsAnUnfilledHole) {
    if (!interposer_works()) GTEST_SKIP() << "mmap wrapper not linked (sanitizer build)";
    const auto before = test_stats().snapshot();
    fail_first_mapping_then_serve(false);
    const auto after = test_stats().snapshot();
    EXPECT_EQ(after.held_reservations - before.held_reservations, 0);
    EXPECT_EQ(after.maps - before.maps, after.unmaps - before.unmaps);
}

TEST(DaxMap, WriteAndReadAcrossChunkBoundaries) {
    TempFile f(8 * kChunk);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    // Straddles chunks 1, 2 and 3.
    const uint64_t off = kChunk + kChunk / 2;
    auto data = pattern(2 * kChunk, 1);
    const auto before = test_stats().snapshot();
    IoResult w = m->write(off, data, false);
    ASSERT_EQ(w.outcome, IoOutcome::Done) << w.why;
    EXPECT_EQ(w.bytes, data.size());
    EXPECT_TRUE(m->persist());
    EXPECT_EQ(pread_all(f.fd(), off, data.size()), data);
    EXPECT_EQ(m->live_chunks(), 3u);

    // What the block path writes, the mapping reads (same page cache / same media).
    auto other = pattern(3 * kChunk, 2);
    ASSERT_EQ(::pwrite(f.fd(), other.data(), other.size(), off_t(4 * kChunk)),
              ssize_t(other.size()));
    std::vector<std::byte> got(other.size());
    IoResult r = m->read(4 * kChunk, got);
    ASSERT_EQ(r.outcome, IoOutcome::Done) << r.why;
    EXPECT_EQ(got, other);
    const auto after = test_stats().snapshot();
    EXPECT_EQ(after.writes - before.writes, 1);
    EXPECT_EQ(after.reads - before.reads, 1);
    EXPECT_EQ(after.read_bytes - before.read_bytes, int64_t(other.size()));
}

TEST(DaxMap, ReadStopsAtEndOfFileAndPartialPageFallsBack) {
    TempFile f(2 * kChunk + 100);  // the last 100 bytes are in a partial page
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    std::vector<std::byte> buf(8192);
    IoResult at_eof = m->read(2 * kChunk + 100, buf);
    EXPECT_EQ(at_eof.outcome, IoOutcome::Done);
    EXPECT_EQ(at_eof.bytes, 0u);
    IoResult tail = m->read(2 * kChunk - 4096, buf);
    EXPECT_EQ(tail.outcome, IoOutcome::Fallback);
    EXPECT_NE(tail.why.find("partial last page"), std::string::npos);
    IoResult whole_pages = m->read(2 * kChunk - 8192, buf);
    EXPECT_EQ(whole_pages.outcome, IoOutcome::Done) << whole_pages.why;
    EXPECT_EQ(whole_pages.bytes, 8192u);
}

TEST(DaxMap, BeyondTheChunkTableFallsBack) {
    TempFile f(0);
    MapOptions o = test_options();
    o.max_chunks = 2;
    auto m = FileMap::create(f.fd(), o);
    ASSERT_TRUE(m);
    auto data = pattern(4096, 3);
    EXPECT_EQ(m->write(kChunk, data, false).outcome, IoOutcome::Done);
    IoResult r = m->write(2 * kChunk, data, false);
    EXPECT_EQ(r.outcome, IoOutcome::Fallback);
    EXPECT_NE(r.why.find("chunk table"), std::string::npos);
}

TEST(DaxMap, GrowthRemapsOnlyTheLastChunk) {
    TempFile f(kChunk + 4096);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    auto first = m->pin(0, 4096, false);
    ASSERT_TRUE(first);
    std::byte* chunk0 = first->bytes().data();
    first->reset();
    ASSERT_TRUE(m->pin(kChunk, 4096, false));

    // Appends: the file grows through chunk 1 into chunk 2 (fallocate + remap of the tail).
    const auto before = test_stats().snapshot();
    for (uint64_t off = kChunk + 4096; off < 2 * kChunk + 8192; off += 4096) {
        auto data = pattern(4096, unsigned(off / 4096));
        IoResult w = m->write(off, data, true);
        ASSERT_EQ(w.outcome, IoOutcome::Done) << w.why << " at " << off;
    }
    EXPECT_EQ(m->size(), 2 * kChunk + 8192);
    struct stat st {};
    ASSERT_EQ(::fstat(f.fd(), &st), 0);
    EXPECT_EQ(uint64_t(st.st_size), 2 * kChunk + 8192);
    for (uint64_t off = kChunk + 4096; off < 2 * kChunk + 8192; off += 4096)
        ASSERT_EQ(pread_all(f.fd(), off, 4096), pattern(4096, unsigned(off / 4096)));
    // Chunk 0 was never touched by the growth: same mapping.
    auto again = m->pin(0, 4096, false);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->bytes().data(), chunk0);
    const auto after = test_stats().snapshot();
    EXPECT_EQ(after.unmaps - before.unmaps, after.maps - before.maps - 1)
        << "each remap of chunk 1 unmaps the old one; chunk 2 is new";
}

// Appending page by page (a file copied to the share, a log) must not remap the chunk on every
// write: each remap throws away the page-table entries of the whole file, so every later access
// faults again. The chunk's mapping grows in place inside a reserved address range (doubling
// when the reservation is outgrown), so a range pinned before the growth keeps its address.
TEST(DaxMap, AppendsGrowTheMappingInPlace) {
    TempFile f(0);
    MapOptions o = test_options();
    o.chunk_size = size_t(32) << 20;
    auto m = FileMap::create(f.fd(), o);
    ASSERT_TRUE(m);
    const auto before = test_stats().snapshot();
    ASSERT_EQ(m->write(0, pattern(4096, 0), true).outcome, IoOutcome::Done);
    auto first = m->pin(0, 4096, false);
    ASSERT_TRUE(first);
    std::byte* page0 = first->bytes().data();
    first->reset();

    constexpr uint64_t kEnd = uint64_t(5) << 20;  // 1280 appends of one page
    for (uint64_t off = 4096; off < kEnd; off += 4096) {
        IoResult w = m->write(off, pattern(4096, unsigned(off / 4096)), false);
        ASSERT_EQ(w.outcome, IoOutcome::Done) << w.why << " at " << off;
        if (off == 64 * 4096) {
            // Still the first mapping (the reservation covers it): same address.
            auto again = m->pin(0, 4096, false);
            ASSERT_TRUE(again);
            EXPECT_EQ(again->bytes().data(), page0);
        }
    }
    EXPECT_TRUE(m->persist());
    const auto after = test_stats().snapshot();
    EXPECT_LE(after.maps - before.maps, 3) << "a remap per append";
    EXPECT_GE(after.extends - before.extends, 1);
    EXPECT_EQ(after.fallbacks, before.fallbacks);
    EXPECT_EQ(m->live_chunks(), 1u);
    for (uint64_t off = 0; off < kEnd; off += 4096)
        ASSERT_EQ(pread_all(f.fd(), off, 4096), pattern(4096, unsigned(off / 4096))) << off;
    std::vector<std::byte> buf(4096);
    ASSERT_EQ(m->read(kEnd - 4096, buf).outcome, IoOutcome::Done);
    EXPECT_EQ(buf, pattern(4096, unsigned(kEnd / 4096 - 1)));
}

TEST(DaxMap, AMappingIsNotUnmappedWhilePinned) {
    TempFile f(4 * kChunk);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    auto data = pattern(4096, 9);
    ASSERT_EQ(m->write(2 * kChunk, data, false).outcome, IoOutcome::Done);
    auto pinned = m->pin(2 * kChunk, 4096, false);
    ASSERT_TRUE(pinned);
    const auto before = test_stats().snapshot().unmaps;
    // Retire everything (the file itself is left as it is, so the old mapping stays valid).
    m->truncated(0);
    EXPECT_EQ(m->live_chunks(), 0u);
    EXPECT_EQ(test_stats().snapshot().unmaps, before) << "unmapped under a pin";
    // Still readable through the pinned range.
    EXPECT_EQ(0, std::memcmp(pinned->bytes().data(), data.data(), data.size()));
    pinned->reset();
    EXPECT_EQ(test_stats().snapshot().unmaps, before + 1) << "last unpin unmaps";
}

// A device places bytes into a range pinned for it (RDMA straight into the mapping): the
// range is allocated first, the bytes are the file's, and landed() counts and flushes them.
TEST(DaxMap, RdmaPinsAllocateAndLandedWritesReachTheFile) {
    TempFile f(0);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    const auto before = test_stats().snapshot();
    auto r = m->pin_for_rdma(0, 2 * 4096, true, true);
    ASSERT_TRUE(r);
    EXPECT_EQ(m->size(), 2u * 4096) << "allocated up to the end of the placement";
    EXPECT_EQ(r->bytes().size(), 2u * 4096);
    EXPECT_TRUE(r->mapping().data() <= r->bytes().data() &&
                r->bytes().data() + r->bytes().size() <= r->mapping().data() + r->mapping().size());
    auto data = pattern(2 * 4096, 21);
    std::memcpy(r->bytes().data(), data.data(), data.size());  // what the device does
    IoResult d = m->landed(*r, true);
    EXPECT_EQ(d.outcome, IoOutcome::Done);
    EXPECT_EQ(d.bytes, data.size());
    r->reset();
    EXPECT_TRUE(pread_all(f.fd(), 0, data.size()) == data);
    const auto after = test_stats().snapshot();
    EXPECT_EQ(after.writes, before.writes + 1);
    EXPECT_EQ(after.persists, before.persists + 1);
    // A read pin never reaches past the end of file, nor spans two chunks.
    EXPECT_FALSE(m->pin_for_rdma(4096, 2 * 4096, false));
    TempFile g(2 * kChunk);
    auto n = FileMap::create(g.fd(), test_options());
    ASSERT_TRUE(n);
    EXPECT_FALSE(n->pin_for_rdma(kChunk - 4096, 2 * 4096, false));
    EXPECT_TRUE(n->pin_for_rdma(kChunk, 4096, false));
}

// A truncation of this server waits for the device's placements in flight and refuses new
// ones until it is over: a page freed under a device breaks its whole connection.
TEST(DaxMap, TruncationFencesRdmaPins) {
    TempFile f(4 * kChunk);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    auto held = m->pin_for_rdma(kChunk, 4096, false);
    ASSERT_TRUE(held);
    // An ordinary pin is not a device's: it does not hold the fence.
    auto cpu = m->pin(0, 4096, false);
    ASSERT_TRUE(cpu);
    EXPECT_FALSE(m->fence_rdma(std::chrono::milliseconds(0))) << "a placement is in flight";
    std::string why;
    EXPECT_FALSE(m->pin_for_rdma(0, 4096, false, false, &why));
    EXPECT_EQ(why, "the file is being truncated");
    // Moving the pin keeps it counted once; releasing it lets the fence through.
    dax::MappedRange moved = std::move(*held);
    EXPECT_FALSE(m->fence_rdma(std::chrono::milliseconds(0)));
    moved.reset();
    EXPECT_TRUE(m->fence_rdma(std::chrono::milliseconds(0)));
    m->lift_rdma_fence();
    EXPECT_TRUE(m->pin_for_rdma(0, 4096, false));
}

TEST(DaxMap, TruncateDropsMappingsAndReadsSeeTheNewSize) {
    TempFile f(4 * kChunk);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    std::vector<std::byte> buf(4096);
    ASSERT_EQ(m->read(3 * kChunk, buf).outcome, IoOutcome::Done);
    ASSERT_EQ(m->read(0, buf).outcome, IoOutcome::Done);
    ASSERT_EQ(::ftruncate(f.fd(), off_t(kChunk)), 0);
    m->truncated(kChunk);
    EXPECT_EQ(m->live_chunks(), 1u);  // chunk 0 still covers [0, kChunk)
    IoResult r = m->read(3 * kChunk, buf);
    EXPECT_EQ(r.outcome, IoOutcome::Done);
    EXPECT_EQ(r.bytes, 0u);
}

// Someone outside the server truncates the file: the copy takes SIGBUS, the request falls back
// (the process survives), and the mapping is dropped.
TEST(DaxMap, SigbusFromATruncationUnderUsFallsBack) {
    TempFile f(4 * kChunk);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    std::vector<std::byte> buf(4096);
    ASSERT_EQ(m->read(2 * kChunk, buf).outcome, IoOutcome::Done);
    const auto sigbus_before = recovered_sigbus_count();
    const auto stats_before = test_stats().snapshot();
    int other = ::open(f.path().c_str(), O_RDWR);
    ASSERT_GE(other, 0);
    ASSERT_EQ(::ftruncate(other, 0), 0);
    ::close(other);
    // The map's cached size still says 4 chunks: the copy faults.
    IoResult r = m->read(2 * kChunk, buf);
    EXPECT_EQ(r.outcome, IoOutcome::Fallback);
    EXPECT_NE(r.why.find("changed under"), std::string::npos) << r.why;
    EXPECT_EQ(recovered_sigbus_count(), sigbus_before + 1);
    EXPECT_EQ(test_stats().snapshot().fallbacks, stats_before.fallbacks + 1);
    EXPECT_EQ(test_stats().snapshot().media_errors, stats_before.media_errors);
    EXPECT_EQ(m->live_chunks(), 0u);
    EXPECT_EQ(m->size(), 0u);
    // Writes work again after the file grows back.
    auto data = pattern(4096, 5);
    EXPECT_EQ(m->write(0, data, true).outcome, IoOutcome::Done);
    EXPECT_EQ(pread_all(f.fd(), 0, 4096), data);
}

TEST(DaxMap, ReadOnlyDescriptorIsReopenedForTheSharedMap) {
    TempFile f(kChunk);
    int ro = ::open(f.path().c_str(), O_RDONLY);
    ASSERT_GE(ro, 0);
    auto m = FileMap::create(ro, test_options());
    ::close(ro);
    ASSERT_TRUE(m);
    EXPECT_TRUE(m->writable());
    auto data = pattern(4096, 6);
    EXPECT_EQ(m->write(4096, data, true).outcome, IoOutcome::Done);
    EXPECT_EQ(pread_all(f.fd(), 4096, 4096), data);
}

TEST(DaxMap, RegistrySharesOneMapPerFile) {
    TempFile f(kChunk);
    MapRegistry reg;
    struct stat st {};
    ASSERT_EQ(::fstat(f.fd(), &st), 0);
    auto a = reg.acquire(st.st_dev, st.st_ino, f.fd(), test_options());
    auto b = reg.acquire(st.st_dev, st.st_ino, f.fd(), test_options());
    ASSERT_TRUE(a);
    EXPECT_EQ(a, b);
    EXPECT_EQ(reg.find(st.st_dev, st.st_ino), a);
    a.reset();
    b.reset();
    EXPECT_EQ(reg.find(st.st_dev, st.st_ino), nullptr);
    EXPECT_EQ(reg.size(), 0u);
}

// Readers and writers on several threads while another keeps truncating and regrowing the
// file: no crash, no byte read that is neither the pattern's nor zero, and every mapping made is
// unmapped once the map goes.
TEST(DaxMap, ConcurrentReadersWritersAndTruncate) {
    constexpr size_t kFile = 8 * kChunk;
    TempFile f(kFile);
    const auto before = test_stats().snapshot();
    {
        auto m = FileMap::create(f.fd(), test_options());
        ASSERT_TRUE(m);
        std::atomic<bool> stop{false};
        std::atomic<int> bad{0};
        std::atomic<long> served{0};
        auto block = pattern(4096, 42);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&, t] {
                std::vector<std::byte> buf(4096);
                unsigned x = unsigned(t) * 7919u + 1;
                for (int i = 0; i < 3000 && !stop; ++i) {
                    x = x * 1103515245u + 12345u;
                    const uint64_t off = uint64_t((x >> 8) % (kFile / 4096)) * 4096;
                    if (t % 2) {
                        IoResult r = m->write(off, block, (i % 16) == 0);
                        if (r.outcome == IoOutcome::Done) ++served;
                    } else {
                        IoResult r = m->read(off, buf);
                        if (r.outcome != IoOutcome::Done || r.bytes == 0) continue;
                        ++served;
                        // A read racing a write of the same block may see part of each (a
                        // copy is not atomic), so each byte is checked: the pattern's byte
                        // or zero (a regrown file), nothing else.
                        bool ok = true;
                        for (size_t k = 0; k < buf.size(); ++k)
                            ok &= buf[k] == block[k] || buf[k] == std::byte{0};
                        if (!ok) ++bad;
                    }
                }
            });
        }
        std::thread truncator([&] {
            for (int i = 0; i < 200; ++i) {
                const off_t sz = off_t((i % 8) * kChunk);
                if (::ftruncate(f.fd(), sz) == 0) m->truncated(uint64_t(sz));
                std::this_thread::yield();
            }
            if (::ftruncate(f.fd(), off_t(kFile)) == 0) m->truncated(kFile);
        });
        truncator.join();
        for (auto& th : threads)
            th.join();
        EXPECT_EQ(bad.load(), 0);
        EXPECT_GT(served.load(), 0);
    }
    const auto after = test_stats().snapshot();
    EXPECT_EQ(after.maps - before.maps, after.unmaps - before.unmaps);
}

// ---- prefault

// Pages of [p, p + len) whose page-table entry is present (/proc/self/pagemap, bit 63); nullopt
// when the file cannot be read.
std::optional<size_t> present_pages(const void* p, size_t len) {
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    size_t n = 0;
    for (uintptr_t a = uintptr_t(p); a < uintptr_t(p) + len; a += page) {
        uint64_t entry = 0;
        if (::pread(fd, &entry, sizeof entry, off_t(a / page * sizeof entry)) != sizeof entry) {
            ::close(fd);
            return std::nullopt;
        }
        n += size_t(entry >> 63);
    }
    ::close(fd);
    return n;
}

// prefault() populates the page tables of the chunk's first prefault_bytes, no more (the pages
// far behind stay unmapped), for reading and for writing, and changes no byte of the file.
TEST(DaxPrefault, PopulatesTheFirstBytesOfTheChunkWithoutChangingData) {
    constexpr size_t kBig = size_t(16) << 20;
    MapOptions o = test_options();
    o.chunk_size = kBig;
    o.prefault_bytes = kBig / 8;
    TempFile f(kBig);
    const auto data = pattern(kBig, 11);
    ASSERT_EQ(::pwrite(f.fd(), data.data(), data.size(), 0), ssize_t(data.size()));
    auto m = FileMap::create(f.fd(), o);
    ASSERT_TRUE(m);
    auto r = m->pin(0, kBig, false);  // maps the chunk; touches no page
    ASSERT_TRUE(r);
    const std::byte* base = r->bytes().data();
    auto present = present_pages(base, kBig);
    if (!present) GTEST_SKIP() << "no /proc/self/pagemap";
    ASSERT_EQ(*present, 0u);

    const auto before = test_stats().snapshot();
    const size_t n = m->prefault(0, false);
    if (n == 0) GTEST_SKIP() << "madvise(MADV_POPULATE_READ) not available on this kernel";
    EXPECT_EQ(n, kBig / 8);
    EXPECT_EQ(test_stats().snapshot().prefaults - before.prefaults, 1);
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    EXPECT_EQ(present_pages(base, kBig / 8), kBig / 8 / page);
    // Fault-around (up to a whole large folio of the page cache) may map pages next to the
    // range, never the second half of the chunk.
    EXPECT_EQ(present_pages(base + kBig / 2, kBig / 2), 0u);

    EXPECT_EQ(m->prefault(kBig / 4, true), kBig / 8);  // any offset: the chunk's first bytes
    EXPECT_EQ(pread_all(f.fd(), 0, kBig), data);
    std::vector<std::byte> got(kBig);
    ASSERT_EQ(m->read(0, got).outcome, IoOutcome::Done);
    EXPECT_EQ(got, data);
    r->reset();

    o.prefault_bytes = 0;  // "dax prefault = 0"
    auto off = FileMap::create(f.fd(), o);
    ASSERT_TRUE(off);
    EXPECT_EQ(off->prefault(0, false), 0u);
    ASSERT_EQ(off->read(0, got).outcome, IoOutcome::Done);
    EXPECT_FALSE(off->claim_prefault(0, false));
}

// Populating for writing touches only the file's data: a sparse file keeps its holes (a write
// fault on a hole would allocate it), and the data is unchanged.
TEST(DaxPrefault, WritePrefaultLeavesHolesAlone) {
    constexpr size_t kBig = size_t(4) << 20;
    MapOptions o = test_options();
    o.chunk_size = kBig;
    o.prefault_bytes = kBig;
    TempFile f(kBig);  // one hole
    const auto data = pattern(64 * 1024, 13);
    ASSERT_EQ(::pwrite(f.fd(), data.data(), data.size(), off_t(kBig / 4)), ssize_t(data.size()));
    ASSERT_EQ(::fsync(f.fd()), 0);
    struct stat before {};
    ASSERT_EQ(::fstat(f.fd(), &before), 0);
    auto m = FileMap::create(f.fd(), o);
    ASSERT_TRUE(m);
    const size_t n = m->prefault(0, true);
    if (n == 0) GTEST_SKIP() << "madvise(MADV_POPULATE_WRITE) not available on this kernel";
    EXPECT_EQ(n, data.size());
    ASSERT_EQ(::fsync(f.fd()), 0);
    struct stat after {};
    ASSERT_EQ(::fstat(f.fd(), &after), 0);
    EXPECT_EQ(after.st_blocks, before.st_blocks);
    EXPECT_EQ(pread_all(f.fd(), kBig / 4, data.size()), data);
    EXPECT_EQ(m->prefault(0, false), kBig);  // reading a hole allocates nothing
    ASSERT_EQ(::fstat(f.fd(), &after), 0);
    EXPECT_EQ(after.st_blocks, before.st_blocks);
}

// One claim per mapping and kind: read, then write (read-populated pages still fault at their
// first write), then nothing; a chunk mapped anew is claimed again.
TEST(DaxPrefault, ClaimedOncePerMappingAndKind) {
    TempFile f(2 * kChunk);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    EXPECT_FALSE(m->claim_prefault(0, false));  // nothing mapped yet
    std::vector<std::byte> buf(4096);
    ASSERT_EQ(m->read(0, buf).outcome, IoOutcome::Done);
    EXPECT_TRUE(m->claim_prefault(0, false));
    EXPECT_FALSE(m->claim_prefault(4096, false));
    EXPECT_TRUE(m->claim_prefault(0, true));
    EXPECT_FALSE(m->claim_prefault(0, true));
    EXPECT_FALSE(m->claim_prefault(0, false));
    EXPECT_FALSE(m->claim_prefault(kChunk, false));  // chunk 1 is not mapped
    ASSERT_EQ(::ftruncate(f.fd(), 0), 0);
    m->truncated(0);
    ASSERT_EQ(::ftruncate(f.fd(), off_t(kChunk)), 0);
    ASSERT_EQ(m->read(0, buf).outcome, IoOutcome::Done);
    EXPECT_TRUE(m->claim_prefault(0, false));
}

// A write into an already writable page changes no timestamp; touch_mtime() does.
TEST(DaxMap, TouchMtimeSetsTheModificationTime) {
    TempFile f(kChunk);
    auto m = FileMap::create(f.fd(), test_options());
    ASSERT_TRUE(m);
    const struct timespec old[2] = {{0, UTIME_OMIT}, {1000, 0}};
    ASSERT_EQ(::futimens(f.fd(), old), 0);
    m->touch_mtime();
    struct stat st {};
    ASSERT_EQ(::fstat(f.fd(), &st), 0);
    EXPECT_GT(st.st_mtim.tv_sec, 1000);
}

// ---- the map cache (MapRegistry)

struct FileIds {
    uint64_t device = 0, inode = 0;
};
FileIds ids_of(int fd) {
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    return {uint64_t(st.st_dev), uint64_t(st.st_ino)};
}

// An open of `f` that reads its first page, then closes.
void use_and_close(MapRegistry& reg, const TempFile& f) {
    const FileIds id = ids_of(f.fd());
    auto m = reg.acquire(id.device, id.inode, f.fd(), test_options());
    ASSERT_TRUE(m);
    std::vector<std::byte> buf(4096);
    ASSERT_EQ(m->read(0, buf).outcome, IoOutcome::Done);
}

// Whether a new open of `f` (its own descriptor) finds the cached map; the open reads its first
// page and closes.
bool reopen_finds_cached_map(MapRegistry& reg, const TempFile& f) {
    const FileIds id = ids_of(f.fd());
    const int fd = ::open(f.path().c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    const auto before = test_stats().snapshot().map_cache_hits;
    auto m = reg.acquire(id.device, id.inode, fd, test_options());
    EXPECT_TRUE(m);
    const bool hit = test_stats().snapshot().map_cache_hits - before == 1;
    EXPECT_EQ(hit, m && m->live_chunks() > 0);  // a cached map comes with its mappings
    std::vector<std::byte> buf(4096);
    if (m) {
        EXPECT_EQ(m->read(0, buf).outcome, IoOutcome::Done);  // used: cached at its close
    }
    m.reset();
    ::close(fd);
    return hit;
}

// The last close keeps the map with its mappings, persisted; the next open gets it back and
// maps nothing anew.
TEST(DaxMapCache, ClosedFilesMapIsReusedByTheNextOpen) {
    TempFile f(4 * kChunk);
    MapRegistry reg(MapCacheLimits{4, uint64_t(1) << 30});
    const FileIds id = ids_of(f.fd());
    const auto data = pattern(4096, 9);
    std::vector<std::byte> buf(4096);
    {
        auto m = reg.acquire(id.device, id.inode, f.fd(), test_options());
        ASSERT_TRUE(m);
        ASSERT_EQ(m->write(kChunk, data, false).outcome, IoOutcome::Done);
        ASSERT_EQ(m->read(3 * kChunk, buf).outcome, IoOutcome::Done);
        EXPECT_TRUE(m->dirty());  // no CLOSE persisted it (a connection teardown)
    }
    EXPECT_EQ(reg.size(), 0u);
    EXPECT_EQ(reg.cached_files(), 1u);
    EXPECT_EQ(reg.cached_bytes(), 2 * kChunk);

    const auto before = test_stats().snapshot();
    const int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto m = reg.acquire(id.device, id.inode, fd, test_options());
    ASSERT_TRUE(m);
    EXPECT_FALSE(m->dirty()) << "persisted at the last close";
    EXPECT_EQ(m->live_chunks(), 2u);
    EXPECT_EQ(reg.cached_files(), 0u);  // in use again
    EXPECT_EQ(reg.find(id.device, id.inode), m);
    ASSERT_EQ(m->read(kChunk, buf).outcome, IoOutcome::Done);
    EXPECT_EQ(buf, data);
    ASSERT_EQ(m->read(3 * kChunk, buf).outcome, IoOutcome::Done);
    const auto after = test_stats().snapshot();
    EXPECT_EQ(after.maps, before.maps);
    EXPECT_EQ(after.map_cache_hits - before.map_cache_hits, 1);
    m.reset();
    ::close(fd);
    EXPECT_EQ(reg.cached_files(), 1u);
}

// A file written, truncated or touched by someone else since its last close gets a new map,
// which sees the new contents and size.
TEST(DaxMapCache, AFileChangedOutsideGetsANewMap) {
    enum Change { GrowingWrite, Shrink, MtimeOnly };
    for (Change change : {GrowingWrite, Shrink, MtimeOnly}) {
        SCOPED_TRACE(int(change));
        TempFile f(2 * kChunk);
        MapRegistry reg;
        use_and_close(reg, f);
        ASSERT_EQ(reg.cached_files(), 1u);
        const auto data = pattern(4096, 12);
        uint64_t size = 2 * kChunk;
        switch (change) {
            case GrowingWrite:
                ASSERT_EQ(::pwrite(f.fd(), data.data(), data.size(), off_t(size)), 4096);
                size += 4096;
                break;
            case Shrink:
                size = kChunk;
                ASSERT_EQ(::ftruncate(f.fd(), off_t(size)), 0);
                break;
            case MtimeOnly: {
                const struct timespec t[2] = {{0, UTIME_OMIT}, {1000, 0}};
                ASSERT_EQ(::futimens(f.fd(), t), 0);
                break;
            }
        }
        const FileIds id = ids_of(f.fd());
        const auto before = test_stats().snapshot();
        auto m = reg.acquire(id.device, id.inode, f.fd(), test_options());
        ASSERT_TRUE(m);
        EXPECT_EQ(test_stats().snapshot().map_cache_hits, before.map_cache_hits);
        EXPECT_EQ(m->live_chunks(), 0u);
        EXPECT_EQ(m->size(), size);
        if (change == GrowingWrite) {
            std::vector<std::byte> got(4096);
            ASSERT_EQ(m->read(2 * kChunk, got).outcome, IoOutcome::Done);
            EXPECT_EQ(got, data);
        }
    }
}

// A cached map holds its inode (and its blocks): deleting the file drops it, whoever deletes.
TEST(DaxMapCache, ADeletedFileLeavesTheCache) {
    MapRegistry reg;
    {  // deleted outside this server: the next sweep drops it
        TempFile f(kChunk);
        use_and_close(reg, f);
        ASSERT_EQ(reg.cached_files(), 1u);
        reg.sweep();
        EXPECT_EQ(reg.cached_files(), 1u);  // still linked
        ASSERT_EQ(::unlink(f.path().c_str()), 0);
        reg.sweep();
        EXPECT_EQ(reg.cached_files(), 0u);
    }
    {  // deleted by this server (FileTable's unlink listener): forget() drops it at once
        TempFile f(kChunk);
        use_and_close(reg, f);
        ASSERT_EQ(reg.cached_files(), 1u);
        const FileIds id = ids_of(f.fd());
        reg.forget(id.device, id.inode);
        EXPECT_EQ(reg.cached_files(), 0u);
        EXPECT_EQ(reg.cached_bytes(), 0u);
    }
    {  // deleted while open: not cached at the last close
        TempFile f(kChunk);
        const FileIds id = ids_of(f.fd());
        auto m = reg.acquire(id.device, id.inode, f.fd(), test_options());
        ASSERT_TRUE(m);
        std::vector<std::byte> buf(4096);
        ASSERT_EQ(m->read(0, buf).outcome, IoOutcome::Done);
        ASSERT_EQ(::unlink(f.path().c_str()), 0);
        m.reset();
        EXPECT_EQ(reg.cached_files(), 0u);
    }
    {  // forgotten while open (replaced by a rename): not cached at the last close either
        TempFile f(kChunk);
        const FileIds id = ids_of(f.fd());
        auto m = reg.acquire(id.device, id.inode, f.fd(), test_options());
        ASSERT_TRUE(m);
        std::vector<std::byte> buf(4096);
        ASSERT_EQ(m->read(0, buf).outcome, IoOutcome::Done);
        reg.forget(id.device, id.inode);
        m.reset();
        EXPECT_EQ(reg.cached_files(), 0u);
    }
}

// The cache keeps the most recently closed files within its count and byte limits.
TEST(DaxMapCache, LeastRecentlyClosedGoFirst) {
    TempFile a(kChunk), b(kChunk), c(kChunk);
    {
        MapRegistry reg(MapCacheLimits{2, uint64_t(1) << 30});
        use_and_close(reg, a);
        use_and_close(reg, b);
        use_and_close(reg, c);
        EXPECT_EQ(reg.cached_files(), 2u);
        EXPECT_FALSE(reopen_finds_cached_map(reg, a));  // evicted
        // a's new map is cached at its close and evicts b, the least recently closed now.
        EXPECT_TRUE(reopen_finds_cached_map(reg, c));
        EXPECT_FALSE(reopen_finds_cached_map(reg, b));
        EXPECT_EQ(reg.cached_files(), 2u);
        reg.set_cache_limits(MapCacheLimits{0, 0});
        EXPECT_EQ(reg.cached_files(), 0u);
    }
    {
        MapRegistry reg(MapCacheLimits{10, 2 * kChunk});
        use_and_close(reg, a);
        use_and_close(reg, b);
        use_and_close(reg, c);
        EXPECT_EQ(reg.cached_files(), 2u);
        EXPECT_EQ(reg.cached_bytes(), 2 * kChunk);
        // A map larger than the whole cache is not kept (and evicts nothing).
        TempFile big(3 * kChunk);
        const FileIds id = ids_of(big.fd());
        auto m = reg.acquire(id.device, id.inode, big.fd(), test_options());
        ASSERT_TRUE(m);
        std::vector<std::byte> buf(3 * kChunk);
        ASSERT_EQ(m->read(0, buf).outcome, IoOutcome::Done);
        m.reset();
        EXPECT_EQ(reg.cached_files(), 2u);
        EXPECT_TRUE(reopen_finds_cached_map(reg, c));
    }
    {
        MapRegistry reg(MapCacheLimits{0, uint64_t(1) << 30});  // "dax map cache files = 0"
        use_and_close(reg, a);
        EXPECT_EQ(reg.cached_files(), 0u);
    }
}

}  // namespace
}  // namespace daxsmbd::dax
