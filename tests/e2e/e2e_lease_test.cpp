// End-to-end leases and durable handles through daxsmbd's own client: lease grants and breaks
// between clients (MS-SMB2 3.3.5.9.8, 3.3.4.7), lease break acknowledgments (3.3.5.22.2),
// durable handles kept across a lost connection and re-bound by a reconnect (3.3.5.9.7,
// 3.3.5.9.12), purged by a conflicting open, and expired on time.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "protocol/create_contexts.h"
#include "protocol/file_info.h"
#include "protocol/oplock_break.h"
#include "protocol/read.h"
#include "protocol/set_info.h"
#include "protocol/write.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;
namespace ls = protocol::lease_state;
using namespace std::chrono_literals;

constexpr uint32_t kRw = am::kFileGenericRead | am::kFileGenericWrite;
constexpr uint32_t kRwh = ls::kReadCaching | ls::kWriteCaching | ls::kHandleCaching;
constexpr uint32_t kRh = ls::kReadCaching | ls::kHandleCaching;

Guid guid(uint8_t b) {
    Guid g{};
    g.fill(std::byte{b});
    return g;
}

class E2eLease : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { server_ = new TestServer(); }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->error(); }

    static std::unique_ptr<Smb2Client> login(uint8_t client_guid) {
        ClientOptions o;
        o.client_guid = guid(client_guid);
        auto c = std::make_unique<Smb2Client>(o);
        EXPECT_TRUE(c->connect("127.0.0.1", server_->port()));
        EXPECT_TRUE(c->negotiate().ok());
        EXPECT_TRUE(c->session_setup("alice", "pw").ok());
        EXPECT_TRUE(c->tree_connect("data").ok());
        return c;
    }

    static CreateRequest lease_req(const std::string& name, uint8_t key, uint32_t state,
                                   uint8_t version = 2) {
        CreateRequest r;
        r.name = name;
        r.requested_oplock_level = oplock_level::kLease;
        r.desired_access = kRw;
        r.share_access = share_access::kAll;
        r.create_disposition = create_disposition::kOpenIf;
        LeaseContext l;
        l.version = version;
        l.lease_key = guid(key);
        l.lease_state = state;
        r.contexts.add(l);
        return r;
    }

    static std::optional<LeaseContext> lease_of(const CreateResponse& r) {
        const CreateContext* c = r.contexts.find(Bytes(create_context_name::kRequestLease));
        if (!c) return std::nullopt;
        auto l = LeaseContext::decode(c->data);
        if (!l) return std::nullopt;
        return *l;
    }

    static LeaseBreakNotification expect_lease_break(Smb2Client& c) {
        auto frame = c.receive_raw(5000ms);
        EXPECT_TRUE(frame.ok()) << "no lease break notification";
        if (!frame) return {};
        auto h = Header::parse(*frame);
        EXPECT_TRUE(h.ok());
        EXPECT_EQ(h->command, Command::OplockBreak);
        EXPECT_EQ(h->message_id, ~uint64_t(0));
        auto n = LeaseBreakNotification::parse(*frame);
        EXPECT_TRUE(n.ok());
        return n.ok() ? *n : LeaseBreakNotification{};
    }

    static size_t open_count() { return server_->server().opens.size(); }

    static TestServer* server_;
};
TestServer* E2eLease::server_ = nullptr;

