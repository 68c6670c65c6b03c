// End-to-end: SMB2 over SMB Direct (MS-SMBD; MS-SMB2 2.1, 3.3.5.12, 3.3.5.13) with daxsmbd's own
// client (tests/client/smbd_link.h) against the real server, over the emulated RDMA provider
// (smbdirect/emulated_provider.h): the session commands and inline I/O without the Direct TCP
// header, READ and WRITE with RDMA_V1 and RDMA_V1_INVALIDATE channels (data, counts, Send with
// Invalidate of the client's token), channels the server must refuse, signed and encrypted
// sessions, a response above the client's MaxFragmentedSize, connections that die beside a
// working one, and the SMB Direct counters of the stats line.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dax/detect.h"
#include "dax/flush.h"
#include "dax/mapping.h"
#include "protocol/access_mask.h"
#include "protocol/negotiate_contexts.h"
#include "server/server.h"
#include "server/smbd_transport.h"
#include "smbdirect/emulated_provider.h"
#include "smbdirect/smbd_codec.h"
#include "tests/client/smb2_client.h"
#include "tests/client/smbd_link.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
using namespace std::chrono_literals;
using smbdirect::BufferDescriptorV1;

constexpr uint32_t kRw =
    access_mask::kFileGenericRead | access_mask::kFileGenericWrite | access_mask::kDelete;
constexpr uint32_t kMiB = 1u << 20;

CallOptions with_payload(uint64_t n) {
    CallOptions co;
    co.payload = n;
    return co;
}

// A server with an SMB Direct listener over emulated connection requests (the server's own
// buffers, registrations and counters, as server/rdma_listeners.cpp makes the verbs ones).
class E2eSmbDirect : public ::testing::Test {
  protected:
    void SetUp() override { start({}); }

    void start(TestServer::Options o) {
        server_.reset();
        server_ = std::make_unique<TestServer>(std::move(o));
        ASSERT_TRUE(server_->ok()) << server_->error();
        auto requests = std::make_unique<smbdirect::EmulatedConnectionRequests>(445);
        requests_ = requests.get();
        auto& s = server_->server();
        s.add_listener(std::make_unique<server::SmbdListener>(
            std::move(requests), smbdirect::SmbdConfig{}, s.smbd_counters, s.buffers, s.rdma_memory,
            "emulated"));
    }

    smbdirect::SmbdCounters& counters() { return server_->server().smbd_counters; }
    // The server counts a send once it was posted, which on the emulated device is after the
    // message arrived: a counter of sends may lag the response the client already has.
    static uint64_t settled(const std::atomic<uint64_t>& counter, uint64_t want) {
        for (int i = 0; i < 400 && counter.load() < want; ++i)
            std::this_thread::sleep_for(5ms);
        return counter.load();
    }
    std::string stats_line() {
        return server::smbd_stats_line(counters(), server_->server().rdma_memory);
    }
    std::string path_of(const std::string& name) const { return server_->share_dir() + "/" + name; }

    // An SMB Direct connection of `c` (MS-SMBD negotiated); `*link` stays the client's.
    //
    // The emulated connection request is "established" at once, before the server accepted it
    // and posted its receives (a verbs connect returns at ESTABLISHED, after rdma_accept), and
    // the emulated provider breaks a connection on a send that finds no receive: so the
    // negotiate request waits a little, longer on each new attempt.
    Status attach_smbd(Smb2Client& c, SmbdLink** link, SmbdLink::Options o = {}) {
        for (int attempt = 0;; ++attempt) {
            auto l = std::make_unique<SmbdLink>(o);
            auto qp = requests_->connect(l->executor());
            std::this_thread::sleep_for(std::chrono::milliseconds(1 << attempt));
            auto st = l->connect(std::move(qp));
            if (st) {
                *link = l.get();
                return c.attach(std::move(l), "127.0.0.1");
            }
            if (attempt == 10) return st;
        }
    }

    // NEGOTIATE, SESSION_SETUP as alice, TREE_CONNECT to `data`.
    static ::testing::AssertionResult logon(Smb2Client& c, const NegotiateOptions& n = {}) {
        auto neg = c.negotiate(n);
        if (!neg.ok()) return ::testing::AssertionFailure() << "negotiate: " << describe(neg);
        auto ss = c.session_setup("alice", "pw");
        if (!ss.ok()) return ::testing::AssertionFailure() << "session setup: " << describe(ss);
        auto tc = c.tree_connect("data");
        if (!tc.ok()) return ::testing::AssertionFailure() << "tree connect: " << describe(tc);
        return ::testing::AssertionSuccess();
    }

    // A client logged on over SMB Direct.
    struct Connected {
        std::unique_ptr<Smb2Client> client;
        SmbdLink* link = nullptr;
    };
    Connected connect_smbd(ClientOptions co = {}, const NegotiateOptions& n = {},
                           SmbdLink::Options lo = {}) {
        Connected out;
        out.client = std::make_unique<Smb2Client>(co);
        auto st = attach_smbd(*out.client, &out.link, std::move(lo));
        EXPECT_TRUE(st) << describe(st.status(), false);
        if (st) {
            EXPECT_TRUE(logon(*out.client, n));
        }
        return out;
    }

