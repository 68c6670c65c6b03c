// End-to-end: multichannel session binding (MS-SMB2 3.3.5.5.2, 3.3.5.5.3, 3.3.4.1.1) with
// daxsmbd's own client against the real server in-process. The server runs two event loops and
// assigns connections round-robin, so the two channels of a session live on different loops:
// the session's opens and trees are used from both at once.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "protocol/create_contexts.h"
#include "protocol/file_info.h"
#include "protocol/read.h"
#include "protocol/session_setup.h"
#include "protocol/set_info.h"
#include "protocol/write.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
using namespace std::chrono_literals;

constexpr uint32_t kRw =
    access_mask::kFileGenericRead | access_mask::kFileGenericWrite | access_mask::kDelete;

NegotiateOptions only(uint16_t d) {
    NegotiateOptions n;
    n.dialects = {d};
    return n;
}

// Waits (up to 10 s) until `done` holds: the server handles a disconnect on its own loop, after
// the client's close() returned.
template <class F>
bool eventually(F done) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

class E2eMultichannel : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        TestServer::Options o;
        o.worker_threads = 2;
        o.extra_users = {{"bob", "bobpw"}};
        // Failed bindings are on purpose here: no logon throttle for the later logons.
        o.configure = [](server::Config& c) { c.global.logon_failure_delay_ms = 0; };
        server_ = new TestServer(o);
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override {
        ASSERT_TRUE(server_->ok()) << server_->error();
        ASSERT_EQ(server_->server().loop_count(), 2u);
    }

    // A connection of "the client": every connection of one test shares the ClientGuid.
    std::unique_ptr<Smb2Client> connect(uint16_t dialect, bool encrypt = false) {
        ClientOptions o;
        o.client_guid = guid_;
        o.encrypt = encrypt;
        auto c = std::make_unique<Smb2Client>(o);
        EXPECT_TRUE(c->connect("127.0.0.1", server_->port()));
        NegotiateOptions n = only(dialect);
        if (encrypt) n.ciphers = {cipher::kAes128Gcm};
        EXPECT_STATUS(c->negotiate(n), NtStatus::Success);
        return c;
    }
    // Connection + session + tree on share "data".
    std::unique_ptr<Smb2Client> login(uint16_t dialect, bool encrypt = false) {
        auto c = connect(dialect, encrypt);
        EXPECT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
        EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
        return c;
    }
    // A second connection bound to `first`'s session, using its tree.
    std::unique_ptr<Smb2Client> bind_to(Smb2Client& first, bool encrypt = false) {
        auto c = connect(uint16_t(first.dialect()), encrypt);
        auto b = first.session_binding();
        EXPECT_TRUE(b.has_value());
        if (!b) return c;
        auto r = c->bind_session(*b, "alice", "pw");
        EXPECT_STATUS(r, NtStatus::Success);
        // The final response is signed with the new Channel.SigningKey (3.3.5.5.3).
        EXPECT_TRUE(r.signature_verified);
        EXPECT_EQ(c->session_id(), first.session_id());
        c->set_tree_id(first.tree_id());
        return c;
    }
    std::shared_ptr<server::Session> server_session(uint64_t id) {
        return server_->server().sessions.find(id);
    }

    static TestServer* server_;
    Guid guid_ = [] {
        Guid g{};
        for (size_t i = 0; i < g.size(); ++i)
            g[i] = std::byte(0x40 + i);
        return g;
    }();
};
TestServer* E2eMultichannel::server_ = nullptr;

TEST_F(E2eMultichannel, NegotiateAdvertisesMultiChannelFor3xOnly) {
    for (uint16_t d : {dialect::k300, dialect::k302, dialect::k311}) {
        auto c = connect(d);
        EXPECT_TRUE(c->negotiate_response().capabilities & global_caps::kMultiChannel) << d;
    }
    auto old = connect(dialect::k210);
    EXPECT_FALSE(old->negotiate_response().capabilities & global_caps::kMultiChannel);
}