TEST_F(E2eLease, SecondClientBreaksWriteCachingAndWaitsForTheAcknowledgment) {
    auto a = login(1);
    auto b = login(2);
    auto ca = a->create(lease_req("lease-break.dat", 0x11, kRwh));
    ASSERT_TRUE(ca.ok()) << status_name(ca.status);
    EXPECT_EQ(ca.body.oplock_level, oplock_level::kLease);
    auto la = lease_of(ca.body);
    ASSERT_TRUE(la);
    EXPECT_EQ(la->version, 2);
    EXPECT_EQ(la->lease_state, kRwh);
    EXPECT_EQ(la->lease_key, guid(0x11));

    // The same lease key on a second handle of the same client breaks nothing.
    auto ca2 = a->create(lease_req("lease-break.dat", 0x11, kRwh));
    ASSERT_TRUE(ca2.ok());
    EXPECT_EQ(lease_of(ca2.body)->lease_state, kRwh);
    EXPECT_FALSE(a->receive_raw(200ms).ok());

    // Another client's open takes WRITE caching away and waits for A's acknowledgment.
    auto mid = b->send(Command::Create, lease_req("lease-break.dat", 0x22, kRwh));
    ASSERT_TRUE(mid.ok());
    auto n = expect_lease_break(*a);
    EXPECT_EQ(n.lease_key, guid(0x11));
    EXPECT_EQ(n.current_lease_state, kRwh);
    EXPECT_EQ(n.new_lease_state, kRh);
    EXPECT_EQ(n.flags, lease_break::kFlagAckRequired);
    EXPECT_EQ(n.new_epoch, la->epoch + 1);

    // A state the break did not offer is refused; the offered one is taken.
    LeaseBreakAcknowledgment ack;
    ack.lease_key = guid(0x11);
    ack.lease_state = kRwh;
    EXPECT_EQ(a->call(Command::OplockBreak, ack).status, NtStatus::RequestNotAccepted);
    ack.lease_state = kRh;
    auto r = a->call(Command::OplockBreak, ack);
    ASSERT_TRUE(r.ok()) << status_name(r.status);
    auto resp = LeaseBreakResponse::parse(r.msg);
    ASSERT_TRUE(resp.ok());
    EXPECT_EQ(resp->lease_state, kRh);
    // No break is in progress any more.
    EXPECT_EQ(a->call(Command::OplockBreak, ack).status, NtStatus::Unsuccessful);

    auto cb = b->wait_reply(*mid);
    ASSERT_TRUE(cb.ok()) << status_name(cb.status);
    auto body = CreateResponse::parse(cb.msg);
    ASSERT_TRUE(body.ok());
    EXPECT_EQ(body->oplock_level, oplock_level::kLease);
    EXPECT_EQ(lease_of(*body)->lease_state, kRh);

    // B writes: A's READ caching goes; HANDLE caching goes with it, so A must acknowledge.
    WriteRequest w;
    w.file_id = body->file_id;
    std::string text = "written by b";
    w.data = as_bytes(text);
    CallOptions co;
    co.payload = text.size();
    ASSERT_TRUE(b->call(Command::Write, w, co).ok());
    auto n2 = expect_lease_break(*a);
    EXPECT_EQ(n2.current_lease_state, kRh);
    EXPECT_EQ(n2.new_lease_state, 0u);

    // A lease key names one file.
    auto other = a->create(lease_req("lease-other.dat", 0x11, kRwh));
    EXPECT_EQ(other.status, NtStatus::InvalidParameter);

    EXPECT_TRUE(a->close(ca.body.file_id).ok());
    EXPECT_TRUE(a->close(ca2.body.file_id).ok());
    EXPECT_TRUE(b->close(body->file_id).ok());
    // An unknown lease (its last open closed) is not found.
    ack.lease_state = 0;
    EXPECT_EQ(a->call(Command::OplockBreak, ack).status, NtStatus::ObjectNameNotFound);
}

CreateRequest with_durable_v2(CreateRequest r, uint8_t create_guid, uint32_t timeout_ms) {
    DurableHandleRequestV2 d;
    d.create_guid = guid(create_guid);
    d.timeout = timeout_ms;
    r.contexts.add(d);
    return r;
}

CreateRequest with_reconnect_v2(CreateRequest r, FileId fid, uint8_t create_guid) {
    DurableHandleReconnectV2 d;
    d.file_id = fid;
    d.create_guid = guid(create_guid);
    r.contexts.add(d);
    return r;
}