    static FileId create(Smb2Client& c, const std::string& name) {
        auto r = c.open(name, kRw, create_disposition::kOverwriteIf);
        EXPECT_STATUS(r, NtStatus::Success);
        return r.body.file_id;
    }
    void write_file(const std::string& name, Bytes data) {
        std::ofstream f(path_of(name), std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    }

    std::unique_ptr<TestServer> server_;
    smbdirect::EmulatedConnectionRequests* requests_ = nullptr;
};

// ---- the session and inline I/O -----------------------------------------------------------

TEST_F(E2eSmbDirect, SessionCommandsAndInlineReadWriteWork) {
    auto [c, link] = connect_smbd();
    ASSERT_TRUE(c->connected());
    EXPECT_EQ(c->dialect(), Dialect::Smb311);
    // MS-SMBD 3.1.5.7: what the client's negotiation settled.
    EXPECT_GT(link->parameters().max_read_write_size, 0u);
    EXPECT_EQ(counters().connections.load(), 1u);

    FileId f = create(*c, "inline.bin");
    auto data = pattern(3000, 1);  // a few MS-SMBD fragments (1364-byte sends)
    auto w = c->write(f, 0, data);
    ASSERT_STATUS(w, NtStatus::Success);
    EXPECT_EQ(w.body.count, data.size());
    auto r = c->read(f, 0, 3000);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_TRUE(ByteVector(r.body.data.begin(), r.body.data.end()) == data);
    EXPECT_FALSE(r.invalidated_rkey);
    EXPECT_STATUS(c->close(f), NtStatus::Success);
    EXPECT_TRUE(file_contents(path_of("inline.bin")) == data);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
    EXPECT_GT(counters().receives.load(), 5u);
}

TEST_F(E2eSmbDirect, CompoundOverSmbDirectIsOneMessage) {
    auto [c, link] = connect_smbd();
    CreateRequest cr;
    cr.name = "compound.bin";
    cr.desired_access = kRw;
    cr.share_access = share_access::kAll;
    cr.create_disposition = create_disposition::kOverwriteIf;
    CloseRequest cl;
    cl.file_id = FileId{~0ull, ~0ull};  // the related open (MS-SMB2 3.2.4.1.4)
    CallOptions related;
    related.related = true;
    const uint64_t frames = c->frames_received();
    auto out = c->compound().add(Command::Create, cr).add(Command::Close, cl, related).run();
    ASSERT_EQ(out.size(), 2u);
    EXPECT_STATUS(out[0], NtStatus::Success);
    EXPECT_STATUS(out[1], NtStatus::Success);
    EXPECT_EQ(c->frames_received(), frames + 1);
}

// ---- WRITE with an RDMA channel -----------------------------------------------------------

TEST_F(E2eSmbDirect, RdmaWriteWithInvalidatePlacesTheDataAndInvalidatesTheToken) {
    auto [c, link] = connect_smbd();
    for (uint32_t size : {1u, 100000u, kMiB, kMiB - 7}) {
        SCOPED_TRACE(size);
        const std::string name = "rdma-write-" + std::to_string(size) + ".bin";
        FileId f = create(*c, name);
        auto data = pattern(size, size);
        auto reg = link->register_buffer(data, false);
        ASSERT_TRUE(reg);
        const uint64_t reads = counters().rdma_reads, invalidates = counters().send_invalidates;
        const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
        auto w = c->write_rdma(f, 0, size, d, true);
        ASSERT_STATUS(w, NtStatus::Success);
        EXPECT_EQ(w.body.count, size);
        // MS-SMB2 3.3.5.13 / MS-SMBD 3.1.4.1: the response came as a Send with Invalidate of
        // the token, and the emulated device made the region invalid.
        EXPECT_EQ(w.invalidated_rkey, (*reg)->rkey());
        EXPECT_EQ(c->last_invalidated_rkey(), (*reg)->rkey());
        EXPECT_EQ(link->token_valid((*reg)->rkey()), false);
        EXPECT_GT(counters().rdma_reads.load(), reads);
        EXPECT_EQ(settled(counters().send_invalidates, invalidates + 1), invalidates + 1);
        EXPECT_STATUS(c->close(f), NtStatus::Success);
        EXPECT_TRUE(file_contents(path_of(name)) == data);
    }
}

TEST_F(E2eSmbDirect, RdmaWriteWithoutInvalidateKeepsTheTokenValid) {
    auto [c, link] = connect_smbd();
    FileId f = create(*c, "rdma-v1.bin");
    auto data = pattern(200000, 3);
    auto reg = link->register_buffer(data, false);
    ASSERT_TRUE(reg);
    const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
    // The same buffer twice, at two offsets: a token that stays valid can be used again.
    for (uint64_t at : {0ull, 200000ull}) {
        auto w = c->write_rdma(f, at, 200000, d, false);
        ASSERT_STATUS(w, NtStatus::Success);
        EXPECT_EQ(w.body.count, 200000u);
        EXPECT_FALSE(w.invalidated_rkey);
        EXPECT_EQ(link->token_valid((*reg)->rkey()), true);
    }
    EXPECT_EQ(counters().send_invalidates.load(), 0u);
    EXPECT_STATUS(c->close(f), NtStatus::Success);
    auto disk = file_contents(path_of("rdma-v1.bin"));
    ASSERT_EQ(disk.size(), 400000u);
    EXPECT_TRUE(ByteVector(disk.begin(), disk.begin() + 200000) == data);
    EXPECT_TRUE(ByteVector(disk.begin() + 200000, disk.end()) == data);
}

TEST_F(E2eSmbDirect, RdmaWriteGathersSeveralDescriptors) {
    auto [c, link] = connect_smbd();
    FileId f = create(*c, "gather.bin");
    auto data = pattern(300001, 4);
    auto reg = link->register_buffer(data, false);
    ASSERT_TRUE(reg);
    // Three pieces of the buffer, out of order on the wire, and a zero-length one in between:
    // the file gets them in list order (MS-SMBD 3.1.4.5).
    auto& r = **reg;
    const BufferDescriptorV1 d[] = {r.descriptor(200000, 100001), r.descriptor(0, 0),
                                    r.descriptor(0, 150000), r.descriptor(150000, 50000)};
    auto w = c->write_rdma(f, 0, 300001, d, true);
    ASSERT_STATUS(w, NtStatus::Success);
    EXPECT_EQ(w.body.count, 300001u);
    EXPECT_STATUS(c->close(f), NtStatus::Success);
    auto disk = file_contents(path_of("gather.bin"));
    ASSERT_EQ(disk.size(), 300001u);
    EXPECT_TRUE(std::equal(disk.begin(), disk.begin() + 100001, data.begin() + 200000));
    EXPECT_TRUE(std::equal(disk.begin() + 100001, disk.end(), data.begin()));
}

// ---- READ with an RDMA channel ------------------------------------------------------------

TEST_F(E2eSmbDirect, RdmaReadWithInvalidateFillsTheClientBuffer) {
    const size_t file_size = kMiB + 12345;
    auto content = pattern(file_size, 5);
    write_file("source.bin", content);
    auto [c, link] = connect_smbd();
    auto op = c->open("source.bin", access_mask::kFileGenericRead, create_disposition::kOpen);
    ASSERT_STATUS(op, NtStatus::Success);
    const FileId f = op.body.file_id;

    struct Case {
        uint64_t offset;
        uint32_t length;
        uint32_t expect;  // bytes placed
    };
    for (Case k : {Case{0, kMiB, kMiB}, Case{kMiB, 12345, 12345}, Case{7, 1, 1},
                   Case{kMiB, 65536, 12345} /* reaches past the end of file */}) {
        SCOPED_TRACE(std::to_string(k.offset) + "+" + std::to_string(k.length));
        ByteVector buf(k.length, std::byte{0xEE});
        auto reg = link->register_buffer(buf, true);
        ASSERT_TRUE(reg);
        const uint64_t writes = counters().rdma_writes;
        const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
        auto r = c->read_rdma(f, k.offset, k.length, d, true);
        ASSERT_STATUS(r, NtStatus::Success);
        // MS-SMB2 3.3.5.12: nothing inline, DataRemaining = what the RDMA WRITE placed.
        EXPECT_EQ(r.body.data_length, 0u);
        EXPECT_EQ(r.body.data_remaining, k.expect);
        // No Buffer byte after the 16 fixed bytes: the Linux client consumes only those when
        // the data came by RDMA, and a byte left over corrupts its next message.
        EXPECT_EQ(r.msg.size(), protocol::kHeaderSize + 16u);
        EXPECT_EQ(r.invalidated_rkey, (*reg)->rkey());
        EXPECT_EQ(link->token_valid((*reg)->rkey()), false);
        EXPECT_GT(counters().rdma_writes.load(), writes);
        EXPECT_TRUE(
            std::equal(buf.begin(), buf.begin() + k.expect, content.begin() + long(k.offset)));
        // Nothing beyond what was read.
        for (size_t i = k.expect; i < buf.size(); ++i)
            ASSERT_EQ(buf[i], std::byte{0xEE}) << i;
    }
}

TEST_F(E2eSmbDirect, RdmaReadAtEndOfFileFailsAndStillInvalidates) {
    write_file("short.bin", pattern(1000, 6));
    auto [c, link] = connect_smbd();
    auto op = c->open("short.bin", access_mask::kFileGenericRead, create_disposition::kOpen);
    ASSERT_STATUS(op, NtStatus::Success);
    ByteVector buf(4096);
    auto reg = link->register_buffer(buf, true);
    ASSERT_TRUE(reg);
    const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
    auto r = c->read_rdma(op.body.file_id, 1000, 4096, d, true);
    EXPECT_STATUS(r, NtStatus::EndOfFile);
    // MS-SMB2 3.3.5.12: the client relies on the server to invalidate, also on failure.
    EXPECT_EQ(r.invalidated_rkey, (*reg)->rkey());
    EXPECT_EQ(link->token_valid((*reg)->rkey()), false);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
}

TEST_F(E2eSmbDirect, RdmaReadWithoutInvalidateKeepsTheTokenValid) {
    auto content = pattern(100000, 7);
    write_file("v1.bin", content);
    auto [c, link] = connect_smbd();
    auto op = c->open("v1.bin", access_mask::kFileGenericRead, create_disposition::kOpen);
    ASSERT_STATUS(op, NtStatus::Success);
    ByteVector buf(100000);
    auto reg = link->register_buffer(buf, true);
    ASSERT_TRUE(reg);
    const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
    for (int round = 0; round < 2; ++round) {
        std::fill(buf.begin(), buf.end(), std::byte{0});
        auto r = c->read_rdma(op.body.file_id, 0, 100000, d, false);
        ASSERT_STATUS(r, NtStatus::Success);
        EXPECT_EQ(r.body.data_remaining, 100000u);
        EXPECT_FALSE(r.invalidated_rkey);
        EXPECT_EQ(link->token_valid((*reg)->rkey()), true);
        EXPECT_TRUE(buf == content);
    }
}

// ---- channels the server refuses ----------------------------------------------------------

TEST_F(E2eSmbDirect, MalformedRdmaChannelsAreInvalidParameterAndTheConnectionStaysUsable) {
    write_file("bad.bin", pattern(65536, 8));
    auto [c, link] = connect_smbd();
    auto op = c->open("bad.bin", kRw, create_disposition::kOpen);
    ASSERT_STATUS(op, NtStatus::Success);
    const FileId f = op.body.file_id;
    ByteVector buf(65536);
    auto reg = link->register_buffer(buf, true);
    ASSERT_TRUE(reg);
    const auto& r = **reg;
    const uint32_t inv = channel::kRdmaV1Invalidate;

    // The descriptors describe less than Length / RemainingBytes.
    const BufferDescriptorV1 small[] = {r.descriptor(0, 4096), r.descriptor(4096, 4095)};
    EXPECT_STATUS(c->read_rdma(f, 0, 8192, small, true), NtStatus::InvalidParameter);
    EXPECT_STATUS(c->write_rdma(f, 0, 8192, small, true), NtStatus::InvalidParameter);
    // No channel info; channel info that is not a whole number of descriptors.
    EXPECT_STATUS(c->read_channel(f, 0, 4096, inv, {}), NtStatus::InvalidParameter);
    EXPECT_STATUS(c->write_channel(f, 0, 4096, inv, {}), NtStatus::InvalidParameter);
    ByteVector twenty = Smb2Client::channel_info_of(small);
    twenty.resize(20);
    EXPECT_STATUS(c->read_channel(f, 0, 4096, inv, twenty), NtStatus::InvalidParameter);
    EXPECT_STATUS(c->write_channel(f, 0, 4096, inv, twenty), NtStatus::InvalidParameter);
    // The first descriptor empty.
    const BufferDescriptorV1 empty_first[] = {r.descriptor(0, 0), r.descriptor(0, 4096)};
    EXPECT_STATUS(c->read_rdma(f, 0, 4096, empty_first, true), NtStatus::InvalidParameter);
    // A channel this server does not offer (RDMA_TRANSFORM, 0x4).
    const BufferDescriptorV1 one[] = {r.descriptor(0, 4096)};
    auto one_info = Smb2Client::channel_info_of(one);
    EXPECT_STATUS(c->read_channel(f, 0, 4096, channel::kRdmaTransform, one_info),
                  NtStatus::InvalidParameter);
    EXPECT_STATUS(c->read_channel(f, 0, 4096, 4, one_info), NtStatus::InvalidParameter);
    // An RDMA WRITE that also carries inline data (Length must be 0, MS-SMB2 3.3.5.13).
    {
        WriteRequest w;
        w.file_id = f;
        w.channel = inv;
        w.remaining_bytes = 4096;
        auto inline_data = pattern(16, 1);
        w.data = inline_data;
        w.channel_info = one_info;
        EXPECT_STATUS(c->call(Command::Write, w, with_payload(4096)), NtStatus::InvalidParameter);
    }

    // At most 64 descriptors (server/handlers/rdma_transfer.h): 64 of 1 KiB work, 65 do not.
    std::vector<BufferDescriptorV1> many;
    for (uint32_t i = 0; i < 65; ++i)
        many.push_back(r.descriptor(size_t(i) * 1000, 1000));
    EXPECT_STATUS(c->read_rdma(f, 0, 65000, many, false), NtStatus::InvalidParameter);
    EXPECT_STATUS(c->write_rdma(f, 0, 65000, many, false), NtStatus::InvalidParameter);
    many.pop_back();
    auto ok = c->read_rdma(f, 0, 64000, many, false);
    ASSERT_STATUS(ok, NtStatus::Success);
    EXPECT_EQ(ok.body.data_remaining, 64000u);
    EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 64000, pattern(65536, 8).begin()));

    // Still usable: an RDMA read with invalidate of the whole buffer.
    EXPECT_STATUS(c->echo(), NtStatus::Success);
    const BufferDescriptorV1 whole[] = {r.descriptor()};
    auto again = c->read_rdma(f, 0, 65536, whole, true);
    ASSERT_STATUS(again, NtStatus::Success);
    EXPECT_TRUE(buf == pattern(65536, 8));
    EXPECT_EQ(counters().disconnects_on_error.load(), 0u);
}

