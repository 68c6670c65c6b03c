// The pipe pool of the splice path (server/io/splice_pipe.h): how many page slots a range
// needs, lending and taking back, the limit on pipes lent, and that a pipe still holding data
// is never lent again.
#include "server/io/splice_pipe.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace daxsmbd::server::io {
namespace {

TEST(PipePool, BytesForARangeCountWholePages) {
    const size_t pg = size_t(::sysconf(_SC_PAGESIZE));
    EXPECT_EQ(PipePool::pipe_bytes_for(0, 1), pg);
    EXPECT_EQ(PipePool::pipe_bytes_for(0, pg), pg);
    EXPECT_EQ(PipePool::pipe_bytes_for(1, pg), 2 * pg);
    EXPECT_EQ(PipePool::pipe_bytes_for(pg - 1, 2), 2 * pg);
    EXPECT_EQ(PipePool::pipe_bytes_for(3 * pg, PipePool::kCapacity), PipePool::kCapacity);
    EXPECT_EQ(PipePool::pipe_bytes_for(5, PipePool::kCapacity), PipePool::kCapacity + pg);
}

TEST(PipePool, LendsReusesAndLimits) {
    auto pool = PipePool::make("test");
    SplicePipe p = pool->acquire(0, PipePool::kCapacity);
    if (!p) GTEST_SKIP() << "no 1 MiB pipe here (pipe-max-size)";
    EXPECT_GE(p.capacity(), PipePool::kCapacity);
    EXPECT_EQ(p.size(), 0u);
    EXPECT_EQ(pool->in_use(), 1u);
    // Too large for any pipe of the pool.
    EXPECT_FALSE(pool->acquire(1, PipePool::kCapacity));
    const int rfd = p.read_fd();
    p.reset();
    EXPECT_EQ(pool->in_use(), 0u);
    EXPECT_EQ(pool->idle(), 1u);
    // The idle pipe is lent again.
    SplicePipe again = pool->acquire(0, 4096);
    EXPECT_EQ(again.read_fd(), rfd);
    again.reset();

    std::vector<SplicePipe> lent;
    for (size_t i = 0; i < PipePool::kMaxInUse; ++i) {
        lent.push_back(pool->acquire(0, 4096));
        ASSERT_TRUE(lent.back()) << i;
    }
    EXPECT_FALSE(pool->acquire(0, 4096)) << "more pipes lent than kMaxInUse";
    lent.clear();
    EXPECT_EQ(pool->in_use(), 0u);
    EXPECT_EQ(pool->idle(), PipePool::kMaxIdle);
}

TEST(PipePool, APipeWithDataIsClosedNotReused) {
    auto pool = PipePool::make("test");
    SplicePipe p = pool->acquire(0, 4096);
    if (!p) GTEST_SKIP() << "no 1 MiB pipe here (pipe-max-size)";
    const char stale[] = "stale";
    ASSERT_EQ(::write(p.write_fd(), stale, sizeof stale), ssize_t(sizeof stale));
    p.added(sizeof stale);
    const int rfd = p.read_fd();
    p.reset();
    EXPECT_EQ(pool->idle(), 0u);
    EXPECT_EQ(::fcntl(rfd, F_GETFD), -1) << "the pipe with data was not closed";
}

TEST(PipePool, CopyOutEmptiesThePipe) {
    auto pool = PipePool::make("test");
    SplicePipe p = pool->acquire(0, 4096);
    if (!p) GTEST_SKIP() << "no 1 MiB pipe here (pipe-max-size)";
    const char text[] = "file bytes";
    ASSERT_EQ(::write(p.write_fd(), text, sizeof text), ssize_t(sizeof text));
    p.added(sizeof text);
    BufferPool buffers;
    PoolBuffer out = buffers.acquire(p.size());
    ASSERT_TRUE(p.copy_out(out));
    EXPECT_EQ(p.size(), 0u);
    ASSERT_EQ(out.size(), sizeof text);
    EXPECT_EQ(std::memcmp(out.data(), text, sizeof text), 0);
    p.reset();
    EXPECT_EQ(pool->idle(), 1u);
}

}  // namespace
}  // namespace daxsmbd::server::io
