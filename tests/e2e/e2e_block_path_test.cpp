// End to end through the io_uring block path (server/io): a share with direct io = yes, our own
// client writing aligned, unaligned and write-through data, reading it back, END_OF_FILE and
// MinimumCount, FLUSH; the loop's engine carried the I/O (no blocking-pool fallback).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "protocol/access_mask.h"
#include "server/io/block_path.h"
#include "server/io/uring_engine.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;

constexpr uint32_t kRw = am::kFileGenericRead | am::kFileGenericWrite | am::kDelete;

class E2eBlockPath : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override {
        TestServer::Options o;
        const bool direct = GetParam();
        o.configure = [direct](server::Config& c) {
            c.shares[0].direct_io = direct;
            c.shares[0].io_poll = direct;  // falls back where the device has no poll queues
        };
        server_ = std::make_unique<TestServer>(o);
        ASSERT_TRUE(server_->ok()) << server_->error();
        client_ = std::make_unique<Smb2Client>();
        ASSERT_TRUE(client_->connect("127.0.0.1", server_->port()));
        ASSERT_EQ(client_->negotiate().status, NtStatus::Success);
        ASSERT_EQ(client_->session_setup("alice", "pw").status, NtStatus::Success);
        ASSERT_EQ(client_->tree_connect("data").status, NtStatus::Success);
        client_->options().credit_target = 256;
        ASSERT_EQ(client_->echo().status, NtStatus::Success);
    }
    uint64_t engine_total(std::atomic<uint64_t> server::io::EngineStats::*field) {
        uint64_t n = 0;
        for (size_t i = 0; i < server_->server().loop_count(); ++i)
            n += (server_->server().engine(i).stats().*field).load();
        return n;
    }
    std::unique_ptr<TestServer> server_;
    std::unique_ptr<Smb2Client> client_;
};