TEST_F(E2eSmbDirect, RdmaChannelsOverTcpAreInvalidParameter) {
    Smb2Client c;
    ASSERT_TRUE(c.connect("127.0.0.1", server_->port()));
    ASSERT_TRUE(logon(c));
    FileId f = create(c, "tcp.bin");
    // Any descriptor: the server must not get as far as using it (MS-SMB2 3.3.5.12: a channel
    // other than NONE on a connection that is not RDMA).
    const BufferDescriptorV1 d[] = {{0x10000, 0x123, 4096}};
    for (bool invalidate : {false, true}) {
        EXPECT_STATUS(c.read_rdma(f, 0, 4096, d, invalidate), NtStatus::InvalidParameter);
        EXPECT_STATUS(c.write_rdma(f, 0, 4096, d, invalidate), NtStatus::InvalidParameter);
    }
    EXPECT_STATUS(c.echo(), NtStatus::Success);
    auto w = c.write(f, 0, pattern(10, 1));
    EXPECT_STATUS(w, NtStatus::Success);
}

TEST_F(E2eSmbDirect, RdmaV1InvalidateNeedsSmb302) {
    // MS-SMB2 2.2.19: SMB2_CHANNEL_RDMA_V1_INVALIDATE is not valid on 3.0; RDMA_V1 is.
    NegotiateOptions n;
    n.dialects = {dialect::k300};
    auto [c, link] = connect_smbd({}, n);
    ASSERT_EQ(c->dialect(), Dialect::Smb300);
    FileId f = create(*c, "smb300.bin");
    auto data = pattern(5000, 9);
    auto reg = link->register_buffer(data, false);
    ASSERT_TRUE(reg);
    const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
    EXPECT_STATUS(c->write_rdma(f, 0, 5000, d, true), NtStatus::InvalidParameter);
    auto w = c->write_rdma(f, 0, 5000, d, false);
    ASSERT_STATUS(w, NtStatus::Success);
    EXPECT_EQ(w.body.count, 5000u);
    EXPECT_STATUS(c->close(f), NtStatus::Success);
    EXPECT_TRUE(file_contents(path_of("smb300.bin")) == data);
}

