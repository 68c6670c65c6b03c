// The DAX path through the real handlers: a share whose files are served from FileMaps. On the
// test machine's ordinary file system MAP_SYNC is impossible, so the test switches the share's
// DAX options to page-granular mappings (require_sync = false) right after start; everything in
// the handlers (CREATE attach, READ/WRITE copy, write-through, FLUSH/CLOSE persist, truncate on
// overwrite, the fallbacks) runs as on persistent memory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "dax/stats.h"
#include "protocol/access_mask.h"
#include "protocol/ioctl.h"
#include "protocol/read.h"
#include "protocol/write.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;

constexpr uint32_t kRw = am::kFileGenericRead | am::kFileGenericWrite | am::kDelete;

class E2eDax : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(server_.ok()) << server_.error();
        auto share = server_.server().find_share("data");
        ASSERT_TRUE(share);
        dax::MapOptions o;
        o.chunk_size = 64 * 1024;  // several chunks per test file
        o.require_sync = false;
        o.flush = *dax::resolve_flush_kind(dax::FlushKind::Auto, dax::detect_cpu_flush_support());
        share->dax = o;  // before any client connects

        c_ = std::make_unique<Smb2Client>();
        ASSERT_TRUE(c_->connect("127.0.0.1", server_.port()));
        ASSERT_TRUE(c_->negotiate().ok());
        ASSERT_TRUE(c_->session_setup("alice", "pw").ok());
        ASSERT_TRUE(c_->tree_connect("data").ok());
    }
    std::string local(const std::string& name) { return server_.share_dir() + "/" + name; }
    dax::StatsSnapshot stats() { return server_.server().dax_maps.stats().snapshot(); }

    TestServer server_;
    std::unique_ptr<Smb2Client> c_;
};

TEST_F(E2eDax, WriteAndReadAreServedFromTheMapping) {
    auto cr = c_->open("a.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_TRUE(cr.ok());
    const auto before = stats();
    ByteVector data = pattern(256 * 1024, 1);  // four chunks
    ASSERT_TRUE(c_->write(cr.body.file_id, 0, data).ok());
    auto r = c_->read(cr.body.file_id, 0, uint32_t(data.size()));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), r.body.data.begin(), r.body.data.end()));
    const auto mid = stats();
    EXPECT_EQ(mid.writes - before.writes, 1);
    EXPECT_EQ(mid.reads - before.reads, 1);
    EXPECT_EQ(mid.write_bytes - before.write_bytes, int64_t(data.size()));
    EXPECT_EQ(mid.fallbacks, before.fallbacks);
    // The server-side file holds the bytes; CLOSE persists the (non-write-through) write.
    ASSERT_TRUE(c_->close(cr.body.file_id).ok());
    EXPECT_GT(stats().persists, mid.persists);
    EXPECT_EQ(file_contents(local("a.bin")), data);
}

