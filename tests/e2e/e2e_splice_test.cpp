// End to end through the splice path of READ ("use sendfile", server/io/splice_pipe.h): large
// READs that are neither signed nor encrypted nor compounded go page cache -> pipe -> socket.
// Every read is compared byte for byte with the file, and the engines' spliced_reads counter
// tells which path served it: sizes around the threshold and the pipe's capacity, short reads
// at the end of file, END_OF_FILE, a file truncated between reads, many reads in flight on one
// connection, and the sessions and requests that must take the copy path (signed, encrypted,
// compound, "use sendfile = no", "direct io").
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/negotiate_contexts.h"
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
using S = server::io::EngineStats;

constexpr uint32_t kRw = am::kFileGenericRead | am::kFileGenericWrite | am::kDelete;
constexpr size_t kFrom = server::io::BlockOptions::kSpliceFrom;
constexpr size_t kPipe = server::io::PipePool::kCapacity;

class E2eSplice : public ::testing::Test {
  protected:
    void start(std::function<void(server::Config&)> configure = {}, ClientOptions co = {}) {
        TestServer::Options o;
        o.configure = std::move(configure);
        server_ = std::make_unique<TestServer>(o);
        ASSERT_TRUE(server_->ok()) << server_->error();
        co.credit_target = 512;
        client_ = connect(co);
    }
    std::unique_ptr<Smb2Client> connect(ClientOptions co = {}) {
        auto c = std::make_unique<Smb2Client>(co);
        EXPECT_TRUE(c->connect("127.0.0.1", server_->port()));
        NegotiateOptions n;
        if (co.encrypt) n.ciphers = {cipher::kAes128Gcm};
        EXPECT_EQ(c->negotiate(n).status, NtStatus::Success);
        EXPECT_EQ(c->session_setup("alice", "pw").status, NtStatus::Success);
        EXPECT_EQ(c->tree_connect("data").status, NtStatus::Success);
        EXPECT_EQ(c->echo().status, NtStatus::Success);  // credits up to the target
        return c;
    }
    uint64_t total(std::atomic<uint64_t> S::*field) {
        uint64_t n = 0;
        for (size_t i = 0; i < server_->server().loop_count(); ++i)
            n += (server_->server().engine(i).stats().*field).load();
        return n;
    }
    size_t pipes_in_use() {
        size_t n = 0;
        for (size_t i = 0; i < server_->server().loop_count(); ++i)
            n += server_->server().engine(i).pipes().in_use();
        return n;
    }
    // Writes `data` straight into the share's file `name` (not through the server).
    void put(const std::string& name, const ByteVector& data) {
        std::ofstream f(server_->share_dir() + "/" + name, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    }
    FileId open(Smb2Client& c, const std::string& name) {
        auto cr = c.open(name, kRw, create_disposition::kOpen);
        EXPECT_EQ(cr.status, NtStatus::Success) << name;
        return cr.body.file_id;
    }
    // One READ; its data (empty on failure) and status.
    struct Got {
        NtStatus status;
        ByteVector data;
        bool signed_ = false;
        bool encrypted = false;
    };
    static Got read(Smb2Client& c, FileId fid, uint64_t offset, uint32_t len,
                    uint32_t minimum = 0) {
        ReadRequest rd;
        rd.file_id = fid;
        rd.offset = offset;
        rd.length = len;
        rd.minimum_count = minimum;
        CallOptions co;
        co.payload = len;
        auto r = c.call(Command::Read, rd, co);
        Got g{r.status, {}, r.signature_verified, r.encrypted};
        if (r.status == NtStatus::Success) {
            auto body = ReadResponse::parse(r.msg);
            EXPECT_TRUE(body);
            if (body) g.data.assign(body->data.begin(), body->data.end());
        }
        return g;
    }
    static ByteVector slice(const ByteVector& v, uint64_t off, size_t len) {
        if (off >= v.size()) return {};
        len = std::min<size_t>(len, v.size() - off);
        return ByteVector(v.begin() + long(off), v.begin() + long(off + len));
    }
    std::unique_ptr<TestServer> server_;
    std::unique_ptr<Smb2Client> client_;
};

// Below the threshold, at it, above it, up to the pipe's capacity: byte for byte, and spliced
// exactly from the threshold on while the pages of the range fit the pipe.
TEST_F(E2eSplice, SizesAroundTheThresholdAndThePipe) {
    start();
    const ByteVector data = pattern(3 * kPipe + 777, 11);
    put("sizes.bin", data);
    const FileId fid = open(*client_, "sizes.bin");
    struct Case {
        uint64_t offset;
        uint32_t length;
        bool spliced;
    };
    const Case cases[] = {
        {0, 4096, false},
        {0, uint32_t(kFrom - 1), false},
        {0, uint32_t(kFrom), true},
        {4096, uint32_t(kFrom + 1), true},
        {12345, 200000, true},
        {0, uint32_t(kPipe), true},
        {kPipe, uint32_t(kPipe), true},
        // A page more than the pipe holds (unaligned start): the copy path.
        {1, uint32_t(kPipe), false},
        {0, uint32_t(kPipe + 4096), false},
        {0, uint32_t(2 * kPipe), false},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE("offset " + std::to_string(k.offset) + " length " + std::to_string(k.length));
        const uint64_t before = total(&S::spliced_reads);
        Got g = read(*client_, fid, k.offset, k.length);
        ASSERT_EQ(g.status, NtStatus::Success);
        EXPECT_TRUE(g.data == slice(data, k.offset, k.length));
        EXPECT_EQ(total(&S::spliced_reads) - before, k.spliced ? 1u : 0u);
    }
    EXPECT_EQ(client_->echo().status, NtStatus::Success);
    EXPECT_EQ(pipes_in_use(), 0u);
}

// A read across the end of file is short and still spliced; at or past the end of file, or
// fewer bytes than MinimumCount: END_OF_FILE (MS-SMB2 3.3.5.12), and the next read is fine.
TEST_F(E2eSplice, EndOfFile) {
    start();
    const ByteVector data = pattern(kPipe + 1000, 12);
    put("eof.bin", data);
    const FileId fid = open(*client_, "eof.bin");
    uint64_t before = total(&S::spliced_reads);
    Got g = read(*client_, fid, kPipe / 2, uint32_t(kPipe));
    ASSERT_EQ(g.status, NtStatus::Success);
    EXPECT_EQ(g.data.size(), kPipe / 2 + 1000);
    EXPECT_TRUE(g.data == slice(data, kPipe / 2, kPipe));
    EXPECT_EQ(total(&S::spliced_reads) - before, 1u);

    EXPECT_EQ(read(*client_, fid, data.size(), uint32_t(kPipe)).status, NtStatus::EndOfFile);
    EXPECT_EQ(read(*client_, fid, data.size() + 5 * kPipe, uint32_t(kFrom)).status,
              NtStatus::EndOfFile);
    EXPECT_EQ(read(*client_, fid, data.size() - 100000, uint32_t(kPipe), 100001).status,
              NtStatus::EndOfFile);
    before = total(&S::spliced_reads);
    g = read(*client_, fid, 0, uint32_t(kPipe));
    ASSERT_EQ(g.status, NtStatus::Success);
    EXPECT_TRUE(g.data == slice(data, 0, kPipe));
    EXPECT_EQ(total(&S::spliced_reads) - before, 1u);
    EXPECT_EQ(client_->echo().status, NtStatus::Success);
    EXPECT_EQ(pipes_in_use(), 0u);
}

// The file shrinks and grows behind the server's back between READs of one open: each READ
// sends what the file holds then.
TEST_F(E2eSplice, FileTruncatedBetweenReads) {
    start();
    const std::string path = server_->share_dir() + "/trunc.bin";
    const ByteVector data = pattern(kPipe, 13);
    put("trunc.bin", data);
    const FileId fid = open(*client_, "trunc.bin");
    Got g = read(*client_, fid, 0, uint32_t(kPipe));
    ASSERT_EQ(g.status, NtStatus::Success);
    EXPECT_TRUE(g.data == data);

    ASSERT_EQ(::truncate(path.c_str(), 100000), 0);
    g = read(*client_, fid, 0, uint32_t(kPipe));
    ASSERT_EQ(g.status, NtStatus::Success);
    EXPECT_TRUE(g.data == slice(data, 0, 100000));
    EXPECT_EQ(read(*client_, fid, 100000, uint32_t(kFrom)).status, NtStatus::EndOfFile);

    ASSERT_EQ(::truncate(path.c_str(), 0), 0);
    EXPECT_EQ(read(*client_, fid, 0, uint32_t(kPipe)).status, NtStatus::EndOfFile);

    const ByteVector again = pattern(kPipe / 2, 14);
    {
        std::ofstream f(path, std::ios::binary | std::ios::in | std::ios::out);
        f.write(reinterpret_cast<const char*>(again.data()), std::streamsize(again.size()));
    }
    g = read(*client_, fid, 0, uint32_t(kPipe));
    ASSERT_EQ(g.status, NtStatus::Success);
    EXPECT_TRUE(g.data == again);
}

// Many READs in flight on one connection, more than the pool lends pipes, through a small
// client receive buffer (the server's sends wait for room in the middle of a response): every
// response arrives whole and right; some were spliced, the rest copied.
TEST_F(E2eSplice, ManyReadsInFlightOnOneConnection) {
    ClientOptions co;
    co.receive_buffer = 64 * 1024;
    start({}, co);
    const ByteVector data = pattern(4 * kPipe, 15);
    put("many.bin", data);
    const FileId fid = open(*client_, "many.bin");
    struct Sent {
        uint64_t mid;
        uint64_t offset;
        uint32_t length;
    };
    std::vector<Sent> sent;
    const uint64_t before = total(&S::spliced_reads);
    for (unsigned i = 0; i < 40; ++i) {
        ReadRequest rd;
        rd.file_id = fid;
        rd.offset = (uint64_t(i) * 65536 * 3 + (i % 3) * 4096) % (3 * kPipe);
        rd.length = uint32_t(i % 4 == 0 ? 4000 : i % 4 == 1 ? kFrom : i % 4 == 2 ? 300000 : kPipe);
        CallOptions c;
        c.payload = rd.length;
        auto mid = client_->send(Command::Read, rd, c);
        ASSERT_TRUE(mid);
        sent.push_back({*mid, rd.offset, rd.length});
    }
    for (const Sent& s : sent) {
        auto r = client_->wait_reply(s.mid);
        ASSERT_EQ(r.status, NtStatus::Success) << "mid " << s.mid;
        auto body = ReadResponse::parse(r.msg);
        ASSERT_TRUE(body);
        EXPECT_TRUE(ByteVector(body->data.begin(), body->data.end()) ==
                    slice(data, s.offset, s.length))
            << "mid " << s.mid;
    }
    EXPECT_GT(total(&S::spliced_reads) - before, 0u);
    EXPECT_EQ(client_->echo().status, NtStatus::Success);
    EXPECT_EQ(pipes_in_use(), 0u);
}

// Responses whose bytes the server needs take the copy path and stay right: a signed session
// (the signature covers the data), an encrypted one, and a READ inside a compound.
TEST_F(E2eSplice, SignedEncryptedAndCompoundReadsAreCopied) {
    start();
    const ByteVector data = pattern(2 * kPipe, 16);
    put("copy.bin", data);
    const uint64_t before = total(&S::spliced_reads);
    for (bool encrypt : {false, true}) {
        SCOPED_TRACE(encrypt ? "encrypted" : "signed");
        ClientOptions co;
        co.force_sign = !encrypt;
        co.encrypt = encrypt;
        co.credit_target = 256;
        auto c = connect(co);
        if (encrypt) {
            ASSERT_TRUE(c->can_encrypt());
        }
        const FileId fid = open(*c, "copy.bin");
        Got g = read(*c, fid, 4096, uint32_t(kPipe));
        ASSERT_EQ(g.status, NtStatus::Success);
        EXPECT_TRUE(g.data == slice(data, 4096, kPipe));
        EXPECT_TRUE(encrypt ? g.encrypted : g.signed_);
    }
    const FileId fid = open(*client_, "copy.bin");
    ReadRequest rd;
    rd.file_id = fid;
    rd.length = uint32_t(kPipe);
    CallOptions co;
    co.payload = rd.length;
    ReadRequest rd2 = rd;
    rd2.offset = kPipe;
    auto replies = client_->compound().add(Command::Read, rd, co).add(Command::Read, rd2, co).run();
    ASSERT_EQ(replies.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        ASSERT_EQ(replies[i].status, NtStatus::Success) << i;
        auto body = replies[i].parse<ReadResponse>();
        ASSERT_TRUE(body);
        EXPECT_TRUE(ByteVector(body->data.begin(), body->data.end()) ==
                    slice(data, i * kPipe, kPipe))
            << i;
    }
    EXPECT_EQ(total(&S::spliced_reads), before);
    // The plain session still splices.
    Got g = read(*client_, fid, 0, uint32_t(kPipe));
    ASSERT_EQ(g.status, NtStatus::Success);
    EXPECT_TRUE(g.data == slice(data, 0, kPipe));
    EXPECT_EQ(total(&S::spliced_reads), before + 1);
}

// "use sendfile = no" and "direct io = yes" shares read through the copy path.
TEST_F(E2eSplice, SharesWithoutTheSplicePath) {
    for (bool direct : {false, true}) {
        SCOPED_TRACE(direct ? "direct io = yes" : "use sendfile = no");
        start([direct](server::Config& c) {
            if (direct)
                c.shares[0].direct_io = true;
            else
                c.shares[0].use_sendfile = false;
        });
        const ByteVector data = pattern(kPipe, 17);
        put("no.bin", data);
        const FileId fid = open(*client_, "no.bin");
        Got g = read(*client_, fid, 0, uint32_t(kPipe));
        ASSERT_EQ(g.status, NtStatus::Success);
        EXPECT_TRUE(g.data == data);
        EXPECT_EQ(total(&S::spliced_reads), 0u);
        client_.reset();
        server_.reset();
    }
}

}  // namespace
}  // namespace daxsmbd::client
