// The io_uring block path (server/io): the engine's completions with many requests outstanding,
// batched submission, fixed buffers, short transfers, errno -> NTSTATUS, O_DIRECT alignment and
// its fallbacks, polled and SQPOLL rings falling back, and the order of the write and the
// fdatasync of a write-through request.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/stat.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "server/buffer_pool.h"
#include "server/io/block_path.h"
#include "server/io/uring_engine.h"
#include "server/log.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_data.h"
#include "tests/unit/server/engine_runner.h"

namespace daxsmbd::server::io {
namespace {

using ::daxsmbd::test_support::pattern;  // tests/support/test_data.h
using ::daxsmbd::test_support::TempDir;

int open_file(const std::string& path, int flags = O_RDWR | O_CREAT) {
    return ::open(path.c_str(), flags | O_CLOEXEC, 0644);
}

void write_file(const std::string& path, const std::vector<std::byte>& data) {
    int fd = open_file(path, O_RDWR | O_CREAT | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 0), ssize_t(data.size()));
    ::close(fd);
}

std::vector<std::byte> read_file(const std::string& path) {
    std::vector<std::byte> out;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    struct stat st {};
    ::fstat(fd, &st);
    out.resize(size_t(st.st_size));
    if (!out.empty() && ::pread(fd, out.data(), out.size(), 0) != ssize_t(out.size())) out.clear();
    ::close(fd);
    return out;
}

// The buffers of the tests' I/O: the fixed buffers of the engines that run() makes.
BufferPool& test_buffers() {
    static BufferPool pool;
    return pool;
}

// Whether the kernel lets this process use io_uring at all (containers may forbid it).
bool uring_works() {
    asio::io_context ctx;
    Engine e(ctx.get_executor());
    return e.uring_available();
}

// Runs `body` as a coroutine on a fresh io_context with an engine and waits for it.
void run(const EngineOptions& opts, std::function<asio::awaitable<void>(Engine&)> body) {
    EngineOptions o = opts;
    if (!o.buffers) o.buffers = &test_buffers();
    test_support::run_engine(o, std::move(body));
}

class IoEngine : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(dir_.ok());
        if (!uring_works()) GTEST_SKIP() << "io_uring is not available to this process";
    }
    TempDir dir_{"daxsmbd-io"};
};

// Many reads outstanding at once, each of its own region: every coroutine gets its own data
// back whatever order the kernel completes them in, and the requests of one loop iteration go
// to the kernel together (far fewer io_uring_submit calls than requests).
TEST_F(IoEngine, ManyOutstandingReadsCompleteWithTheirOwnData) {
    constexpr size_t kChunk = 16384, kCount = 200;
    const auto content = pattern(kChunk * kCount, 7);
    write_file(dir_.at("many"), content);
    int fd = open_file(dir_.at("many"), O_RDONLY);
    ASSERT_GE(fd, 0);

    asio::io_context ctx;
    Engine engine(ctx.get_executor());
    std::vector<CompletionRecord> trace;
    engine.set_completion_trace(&trace);
    std::vector<PoolBuffer> bufs(kCount);
    std::vector<int> results(kCount, -1);
    std::vector<size_t> finish_order;
    for (size_t i = 0; i < kCount; ++i) {
        bufs[i] = engine.buffers().acquire(kChunk);
        // Reverse offsets, so submission order is not file order.
        const uint64_t off = (kCount - 1 - i) * kChunk;
        asio::co_spawn(
            ctx,
            [&, i, off]() -> asio::awaitable<void> {
                results[i] =
                    co_await engine.read(RingKind::Normal, fd, bufs[i].data(), kChunk, off);
                finish_order.push_back(i);
            },
            asio::detached);
    }
    ctx.run();
    ::close(fd);
    ASSERT_EQ(finish_order.size(), kCount);
    EXPECT_EQ(trace.size(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(results[i], int(kChunk)) << i;
        const size_t off = (kCount - 1 - i) * kChunk;
        EXPECT_EQ(0, std::memcmp(bufs[i].data(), content.data() + off, kChunk)) << "request " << i;
    }
    EXPECT_EQ(engine.stats().sqes, kCount);
    EXPECT_LE(engine.stats().submit_calls, 4u) << "requests of one iteration are batched";
    // Pool buffers are registered slabs: the reads used READ_FIXED.
    if (engine.fixed_buffers(RingKind::Normal)) {
        EXPECT_EQ(engine.stats().fixed_buffer_ops, kCount);
        for (const auto& c : trace)
            EXPECT_EQ(c.opcode, IORING_OP_READ_FIXED);
    }
}

// Memory outside the pool's slabs is read with a plain READ.
TEST_F(IoEngine, NonPoolMemoryUsesPlainReads) {
    const auto content = pattern(5000, 3);
    write_file(dir_.at("plain"), content);
    int fd = open_file(dir_.at("plain"), O_RDONLY);
    std::vector<std::byte> mem(5000);
    std::vector<CompletionRecord> trace;
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        e.set_completion_trace(&trace);
        int n = co_await e.read(RingKind::Normal, fd, mem.data(), mem.size(), 0);
        EXPECT_EQ(n, 5000);
    });
    ::close(fd);
    EXPECT_EQ(mem, content);
    ASSERT_EQ(trace.size(), 1u);
    EXPECT_EQ(trace[0].opcode, IORING_OP_READ);
}