TEST_F(E2eLease, DurableV2HandleSurvivesALostConnectionAndIsReconnected) {
    const size_t before = open_count();
    auto a = login(3);
    auto ca = a->create(with_durable_v2(lease_req("durable.dat", 0x33, kRwh), 0x44, 0));
    ASSERT_TRUE(ca.ok()) << status_name(ca.status);
    const CreateContext* dr =
        ca.body.contexts.find(Bytes(create_context_name::kDurableHandleRequestV2));
    ASSERT_NE(dr, nullptr);
    auto dresp = DurableHandleResponseV2::decode(dr->data);
    ASSERT_TRUE(dresp.ok());
    EXPECT_EQ(dresp->timeout, 60000u);  // the default for a timeout of 0
    std::string text = "kept across the reconnect";
    ASSERT_TRUE(a->write(ca.body.file_id, 0, as_bytes(text)).ok());

    a->disconnect();  // the TCP connection is lost, not logged off
    for (int i = 0; i < 100 && server_->server().opens.disconnected_count() == 0; ++i)
        std::this_thread::sleep_for(20ms);
    ASSERT_EQ(server_->server().opens.disconnected_count(), 1u);

    auto a2 = login(3);
    // A wrong CreateGuid names nothing.
    auto bad =
        a2->create(with_reconnect_v2(lease_req("durable.dat", 0x33, kRwh), ca.body.file_id, 0x45));
    EXPECT_EQ(bad.status, NtStatus::ObjectNameNotFound);
    // The right handle under another name: the lease names its file (MS-SMB2 3.3.5.9.12).
    auto renamed =
        a2->create(with_reconnect_v2(lease_req("other.dat", 0x33, kRwh), ca.body.file_id, 0x44));
    EXPECT_EQ(renamed.status, NtStatus::InvalidParameter);
    auto re =
        a2->create(with_reconnect_v2(lease_req("durable.dat", 0x33, kRwh), ca.body.file_id, 0x44));
    ASSERT_TRUE(re.ok()) << status_name(re.status);
    EXPECT_EQ(re.body.file_id, ca.body.file_id);
    EXPECT_EQ(re.body.oplock_level, oplock_level::kLease);
    EXPECT_EQ(lease_of(re.body)->lease_state, kRwh);
    EXPECT_EQ(server_->server().opens.disconnected_count(), 0u);
    // A second reconnect of the now connected handle fails.
    auto again =
        a2->create(with_reconnect_v2(lease_req("durable.dat", 0x33, kRwh), ca.body.file_id, 0x44));
    EXPECT_EQ(again.status, NtStatus::ObjectNameNotFound);

    auto rr = a2->read(re.body.file_id, 0, 64);
    ASSERT_TRUE(rr.ok()) << status_name(rr.status);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(rr.body.data.data()), rr.body.data.size()),
              text);
    EXPECT_TRUE(a2->close(re.body.file_id).ok());
    EXPECT_EQ(open_count(), before);
}

TEST_F(E2eLease, DisconnectedDurableHandleIsClosedByAConflictingOpenAndByItsTimeout) {
    const size_t before = open_count();
    // v1 with a batch oplock: another client's overwrite would have to break it, so the
    // disconnected handle is closed and the open goes on.
    auto a = login(5);
    CreateRequest r;
    r.name = "durable-v1.dat";
    r.requested_oplock_level = oplock_level::kBatch;
    r.desired_access = kRw;
    r.share_access = share_access::kRead;  // denies other writers while it lives
    r.create_disposition = create_disposition::kOpenIf;
    r.contexts.add(DurableHandleRequest{});
    auto ca = a->create(r);
    ASSERT_TRUE(ca.ok()) << status_name(ca.status);
    EXPECT_EQ(ca.body.oplock_level, oplock_level::kBatch);
    EXPECT_NE(ca.body.contexts.find(Bytes(create_context_name::kDurableHandleRequest)), nullptr);
    a->disconnect();
    for (int i = 0; i < 100 && server_->server().opens.disconnected_count() == 0; ++i)
        std::this_thread::sleep_for(20ms);
    ASSERT_EQ(server_->server().opens.disconnected_count(), 1u);

    auto b = login(6);
    auto cb = b->open("durable-v1.dat", kRw, create_disposition::kOverwriteIf);
    ASSERT_TRUE(cb.ok()) << status_name(cb.status);
    EXPECT_TRUE(b->close(cb.body.file_id).ok());
    auto a2 = login(5);
    CreateRequest rc = r;
    rc.contexts = {};
    DurableHandleReconnect dc;
    dc.file_id = ca.body.file_id;
    rc.contexts.add(dc);
    EXPECT_EQ(a2->create(rc).status, NtStatus::ObjectNameNotFound);

    // v2 with a 300 ms timeout: gone after it.
    auto c = login(7);
    auto cc = c->create(with_durable_v2(lease_req("durable-expiry.dat", 0x77, kRwh), 0x78, 300));
    ASSERT_TRUE(cc.ok());
    c->disconnect();
    for (int i = 0; i < 200 && open_count() != before; ++i)
        std::this_thread::sleep_for(20ms);
    EXPECT_EQ(open_count(), before);
    auto c2 = login(7);
    EXPECT_EQ(c2->create(with_reconnect_v2(lease_req("durable-expiry.dat", 0x77, kRwh),
                                           cc.body.file_id, 0x78))
                  .status,
              NtStatus::ObjectNameNotFound);
    EXPECT_EQ(server_->server().files.lease_count(), 0u);
}