TEST_P(E2eBlockPath, WriteReadFlushThroughTheRing) {
    auto& c = *client_;
    auto cr = c.open("block.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_EQ(cr.status, NtStatus::Success);
    const FileId fid = cr.body.file_id;
    const ByteVector big = pattern(1 << 20, 1);    // aligned offset and length
    const ByteVector odd = pattern(1000, 2);       // unaligned offset and length
    const ByteVector through = pattern(65536, 3);  // write-through
    ASSERT_EQ(c.write(fid, 0, big).status, NtStatus::Success);
    ASSERT_EQ(c.write(fid, (1 << 20) + 3, odd).status, NtStatus::Success);
    WriteRequest wt;
    wt.file_id = fid;
    wt.offset = 2 << 20;
    wt.data = through;
    wt.flags = write_flags::kWriteThrough;
    CallOptions co;
    co.payload = through.size();
    auto wr = c.call(Command::Write, wt, co);
    ASSERT_EQ(wr.status, NtStatus::Success);
    ASSERT_EQ(c.flush(fid).status, NtStatus::Success);

    ByteVector expect((2 << 20) + through.size());
    std::copy(big.begin(), big.end(), expect.begin());
    std::copy(odd.begin(), odd.end(), expect.begin() + (1 << 20) + 3);
    std::copy(through.begin(), through.end(), expect.begin() + (2 << 20));
    // Read back in pieces of 1 MiB (aligned) and one unaligned piece.
    ByteVector back;
    for (uint64_t off = 0; off < expect.size(); off += 1 << 20) {
        auto r = c.read(fid, off, 1 << 20);
        ASSERT_EQ(r.status, NtStatus::Success) << off;
        back.insert(back.end(), r.body.data.begin(), r.body.data.end());
    }
    EXPECT_EQ(back, expect);
    auto mid = c.read(fid, (1 << 20) + 1, 1005);
    ASSERT_EQ(mid.status, NtStatus::Success);
    EXPECT_TRUE(std::equal(mid.body.data.begin(), mid.body.data.end(),
                           expect.begin() + (1 << 20) + 1, expect.begin() + (1 << 20) + 1006));
    // MS-SMB2 3.3.5.12: at end of file, or fewer bytes than MinimumCount: END_OF_FILE.
    EXPECT_EQ(c.read(fid, expect.size(), 4096).status, NtStatus::EndOfFile);
    ReadRequest rd;
    rd.file_id = fid;
    rd.offset = expect.size() - 10;
    rd.length = 4096;
    rd.minimum_count = 11;
    CallOptions rco;
    rco.payload = rd.length;
    EXPECT_EQ(c.call(Command::Read, rd, rco).status, NtStatus::EndOfFile);
    EXPECT_EQ(c.close(fid).status, NtStatus::Success);
    EXPECT_EQ(file_contents(server_->share_dir() + "/block.bin"), expect);

    using S = server::io::EngineStats;
    EXPECT_GT(engine_total(&S::sqes), 8u) << "file I/O did not go through io_uring";
    EXPECT_EQ(engine_total(&S::fallback_ops), 0u);
    // io poll = yes on a device without poll queues: the server logged it and set up no polled
    // ring, so nothing was polled.
    std::string why;
    if (GetParam() && !server::io::device_has_poll_queues(server_->share_dir(), &why)) {
        EXPECT_FALSE(server_->server().engine(0).has_ring(server::io::RingKind::Polled)) << why;
        EXPECT_EQ(engine_total(&S::polled_ops), 0u);
    }
}

// Server-side copy (FSCTL_SRV_COPYCHUNK_WRITE) goes through the data paths too: chunks at
// offsets, to the end of file, and overlapping inside one file land right, and the copy was
// carried by the loop's ring (not copy_file_range/pread on the blocking pool).
TEST_P(E2eBlockPath, CopychunkThroughTheRing) {
    auto& c = *client_;
    const ByteVector data = pattern((2 << 20) + 100, 4);
    auto src = c.open("src.bin", kRw, create_disposition::kOverwriteIf);
    auto dst = c.open("dst.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_EQ(src.status, NtStatus::Success);
    ASSERT_EQ(dst.status, NtStatus::Success);
    for (uint64_t off = 0; off < data.size(); off += 1 << 20) {
        const size_t n = std::min<size_t>(1 << 20, data.size() - off);
        ASSERT_EQ(c.write(src.body.file_id, off, Bytes(data).subspan(off, n)).status,
                  NtStatus::Success);
    }
    using S = server::io::EngineStats;
    const uint64_t sqes_before = engine_total(&S::sqes);
    // Reversed order, then the tail to the end of file (target ~0).
    const std::vector<SrvCopychunk> chunks = {
        {1 << 20, 1 << 20, 1 << 20}, {0, 0, 1 << 20}, {2 << 20, ~0ull, 100}};
    auto r = copychunk(c, src.body.file_id, dst.body.file_id, chunks);
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(r.body.chunks_written, 3u);
    EXPECT_EQ(r.body.total_bytes_written, uint32_t(data.size()));
    EXPECT_GT(engine_total(&S::sqes) - sqes_before, 3u) << "the copy did not go through io_uring";
    EXPECT_EQ(engine_total(&S::fallback_ops), 0u);

    // Overlapping inside one file: the source bytes are read before they are overwritten.
    auto o = copychunk(c, src.body.file_id, src.body.file_id, {{0, 4096, 65536}});
    ASSERT_EQ(o.status, NtStatus::Success);
    EXPECT_EQ(o.body.total_bytes_written, 65536u);
    // A source range past the end of file copies nothing of that chunk.
    auto past = copychunk(c, src.body.file_id, dst.body.file_id, {{data.size() - 10, 0, 100}});
    EXPECT_EQ(uint32_t(past.status), 0xC000001Fu);  // STATUS_INVALID_VIEW_SIZE
    EXPECT_EQ(past.body.total_bytes_written, 0u);
    EXPECT_EQ(c.close(src.body.file_id).status, NtStatus::Success);
    EXPECT_EQ(c.close(dst.body.file_id).status, NtStatus::Success);

    EXPECT_EQ(file_contents(server_->share_dir() + "/dst.bin"), data);
    ByteVector overlapped = data;
    std::copy(data.begin(), data.begin() + 65536, overlapped.begin() + 4096);
    EXPECT_EQ(file_contents(server_->share_dir() + "/src.bin"), overlapped);
}

INSTANTIATE_TEST_SUITE_P(DirectIo, E2eBlockPath, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                             return i.param ? "direct" : "buffered";
                         });

}  // namespace
}  // namespace daxsmbd::client