// ---- signing and encryption ---------------------------------------------------------------

// 64 KiB inline (the Linux client does not use RDMA on signed or sealed sessions), then what
// the reply says about its protection.
void inline_round_trip(Smb2Client& c, const std::string& name, bool* signed_reply,
                       bool* encrypted_reply, uint32_t size = 65536) {
    auto cr = c.open(name, kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    auto data = pattern(size, 10);
    auto w = c.write(cr.body.file_id, 0, data);
    ASSERT_STATUS(w, NtStatus::Success);
    EXPECT_EQ(w.body.count, size);
    auto r = c.read(cr.body.file_id, 0, size);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_TRUE(ByteVector(r.body.data.begin(), r.body.data.end()) == data);
    *signed_reply = r.signature_verified;
    *encrypted_reply = r.encrypted;
    EXPECT_STATUS(c.close(cr.body.file_id), NtStatus::Success);
}

TEST_F(E2eSmbDirect, SignedSessionCarriesInlineIo) {
    TestServer::Options o;
    o.configure = [](server::Config& c) { c.global.signing = server::SigningPolicy::Mandatory; };
    start(o);
    auto [c, link] = connect_smbd();
    ASSERT_TRUE(c->signing_required());
    bool sig = false, enc = true;
    inline_round_trip(*c, "signed.bin", &sig, &enc);
    EXPECT_TRUE(sig);
    EXPECT_FALSE(enc);
    EXPECT_TRUE(file_contents(path_of("signed.bin")) == pattern(65536, 10));
    // As large as the Linux client sends a signed WRITE inline: up to the server's
    // MaxFragmentedSize less the WRITE header and a transform header.
    inline_round_trip(*c, "signed-large.bin", &sig, &enc, (1u << 20) - 112 - 52);
    EXPECT_TRUE(sig);

    // RDMA on a signed session too: the response is signed, the data goes by RDMA.
    auto op = c->open("signed.bin", access_mask::kFileGenericRead, create_disposition::kOpen);
    ASSERT_STATUS(op, NtStatus::Success);
    ByteVector buf(65536);
    auto reg = link->register_buffer(buf, true);
    ASSERT_TRUE(reg);
    const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
    auto r = c->read_rdma(op.body.file_id, 0, 65536, d, true);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_TRUE(r.signature_verified);
    EXPECT_TRUE(buf == pattern(65536, 10));
}

TEST_F(E2eSmbDirect, AesCmacSignedLargeInlineWriteVerifies) {
    // The Linux 6.1 client offers no signing capabilities: AES-CMAC, over a message of 1 MiB.
    TestServer::Options o;
    o.configure = [](server::Config& c) { c.global.signing = server::SigningPolicy::Mandatory; };
    start(o);
    NegotiateOptions n;
    n.signing_algorithms.clear();
    auto [c, link] = connect_smbd({}, n);
    ASSERT_EQ(c->signing_algorithm(), auth::SigningAlgorithm::AesCmac);
    bool sig = false, enc = true;
    inline_round_trip(*c, "cmac.bin", &sig, &enc, (1u << 20) - 112 - 52);
    EXPECT_TRUE(sig);
}

TEST_F(E2eSmbDirect, EncryptedSessionCarriesInlineIo) {
    ClientOptions co;
    co.encrypt = true;
    NegotiateOptions n;
    n.ciphers = {cipher::kAes128Gcm};
    auto [c, link] = connect_smbd(co, n);
    ASSERT_TRUE(c->can_encrypt());
    bool sig = true, enc = false;
    inline_round_trip(*c, "sealed.bin", &sig, &enc);
    EXPECT_TRUE(enc);
    EXPECT_TRUE(file_contents(path_of("sealed.bin")) == pattern(65536, 10));
}

// What fits in one SMB2 message over SMB Direct: the peer's MaxFragmentedSize (MS-SMBD 3.1.5.6,
// 3.1.4.1): the READ response's 64-byte header and 16-byte body, then the data.
constexpr uint32_t kReadResponseOverhead = 64 + 16;

TEST_F(E2eSmbDirect, InlineReadUpToTheClientsMaxFragmentedSizeWorks) {
    write_file("big.bin", pattern(2 * kMiB, 11));
    auto [c, link] = connect_smbd();
    // The server offers MaxReadSize 8 MiB over SMB Direct as over TCP (a client must not read
    // that much inline: the Linux client caps rsize to its max_fragmented_recv_size).
    EXPECT_GT(c->max_read_size(), link->parameters().max_fragmented_recv_size);
    auto op = c->open("big.bin", access_mask::kFileGenericRead, create_disposition::kOpen);
    ASSERT_STATUS(op, NtStatus::Success);
    const uint32_t fits = link->parameters().max_fragmented_recv_size - kReadResponseOverhead;
    auto r = c->read(op.body.file_id, 0, fits);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_EQ(r.body.data.size(), fits);
    EXPECT_TRUE(std::equal(r.body.data.begin(), r.body.data.end(), pattern(2 * kMiB, 11).begin()));
}

TEST_F(E2eSmbDirect, InlineReadAboveTheClientsMaxFragmentedSizeFailsCleanly) {
    write_file("big.bin", pattern(2 * kMiB, 11));
    auto [c, link] = connect_smbd();
    auto [other, other_link] = connect_smbd();
    auto op = c->open("big.bin", access_mask::kFileGenericRead, create_disposition::kOpen);
    ASSERT_STATUS(op, NtStatus::Success);
    // One byte too many: the response cannot be sent (MS-SMBD 3.1.4.1: a message above the
    // peer's MaxFragmentedSize). The server refuses the READ and the connection stays usable.
    const uint32_t too_much =
        link->parameters().max_fragmented_recv_size - kReadResponseOverhead + 1;
    auto r = c->read(op.body.file_id, 0, too_much);
    EXPECT_STATUS(r, NtStatus::InvalidParameter);
    EXPECT_TRUE(c->connected()) << link->close_reason();
    EXPECT_STATUS(c->echo(), NtStatus::Success);
    // The other connection is not affected either way.
    EXPECT_STATUS(other->echo(), NtStatus::Success);
}

// ---- connections that die -----------------------------------------------------------------

TEST_F(E2eSmbDirect, AClientGoingAwayMidRequestLeavesTheOtherConnectionWorking) {
    auto [b, b_link] = connect_smbd();
    // Outlives the client that dies: the server may still be reading it when the queue pair
    // goes.
    auto data = pattern(kMiB, 12);
    {
        auto [a, a_link] = connect_smbd();
        FileId f = create(*a, "dying.bin");
        auto reg = a_link->register_buffer(data, false);
        ASSERT_TRUE(reg);
        const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
        auto info = Smb2Client::channel_info_of(d);
        WriteRequest w;
        w.file_id = f;
        w.channel = channel::kRdmaV1Invalidate;
        w.remaining_bytes = kMiB;
        w.channel_info = info;
        ASSERT_TRUE(a->send(Command::Write, w, with_payload(kMiB)));
        // Gone without waiting: the link closes the connection and destroys the queue pair.
        a.reset();
    }
    for (int round = 0; round < 3; ++round) {
        FileId f = create(*b, "alive.bin");
        auto reg = b_link->register_buffer(data, false);
        ASSERT_TRUE(reg);
        const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
        auto w = b->write_rdma(f, 0, kMiB, d, true);
        ASSERT_STATUS(w, NtStatus::Success);
        EXPECT_STATUS(b->close(f), NtStatus::Success);
        EXPECT_TRUE(file_contents(path_of("alive.bin")) == data);
    }
}

// A peer that speaks raw MS-SMBD on an emulated queue pair, on the test's thread.
class RawPeer {
  public:
    // Connected, and its first message `first` sent once the server accepted (see
    // attach_smbd: a send before that finds no receive, and is tried again on a new
    // connection).
    RawPeer(smbdirect::EmulatedConnectionRequests& requests, Bytes first) {
        for (int attempt = 0; attempt <= 10; ++attempt) {
            open(requests);
            std::this_thread::sleep_for(std::chrono::milliseconds(1 << attempt));
            if (!send(first)) continue;
            auto sent = next_completion(smbdirect::Completion::Op::Send, 5000ms);
            if (sent && sent->ok) return;
        }
        ADD_FAILURE() << "the server never accepted the raw connection";
    }
    ~RawPeer() { close(); }
    bool send(Bytes msg) {
        std::memcpy(send_.data(), msg.data(), msg.size());
        smbdirect::LocalSegment seg{send_.data(), uint32_t(msg.size()), send_mr_->lkey};
        return bool(qp_->post_send(100, std::span(&seg, 1), std::nullopt));
    }
    std::optional<smbdirect::Completion> next_completion(smbdirect::Completion::Op op,
                                                         std::chrono::milliseconds limit) {
        auto until = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < until) {
            for (auto it = seen_.begin(); it != seen_.end(); ++it)
                if (it->op == op) {
                    auto c = *it;
                    seen_.erase(it);
                    return c;
                }
            smbdirect::Completion c[4];
            size_t n = qp_->poll(c);
            seen_.insert(seen_.end(), c, c + n);
            if (n == 0) std::this_thread::sleep_for(1ms);
        }
        return std::nullopt;
    }
    // The next received message (nullopt after `limit` or on a failed completion).
    std::optional<ByteVector> receive(std::chrono::milliseconds limit = 5000ms) {
        auto c = next_completion(smbdirect::Completion::Op::Receive, limit);
        if (!c || !c->ok) return std::nullopt;
        auto* p = recv_.data() + c->wr_id * kSlot;
        return ByteVector(p, p + c->byte_len);
    }
    bool disconnected_within(std::chrono::milliseconds limit) {
        auto until = std::chrono::steady_clock::now() + limit;
        while (!qp_->disconnected() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(1ms);
        return qp_->disconnected();
    }

  private:
    void open(smbdirect::EmulatedConnectionRequests& requests) {
        close();
        qp_ = requests.connect(io_.get_executor());
        std::string why;
        recv_mr_ = qp_->domain().register_memory(recv_.data(), recv_.size(),
                                                 smbdirect::access::kLocalWrite, &why);
        send_mr_ = qp_->domain().register_memory(send_.data(), send_.size(), 0, &why);
        // Room for the negotiate response and a few more (the emulated provider breaks the
        // connection on a send that finds no receive).
        for (uint64_t i = 0; i < 4; ++i)
            (void)qp_->post_receive(i, {recv_.data() + i * kSlot, uint32_t(kSlot), recv_mr_->lkey});
    }
    void close() {
        qp_.reset();  // before the regions its work requests point into
        recv_mr_.reset();
        send_mr_.reset();
        seen_.clear();
    }

    static constexpr size_t kSlot = 1364;
    boost::asio::io_context io_;  // the queue pair's loop; never run: this peer polls
    std::vector<std::byte> recv_ = std::vector<std::byte>(4 * kSlot);
    std::vector<std::byte> send_ = std::vector<std::byte>(kSlot);
    std::unique_ptr<smbdirect::EmulatedQueuePair> qp_;
    std::unique_ptr<smbdirect::MemoryRegion> recv_mr_, send_mr_;
    std::vector<smbdirect::Completion> seen_;
};

TEST_F(E2eSmbDirect, MalformedMessagesCloseOnlyTheirConnection) {
    auto [b, b_link] = connect_smbd();
    {
        // A negotiate request shorter than 20 bytes (MS-SMBD 3.1.5.6: disconnect).
        const uint64_t failures = counters().negotiate_failures;
        ByteVector shorty(8);
        RawPeer raw(*requests_, shorty);
        EXPECT_TRUE(raw.disconnected_within(5000ms));
        EXPECT_EQ(counters().negotiate_failures.load(), failures + 1);
    }
    {
        // A good negotiation, then a data transfer message whose DataOffset is not 8-aligned
        // (MS-SMBD 3.1.5.8: disconnect).
        smbdirect::NegotiateRequest req;
        req.credits_requested = 4;
        req.preferred_send_size = 1364;
        req.max_receive_size = 1364;
        req.max_fragmented_size = 131072;
        ByteVector msg;
        req.serialize(msg);
        RawPeer raw(*requests_, msg);
        auto resp = raw.receive();
        ASSERT_TRUE(resp);
        auto parsed = smbdirect::NegotiateResponse::parse(*resp);
        ASSERT_TRUE(parsed);
        EXPECT_EQ(parsed->status, 0u);
        const uint64_t errors = counters().disconnects_on_error;
        ByteVector bad(40);
        store_le16(bad.data(), 1);        // CreditsRequested
        store_le32(bad.data() + 12, 21);  // DataOffset
        store_le32(bad.data() + 16, 4);   // DataLength
        ASSERT_TRUE(raw.send(bad));
        EXPECT_TRUE(raw.disconnected_within(5000ms));
        EXPECT_EQ(counters().disconnects_on_error.load(), errors + 1);
    }
    // The well-behaved connection carries on.
    FileId f = create(*b, "survivor.bin");
    auto data = pattern(100000, 13);
    auto reg = b_link->register_buffer(data, false);
    ASSERT_TRUE(reg);
    const BufferDescriptorV1 d[] = {(*reg)->descriptor()};
    ASSERT_STATUS(b->write_rdma(f, 0, 100000, d, true), NtStatus::Success);
    EXPECT_STATUS(b->close(f), NtStatus::Success);
    EXPECT_TRUE(file_contents(path_of("survivor.bin")) == data);
}

// ---- counters -----------------------------------------------------------------------------

// The value of `key=` in the stats line (-1 when missing).
int64_t stat_of(const std::string& line, const std::string& key) {
    auto at = line.find(" " + key + "=");
    if (at == std::string::npos) at = line.find(key + "=");
    if (at == std::string::npos) return -1;
    return std::stoll(line.substr(line.find('=', at) + 1));
}

TEST_F(E2eSmbDirect, StatsLineCountsWhatTheConnectionsDid) {
    write_file("stats.bin", pattern(kMiB, 14));
    auto [c, link] = connect_smbd();
    auto op = c->open("stats.bin", kRw, create_disposition::kOpen);
    ASSERT_STATUS(op, NtStatus::Success);
    ByteVector into(kMiB);
    auto rin = link->register_buffer(into, true);
    ASSERT_TRUE(rin);
    const BufferDescriptorV1 din[] = {(*rin)->descriptor()};
    ASSERT_STATUS(c->read_rdma(op.body.file_id, 0, kMiB, din, true), NtStatus::Success);
    auto out = pattern(kMiB, 15);
    auto rout = link->register_buffer(out, false);
    ASSERT_TRUE(rout);
    const BufferDescriptorV1 dout[] = {(*rout)->descriptor()};
    ASSERT_STATUS(c->write_rdma(op.body.file_id, 0, kMiB, dout, true), NtStatus::Success);

    settled(counters().send_invalidates, 2);
    const std::string line = stats_line();
    SCOPED_TRACE(line);
    EXPECT_EQ(line.rfind("smbdirect: ", 0), 0u);
    EXPECT_EQ(stat_of(line, "connections"), 1);
    EXPECT_EQ(stat_of(line, "negotiate_failures"), 0);
    // One RDMA WRITE for the READ and one RDMA READ for the WRITE: 1 MiB is the emulated
    // device's largest single transfer.
    EXPECT_EQ(stat_of(line, "rdma_writes"), 1);
    EXPECT_EQ(stat_of(line, "rdma_write_bytes"), int64_t(kMiB));
    EXPECT_EQ(stat_of(line, "rdma_reads"), 1);
    EXPECT_EQ(stat_of(line, "rdma_read_bytes"), int64_t(kMiB));
    EXPECT_EQ(stat_of(line, "send_invalidates"), 2);
    EXPECT_EQ(stat_of(line, "bounce_bytes"), int64_t(2 * kMiB));
    EXPECT_GE(stat_of(line, "registered_slabs"), 1);
    EXPECT_GT(stat_of(line, "sends"), 4);
    EXPECT_GT(stat_of(line, "receives"), 4);
    EXPECT_EQ(stat_of(line, "error_disconnects"), 0);
    EXPECT_EQ(stat_of(line, "keepalives"), 0);
}

TEST_F(E2eSmbDirect, PoolRegistrationsGoWithTheDomainsLastConnection) {
    // A device can only be removed once nothing is registered on it, and an idle server holds
    // nothing but its listeners: the slab registrations last as long as a connection does.
    write_file("reg.bin", pattern(kMiB, 16));
    auto& registrations = server_->server().rdma_memory;
    // Opens `name` and reads its first `length` bytes by RDMA (with invalidation).
    auto read_by_rdma = [](Smb2Client& c, SmbdLink& link, const char* name, uint32_t length) {
        auto op = c.open(name, kRw, create_disposition::kOpen);
        ASSERT_STATUS(op, NtStatus::Success);
        ByteVector into(length);
        auto rin = link.register_buffer(into, true);
        ASSERT_TRUE(rin);
        const BufferDescriptorV1 din[] = {(*rin)->descriptor()};
        ASSERT_STATUS(c.read_rdma(op.body.file_id, 0, length, din, true), NtStatus::Success);
    };
    {
        auto [c, link] = connect_smbd();
        read_by_rdma(*c, *link, "reg.bin", kMiB);
        EXPECT_GE(registrations.registered_slabs(), 1u);
        EXPECT_STATUS(c->logoff(), NtStatus::Success);
    }
    for (int i = 0; i < 400 && registrations.registered_slabs() > 0; ++i)
        std::this_thread::sleep_for(5ms);
    EXPECT_EQ(registrations.registered_slabs(), 0u);
    // And a new connection registers again.
    auto [c, link] = connect_smbd();
    read_by_rdma(*c, *link, "reg.bin", 4096);
    EXPECT_GE(registrations.registered_slabs(), 1u);
}

TEST_F(E2eSmbDirect, AListenerWhoseDeviceWentAwayListensAgainWhenItIsBack) {
    // The first listener serves, its device goes away, and the server listens again (here: a
    // new set of emulated connection requests, as the verbs listener binds the address anew).
    std::mutex mu;
    smbdirect::EmulatedConnectionRequests* again = nullptr;
    std::atomic<int> attempts{0};
    auto requests = std::make_unique<smbdirect::EmulatedConnectionRequests>(4450);
    auto* first = requests.get();
    auto& s = server_->server();
    s.add_listener(std::make_unique<server::SmbdListener>(
        std::move(requests), smbdirect::SmbdConfig{}, s.smbd_counters, s.buffers, s.rdma_memory,
        "emulated-relisten",
        [&]() -> std::unique_ptr<smbdirect::ConnectionRequests> {
            // The device is back on the second attempt.
            if (++attempts < 2) return nullptr;
            auto r = std::make_unique<smbdirect::EmulatedConnectionRequests>(4450);
            std::lock_guard lk(mu);
            again = r.get();
            return r;
        },
        20ms));
    auto use = [&](smbdirect::EmulatedConnectionRequests* via) {
        auto saved = requests_;
        requests_ = via;
        auto [c, link] = connect_smbd();
        requests_ = saved;
        EXPECT_STATUS(c->echo(), NtStatus::Success);
    };
    use(first);
    first->remove_device();
    smbdirect::EmulatedConnectionRequests* now = nullptr;
    for (int i = 0; i < 400 && !now; ++i) {
        std::this_thread::sleep_for(5ms);
        std::lock_guard lk(mu);
        now = again;
    }
    ASSERT_NE(now, nullptr) << "the listener did not listen again";
    EXPECT_GE(attempts.load(), 2);
    use(now);
}

TEST_F(E2eSmbDirect, AClientsOrderlyDisconnectIsNotAnErrorDisconnect) {
    {
        auto [c, link] = connect_smbd();
        EXPECT_STATUS(c->logoff(), NtStatus::Success);
        // The client closes the connection (rdma_disconnect); the server sees its posted
        // receives flushed.
    }
    // Let the server notice.
    for (int i = 0; i < 200 && counters().disconnects_on_error == 0; ++i)
        std::this_thread::sleep_for(5ms);
    const std::string line = stats_line();
    SCOPED_TRACE(line);
    EXPECT_EQ(stat_of(line, "connections"), 1);
    EXPECT_EQ(stat_of(line, "error_disconnects"), 0);
}

// The MS-SMBD negotiate request sent the moment the emulated connection request was made, as a
// client does after a verbs connect (which returns once the server accepted).
TEST_F(E2eSmbDirect, NegotiatesRightAfterTheConnectionRequest) {
    int failed = 0;
    for (int i = 0; i < 20; ++i) {
        auto link = std::make_unique<SmbdLink>();
        if (!link->connect(requests_->connect(link->executor()))) ++failed;
    }
    EXPECT_EQ(failed, 0) << "of 20 connections, negotiations that found no receive posted";
}

// ---- DAX shares: RDMA straight from and into the file mappings ------------------------------

// A DAX share (page-granular mappings of ordinary files, as tests/e2e/e2e_dax_test.cpp) behind
// the emulated SMB Direct listener, whose device offers On-Demand Paging unless a test says
// otherwise; `rdma_direct` as the start-up probe sets it.
class E2eSmbDirectDax : public E2eSmbDirect {
  protected:
    void SetUp() override {
        E2eSmbDirect::SetUp();
        dax_share(size_t(1) << 30, true, true);
    }
    void dax_share(size_t chunk, bool odp, bool direct) {
        auto share = server_->server().find_share("data");
        ASSERT_TRUE(share);
        dax::MapOptions o;
        o.chunk_size = chunk;
        o.require_sync = false;
        o.flush = *dax::resolve_flush_kind(dax::FlushKind::Auto, dax::detect_cpu_flush_support());
        share->dax = o;
        share->rdma_direct = direct;
        requests_->set_on_demand_paging(odp);
    }
    dax::StatsSnapshot dax_stats() { return server_->server().dax_maps.stats().snapshot(); }
    size_t mapped_seen_ = 0;  // the most mapping registrations seen while connected

    // WRITEs `data` at `at` by RDMA (with invalidation) and reads [at, + data.size()) back
    // by RDMA into a buffer of the client: both the file and the buffer must hold `data`.
    void write_and_read_back(const std::string& name, ByteVector data, uint64_t at) {
        auto [c, link] = connect_smbd();
        auto op = c->open(name, kRw, create_disposition::kOpenIf);
        ASSERT_STATUS(op, NtStatus::Success);
        const FileId f = op.body.file_id;
        auto out = link->register_buffer(data, false);
        ASSERT_TRUE(out);
        const BufferDescriptorV1 dout[] = {(*out)->descriptor()};
        auto w = c->write_rdma(f, at, uint32_t(data.size()), dout, true);
        ASSERT_STATUS(w, NtStatus::Success);
        EXPECT_EQ(w.body.count, data.size());
        ByteVector back(data.size(), std::byte{0xEE});
        auto in = link->register_buffer(back, true);
        ASSERT_TRUE(in);
        const BufferDescriptorV1 din[] = {(*in)->descriptor()};
        auto r = c->read_rdma(f, at, uint32_t(data.size()), din, true);
        ASSERT_STATUS(r, NtStatus::Success);
        EXPECT_EQ(r.body.data_remaining, data.size());
        EXPECT_TRUE(back == data);
        EXPECT_STATUS(c->close(f), NtStatus::Success);
        mapped_seen_ = std::max(mapped_seen_, server_->server().rdma_memory.mapped_regions());
        auto disk = file_contents(path_of(name));
        ASSERT_GE(disk.size(), at + data.size());
        EXPECT_TRUE(std::equal(data.begin(), data.end(), disk.begin() + long(at)));
    }
};

TEST_F(E2eSmbDirectDax, WritesAndReadsMoveStraightBetweenTheClientAndTheMapping) {
    const auto first = pattern(kMiB, 40), second = pattern(kMiB, 41);
    write_and_read_back("direct.bin", first, 0);
    // Growing the file: the WRITE allocates first, then lands in the new part of the mapping.
    write_and_read_back("direct.bin", second, kMiB);
    const std::string line = stats_line();
    SCOPED_TRACE(line);
    EXPECT_EQ(stat_of(line, "direct_bytes"), int64_t(4 * kMiB));
    EXPECT_EQ(stat_of(line, "bounce_bytes"), 0);
    // One registration of the mapping served all four transfers; it went with the connection.
    EXPECT_EQ(mapped_seen_, 1u);
    for (int i = 0; i < 400 && server_->server().rdma_memory.mapped_regions() > 0; ++i)
        std::this_thread::sleep_for(5ms);
    EXPECT_EQ(server_->server().rdma_memory.mapped_regions(), 0u);
    auto st = dax_stats();
    EXPECT_EQ(st.writes, 2);
    EXPECT_EQ(st.write_bytes, int64_t(2 * kMiB));
    EXPECT_EQ(st.reads, 2);
    auto disk = file_contents(path_of("direct.bin"));
    ASSERT_EQ(disk.size(), 2u * kMiB);
    EXPECT_TRUE(std::equal(first.begin(), first.end(), disk.begin()));
}

TEST_F(E2eSmbDirectDax, WhatTheMappingCannotPinWholeGoesThroughPoolBuffers) {
    // A size that ends inside a page (the partial last page is never mapped) and, with
    // 256 KiB chunks, a transfer spanning several chunk mappings: both bounce, data intact.
    write_and_read_back("partial.bin", pattern(kMiB - 7, 42), 0);
    EXPECT_EQ(stat_of(stats_line(), "direct_bytes"), 0);
    EXPECT_EQ(stat_of(stats_line(), "bounce_bytes"), int64_t(2 * (kMiB - 7)));
    dax_share(256 * 1024, true, true);
    write_and_read_back("chunks.bin", pattern(kMiB, 43), 0);
    EXPECT_EQ(stat_of(stats_line(), "direct_bytes"), 0);
}

TEST_F(E2eSmbDirectDax, WithoutOnDemandPagingOrWithBounceConfiguredEverythingBounces) {
    dax_share(size_t(1) << 30, false, true);
    write_and_read_back("no-odp.bin", pattern(kMiB, 44), 0);
    EXPECT_EQ(stat_of(stats_line(), "direct_bytes"), 0);
    EXPECT_EQ(mapped_seen_, 0u);
    // "rdma into pmem = bounce" (or a probe that found no device): the share never lends its
    // mapping, whatever the device offers.
    dax_share(size_t(1) << 30, true, false);
    write_and_read_back("bounce.bin", pattern(kMiB, 45), 0);
    EXPECT_EQ(stat_of(stats_line(), "direct_bytes"), 0);
    EXPECT_EQ(stat_of(stats_line(), "bounce_bytes"), int64_t(4 * kMiB));
}

}  // namespace
}  // namespace daxsmbd::client