TEST_F(E2eLease, NewApplicationInstanceClosesTheEarlierInstancesHandle) {
    auto a = login(8);
    auto b = login(9);
    auto with_app = [](CreateRequest r) {
        AppInstanceIdContext app;
        app.app_instance_id = guid(0x99);
        r.contexts.add(app);
        return r;
    };
    CreateRequest r;
    r.name = "app-instance.dat";
    r.requested_oplock_level = oplock_level::kBatch;
    r.desired_access = kRw;
    r.share_access = 0;  // exclusive: only the close lets the second instance in
    r.create_disposition = create_disposition::kOpenIf;
    auto ca = a->create(with_durable_v2(with_app(r), 0x9a, 0));
    ASSERT_TRUE(ca.ok()) << status_name(ca.status);
    auto cb = b->create(with_durable_v2(with_app(r), 0x9b, 0));
    ASSERT_TRUE(cb.ok()) << status_name(cb.status);
    EXPECT_EQ(cb.body.oplock_level, oplock_level::kBatch);
    EXPECT_FALSE(a->receive_raw(200ms).ok());  // closed, not broken
    EXPECT_EQ(a->read(ca.body.file_id, 0, 1).status, NtStatus::FileClosed);
    EXPECT_TRUE(b->close(cb.body.file_id).ok());
}

// MS-SMB2 3.3.5.9.13 on 3.1.1: an instance whose APP_INSTANCE_VERSION is not newer than the
// open's is refused (STATUS_FILE_FORCED_CLOSED) and the open stays; a newer one takes over.
// The same client reopening with its own AppInstanceId closes nothing.
TEST_F(E2eLease, AppInstanceVersionDecidesWhichInstanceKeepsTheFile) {
    auto a = login(0x30);
    auto b = login(0x31);
    auto instance = [](uint64_t high, uint64_t low) {
        CreateRequest r;
        r.name = "app-version.dat";
        r.desired_access = kRw;
        r.share_access = share_access::kRead | share_access::kWrite;
        r.create_disposition = create_disposition::kOpenIf;
        AppInstanceIdContext app;
        app.app_instance_id = guid(0x77);
        r.contexts.add(app);
        AppInstanceVersionContext v;
        v.version_high = high;
        v.version_low = low;
        r.contexts.add(v);
        return r;
    };
    auto first = a->create(instance(2, 5));
    ASSERT_TRUE(first.ok()) << status_name(first.status);
    ASSERT_TRUE(a->write(first.body.file_id, 0, as_bytes(std::string("x"))).ok());
    auto own = a->create(instance(1, 0));  // the same client: no other instance
    ASSERT_TRUE(own.ok()) << status_name(own.status);
    EXPECT_TRUE(a->close(own.body.file_id).ok());

    EXPECT_EQ(b->create(instance(2, 5)).status, NtStatus::FileForcedClosed);
    EXPECT_EQ(b->create(instance(1, 9)).status, NtStatus::FileForcedClosed);
    EXPECT_TRUE(a->read(first.body.file_id, 0, 1).ok());

    auto newer = b->create(instance(2, 6));
    ASSERT_TRUE(newer.ok()) << status_name(newer.status);
    EXPECT_EQ(a->read(first.body.file_id, 0, 1).status, NtStatus::FileClosed);
    EXPECT_TRUE(b->close(newer.body.file_id).ok());
}