// Short reads: a read across the end of file returns what is there, one at it returns 0; the
// data path turns that into "fewer bytes", not an error.
TEST_F(IoEngine, ShortReadsAtEndOfFile) {
    const auto content = pattern(1000, 11);
    write_file(dir_.at("short"), content);
    int fd = open_file(dir_.at("short"), O_RDONLY);
    auto path = BlockDataPath::open(fd, {});
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        PoolBuffer buf = test_buffers().acquire(4096);
        auto r = co_await path->read(e, buf, 4096, 0);
        EXPECT_TRUE(r);
        if (r) {
            EXPECT_EQ(*r, 1000u);
        }
        EXPECT_EQ(0, std::memcmp(buf.data(), content.data(), 1000));
        auto r2 = co_await path->read(e, buf, 4096, 5000);
        EXPECT_TRUE(r2);
        if (r2) {
            EXPECT_EQ(*r2, 0u);
        }
        auto r3 = co_await path->read(e, buf, 100, 950);
        EXPECT_TRUE(r3);
        if (r3) {
            EXPECT_EQ(*r3, 50u);
        }
    });
    ::close(fd);
}

// Errors come back as NTSTATUS through errno_to_status: a closed descriptor is
// STATUS_INVALID_HANDLE (EBADF), reading a directory STATUS_FILE_IS_A_DIRECTORY (EISDIR).
TEST_F(IoEngine, ErrorsMapToNtStatus) {
    int dirfd = ::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dirfd, 0);
    // A descriptor number far above anything open (a just-closed one could be reused by the
    // engine's own eventfd or ring).
    const int bad = 1 << 20;
    auto closed_path = std::make_shared<BlockDataPath>(bad, vfs::UniqueFd{}, 0, 0, BlockOptions{});
    auto dir_path = std::make_shared<BlockDataPath>(dirfd, vfs::UniqueFd{}, 0, 0, BlockOptions{});
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        PoolBuffer buf = test_buffers().acquire(4096);
        auto r = co_await closed_path->read(e, buf, 4096, 0);
        EXPECT_EQ(r.status(), NtStatus::InvalidHandle);
        auto w = co_await closed_path->write(e, protocol::Bytes(buf.data(), 10), 0, WriteMode{});
        EXPECT_EQ(w.status(), NtStatus::InvalidHandle);
        auto f = co_await closed_path->flush(e);
        EXPECT_EQ(f.status(), NtStatus::InvalidHandle);
        auto d = co_await dir_path->read(e, buf, 4096, 0);
        EXPECT_EQ(d.status(), NtStatus::FileIsADirectory);
    });
    ::close(dirfd);
}