class E2eBinding : public E2eMultichannel,
                   public ::testing::WithParamInterface<std::pair<uint16_t, bool>> {};

// The bound channel uses the first channel's open; the session and its open outlive the first
// connection; the last channel's close ends the session.
TEST_P(E2eBinding, SecondChannelSharesOpensAndOutlivesTheFirst) {
    const auto [dialect, encrypt] = GetParam();
    auto first = login(dialect, encrypt);
    const uint64_t sid = first->session_id();
    auto cr = first->open("mc-shared.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    const FileId fid = cr.body.file_id;
    const auto data1 = pattern(100000, 1);
    ASSERT_STATUS(first->write(fid, 0, data1), NtStatus::Success);

    auto second = bind_to(*first, encrypt);
    ASSERT_TRUE(second->session_valid());
    EXPECT_EQ(server_session(sid)->channel_count(), 2u);
    // The open of the first channel, read on the second.
    auto rd = second->read(fid, 0, 100000);
    ASSERT_STATUS(rd, NtStatus::Success);
    EXPECT_TRUE(rd.body.data.size() == data1.size() &&
                std::equal(rd.body.data.begin(), rd.body.data.end(), data1.begin()));
    EXPECT_EQ(rd.encrypted, encrypt);
    // Written on the second, read on the first.
    const auto data2 = pattern(5000, 2);
    ASSERT_STATUS(second->write(fid, 200000, data2), NtStatus::Success);
    auto rd1 = first->read(fid, 200000, 5000);
    ASSERT_STATUS(rd1, NtStatus::Success);
    EXPECT_TRUE(std::equal(rd1.body.data.begin(), rd1.body.data.end(), data2.begin()));
    // A tree connected on the second channel is the session's: the first sees it too.
    const uint32_t tree1 = first->tree_id();
    ASSERT_STATUS(second->tree_connect("data"), NtStatus::Success);
    first->set_tree_id(second->tree_id());
    EXPECT_STATUS(first->open("mc-other.bin", kRw, create_disposition::kOverwriteIf),
                  NtStatus::Success);
    first->set_tree_id(tree1);
    second->set_tree_id(tree1);

    // The first connection goes: the session and its open stay, on the second channel.
    first->disconnect();
    ASSERT_TRUE(eventually([&] { return server_session(sid)->channel_count() == 1; }));
    rd = second->read(fid, 200000, 5000);
    ASSERT_STATUS(rd, NtStatus::Success);
    EXPECT_TRUE(std::equal(rd.body.data.begin(), rd.body.data.end(), data2.begin()));
    EXPECT_STATUS(second->echo(), NtStatus::Success);

    // The last channel goes: the session ends, and its open with it.
    second->disconnect();
    ASSERT_TRUE(eventually([&] { return server_session(sid) == nullptr; }));
    EXPECT_FALSE(server_->server().opens.any_of(
        [sid](const server::Open& o) { return o.session_id == sid; }));
}

INSTANTIATE_TEST_SUITE_P(Dialects, E2eBinding,
                         ::testing::Values(std::pair{dialect::k300, false},
                                           std::pair{dialect::k302, false},
                                           std::pair{dialect::k311, false},
                                           std::pair{dialect::k311, true}),
                         [](const auto& info) {
                             char name[32];
                             std::snprintf(name, sizeof name, "d%04x%s", info.param.first,
                                           info.param.second ? "_encrypted" : "");
                             return std::string(name);
                         });

// MS-SMB2 3.3.5.2.10: after a failover the client raises ChannelSequence; a WRITE, SET_INFO or
// IOCTL still carrying the old one (held up on the failed channel) must not overtake what was
// resent, and fails with STATUS_FILE_NOT_AVAILABLE; other commands run.
TEST_F(E2eMultichannel, StaleChannelSequenceIsRefusedForModifyingRequests) {
    auto first = login(dialect::k311);
    auto cr = first->open("mc-sequence.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    const FileId fid = cr.body.file_id;
    auto second = bind_to(*first);
    const auto data = pattern(64, 7);
    auto write = [&](Smb2Client& c, uint16_t sequence, uint32_t extra_flags = 0) {
        WriteRequest w;
        w.file_id = fid;
        w.data = Bytes(data);
        CallOptions co;
        co.payload = data.size();
        co.channel_sequence = sequence;
        co.extra_flags = extra_flags;
        return c.call(Command::Write, w, co).status;
    };
    auto set_position = [&](Smb2Client& c, uint16_t sequence) {
        std::array<std::byte, 8> position{};
        SetInfoRequest si;
        si.file_info_class = file_info_class::kFilePositionInformation;
        si.buffer = Bytes(position);
        si.file_id = fid;
        CallOptions co;
        co.channel_sequence = sequence;
        return c.call(Command::SetInfo, si, co).status;
    };
    auto read = [&](Smb2Client& c, uint16_t sequence) {
        ReadRequest rd;
        rd.file_id = fid;
        rd.length = 16;
        CallOptions co;
        co.channel_sequence = sequence;
        return c.call(Command::Read, rd, co).status;
    };
    EXPECT_EQ(write(*first, 0), NtStatus::Success);
    // The failover: the client goes on over the second channel with ChannelSequence 1.
    EXPECT_EQ(write(*second, 1, flags::kReplayOperation), NtStatus::Success);
    EXPECT_EQ(write(*second, 1), NtStatus::Success);
    // What the first channel still sends with 0 is stale.
    EXPECT_EQ(write(*first, 0), NtStatus::FileNotAvailable);
    EXPECT_EQ(write(*first, 0, flags::kReplayOperation), NtStatus::FileNotAvailable);
    EXPECT_EQ(set_position(*first, 0), NtStatus::FileNotAvailable);
    EXPECT_EQ(read(*first, 0), NtStatus::Success);
    // 16-bit wrap: up to 0x7FFF ahead is newer, 0x8000 ahead is stale.
    EXPECT_EQ(write(*first, 0x8001), NtStatus::FileNotAvailable);
    EXPECT_EQ(write(*first, 0x8000), NtStatus::Success);
    EXPECT_EQ(write(*first, 0xFFFF), NtStatus::Success);
    EXPECT_EQ(write(*first, 0), NtStatus::Success);
    EXPECT_EQ(set_position(*second, 0xFFFF), NtStatus::FileNotAvailable);
    EXPECT_EQ(set_position(*second, 0), NtStatus::Success);
    EXPECT_STATUS(first->close(fid), NtStatus::Success);
}

// A CREATE waiting for a break whose channel fails is not lost: it completes for the session,
// which goes on over its other channel; the client's replay over that channel is told to retry
// while it waits, then gets the open it made (smbtorture smb2.replay.dhv2-pending2*-sane).
TEST_F(E2eMultichannel, PendingCreateOutlivesItsChannelAndIsReplayedOnAnother) {
    ClientOptions ho;
    ho.client_guid[0] = std::byte{0x99};
    auto holder = std::make_unique<Smb2Client>(ho);
    ASSERT_TRUE(holder->connect("127.0.0.1", server_->port()));
    ASSERT_STATUS(holder->negotiate(only(dialect::k311)), NtStatus::Success);
    ASSERT_STATUS(holder->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(holder->tree_connect("data"), NtStatus::Success);
    CreateRequest hr;
    hr.name = "mc-pending.bin";
    hr.desired_access = kRw;
    hr.share_access = share_access::kAll;
    hr.create_disposition = create_disposition::kOverwriteIf;
    hr.requested_oplock_level = oplock_level::kBatch;
    auto held = holder->create(hr);
    ASSERT_STATUS(held, NtStatus::Success);
    ASSERT_EQ(held.body.oplock_level, oplock_level::kBatch);

    auto first = login(dialect::k311);
    auto second = bind_to(*first);
    const uint64_t sid = first->session_id();
    CreateRequest r;
    r.name = "mc-pending.bin";
    r.desired_access = kRw;
    r.share_access = share_access::kAll;
    r.create_disposition = create_disposition::kOpen;
    DurableHandleRequestV2 dh;
    dh.create_guid[0] = std::byte{0x77};
    r.contexts.add(dh);
    auto mid = first->send(Command::Create, r);
    ASSERT_TRUE(mid.ok());
    ASSERT_TRUE(holder->receive_raw(5000ms).ok()) << "no oplock break";
    ASSERT_EQ(first->wait_reply(*mid, /*return_interim=*/true).status, NtStatus::Pending);
    first->disconnect();
    ASSERT_TRUE(eventually([&] { return server_session(sid)->channel_count() == 1; }));

    CallOptions co;
    co.extra_flags = flags::kReplayOperation;
    co.channel_sequence = 1;
    EXPECT_EQ(second->create(r, co).status, NtStatus::FileNotAvailable);
    // The holder lets go; the original CREATE completes without its connection.
    EXPECT_STATUS(holder->close(held.body.file_id), NtStatus::Success);
    Reply<CreateResponse> replayed;
    ASSERT_TRUE(eventually([&] {
        replayed = second->create(r, co);
        return replayed.status != NtStatus::FileNotAvailable;
    }));
    ASSERT_STATUS(replayed, NtStatus::Success);
    EXPECT_EQ(replayed.body.create_action, create_action::kOpened);
    EXPECT_STATUS(second->close(replayed.body.file_id), NtStatus::Success);
}

TEST_F(E2eMultichannel, LogoffOnOneChannelEndsTheSessionOnAll) {
    auto first = login(dialect::k311);
    const uint64_t sid = first->session_id();
    auto cr = first->open("mc-logoff.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    auto second = bind_to(*first);
    ASSERT_TRUE(second->session_valid());

    EXPECT_STATUS(second->logoff(), NtStatus::Success);
    EXPECT_EQ(server_session(sid), nullptr);
    // The first channel has lost the session, and the open is closed.
    EXPECT_STATUS(first->read(cr.body.file_id, 0, 10), NtStatus::UserSessionDeleted);
    EXPECT_STATUS(first->echo(), NtStatus::Success);  // the connection itself lives
    auto other = login(dialect::k311);
    CreateRequest excl;
    excl.name = "mc-logoff.bin";
    excl.desired_access = kRw;
    excl.share_access = 0;  // would be a sharing violation if the open were still there
    excl.create_disposition = create_disposition::kOpen;
    EXPECT_STATUS(other->create(excl), NtStatus::Success);
}

TEST_F(E2eMultichannel, BindingSignedWithAWrongKeyIsAccessDenied) {
    auto first = login(dialect::k311);
    auto cr = first->open("mc-wrongkey.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ASSERT_STATUS(first->write(cr.body.file_id, 0, pattern(16, 3)), NtStatus::Success);
    auto b = first->session_binding();
    ASSERT_TRUE(b.has_value());
    b->signing_key[0] ^= std::byte{0x5a};
    auto second = connect(dialect::k311);
    auto r = second->bind_session(*b, "alice", "pw");
    EXPECT_STATUS(r, NtStatus::AccessDenied);
    EXPECT_FALSE(r.header.flags & flags::kSigned);  // the request proved no key
    EXPECT_EQ(server_session(first->session_id())->channel_count(), 1u);
    // The connection is no channel of the session: its open is out of reach there.
    second->set_session_id(first->session_id());
    second->set_tree_id(first->tree_id());
    EXPECT_STATUS(second->read(cr.body.file_id, 0, 1), NtStatus::UserSessionDeleted);
    EXPECT_STATUS(first->read(cr.body.file_id, 0, 1), NtStatus::Success);
}

TEST_F(E2eMultichannel, FailedBindingLeavesTheSessionAlone) {
    auto first = login(dialect::k311);
    auto cr = first->open("mc-failed.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ASSERT_STATUS(first->write(cr.body.file_id, 0, pattern(16, 3)), NtStatus::Success);
    auto b = first->session_binding();
    ASSERT_TRUE(b.has_value());
    // Wrong password: LOGON_FAILURE; another user: ACCESS_DENIED (MS-SMB2 3.3.5.5.2; Windows'
    // answer in smbtorture smb2.session.bind_different_user).
    auto second = connect(dialect::k311);
    EXPECT_STATUS(second->bind_session(*b, "alice", "wrong"), NtStatus::LogonFailure);
    auto third = connect(dialect::k311);
    EXPECT_STATUS(third->bind_session(*b, "bob", "bobpw"), NtStatus::AccessDenied);
    // The session goes on; the right user can still bind on the refused connection.
    EXPECT_STATUS(first->read(cr.body.file_id, 0, 1), NtStatus::Success);
    EXPECT_STATUS(third->bind_session(*b, "alice", "pw"), NtStatus::Success);
    third->set_tree_id(first->tree_id());
    EXPECT_STATUS(third->read(cr.body.file_id, 0, 1), NtStatus::Success);
}

TEST_F(E2eMultichannel, BindingNeedsTheSessionsDialect) {
    // A 3.1.1 session signing with AES-CMAC (with AES-GMAC the algorithm mismatch would be
    // refused first, REQUEST_OUT_OF_SEQUENCE) and a 3.0.2 connection.
    ClientOptions o;
    o.client_guid = guid_;
    auto cmac = std::make_unique<Smb2Client>(o);
    ASSERT_TRUE(cmac->connect("127.0.0.1", server_->port()));
    NegotiateOptions n = only(dialect::k311);
    n.signing_algorithms = {signing_algorithm::kAesCmac};
    ASSERT_STATUS(cmac->negotiate(n), NtStatus::Success);
    ASSERT_STATUS(cmac->session_setup("alice", "pw"), NtStatus::Success);
    auto other = connect(dialect::k302);
    EXPECT_STATUS(other->bind_session(*cmac->session_binding(), "alice", "pw"),
                  NtStatus::InvalidParameter);

    auto first = login(dialect::k311);
    auto b = first->session_binding();
    ASSERT_TRUE(b.has_value());
    // Binding twice on one connection: the connection already is a channel, and the binding
    // request signed with Session.SigningKey fails the channel key's check (3.1.1).
    // (The refusal is signed with the channel's key, which this client's binding attempt does
    // not hold: its signature is not checked here.)
    auto second = bind_to(*first);
    second->options().verify_signatures = false;
    EXPECT_STATUS(second->bind_session(*b, "alice", "pw"), NtStatus::AccessDenied);
}

// Both channels hammer one open from two threads: the session's state is used from two event
// loops at once.
TEST_F(E2eMultichannel, ChannelsOnTwoLoopsWorkConcurrently) {
    auto first = login(dialect::k311, true);
    auto cr = first->open("mc-concurrent.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    const FileId fid = cr.body.file_id;
    auto second = bind_to(*first, true);
    std::atomic<int> failures{0};
    auto worker = [&](Smb2Client& c, uint64_t base, uint32_t seed) {
        for (int i = 0; i < 200; ++i) {
            const auto data = pattern(4096, seed + i);
            if (!c.write(fid, base + uint64_t(i) * 4096, data).ok()) ++failures;
            auto rd = c.read(fid, base + uint64_t(i) * 4096, 4096);
            if (!rd.ok() || !std::equal(rd.body.data.begin(), rd.body.data.end(), data.begin()))
                ++failures;
            if (i % 50 == 0) {  // trees are the session's, shared by both loops
                const uint32_t t = c.tree_id();
                if (!c.tree_connect("data").ok()) ++failures;
                c.set_tree_id(t);
            }
        }
    };
    std::thread t1([&] { worker(*first, 0, 100); });
    std::thread t2([&] { worker(*second, 1 << 20, 900); });
    t1.join();
    t2.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_STATUS(first->close(fid), NtStatus::Success);
}

// 32 channels per session; the binding of a 33rd is STATUS_INSUFFICIENT_RESOURCES, as on
// Windows and Samba (smbtorture smb2.multichannel.generic.num_channels).
TEST_F(E2eMultichannel, ThirtyTwoChannelsPerSession) {
    auto first = login(dialect::k311);
    std::vector<std::unique_ptr<Smb2Client>> channels;
    for (int i = 1; i < 32; ++i) {
        channels.push_back(bind_to(*first));
        ASSERT_TRUE(channels.back()->session_valid()) << i;
    }
    EXPECT_EQ(server_session(first->session_id())->channel_count(), 32u);
    auto extra = connect(dialect::k311);
    EXPECT_STATUS(extra->bind_session(*first->session_binding(), "alice", "pw"),
                  NtStatus::InsufficientResources);
    // One channel goes: there is room again.
    channels.back()->disconnect();
    channels.pop_back();
    ASSERT_TRUE(
        eventually([&] { return server_session(first->session_id())->channel_count() == 31; }));
    EXPECT_STATUS(extra->bind_session(*first->session_binding(), "alice", "pw"), NtStatus::Success);
}

// FSCTL_QUERY_NETWORK_INTERFACE_INFO (MS-SMB2 3.3.5.15.11): the addresses a client may bind
// further channels from; the test server listens on 127.0.0.1 only ("interfaces").
TEST_F(E2eMultichannel, QueryNetworkInterfaceInfoListsTheListenAddress) {
    auto c = login(dialect::k311);
    IoctlRequest req;
    req.ctl_code = fsctl::kQueryNetworkInterfaceInfo;
    req.file_id = kPlaceholderFileId;
    req.max_output_response = 65536;
    auto r = c->ioctl(req);
    ASSERT_STATUS(r, NtStatus::Success);
    auto list = NetworkInterfaceInfo::decode_list(r.body.output);
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->size(), 1u);
    const auto& e = list->front();
    EXPECT_EQ(e.family, sockaddr_family::kInterNetwork);
    EXPECT_EQ(e.address[0], 127);
    EXPECT_EQ(e.address[1], 0);
    EXPECT_EQ(e.address[2], 0);
    EXPECT_EQ(e.address[3], 1);
    EXPECT_NE(e.if_index, 0u);
    EXPECT_GT(e.link_speed, 0u);
    req.max_output_response = NetworkInterfaceInfo::kSize - 1;
    EXPECT_STATUS(c->ioctl(req), NtStatus::BufferTooSmall);
    // Not on a connection without the capability (2.1).
    auto old = connect(dialect::k210);
    ASSERT_STATUS(old->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(old->tree_connect("data"), NtStatus::Success);
    req.max_output_response = 65536;
    EXPECT_STATUS(old->ioctl(req), NtStatus::NotSupported);
}

// "server multi channel support = no": no MULTI_CHANNEL capability, and a binding that passes
// every other check is refused with REQUEST_NOT_ACCEPTED (MS-SMB2 3.3.5.5.2).
TEST(E2eMultichannelOff, BindingIsRefused) {
    TestServer::Options o;
    o.configure = [](server::Config& c) { c.global.multi_channel = false; };
    TestServer server(o);
    ASSERT_TRUE(server.ok()) << server.error();
    auto first = std::make_unique<Smb2Client>();
    ASSERT_TRUE(first->connect("127.0.0.1", server.port()));
    ASSERT_STATUS(first->negotiate(only(dialect::k311)), NtStatus::Success);
    EXPECT_FALSE(first->negotiate_response().capabilities & global_caps::kMultiChannel);
    ASSERT_STATUS(first->session_setup("alice", "pw"), NtStatus::Success);
    auto second = std::make_unique<Smb2Client>();
    ASSERT_TRUE(second->connect("127.0.0.1", server.port()));
    ASSERT_STATUS(second->negotiate(only(dialect::k311)), NtStatus::Success);
    auto r = second->bind_session(*first->session_binding(), "alice", "pw");
    EXPECT_STATUS(r, NtStatus::RequestNotAccepted);
    // Signed with the session's key: the client can trust the status.
    EXPECT_TRUE(r.header.flags & flags::kSigned);
    EXPECT_STATUS(first->echo(), NtStatus::Success);
}

}  // namespace
}  // namespace daxsmbd::client
