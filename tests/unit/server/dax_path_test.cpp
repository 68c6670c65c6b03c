// The DAX data path (server/io/dax_path.h) around a FileMap of an ordinary file (page-granular
// mappings, require_sync = false, as on persistent memory otherwise): which writes the mapping
// takes and which go to the block path without trying it, FLUSH and CLOSE persisting,
// truncation reaching the shared map, and open_data_path()'s choice of path.
// GCC 12 flags Asio's awaitable-frame operator new/delete pair as mismatched in this file's
// coroutines once their frames are inlined (the false positive create.cpp describes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dax/flush.h"
#include "dax/mapping.h"
#include "dax/stats.h"
#include "protocol/access_mask.h"
#include "server/buffer_pool.h"
#include "server/io/block_path.h"
#include "server/io/dax_path.h"
#include "server/io/uring_engine.h"
#include "server/rpcpipe/pipe_endpoint.h"
#include "server/state/open.h"
#include "server/state/share.h"
#include "server/vfs/dir.h"
#include "tests/support/test_data.h"
#include "tests/unit/server/engine_runner.h"

namespace daxsmbd::server::io {
namespace {

namespace am = protocol::access_mask;

using ::daxsmbd::test_support::pattern;  // tests/support/test_data.h

void run(std::function<asio::awaitable<void>(Engine&)> body) {
    test_support::run_engine({}, std::move(body));
}

dax::Stats& test_stats() {
    static dax::Stats stats;
    return stats;
}

// Buffers of the tests' reads.
BufferPool& test_buffers() {
    static BufferPool pool;
    return pool;
}

dax::MapOptions test_map_options() {
    dax::MapOptions o;
    o.stats = &test_stats();
    o.chunk_size = 64 * 1024;
    o.require_sync = false;
    o.flush = *dax::resolve_flush_kind(dax::FlushKind::Auto, dax::detect_cpu_flush_support());
    return o;
}

dax::StatsSnapshot stats() {
    return test_stats().snapshot();
}

class DaxPath : public ::testing::Test {
  protected:
    void SetUp() override {
        char t[] = "/tmp/daxsmbd-daxpath-XXXXXX";
        ASSERT_TRUE(::mkdtemp(t));
        dir_ = t;
        fd_ = ::open((dir_ + "/f").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_GE(fd_, 0);
        content_ = pattern(8192, 1);  // two whole pages
        ASSERT_EQ(::pwrite(fd_, content_.data(), content_.size(), 0), ssize_t(content_.size()));
        map_ = dax::FileMap::create(fd_, test_map_options());
        ASSERT_TRUE(map_);
        path_ = std::make_shared<DaxDataPath>(map_, BlockDataPath::open(fd_, {}));
    }
    void TearDown() override {
        path_.reset();
        map_.reset();
        if (fd_ >= 0) ::close(fd_);
        std::system(("rm -rf '" + dir_ + "'").c_str());
    }
    std::vector<std::byte> file_bytes() {
        struct stat st {};
        ::fstat(fd_, &st);
        std::vector<std::byte> out(size_t(st.st_size));
        if (!out.empty()) {
            EXPECT_EQ(::pread(fd_, out.data(), out.size(), 0), st.st_size);
        }
        return out;
    }

    std::string dir_;
    int fd_ = -1;
    std::vector<std::byte> content_;
    std::shared_ptr<dax::FileMap> map_;
    std::shared_ptr<DaxDataPath> path_;
};

// Inside the mapped size the mapping takes a write and serves the read; writes to the end of
// file, of append-only opens and past the mapped size go to the block path without being
// offered to the mapping (no DAX write, no fallback counted), and the data lands all the same.
TEST_F(DaxPath, WritesOutsideTheMappingsRulesUseTheBlockPath) {
    EXPECT_EQ(path_->name(), "dax");
    const auto inside = pattern(4096, 2);
    const auto to_eof = pattern(4096, 3);
    const auto appended = pattern(4096, 4);
    const auto past = pattern(4096, 5);
    std::vector<std::byte> expect = content_;
    run([&](Engine& e) -> asio::awaitable<void> {
        auto before = stats();
        auto w = co_await path_->write(e, protocol::Bytes(inside.data(), inside.size()), 4096,
                                       WriteMode{});
        EXPECT_TRUE(w && *w == inside.size());
        auto after = stats();
        EXPECT_EQ(after.writes - before.writes, 1);
        EXPECT_EQ(after.fallbacks, before.fallbacks);

        before = after;
        w = co_await path_->write(e, protocol::Bytes(to_eof.data(), to_eof.size()), 8192,
                                  {.to_end_of_file = true});
        EXPECT_TRUE(w && *w == to_eof.size());
        w = co_await path_->write(e, protocol::Bytes(appended.data(), appended.size()), 12288,
                                  {.append_only = true});
        EXPECT_TRUE(w && *w == appended.size());
        // The map still knows the file as 8 KiB (the block path grew it): a write at 20 KiB
        // would leave a gap as far as the map knows.
        EXPECT_EQ(path_->known_size(), std::optional<uint64_t>(8192));
        w = co_await path_->write(e, protocol::Bytes(past.data(), past.size()), 20480, WriteMode{});
        EXPECT_TRUE(w && *w == past.size());
        after = stats();
        EXPECT_EQ(after.writes, before.writes);
        EXPECT_EQ(after.fallbacks, before.fallbacks);

        // Reading it all back: the map re-reads the size and serves the whole pages.
        PoolBuffer buf = test_buffers().acquire(32768);
        before = stats();
        auto r = co_await path_->read(e, buf, 32768, 0);
        EXPECT_TRUE(r && *r == 24576);
        EXPECT_EQ(stats().reads - before.reads, 1);
        std::memcpy(expect.data() + 4096, inside.data(), 4096);
        expect.insert(expect.end(), to_eof.begin(), to_eof.end());
        expect.insert(expect.end(), appended.begin(), appended.end());
        expect.resize(20480);
        expect.insert(expect.end(), past.begin(), past.end());
        EXPECT_TRUE(r && std::memcmp(buf.data(), expect.data(), expect.size()) == 0);
    });
    EXPECT_EQ(file_bytes(), expect);
}

// A read reaching into the partial last page is a routine fallback: the block path answers it.
TEST_F(DaxPath, PartialLastPageReadFallsBack) {
    const auto tail = pattern(100, 6);
    ASSERT_EQ(::pwrite(fd_, tail.data(), tail.size(), 8192), ssize_t(tail.size()));
    run([&](Engine& e) -> asio::awaitable<void> {
        const auto before = stats();
        PoolBuffer buf = test_buffers().acquire(8192);
        auto r = co_await path_->read(e, buf, 8192, 4096);
        EXPECT_TRUE(r && *r == 4196);
        EXPECT_EQ(stats().fallbacks - before.fallbacks, 1);
        EXPECT_EQ(stats().reads, before.reads);
        EXPECT_TRUE(r && std::memcmp(buf.data(), content_.data() + 4096, 4096) == 0 &&
                    std::memcmp(buf.data() + 4096, tail.data(), 100) == 0);
    });
}

// Large READs that may be spliced go through the block path's splice (one copy by the file system
// instead of two through the mapping), with the mapping's latest stores in them; smaller ones,
// and every READ of a share without "use sendfile", stay on the mapping.
TEST_F(DaxPath, LargeSpliceableReadsUseTheBlockPathsSplice) {
    const auto big = pattern(1 << 20, 12);
    ASSERT_EQ(::pwrite(fd_, big.data(), big.size(), 0), ssize_t(big.size()));
    map_->invalidate();  // the file grew outside the map
    BlockOptions bo;
    bo.splice_reads = true;
    auto splicing = std::make_shared<DaxDataPath>(map_, BlockDataPath::open(fd_, bo));
    EXPECT_TRUE(splicing->splices(DaxDataPath::kSpliceFrom));
    EXPECT_FALSE(splicing->splices(DaxDataPath::kSpliceFrom - 1));
    EXPECT_FALSE(path_->splices(DaxDataPath::kSpliceFrom));  // its block path does not splice
    const auto stamp = pattern(4096, 13);
    run([&](Engine& e) -> asio::awaitable<void> {
        // A store through the mapping first: the splice must see it.
        auto w = co_await splicing->write(e, stamp, 8192, WriteMode{});
        EXPECT_TRUE(w && *w == stamp.size());
        const auto before = stats();
        auto piped = co_await splicing->read_to_pipe(e, 1 << 20, 0);
        EXPECT_TRUE(piped);
        if (!piped) co_return;
        EXPECT_EQ(piped->size(), size_t(1) << 20);
        PoolBuffer got = test_buffers().acquire(piped->size());
        EXPECT_TRUE(piped->copy_out(got));
        EXPECT_EQ(std::memcmp(got.data(), big.data(), 8192), 0);
        EXPECT_EQ(std::memcmp(got.data() + 8192, stamp.data(), stamp.size()), 0);
        EXPECT_EQ(std::memcmp(got.data() + 12288, big.data() + 12288, big.size() - 12288), 0);
        EXPECT_EQ(stats().reads, before.reads);  // not the mapping
    });
}

// Writes without write-through stay dirty in the map until FLUSH (persist, then the block
// path's fsync) or CLOSE (persist).
TEST_F(DaxPath, FlushAndClosePersist) {
    const auto data = pattern(4096, 7);
    run([&](Engine& e) -> asio::awaitable<void> {
        const auto before = stats();
        auto w =
            co_await path_->write(e, protocol::Bytes(data.data(), data.size()), 0, WriteMode{});
        EXPECT_TRUE(w);
        EXPECT_EQ(stats().persists, before.persists);
        auto f = co_await path_->flush(e);
        EXPECT_TRUE(f);
        EXPECT_EQ(stats().persists - before.persists, 1);
        w = co_await path_->write(e, protocol::Bytes(data.data(), data.size()), 4096,
                                  {.write_through = true});
        EXPECT_TRUE(w);
        EXPECT_EQ(stats().persists - before.persists, 2);  // durable before it completed
    });
    const auto before_close = stats();
    path_->on_close("f");
    EXPECT_EQ(stats().persists - before_close.persists, 1);
    std::vector<std::byte> expect = data;
    expect.insert(expect.end(), data.begin(), data.end());
    EXPECT_EQ(file_bytes(), expect);
}

// A truncation by this server reaches the map shared with the file's other opens: a read past
// the new end is END_OF_FILE from the map, not a fault.
TEST_F(DaxPath, TruncationReachesTheSharedMap) {
    ASSERT_EQ(::ftruncate(fd_, 4096), 0);
    path_->truncated(4096);
    EXPECT_EQ(map_->size(), 4096u);
    EXPECT_EQ(path_->known_size(), std::optional<uint64_t>(4096));
    run([&](Engine& e) -> asio::awaitable<void> {
        PoolBuffer buf = test_buffers().acquire(4096);
        const auto before = stats();
        auto r = co_await path_->read(e, buf, 4096, 4096);
        EXPECT_TRUE(r && *r == 0);
        EXPECT_EQ(stats().fallbacks, before.fallbacks);
    });
}

// The first READ and the first WRITE through a chunk's mapping hand one prefault each to the
// background runner (reading, then writing); later requests hand none. The first WRITE of an
// open and its CLOSE move the mtime although the page is already mapped writable.
TEST_F(DaxPath, PrefaultsInTheBackgroundAndKeepsTheMtimeMoving) {
    std::vector<std::function<void()>> jobs;
    auto p = std::make_shared<DaxDataPath>(
        map_, BlockDataPath::open(fd_, {}),
        [&jobs](std::function<void()> job) { jobs.push_back(std::move(job)); });
    const auto data = pattern(4096, 9);
    run([&](Engine& e) -> asio::awaitable<void> {
        // The first page is mapped writable by an earlier write (a warm map).
        auto w = co_await path_->write(e, protocol::Bytes(data.data(), data.size()), 0, {});
        EXPECT_TRUE(w);
        const struct timespec old[2] = {{0, UTIME_OMIT}, {1000, 0}};
        EXPECT_EQ(::futimens(fd_, old), 0);
        jobs.clear();
        PoolBuffer buf = test_buffers().acquire(4096);
        auto r = co_await p->read(e, buf, 4096, 0);
        EXPECT_TRUE(r && *r == 4096);
        r = co_await p->read(e, buf, 4096, 4096);
        EXPECT_TRUE(r && *r == 4096);
        w = co_await p->write(e, protocol::Bytes(data.data(), data.size()), 0, {});
        EXPECT_TRUE(w);
        w = co_await p->write(e, protocol::Bytes(data.data(), data.size()), 4096, {});
        EXPECT_TRUE(w);
    });
    struct stat st {};
    ASSERT_EQ(::fstat(fd_, &st), 0);
    EXPECT_GT(st.st_mtim.tv_sec, 1000);
    ASSERT_EQ(jobs.size(), 2u);  // one read prefault, one write prefault
    const auto before = stats();
    for (auto& job : jobs)
        job();
    EXPECT_EQ(stats().prefaults - before.prefaults, 2);
    EXPECT_EQ(file_bytes(), [&] {
        auto expect = data;
        expect.insert(expect.end(), data.begin(), data.end());
        return expect;
    }());
    const struct timespec old[2] = {{0, UTIME_OMIT}, {1000, 0}};
    ASSERT_EQ(::futimens(fd_, old), 0);
    p->on_close("f");
    ASSERT_EQ(::fstat(fd_, &st), 0);
    EXPECT_GT(st.st_mtim.tv_sec, 1000);
}

// open_data_path: the DAX path for opens with data access on a DAX share, sharing one map per
// file; the block path for opens without data access and on other shares.
TEST_F(DaxPath, OpenDataPathChoosesByShareAndAccess) {
    Share dax_share;
    dax_share.dax = test_map_options();
    Share plain_share;
    dax::MapRegistry maps;
    struct stat st {};
    ASSERT_EQ(::fstat(fd_, &st), 0);
    auto make_open = [&](uint32_t access) {
        auto o = std::make_shared<Open>();
        o->local.fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);  // the Open owns (closes) its descriptor
        o->granted_access = access;
        o->local.device = uint64_t(st.st_dev);
        o->local.file_id = uint64_t(st.st_ino);
        o->local.path = "f";
        return o;
    };
    auto reader = make_open(am::kFileReadData);
    auto writer = make_open(am::kFileWriteData);
    auto attributes_only = make_open(am::kFileReadAttributes);
    auto r = open_data_path(dax_share, *reader, maps);
    auto w = open_data_path(dax_share, *writer, maps);
    EXPECT_EQ(r->name(), "dax");
    EXPECT_EQ(w->name(), "dax");
    auto rd = std::dynamic_pointer_cast<DaxDataPath>(r);
    auto wd = std::dynamic_pointer_cast<DaxDataPath>(w);
    ASSERT_TRUE(rd && wd);
    EXPECT_EQ(rd->map(), wd->map());
    EXPECT_EQ(open_data_path(dax_share, *attributes_only, maps)->name(), "block");
    EXPECT_EQ(open_data_path(plain_share, *reader, maps)->name(), "block");
}

// With direct io = yes, an open that reads or writes data gets the O_DIRECT descriptor; one
// without data access gets no reopen at all (a descriptor with access it was not granted).
TEST_F(DaxPath, OpenDataPathReopensDirectOnlyForDataAccess) {
    Share direct_share;
    direct_share.config.direct_io = true;
    dax::MapRegistry maps;
    auto make_open = [&](uint32_t access) {
        auto o = std::make_shared<Open>();
        o->local.fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
        o->granted_access = access;
        o->local.path = "f";
        return o;
    };
    auto reader = make_open(am::kFileReadData);
    auto attributes_only = make_open(am::kFileReadAttributes);
    auto r = std::dynamic_pointer_cast<BlockDataPath>(open_data_path(direct_share, *reader, maps));
    auto a = std::dynamic_pointer_cast<BlockDataPath>(
        open_data_path(direct_share, *attributes_only, maps));
    ASSERT_TRUE(r && a);
    EXPECT_FALSE(a->direct());
    if (!r->direct()) GTEST_SKIP() << "the file system under /tmp offers no direct I/O";
}

}  // namespace
}  // namespace daxsmbd::server::io