// A file that may not grow past RLIMIT_FSIZE: the write that crosses the limit is short (the
// data path continues it), the continuation fails with EFBIG, which the client sees as
// STATUS_DISK_FULL; the bytes below the limit are on disk.
// Through the ring (aio write size = 1) and on the loop (0): the first write is short, the
// next one fails with EFBIG, and the client gets DISK_FULL with the short part on disk.
TEST_F(IoEngine, ShortWriteThenFileSizeLimitIsDiskFull) {
    for (size_t aio_write_size : {size_t(1), size_t(0)}) {
        SCOPED_TRACE("aio write size " + std::to_string(aio_write_size));
        int fd = open_file(dir_.at("limited"), O_RDWR | O_CREAT | O_TRUNC);
        ASSERT_GE(fd, 0);
        BlockOptions opts;
        opts.aio_write_size = aio_write_size;
        auto path = BlockDataPath::open(fd, opts);
        const auto data = pattern(8192, 5);
        auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit old{};
        ::getrlimit(RLIMIT_FSIZE, &old);
        rlimit lim = old;
        lim.rlim_cur = 5000;
        ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
        std::vector<CompletionRecord> trace;
        Result<size_t> w = Error(NtStatus::Unsuccessful);
        run({}, [&](Engine& e) -> asio::awaitable<void> {
            e.set_completion_trace(&trace);
            w = co_await path->write(e, protocol::Bytes(data.data(), data.size()), 0, WriteMode{});
        });
        ::setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, old_handler);
        ::close(fd);
        EXPECT_EQ(w.status(), NtStatus::DiskFull);
        if (aio_write_size == 1) {
            ASSERT_GE(trace.size(), 2u);
            EXPECT_EQ(trace[0].res, 5000) << "the first write is short";
            EXPECT_EQ(trace.back().res, -EFBIG);
        } else {
            EXPECT_TRUE(trace.empty());
            EXPECT_EQ(path->counters().inline_writes.load(), 2u);
        }
        auto disk = read_file(dir_.at("limited"));
        ASSERT_EQ(disk.size(), 5000u);
        EXPECT_EQ(0, std::memcmp(disk.data(), data.data(), 5000));
    }
}

// Write-through: the fdatasync is linked after the write, and the request completes only after
// both completions (asserted by the order of the completions and of the resumption, not by
// time).
TEST_F(IoEngine, WriteThroughCompletesAfterTheDataSync) {
    int fd = open_file(dir_.at("wt"), O_RDWR | O_CREAT | O_TRUNC);
    auto path = BlockDataPath::open(fd, {});
    const auto data = pattern(65536, 9);
    std::vector<CompletionRecord> trace;
    size_t completions_seen_at_resume = 0;
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        e.set_completion_trace(&trace);
        auto w = co_await path->write(e, protocol::Bytes(data.data(), data.size()), 0,
                                      {.write_through = true});
        completions_seen_at_resume = trace.size();
        EXPECT_TRUE(w);
        if (w) {
            EXPECT_EQ(*w, data.size());
        }
    });
    ::close(fd);
    ASSERT_EQ(trace.size(), 2u);
    EXPECT_EQ(trace[0].opcode, IORING_OP_WRITE);
    EXPECT_EQ(trace[0].res, 65536);
    EXPECT_EQ(trace[1].opcode, IORING_OP_FSYNC);
    EXPECT_EQ(trace[1].res, 0);
    EXPECT_EQ(completions_seen_at_resume, 2u) << "resumed before the fdatasync completed";
    EXPECT_EQ(read_file(dir_.at("wt")), data);
}