TEST_F(E2eLease, ReplayedCreateWithTheSameCreateGuidGetsTheSameOpen) {
    auto a = login(10);
    const size_t before = open_count();
    CreateRequest r = with_durable_v2(lease_req("replay.dat", 0xA0, kRwh), 0xA1, 0);
    auto first = a->create(r);
    ASSERT_TRUE(first.ok()) << status_name(first.status);
    // The client did not see the answer (a channel failed) and sends the CREATE again, flagged
    // as a replay: the same open comes back with the original CreateAction, nothing new is
    // opened and nothing is broken.
    CallOptions co;
    co.extra_flags = flags::kReplayOperation;
    auto again = a->create(r, co);
    ASSERT_TRUE(again.ok()) << status_name(again.status);
    EXPECT_EQ(again.body.file_id, first.body.file_id);
    EXPECT_EQ(again.body.create_action, first.body.create_action);
    EXPECT_EQ(again.body.oplock_level, oplock_level::kLease);
    EXPECT_EQ(lease_of(again.body)->lease_state, kRwh);
    EXPECT_EQ(open_count(), before + 1);
    EXPECT_FALSE(a->receive_raw(200ms).ok());
    // Without the replay flag the CreateGuid is a duplicate (MS-SMB2 3.3.5.9.10).
    EXPECT_EQ(a->create(r).status, NtStatus::DuplicateObjectId);
    // Once the client used the open it got the response: a replay is a new open.
    EXPECT_TRUE(a->read(first.body.file_id, 0, 1).status != NtStatus::FileClosed);
    auto second = a->create(r, co);
    ASSERT_TRUE(second.ok()) << status_name(second.status);
    EXPECT_NE(second.body.file_id, first.body.file_id);
    EXPECT_EQ(open_count(), before + 2);
    EXPECT_TRUE(a->close(first.body.file_id).ok());
    EXPECT_TRUE(a->close(second.body.file_id).ok());
}

TEST_F(E2eLease, ReplayedCreateAnswersWithTheLevelItAsksForAndNamesTheSameLease) {
    auto a = login(11);
    CreateRequest r = with_durable_v2(lease_req("replay-level.dat", 0xB0, kRwh), 0xB1, 0);
    auto first = a->create(r);
    ASSERT_TRUE(first.ok()) << status_name(first.status);
    CallOptions co;
    co.extra_flags = flags::kReplayOperation;
    // Another lease key: not the open's lease.
    CreateRequest other = with_durable_v2(lease_req("replay-level.dat", 0xB2, kRwh), 0xB1, 0);
    EXPECT_EQ(a->create(other, co).status, NtStatus::AccessDenied);
    // No oplock asked for: none in the answer, and no durability either; the open keeps both.
    CreateRequest plain;
    plain.name = "replay-level.dat";
    plain.desired_access = kRw;
    plain.share_access = share_access::kAll;
    plain.create_disposition = create_disposition::kOpenIf;
    plain = with_durable_v2(plain, 0xB1, 0);
    auto none = a->create(plain, co);
    ASSERT_TRUE(none.ok()) << status_name(none.status);
    EXPECT_EQ(none.body.file_id, first.body.file_id);
    EXPECT_EQ(none.body.oplock_level, oplock_level::kNone);
    EXPECT_FALSE(lease_of(none.body));
    EXPECT_EQ(none.body.contexts.find(Bytes(create_context_name::kDurableHandleRequestV2)),
              nullptr);
    auto again = a->create(r, co);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(lease_of(again.body)->lease_state, kRwh);
    EXPECT_NE(again.body.contexts.find(Bytes(create_context_name::kDurableHandleRequestV2)),
              nullptr);
    EXPECT_TRUE(a->close(first.body.file_id).ok());
}