// READs of every shape are served from the mapping with the file's bytes: large ones up to the
// end of file and across chunks, small ones, signed, encrypted (sealed in the response's pool
// buffer, the file untouched) and compound ones; one reaching into the partial last page goes
// to the block path.
TEST_F(E2eDax, ReadsOfEveryShapeAreServedFromTheMapping) {
    auto cr = c_->open("m.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_TRUE(cr.ok());
    ByteVector data = pattern(200 * 1024, 5);  // 50 pages over four chunks
    ASSERT_TRUE(c_->write(cr.body.file_id, 0, data).ok());
    const auto& id = cr.body.file_id;

    auto before = stats();
    auto r = c_->read(id, 0, 256 * 1024);  // stops at the end of file
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), r.body.data.begin(), r.body.data.end()));
    EXPECT_EQ(stats().reads - before.reads, 1);

    before = stats();
    r = c_->read(id, 100 * 1024, 64 * 1024);  // across a chunk boundary
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(std::equal(data.begin() + 100 * 1024, data.begin() + 164 * 1024,
                           r.body.data.begin(), r.body.data.end()));
    EXPECT_EQ(stats().reads - before.reads, 1);

    before = stats();
    r = c_->read(id, 4096, 4096);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(std::equal(data.begin() + 4096, data.begin() + 8192, r.body.data.begin(),
                           r.body.data.end()));
    EXPECT_EQ(stats().reads - before.reads, 1);

    EXPECT_EQ(c_->read(id, 300 * 1024, 64 * 1024).status, NtStatus::EndOfFile);

    // Signed.
    c_->options().force_sign = true;
    before = stats();
    r = c_->read(id, 0, 128 * 1024);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r.signature_verified);
    EXPECT_TRUE(std::equal(data.begin(), data.begin() + 128 * 1024, r.body.data.begin(),
                           r.body.data.end()));
    EXPECT_EQ(stats().reads - before.reads, 1);
    c_->options().force_sign = false;

    // Encrypted: sealed in place in a pool buffer, never in the file's mapping.
    {
        ClientOptions co;
        co.encrypt = true;
        Smb2Client e(co);
        ASSERT_TRUE(e.connect("127.0.0.1", server_.port()));
        NegotiateOptions n;
        n.ciphers = {cipher::kAes128Gcm};
        ASSERT_TRUE(e.negotiate(n).ok());
        ASSERT_TRUE(e.session_setup("alice", "pw").ok());
        ASSERT_TRUE(e.tree_connect("data").ok());
        ASSERT_TRUE(e.can_encrypt());
        auto ecr = e.open("m.bin", am::kFileGenericRead, create_disposition::kOpen);
        ASSERT_TRUE(ecr.ok());
        before = stats();
        r = e.read(ecr.body.file_id, 0, 128 * 1024);
        ASSERT_TRUE(r.ok());
        EXPECT_TRUE(r.encrypted);
        EXPECT_TRUE(std::equal(data.begin(), data.begin() + 128 * 1024, r.body.data.begin(),
                               r.body.data.end()));
        EXPECT_EQ(stats().reads - before.reads, 1);
    }
    EXPECT_TRUE(file_contents(local("m.bin")) == data);  // the file is untouched

    // In a compound.
    ReadRequest rd;
    rd.file_id = id;
    rd.length = 64 * 1024;
    CallOptions copt;
    copt.payload = rd.length;
    ReadRequest rd2 = rd;
    rd2.offset = 64 * 1024;
    before = stats();
    auto replies = c_->compound().add(Command::Read, rd, copt).add(Command::Read, rd2, copt).run();
    ASSERT_EQ(replies.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        ASSERT_EQ(replies[i].status, NtStatus::Success);
        auto body = replies[i].parse<ReadResponse>();
        ASSERT_TRUE(body);
        EXPECT_TRUE(std::equal(data.begin() + i * 64 * 1024, data.begin() + (i + 1) * 64 * 1024,
                               body->data.begin(), body->data.end()));
    }
    EXPECT_EQ(stats().reads - before.reads, 2);

    // A file ending inside a page: the mapping cannot serve its last page; the block path does.
    ByteVector tail = pattern(1000, 6);
    ASSERT_TRUE(c_->write(id, data.size(), tail).ok());
    before = stats();
    r = c_->read(id, 128 * 1024, 128 * 1024);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.body.data.size(), data.size() - 128 * 1024 + tail.size());
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), r.body.data.end() - tail.size()));
    EXPECT_EQ(stats().fallbacks - before.fallbacks, 1);
    ASSERT_TRUE(c_->close(id).ok());
}

TEST_F(E2eDax, WriteThroughAndFlushPersist) {
    auto cr = c_->open("wt.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_TRUE(cr.ok());
    ByteVector data = pattern(8192, 2);
    WriteRequest w;
    w.file_id = cr.body.file_id;
    w.offset = 0;
    w.flags = write_flags::kWriteThrough;
    w.data = data;
    CallOptions co;
    co.payload = data.size();
    const auto before = stats();
    ASSERT_TRUE(c_->call(Command::Write, w, co).ok());
    const auto after_wt = stats();
    EXPECT_EQ(after_wt.writes - before.writes, 1);
    EXPECT_EQ(after_wt.persists - before.persists, 1);  // flushed before the reply
    ASSERT_TRUE(c_->write(cr.body.file_id, 8192, data).ok());
    EXPECT_EQ(stats().persists, after_wt.persists);  // deferred
    ASSERT_TRUE(c_->flush(cr.body.file_id).ok());
    EXPECT_EQ(stats().persists, after_wt.persists + 1);
    ASSERT_TRUE(c_->close(cr.body.file_id).ok());
}

// The partial last page cannot be mapped: that request takes the block path, correctly.
TEST_F(E2eDax, PartialLastPageFallsBackToTheBlockPath) {
    auto cr = c_->open("odd.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_TRUE(cr.ok());
    ByteVector data = pattern(5000, 3);
    const auto before = stats();
    ASSERT_TRUE(c_->write(cr.body.file_id, 0, data).ok());
    auto r = c_->read(cr.body.file_id, 0, 8192);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), r.body.data.begin(), r.body.data.end()));
    EXPECT_EQ(stats().fallbacks - before.fallbacks, 2);
    ASSERT_TRUE(c_->close(cr.body.file_id).ok());
    EXPECT_EQ(file_contents(local("odd.bin")), data);
}