// Without write-through no fsync is issued; FLUSH is one.
TEST_F(IoEngine, PlainWriteHasNoSyncAndFlushIsOne) {
    int fd = open_file(dir_.at("nowt"), O_RDWR | O_CREAT | O_TRUNC);
    BlockOptions through_ring;
    through_ring.aio_write_size = 1;  // every write through the ring
    auto path = BlockDataPath::open(fd, through_ring);
    const auto data = pattern(4096, 1);
    std::vector<CompletionRecord> trace;
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        e.set_completion_trace(&trace);
        auto w = co_await path->write(e, protocol::Bytes(data.data(), data.size()), 0, WriteMode{});
        EXPECT_TRUE(w);
        EXPECT_EQ(trace.size(), 1u);
        auto f = co_await path->flush(e);
        EXPECT_TRUE(f);
        // The end of file comes from statx on the loop, not through the ring.
        auto sz = co_await path->file_size(e);
        EXPECT_TRUE(sz);
        if (sz) {
            EXPECT_EQ(*sz, 4096u);
        }
    });
    ::close(fd);
    ASSERT_EQ(trace.size(), 2u);
    EXPECT_EQ(trace[0].opcode, IORING_OP_WRITE);
    EXPECT_EQ(trace[1].opcode, IORING_OP_FSYNC);
    EXPECT_EQ(path->counters().inline_writes.load(), 0u);
}

// "aio write size": buffered writes up to it are written on the loop (no SQE, no CQE), larger
// ones through the ring; 0 writes everything on the loop. Write-through writes always go
// through the ring (their fdatasync must not block the loop). The data lands either way.
TEST_F(IoEngine, SmallBufferedWritesAreWrittenOnTheLoop) {
    const std::string file = dir_.at("inline");
    int fd = open_file(file, O_RDWR | O_CREAT | O_TRUNC);
    BlockOptions opts;
    opts.aio_write_size = 64 * 1024;
    auto path = BlockDataPath::open(fd, opts);
    BlockOptions all_inline;
    all_inline.aio_write_size = 0;
    auto path0 = BlockDataPath::open(fd, all_inline);
    const auto small = pattern(4096, 2);
    const auto big = pattern(128 * 1024, 3);
    const auto big2 = pattern(128 * 1024, 4);
    std::vector<CompletionRecord> trace;
    uint64_t engine_inline = 0;
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        e.set_completion_trace(&trace);
        auto w = co_await path->write(e, protocol::Bytes(small.data(), small.size()), 0, {});
        EXPECT_TRUE(w && *w == small.size());
        EXPECT_TRUE(trace.empty());
        w = co_await path->write(e, protocol::Bytes(big.data(), big.size()), 4096, {});
        EXPECT_TRUE(w && *w == big.size());
        EXPECT_EQ(trace.size(), 1u);
        w = co_await path0->write(e, protocol::Bytes(big2.data(), big2.size()), 4096 + big.size(),
                                  {});
        EXPECT_TRUE(w && *w == big2.size());
        EXPECT_EQ(trace.size(), 1u);
        WriteMode wt;
        wt.write_through = true;
        w = co_await path->write(e, protocol::Bytes(small.data(), small.size()), 0, wt);
        EXPECT_TRUE(w && *w == small.size());
        EXPECT_EQ(trace.size(), 3u);  // the write and its fdatasync
        engine_inline = e.stats().inline_writes.load();
    });
    ::close(fd);
    ASSERT_EQ(trace.size(), 3u);
    EXPECT_EQ(trace[0].opcode, IORING_OP_WRITE);  // vector memory: not a fixed buffer
    EXPECT_EQ(trace[2].opcode, IORING_OP_FSYNC);
    EXPECT_EQ(path->counters().inline_writes.load(), 1u);
    EXPECT_EQ(path0->counters().inline_writes.load(), 1u);
    EXPECT_EQ(engine_inline, 2u);
    auto want = small;
    want.insert(want.end(), big.begin(), big.end());
    want.insert(want.end(), big2.begin(), big2.end());
    EXPECT_EQ(read_file(file), want);
}