TEST_F(E2eLease, ReplayOfAPendingCreateIsToldToRetry) {
    auto holder = login(12);
    auto a = login(13);
    auto held = holder->create(lease_req("replay-pending.dat", 0xC0, kRwh));
    ASSERT_TRUE(held.ok()) << status_name(held.status);
    // A's CREATE breaks the holder's WRITE caching and waits for the acknowledgment.
    CreateRequest r = with_durable_v2(lease_req("replay-pending.dat", 0xC1, kRwh), 0xC2, 0);
    auto mid = a->send(Command::Create, r);
    ASSERT_TRUE(mid.ok());
    auto n = expect_lease_break(*holder);
    EXPECT_EQ(n.new_lease_state, kRh);
    ASSERT_EQ(a->wait_reply(*mid, /*return_interim=*/true).status, NtStatus::Pending);
    // The replay must not open the file a second time while the original is in progress
    // (MS-SMB2 3.3.5.9.10): FILE_NOT_AVAILABLE, at once, and the client retries.
    CallOptions co;
    co.extra_flags = flags::kReplayOperation;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(a->create(r, co).status, NtStatus::FileNotAvailable);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    // Without the replay flag it is refused the same way.
    EXPECT_EQ(a->create(r).status, NtStatus::FileNotAvailable);

    LeaseBreakAcknowledgment ack;
    ack.lease_key = guid(0xC0);
    ack.lease_state = kRh;
    ASSERT_TRUE(holder->call(Command::OplockBreak, ack).ok());
    auto done = a->wait_reply(*mid);
    ASSERT_TRUE(done.ok()) << status_name(done.status);
    auto body = CreateResponse::parse(done.msg);
    ASSERT_TRUE(body.ok());
    // Now the replay gets the open the original made.
    auto replayed = a->create(r, co);
    ASSERT_TRUE(replayed.ok()) << status_name(replayed.status);
    EXPECT_EQ(replayed.body.file_id, body->file_id);
    EXPECT_TRUE(a->close(body->file_id).ok());
    EXPECT_TRUE(holder->close(held.body.file_id).ok());
}

TEST_F(E2eLease, RenameWaitsForOtherLeasesToGiveUpHandleCaching) {
    auto a = login(5);
    auto b = login(6);
    auto ra = lease_req("rename-src.dat", 0x51, kRh);
    ra.desired_access |= am::kDelete;
    auto ca = a->create(ra);
    ASSERT_TRUE(ca.ok()) << status_name(ca.status);
    auto cb = b->create(lease_req("rename-src.dat", 0x61, kRh));
    ASSERT_TRUE(cb.ok()) << status_name(cb.status);
    ASSERT_EQ(lease_of(cb.body)->lease_state, kRh);

    // MS-FSA 2.1.5.15.12: B loses HANDLE caching (A, the renamer, keeps its lease) and the
    // rename waits for B's acknowledgment (smbtorture smb2.lease.rename_wait).
    FileRenameInfo ren;
    ren.file_name = "rename-dst.dat";
    ByteVector buf;
    ByteWriter bw(buf);
    ren.encode(bw);
    SetInfoRequest q;
    q.file_info_class = file_info_class::kFileRenameInformation;
    q.buffer = buf;
    q.file_id = ca.body.file_id;
    auto mid = a->send(Command::SetInfo, q);
    ASSERT_TRUE(mid.ok());
    auto n = expect_lease_break(*b);
    EXPECT_EQ(n.lease_key, guid(0x61));
    EXPECT_EQ(n.current_lease_state, kRh);
    EXPECT_EQ(n.new_lease_state, ls::kReadCaching);
    EXPECT_EQ(n.flags, lease_break::kFlagAckRequired);
    // Not renamed yet.
    CreateRequest probe;
    probe.name = "rename-dst.dat";
    probe.desired_access = am::kFileReadAttributes;
    probe.share_access = share_access::kAll;
    probe.create_disposition = create_disposition::kOpen;
    EXPECT_EQ(b->create(probe).status, NtStatus::ObjectNameNotFound);

    LeaseBreakAcknowledgment ack;
    ack.lease_key = guid(0x61);
    ack.lease_state = ls::kReadCaching;
    ASSERT_TRUE(b->call(Command::OplockBreak, ack).ok());
    auto r = a->wait_reply(*mid);
    EXPECT_EQ(r.status, NtStatus::Success);
    auto renamed = b->create(probe);
    ASSERT_TRUE(renamed.ok()) << status_name(renamed.status);
    EXPECT_TRUE(b->close(renamed.body.file_id).ok());
    EXPECT_TRUE(a->close(ca.body.file_id).ok());
    EXPECT_TRUE(b->close(cb.body.file_id).ok());
}

