// Tests of the metrics registry (server/metrics/registry.h): bucket math, the per-loop shards
// and their merge, the (command, status) table.
#include "server/metrics/registry.h"

#include <gtest/gtest.h>

#include <thread>

namespace daxsmbd::server::metrics {
namespace {

using protocol::Command;

TEST(MetricsBuckets, BoundsAreLessOrEqual) {
    EXPECT_EQ(latency_bucket(0), 0u);
    EXPECT_EQ(latency_bucket(50'000), 0u);  // le="0.00005" holds exactly 50 us
    EXPECT_EQ(latency_bucket(50'001), 1u);
    EXPECT_EQ(latency_bucket(100'000), 1u);
    EXPECT_EQ(latency_bucket(999'999), 4u);  // le="0.001"
    EXPECT_EQ(latency_bucket(10'000'000'000), kLatencyBoundsNs.size() - 1);
    EXPECT_EQ(latency_bucket(10'000'000'001), kLatencyBuckets - 1);  // +Inf
    EXPECT_EQ(latency_bucket(UINT64_MAX), kLatencyBuckets - 1);
}

TEST(MetricsBuckets, BoundsAscend) {
    for (size_t i = 1; i < kLatencyBoundsNs.size(); ++i)
        EXPECT_LT(kLatencyBoundsNs[i - 1], kLatencyBoundsNs[i]);
    EXPECT_EQ(kLatencyBoundsNs.front(), 50'000u);
    EXPECT_EQ(kLatencyBoundsNs.back(), 10'000'000'000u);
}

TEST(MetricsHistogram, ObserveCountsAndSums) {
    LatencyHistogram h;
    h.observe(10'000);
    h.observe(70'000);
    h.observe(70'000);
    h.observe(20'000'000'000);
    HistogramSnapshot s;
    s.add(h);
    EXPECT_EQ(s.buckets[0], 1u);
    EXPECT_EQ(s.buckets[1], 2u);
    EXPECT_EQ(s.buckets[kLatencyBuckets - 1], 1u);
    EXPECT_EQ(s.count(), 4u);
    EXPECT_EQ(s.sum_ns, 10'000u + 140'000u + 20'000'000'000u);
}

TEST(MetricsRegistry, MergesLoopShards) {
    Registry r;
    r.configure(3, {"IPC$", "data"});
    r.shard(0).request_done(Command::Read, NtStatus::Success, 60'000);
    r.shard(1).request_done(Command::Read, NtStatus::Success, 60'000);
    r.shard(2).request_done(Command::Read, NtStatus::EndOfFile, 2'000'000);
    r.shard(2).request_done(Command::Write, NtStatus::Success, 1);
    r.shard(0).share_io(1, IoDirection::Read, IoPath::Block, 4096, 60'000);
    r.shard(1).share_io(1, IoDirection::Read, IoPath::Block, 4096, 60'000);
    r.shard(1).share_io(1, IoDirection::Write, IoPath::Dax, 100, 60'000);
    r.shard(1).share_io(7, IoDirection::Write, IoPath::Dax, 100, 60'000);  // no such share
    Snapshot s = r.snapshot();
    EXPECT_EQ(s.requests[size_t(Command::Read)].count(), 3u);
    EXPECT_EQ(s.requests[size_t(Command::Read)].buckets[1], 2u);
    EXPECT_EQ(s.requests[size_t(Command::Read)].sum_ns, 2'120'000u);
    EXPECT_EQ(s.requests[size_t(Command::Write)].count(), 1u);
    EXPECT_EQ(s.requests[size_t(Command::Create)].count(), 0u);
    ASSERT_EQ(s.failures.size(), 1u);
    EXPECT_EQ(s.failures[0].command, uint16_t(Command::Read));
    EXPECT_EQ(s.failures[0].status, to_u32(NtStatus::EndOfFile));
    EXPECT_EQ(s.failures[0].count, 1u);
    ASSERT_EQ(s.shares.size(), 2u);
    EXPECT_EQ(s.shares[1].name, "data");
    const size_t rd = size_t(IoDirection::Read), wr = size_t(IoDirection::Write);
    EXPECT_EQ(s.shares[1].bytes[rd][size_t(IoPath::Block)], 8192u);
    EXPECT_EQ(s.shares[1].latency[rd][size_t(IoPath::Block)].count(), 2u);
    EXPECT_EQ(s.shares[1].bytes[wr][size_t(IoPath::Dax)], 100u);
    EXPECT_EQ(s.shares[1].bytes[wr][size_t(IoPath::Block)], 0u);
    EXPECT_EQ(s.shares[0].latency[rd][size_t(IoPath::Block)].count(), 0u);
}

TEST(MetricsRegistry, SamePairFromSeveralShardsIsOneEntry) {
    Registry r;
    r.configure(2, {});
    for (int i = 0; i < 5; ++i)
        r.shard(i % 2).request_done(Command::SessionSetup, NtStatus::LogonFailure, 1000);
    r.shard(1).request_done(Command::SessionSetup, NtStatus::MoreProcessingRequired, 1000);
    r.shard(0).request_done(Command::Create, NtStatus::ObjectNameNotFound, 1000);
    Snapshot s = r.snapshot();
    ASSERT_EQ(s.failures.size(), 3u);
    // Sorted by command, then status.
    EXPECT_EQ(s.failures[0].command, uint16_t(Command::SessionSetup));
    EXPECT_EQ(s.failures[0].status, to_u32(NtStatus::MoreProcessingRequired));
    EXPECT_EQ(s.failures[1].status, to_u32(NtStatus::LogonFailure));
    EXPECT_EQ(s.failures[1].count, 5u);
    EXPECT_EQ(s.failures[2].command, uint16_t(Command::Create));
    EXPECT_EQ(s.requests[size_t(Command::SessionSetup)].count(), 6u);
}

TEST(MetricsStatusTable, FullTableCountsUntracked) {
    StatusTable t;
    // More distinct pairs than slots: every one is counted, tracked or not.
    const size_t pairs = StatusTable::kSlots + 40;
    for (size_t i = 0; i < pairs; ++i)
        t.count(Command(i % protocol::kCommandCount), NtStatus(0xC0000000u + uint32_t(i)));
    std::vector<StatusTable::Entry> out;
    t.collect(out);
    EXPECT_GE(out.size(), StatusTable::kSlots / 2);
    EXPECT_LE(out.size(), StatusTable::kSlots);
    uint64_t total = t.untracked();
    for (const auto& e : out) {
        EXPECT_EQ(e.count, 1u);
        total += e.count;
    }
    EXPECT_EQ(total, pairs);
}

TEST(MetricsRegistry, ConcurrentWritersLoseNothing) {
    // Each loop thread writes its own shard while a scraper merges: the final merge is exact.
    Registry r;
    r.configure(2, {"IPC$"});
    constexpr int kPerThread = 20000;
    std::atomic<bool> stop{false};
    std::thread scraper([&] {
        while (!stop)
            (void)r.snapshot();
    });
    std::thread a([&] {
        for (int i = 0; i < kPerThread; ++i)
            r.shard(0).request_done(Command::Read, NtStatus::Success, 70'000);
    });
    std::thread b([&] {
        for (int i = 0; i < kPerThread; ++i)
            r.shard(1).request_done(Command::Read, NtStatus::AccessDenied, 70'000);
    });
    a.join();
    b.join();
    stop = true;
    scraper.join();
    Snapshot s = r.snapshot();
    EXPECT_EQ(s.requests[size_t(Command::Read)].count(), 2u * kPerThread);
    ASSERT_EQ(s.failures.size(), 1u);
    EXPECT_EQ(s.failures[0].count, uint64_t(kPerThread));
}

}  // namespace
}  // namespace daxsmbd::server::metrics

namespace daxsmbd::server::metrics {
namespace {

std::vector<std::string> names_of(const Snapshot& s) {
    std::vector<std::string> out;
    for (const auto& sh : s.shares)
        out.push_back(sh.name);
    return out;
}

TEST(MetricsShareSlots, ReloadedSharesGetSlotsAndRemovedOnesLeaveTheSnapshot) {
    Registry r;
    r.configure(2, {"IPC$", "data"});
    const size_t extra = r.share_slot("extra");
    EXPECT_EQ(extra, 2u);
    EXPECT_EQ(r.share_slot("DATA"), 1u);  // a changed share keeps its slot (case-insensitive)
    r.shard(1).share_io(extra, IoDirection::Write, IoPath::Block, 4096, 1000);
    EXPECT_EQ(names_of(r.snapshot()), (std::vector<std::string>{"IPC$", "DATA", "extra"}));

    r.retire_share(1);
    auto s = r.snapshot();
    ASSERT_EQ(names_of(s), (std::vector<std::string>{"IPC$", "extra"}));
    EXPECT_EQ(s.shares[1].bytes[size_t(IoDirection::Write)][size_t(IoPath::Block)], 4096u);

    // Re-added: the same slot, its counters where they were.
    EXPECT_EQ(r.share_slot("data"), 1u);
    EXPECT_EQ(r.snapshot().shares.size(), 3u);
}

TEST(MetricsShareSlots, SpareSlotsRunOut) {
    Registry r;
    r.configure(1, {"IPC$"});
    for (size_t i = 0; i < Registry::kReloadShareSlots; ++i)
        ASSERT_EQ(r.share_slot("s" + std::to_string(i)), i + 1);
    EXPECT_EQ(r.share_slot("one-too-many"), SIZE_MAX);
    // Past the slots the share's I/O is dropped, not written out of bounds.
    r.shard(0).share_io(SIZE_MAX, IoDirection::Read, IoPath::Dax, 1, 1);
}

}  // namespace
}  // namespace daxsmbd::server::metrics