// Whether the first `len` bytes of `path` are in the page cache (mincore of a mapping).
size_t cached_pages(const std::string& path, size_t len) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    void* m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) return 0;
    std::vector<unsigned char> vec((len + 4095) / 4096);
    size_t n = 0;
    if (::mincore(m, len, vec.data()) == 0)
        for (auto v : vec)
            n += v & 1;
    ::munmap(m, len);
    return n;
}

// direct io on a file system with O_DIRECT (/tmp here): aligned reads and writes bypass the
// page cache, unaligned ones go through it, and the data is right either way, also for a write
// whose memory is not aligned (copied into an aligned pool buffer first).
TEST_F(IoEngine, DirectIoAlignedGoesDirectUnalignedFallsBack) {
    const std::string f = dir_.at("direct");
    int fd = open_file(f, O_RDWR | O_CREAT | O_TRUNC);
    ASSERT_GE(fd, 0);
    auto path = BlockDataPath::open(fd, {.direct_io = true});
    struct statx stx {};
    ASSERT_EQ(::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx), 0);
    if (!(stx.stx_mask & STATX_DIOALIGN) || stx.stx_dio_offset_align == 0) {
        EXPECT_FALSE(path->direct());
        GTEST_SKIP() << "no direct I/O on this file system";
    }
    ASSERT_TRUE(path->direct());
    EXPECT_EQ(path->name(), "block+direct");
    const uint32_t a = path->offset_alignment();
    const auto data = pattern(256 * 1024, 21);
    PoolBuffer src = test_buffers().acquire(data.size());
    std::memcpy(src.data(), data.data(), data.size());
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        // Aligned offset, length and memory: O_DIRECT, nothing lands in the page cache.
        auto w = co_await path->write(e, protocol::Bytes(src.data(), data.size()), 0, WriteMode{});
        EXPECT_TRUE(w);
    });
    EXPECT_EQ(cached_pages(f, data.size()), 0u) << "an aligned write went through the page cache";
    EXPECT_EQ(read_file(f), data);

    // Unaligned offset: through the page cache, still correct; then an aligned direct read
    // sees the buffered data (the kernel writes dirty pages back before the direct read).
    const auto patch = pattern(1000, 22);
    auto expect = data;
    std::memcpy(expect.data() + a + 7, patch.data(), patch.size());
    // Misaligned memory with aligned offset and length: bounced through an aligned buffer.
    const auto tail = pattern(2 * a, 23);
    std::vector<std::byte> odd(2 * a + 1);
    std::memcpy(odd.data() + 1, tail.data(), tail.size());
    std::memcpy(expect.data() + 8 * a, tail.data(), tail.size());
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        auto w1 = co_await path->write(e, protocol::Bytes(patch.data(), patch.size()), a + 7,
                                       WriteMode{});
        EXPECT_TRUE(w1);
        auto w2 = co_await path->write(e, protocol::Bytes(odd.data() + 1, tail.size()), 8 * a,
                                       WriteMode{});
        EXPECT_TRUE(w2);
        PoolBuffer back = test_buffers().acquire(data.size());
        auto r = co_await path->read(e, back, data.size(), 0);
        EXPECT_TRUE(r);
        if (r) {
            EXPECT_EQ(*r, data.size());
            EXPECT_EQ(0, std::memcmp(back.data(), expect.data(), expect.size()));
        }
        // An aligned read of an unaligned length is rounded up inside the buffer and clipped.
        PoolBuffer part = test_buffers().acquire(100);
        auto r2 = co_await path->read(e, part, 100, 0);
        EXPECT_TRUE(r2);
        if (r2) {
            EXPECT_EQ(*r2, 100u);
        }
        EXPECT_EQ(0, std::memcmp(part.data(), expect.data(), 100));
        // At an unaligned offset, buffered.
        auto r3 = co_await path->read(e, part, 100, 3);
        EXPECT_TRUE(r3);
        EXPECT_EQ(0, std::memcmp(part.data(), expect.data() + 3, 100));
    });
    ::close(fd);
    EXPECT_EQ(read_file(f), expect);
    const auto& c = path->counters();
    EXPECT_GE(c.direct.load(), 3u);
    EXPECT_GE(c.buffered.load(), 2u);
    EXPECT_EQ(c.bounced.load(), 1u);
}