// MS-FSA 2.1.5.15.12: a rename over a file that another client keeps open only for its HANDLE
// cache breaks that caching and waits; the holder closes, and the replace goes ahead. A holder
// that acknowledges but keeps its handle makes the replace fail with ACCESS_DENIED.
TEST_F(E2eLease, RenameOverAFileBreaksItsHandleCachingAndWaits) {
    auto a = login(0x40);
    auto b = login(0x41);
    auto rename_to = [&](FileId fid, const char* name) {
        FileRenameInfo ren;
        ren.file_name = name;
        ren.replace_if_exists = true;
        ByteVector buf;
        ByteWriter bw(buf);
        ren.encode(bw);
        SetInfoRequest q;
        q.file_info_class = file_info_class::kFileRenameInformation;
        q.buffer = buf;
        q.file_id = fid;
        return a->send(Command::SetInfo, q);
    };
    for (const bool holder_closes : {true, false}) {
        SCOPED_TRACE(holder_closes ? "holder closes" : "holder keeps its handle");
        auto src = a->open("replace-src.dat", kRw | am::kDelete, create_disposition::kOverwriteIf);
        ASSERT_TRUE(src.ok()) << status_name(src.status);
        auto held = b->create(lease_req("replace-dst.dat", 0x70 + holder_closes, kRh));
        ASSERT_TRUE(held.ok()) << status_name(held.status);
        ASSERT_EQ(lease_of(held.body)->lease_state, kRh);

        auto mid = rename_to(src.body.file_id, "replace-dst.dat");
        ASSERT_TRUE(mid.ok());
        auto n = expect_lease_break(*b);
        EXPECT_EQ(n.lease_key, guid(0x70 + holder_closes));
        EXPECT_EQ(n.new_lease_state, ls::kReadCaching);
        if (holder_closes) {
            ASSERT_TRUE(b->close(held.body.file_id).ok());
            EXPECT_EQ(a->wait_reply(*mid).status, NtStatus::Success);
            EXPECT_EQ(b->open("replace-src.dat", am::kFileReadAttributes, create_disposition::kOpen)
                          .status,
                      NtStatus::ObjectNameNotFound);
        } else {
            LeaseBreakAcknowledgment ack;
            ack.lease_key = guid(0x70 + holder_closes);
            ack.lease_state = ls::kReadCaching;
            ASSERT_TRUE(b->call(Command::OplockBreak, ack).ok());
            EXPECT_EQ(a->wait_reply(*mid).status, NtStatus::AccessDenied);
            EXPECT_TRUE(b->close(held.body.file_id).ok());
        }
        EXPECT_TRUE(a->close(src.body.file_id).ok());
    }
}

TEST_F(E2eLease, LeaseBreakGoesToTheClientsOldestConnection) {
    auto older = login(7);
    auto younger = login(7);  // the same ClientGuid
    auto other = login(8);
    auto co = older->create(lease_req("route-older.dat", 0x70, kRwh));
    ASSERT_TRUE(co.ok()) << status_name(co.status);
    auto cy = younger->create(lease_req("route.dat", 0x71, kRwh));
    ASSERT_TRUE(cy.ok()) << status_name(cy.status);
    ASSERT_EQ(lease_of(cy.body)->lease_state, kRwh);

    // MS-SMB2 3.3.4.7: the break of the lease made on the younger connection goes out on the
    // client's oldest one (Windows; smbtorture smb2.lease.v2_complex1).
    CreateRequest plain;
    plain.name = "route.dat";
    plain.desired_access = kRw;
    plain.share_access = share_access::kAll;
    plain.create_disposition = create_disposition::kOpen;
    auto mid = other->send(Command::Create, plain);
    ASSERT_TRUE(mid.ok());
    auto n = expect_lease_break(*older);
    EXPECT_EQ(n.lease_key, guid(0x71));
    EXPECT_EQ(n.new_lease_state, kRh);
    EXPECT_FALSE(younger->receive_raw(200ms).ok());
    LeaseBreakAcknowledgment ack;
    ack.lease_key = guid(0x71);
    ack.lease_state = kRh;
    ASSERT_TRUE(younger->call(Command::OplockBreak, ack).ok());
    auto r = other->wait_reply(*mid);
    ASSERT_EQ(r.status, NtStatus::Success);
    auto body = CreateResponse::parse(r.msg);
    ASSERT_TRUE(body.ok());
    EXPECT_TRUE(other->close(body->file_id).ok());
    EXPECT_TRUE(younger->close(cy.body.file_id).ok());
    EXPECT_TRUE(older->close(co.body.file_id).ok());
}

}  // namespace
}  // namespace daxsmbd::client