// A second open of the same file shares the map; an overwrite through it truncates the file,
// and the map learns it at CREATE (reads through the first open see END_OF_FILE from the map,
// without a fault and fallback).
TEST_F(E2eDax, OverwriteTruncatesTheSharedMap) {
    auto first = c_->open("shared.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_TRUE(first.ok());
    ByteVector data = pattern(128 * 1024, 4);
    ASSERT_TRUE(c_->write(first.body.file_id, 0, data).ok());
    ASSERT_TRUE(c_->read(first.body.file_id, 64 * 1024, 4096).ok());
    auto second = c_->open("shared.bin", kRw, create_disposition::kOverwrite);
    ASSERT_TRUE(second.ok());
    const auto before = stats();
    auto r = c_->read(first.body.file_id, 64 * 1024, 4096);
    EXPECT_EQ(r.status, NtStatus::EndOfFile);
    EXPECT_EQ(stats().fallbacks, before.fallbacks);
    // And the new data written through the second open is read through the first.
    ByteVector again = pattern(4096, 5);
    ASSERT_TRUE(c_->write(second.body.file_id, 0, again).ok());
    auto r2 = c_->read(first.body.file_id, 0, 4096);
    ASSERT_TRUE(r2.ok());
    EXPECT_TRUE(std::equal(again.begin(), again.end(), r2.body.data.begin(), r2.body.data.end()));
    EXPECT_GT(stats().reads, before.reads);
    ASSERT_TRUE(c_->close(second.body.file_id).ok());
    ASSERT_TRUE(c_->close(first.body.file_id).ok());
}

// A server-side copy on a DAX share reads and writes through the mappings, as READ and WRITE
// do (each chunk one DAX read and one DAX write).
TEST_F(E2eDax, CopychunkGoesThroughTheMapping) {
    auto src = c_->open("csrc.bin", kRw, create_disposition::kOverwriteIf);
    auto dst = c_->open("cdst.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_TRUE(src.ok());
    ASSERT_TRUE(dst.ok());
    ByteVector data = pattern(128 * 1024, 6);
    ASSERT_TRUE(c_->write(src.body.file_id, 0, data).ok());
    ASSERT_TRUE(c_->write(dst.body.file_id, 0, ByteVector(data.size())).ok());
    const auto before = stats();
    auto r =
        copychunk(*c_, src.body.file_id, dst.body.file_id, {{65536, 65536, 65536}, {0, 0, 65536}});
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(r.body.chunks_written, 2u);
    const auto after = stats();
    EXPECT_EQ(after.reads - before.reads, 2);
    EXPECT_EQ(after.writes - before.writes, 2);
    EXPECT_EQ(after.fallbacks, before.fallbacks);
    ASSERT_TRUE(c_->close(src.body.file_id).ok());
    ASSERT_TRUE(c_->close(dst.body.file_id).ok());
    EXPECT_EQ(file_contents(local("cdst.bin")), data);
}

// The last CLOSE keeps the file's map (dax::MapRegistry's cache): the next open of the
// unchanged file is served by the same mappings, nothing is mapped anew.
TEST_F(E2eDax, ClosedFileKeepsItsMapForTheNextOpen) {
    auto& maps = server_.server().dax_maps;
    auto cr = c_->open("warm.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_TRUE(cr.ok());
    ByteVector data = pattern(128 * 1024, 7);
    ASSERT_TRUE(c_->write(cr.body.file_id, 0, data).ok());
    ASSERT_TRUE(c_->close(cr.body.file_id).ok());
    EXPECT_EQ(maps.cached_files(), 1u);
    const auto before = stats();
    auto again = c_->open("warm.bin", am::kFileGenericRead, create_disposition::kOpen);
    ASSERT_TRUE(again.ok());
    auto r = c_->read(again.body.file_id, 0, uint32_t(data.size()));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), r.body.data.begin(), r.body.data.end()));
    const auto after = stats();
    EXPECT_EQ(after.map_cache_hits - before.map_cache_hits, 1);
    EXPECT_EQ(after.maps, before.maps);
    EXPECT_EQ(after.fallbacks, before.fallbacks);
    ASSERT_TRUE(c_->close(again.body.file_id).ok());
}

// Deleting a closed file whose map is cached drops the map at once (it holds the inode and so
// the file's blocks), though the deleting open has no data access and never touches the map.
TEST_F(E2eDax, DeletingAClosedFileDropsItsCachedMap) {
    auto& maps = server_.server().dax_maps;
    auto cr = c_->open("doomed.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_TRUE(cr.ok());
    ASSERT_TRUE(c_->write(cr.body.file_id, 0, pattern(64 * 1024, 8)).ok());
    ASSERT_TRUE(c_->close(cr.body.file_id).ok());
    ASSERT_EQ(maps.cached_files(), 1u);
    auto del = c_->open("doomed.bin", am::kDelete, create_disposition::kOpen,
                        create_options::kDeleteOnClose);
    ASSERT_TRUE(del.ok());
    EXPECT_EQ(maps.cached_files(), 1u);
    ASSERT_TRUE(c_->close(del.body.file_id).ok());
    EXPECT_FALSE(std::ifstream(local("doomed.bin")).good());
    EXPECT_EQ(maps.cached_files(), 0u);
}

}  // namespace
}  // namespace daxsmbd::client