// tmpfs: whatever this kernel says about O_DIRECT there (older kernels refuse it, newer ones
// accept it and report no DIOALIGN or a byte alignment), the path is chosen from statx and the
// data comes back right for aligned and unaligned requests.
TEST_F(IoEngine, DirectIoOnTmpfsFallsBackOrWorks) {
    TempDir shm("daxsmbd-io", "/dev/shm");
    if (!shm.ok()) GTEST_SKIP() << "no /dev/shm";
    const std::string f = shm.at("direct");
    int fd = open_file(f, O_RDWR | O_CREAT | O_TRUNC);
    ASSERT_GE(fd, 0);
    auto path = BlockDataPath::open(fd, {.direct_io = true});
    struct statx stx {};
    ASSERT_EQ(::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx), 0);
    const bool fs_dio = (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align != 0;
    // Direct only if the file system says it can (and the reopen worked).
    if (!fs_dio) {
        EXPECT_FALSE(path->direct());
    }
    std::cout << "tmpfs: DIOALIGN " << (fs_dio ? "reported" : "not reported") << ", offset align "
              << stx.stx_dio_offset_align << ", path " << path->name() << "\n";
    const auto data = pattern(65536 + 123, 31);
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        auto w = co_await path->write(e, protocol::Bytes(data.data(), data.size()), 0, WriteMode{});
        EXPECT_TRUE(w);
        PoolBuffer back = test_buffers().acquire(data.size());
        auto r = co_await path->read(e, back, data.size(), 0);
        EXPECT_TRUE(r);
        if (r) {
            EXPECT_EQ(*r, data.size());
        }
        EXPECT_EQ(0, std::memcmp(back.data(), data.data(), data.size()));
    });
    ::close(fd);
    EXPECT_EQ(read_file(f), data);
}

// Write-through on the direct path: the aligned write is linked to the fdatasync too.
TEST_F(IoEngine, DirectWriteThroughOrdersWriteBeforeSync) {
    int fd = open_file(dir_.at("dwt"), O_RDWR | O_CREAT | O_TRUNC);
    auto path = BlockDataPath::open(fd, {.direct_io = true});
    if (!path->direct()) GTEST_SKIP() << "no direct I/O on /tmp";
    PoolBuffer src = test_buffers().acquire(65536);
    const auto data = pattern(65536, 41);
    std::memcpy(src.data(), data.data(), data.size());
    std::vector<CompletionRecord> trace;
    size_t at_resume = 0;
    run({}, [&](Engine& e) -> asio::awaitable<void> {
        e.set_completion_trace(&trace);
        auto w =
            co_await path->write(e, protocol::Bytes(src.data(), 65536), 0, {.write_through = true});
        at_resume = trace.size();
        EXPECT_TRUE(w);
    });
    ::close(fd);
    ASSERT_EQ(trace.size(), 2u);
    EXPECT_TRUE(trace[0].opcode == IORING_OP_WRITE_FIXED || trace[0].opcode == IORING_OP_WRITE);
    EXPECT_EQ(trace[1].opcode, IORING_OP_FSYNC);
    EXPECT_EQ(at_resume, 2u);
    EXPECT_EQ(read_file(dir_.at("dwt")), data);
}

// io poll on the data path with an IOPOLL ring: on a device with poll queues the O_DIRECT reads
// are polled; on one without, the kernel either refuses (EOPNOTSUPP: the open falls back to
// interrupts after the first try) or completes the request by interrupt on the polled ring
// (newer block layers clear the polled flag). Either way the data is right. (The server does
// not even set the ring up for a share whose device has no poll queues: E2eBlockPath.)
TEST_F(IoEngine, PolledRingCarriesDirectIoOrFallsBack) {
    std::string why;
    const bool pollable = device_has_poll_queues("/tmp", &why);
    std::cout << "/tmp: " << (pollable ? "poll queues" : why) << "\n";
    if (!pollable) {
        EXPECT_FALSE(why.empty());
    }
    const auto content = pattern(65536, 51);
    write_file(dir_.at("polled"), content);
    int fd = open_file(dir_.at("polled"), O_RDWR);
    auto path = BlockDataPath::open(fd, {.direct_io = true, .io_poll = true});
    if (!path->direct()) GTEST_SKIP() << "no direct I/O on /tmp";
    EngineOptions o;
    o.buffers = &test_buffers();
    o.iopoll = true;
    uint64_t polled = 0;
    bool has_polled_ring = false;
    run(o, [&](Engine& e) -> asio::awaitable<void> {
        has_polled_ring = e.has_ring(RingKind::Polled);
        for (int i = 0; i < 2; ++i) {
            PoolBuffer buf = test_buffers().acquire(65536);
            auto r = co_await path->read(e, buf, 65536, 0);
            EXPECT_TRUE(r);
            if (r) {
                EXPECT_EQ(*r, 65536u);
            }
            EXPECT_EQ(0, std::memcmp(buf.data(), content.data(), content.size()));
        }
        polled = e.stats().polled_ops;
    });
    ::close(fd);
    std::cout << "polled ring " << (has_polled_ring ? "set up" : "refused") << ", polled ops "
              << polled << ", open still polling: " << path->polled() << "\n";
    if (!has_polled_ring) {
        EXPECT_EQ(polled, 0u);
    } else if (path->polled()) {
        EXPECT_EQ(polled, 2u);
    } else {
        EXPECT_EQ(polled, 1u) << "after EOPNOTSUPP the open must stop trying the polled ring";
    }
}

// The file system under tmpfs is not a block device: no poll queues, with the reason.
TEST(IoDevice, TmpfsHasNoPollQueues) {
    std::string why;
    EXPECT_FALSE(device_has_poll_queues("/dev/shm", &why));
    EXPECT_NE(why.find("not on a block device"), std::string::npos) << why;
}

// io sqpoll = yes: the SQPOLL ring (or, if the kernel refuses it, the normal one) carries the
// I/O; a second engine attaches to the first one's kernel thread.
TEST_F(IoEngine, SqPollRingCarriesIo) {
    const auto content = pattern(8192, 61);
    write_file(dir_.at("sq"), content);
    int fd = open_file(dir_.at("sq"), O_RDWR);
    auto path = BlockDataPath::open(fd, {.io_sqpoll = true});
    asio::io_context ctx;
    EngineOptions o;
    o.buffers = &test_buffers();
    o.sqpoll = true;
    Engine first(ctx.get_executor(), o);
    o.sqpoll_attach_fd = first.sqpoll_fd();
    Engine second(ctx.get_executor(), o);
    EXPECT_EQ(first.has_ring(RingKind::SqPoll), second.has_ring(RingKind::SqPoll));
    bool done = false;
    asio::co_spawn(
        ctx,
        [&]() -> asio::awaitable<void> {
            for (Engine* e : {&first, &second}) {
                PoolBuffer buf = test_buffers().acquire(8192);
                auto r = co_await path->read(*e, buf, 8192, 0);
                EXPECT_TRUE(r);
                EXPECT_EQ(0, std::memcmp(buf.data(), content.data(), 8192));
                auto w = co_await path->write(*e, protocol::Bytes(buf.data(), 100), 8192,
                                              {.write_through = true});
                EXPECT_TRUE(w);
            }
            done = true;
        },
        asio::detached);
    ctx.run();
    ::close(fd);
    EXPECT_TRUE(done);
    EXPECT_EQ(read_file(dir_.at("sq")).size(), 8292u);
}

// No io_uring (kernel.io_uring_disabled, seccomp): the same calls run as system calls.
TEST(IoEngineFallback, WithoutARingTheCallsStillWork) {
    TempDir dir;
    const auto content = pattern(3000, 71);
    write_file(dir.at("noring"), content);
    int fd = open_file(dir.at("noring"), O_RDWR);
    auto path = BlockDataPath::open(fd, {});
    EngineOptions o;
    o.buffers = &test_buffers();
    o.force_no_ring = true;
    run(o, [&](Engine& e) -> asio::awaitable<void> {
        EXPECT_FALSE(e.uring_available());
        PoolBuffer buf = test_buffers().acquire(4096);
        auto r = co_await path->read(e, buf, 4096, 0);
        EXPECT_TRUE(r);
        if (r) {
            EXPECT_EQ(*r, 3000u);
        }
        auto w = co_await path->write(e, protocol::Bytes(buf.data(), 3000), 3000,
                                      {.write_through = true});
        EXPECT_TRUE(w);
        auto sz = co_await path->file_size(e);
        EXPECT_TRUE(sz);
        if (sz) {
            EXPECT_EQ(*sz, 6000u);
        }
        EXPECT_GE(e.stats().fallback_ops, 3u);
    });
    ::close(fd);
}

// The pool's slabs: every pool buffer lies inside one slab, one-off allocations in none.
TEST(BufferPoolSlabs, PoolBuffersAreInsideSlabs) {
    auto& pool = test_buffers();
    for (size_t size : {size_t(100), size_t(70000), size_t(2u << 20)}) {
        PoolBuffer b = pool.acquire(size);
        const int slab = pool.slab_of(b.data(), b.capacity());
        ASSERT_GE(slab, 0) << size;
        EXPECT_GE(b.data(), pool.slab_base(size_t(slab)));
        EXPECT_LE(b.data() + b.capacity(), pool.slab_base(size_t(slab)) + BufferPool::kSlabSize);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % BufferPool::kPageSize, 0u);
    }
    PoolBuffer huge = pool.acquire(BufferPool::kClasses[2] + 1);
    EXPECT_EQ(pool.slab_of(huge.data(), huge.capacity()), -1);
    std::vector<std::byte> heap(64);
    EXPECT_EQ(pool.slab_of(heap.data(), heap.size()), -1);
}

// An SMB Direct server's loops drive the kernel's RDMA files, which refuse a thread whose
// credentials changed after they were opened: with keep_loop_credentials, a user's small write
// and the registration of the user's io_uring personality leave the loop's credentials alone.
TEST_F(IoEngine, KeepLoopCredentialsLeavesTheLoopThreadsCredentialsUnchanged) {
    if (!vfs::credentials_switchable()) GTEST_SKIP() << "needs root (CAP_SETUID)";
    auto user = vfs::resolve_unix_identity(61011, 61011);
    for (bool keep : {false, true}) {
        SCOPED_TRACE(keep ? "keep loop credentials" : "default");
        int fd = open_file(dir_.at("cred"), O_RDWR | O_CREAT | O_TRUNC);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::fchmod(fd, 0666), 0);
        const auto data = pattern(4096, 9);
        EngineOptions eo;
        eo.keep_loop_credentials = keep;
        uint64_t switches = 0;
        int res = -1;
        run(eo, [&](Engine& e) -> asio::awaitable<void> {
            const uint64_t before = vfs::credential_switches_on_this_thread();
            res = co_await e.write_small_buffered(Submit(RingKind::Normal, user.get()), fd,
                                                  data.data(), data.size(), 0);
            switches = vfs::credential_switches_on_this_thread() - before;
        });
        ::close(fd);
        EXPECT_EQ(res, int(data.size()));
        if (keep)
            EXPECT_EQ(switches, 0u);
        else
            EXPECT_GT(switches, 0u);  // the inline write switched: what the option prevents
    }
}

}  // namespace
}  // namespace daxsmbd::server::io
