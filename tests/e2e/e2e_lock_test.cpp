// End-to-end: lock sequence replay detection (MS-SMB2 3.3.5.14, Open.LockSequenceArray) and
// resilient handles (3.3.5.15.9, FSCTL_LMR_REQUEST_RESILIENCY), in the order smbtorture's
// smb2.lock.replay_broken_windows checks them against Windows.
#include <gtest/gtest.h>

#include <memory>

#include "protocol/access_mask.h"
#include "protocol/ioctl.h"
#include "protocol/lock.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;
namespace lf = protocol::lock_flags;

constexpr uint32_t kRw = am::kFileGenericRead | am::kFileGenericWrite | am::kDelete;

class E2eLock : public ::testing::Test {
  protected:
    // Without multichannel, so that ordinary opens ignore lock sequences (MS-SMB2 3.3.5.14);
    // E2eLockMultichannel below checks the other case.
    static void SetUpTestSuite() {
        TestServer::Options o;
        o.configure = [](server::Config& c) { c.global.multi_channel = false; };
        server_ = new TestServer(o);
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override {
        ASSERT_TRUE(server_->ok()) << server_->error();
        c_ = std::make_unique<Smb2Client>();
        ASSERT_TRUE(c_->connect("127.0.0.1", server_->port()));
        ASSERT_STATUS(c_->negotiate(), NtStatus::Success);
        ASSERT_STATUS(c_->session_setup("alice", "pw"), NtStatus::Success);
        ASSERT_STATUS(c_->tree_connect("data"), NtStatus::Success);
        auto f = c_->open(::testing::UnitTest::GetInstance()->current_test_info()->name(), kRw,
                          create_disposition::kOverwriteIf);
        ASSERT_STATUS(f, NtStatus::Success);
        file_ = f.body.file_id;
    }
    void TearDown() override {
        if (c_) (void)c_->close(file_);
    }

    // One element on [0, 100) with the given flags and LockSequence (index << 4 | number).
    NtStatus lock(uint32_t sequence, uint16_t flags) {
        LockRequest r;
        r.file_id = file_;
        r.lock_sequence = sequence;
        r.locks = {LockElement{0, 100, flags}};
        auto reply = c_->lock(r);
        EXPECT_TRUE(reply.from_server);
        return reply.status;
    }
    NtStatus lock_x(uint32_t sequence) {
        return lock(sequence, lf::kExclusiveLock | lf::kFailImmediately);
    }
    NtStatus unlock(uint32_t sequence) { return lock(sequence, lf::kUnlock); }

    Reply<IoctlResponse> request_resiliency(uint32_t timeout_ms, size_t size = 8) {
        IoctlRequest r;
        r.ctl_code = fsctl::kLmrRequestResiliency;
        r.file_id = file_;
        ByteVector in;
        ByteWriter w(in);
        NetworkResiliencyRequest{timeout_ms}.encode(w);
        in.resize(size);
        r.input = in;
        return c_->ioctl(r);
    }

    static TestServer* server_;
    std::unique_ptr<Smb2Client> c_;
    FileId file_{};
};

TestServer* E2eLock::server_ = nullptr;

TEST_F(E2eLock, SequenceIsIgnoredOnAnOrdinaryOpen) {
    // No multichannel, no durable handles: a repeated request is processed again.
    EXPECT_EQ(lock_x(0x11), NtStatus::Success);
    EXPECT_EQ(lock_x(0x11), NtStatus::LockNotGranted);
    EXPECT_EQ(unlock(0x11), NtStatus::Success);
    EXPECT_EQ(unlock(0x11), NtStatus::RangeNotLocked);
}

// MS-SMB2 3.3.5.14: a server that offers multichannel checks the lock sequence of every 3.x
// open, resilient or not: a repeated LOCK with the same sequence succeeds without being
// processed again.
TEST(E2eLockMultichannel, OrdinaryOpenDetectsReplays) {
    TestServer server;
    ASSERT_TRUE(server.ok()) << server.error();
    Smb2Client c;
    ASSERT_TRUE(c.connect("127.0.0.1", server.port()));
    ASSERT_STATUS(c.negotiate(), NtStatus::Success);
    ASSERT_TRUE(c.negotiate_response().capabilities & global_caps::kMultiChannel);
    ASSERT_STATUS(c.session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(c.tree_connect("data"), NtStatus::Success);
    auto f = c.open("replay-mc", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(f, NtStatus::Success);
    auto lock = [&](uint32_t sequence, uint16_t flags) {
        LockRequest r;
        r.file_id = f.body.file_id;
        r.lock_sequence = sequence;
        r.locks = {LockElement{0, 100, flags}};
        return c.lock(r).status;
    };
    const uint16_t x = lf::kExclusiveLock | lf::kFailImmediately;
    EXPECT_EQ(lock(0x11, x), NtStatus::Success);
    EXPECT_EQ(lock(0x11, x), NtStatus::Success) << "a replay is answered, not processed";
    EXPECT_EQ(lock(0x12, x), NtStatus::LockNotGranted) << "a new sequence is processed";
    (void)c.close(f.body.file_id);
}

TEST_F(E2eLock, ResilientOpenDetectsReplays) {
    ASSERT_STATUS(request_resiliency(1000), NtStatus::Success);
    // Bucket 0 is not a bucket: no replay detection.
    EXPECT_EQ(lock_x(0x001), NtStatus::Success);
    EXPECT_EQ(lock_x(0x001), NtStatus::LockNotGranted);
    EXPECT_EQ(unlock(0x001), NtStatus::Success);
    EXPECT_EQ(unlock(0x001), NtStatus::RangeNotLocked);

    // Bucket 1, number 1: granted, then every request with the same number is a replay and
    // succeeds without being processed, the unlock included.
    EXPECT_EQ(lock_x(0x011), NtStatus::Success);
    EXPECT_EQ(lock_x(0x011), NtStatus::Success);
    EXPECT_EQ(unlock(0x011), NtStatus::Success);
    EXPECT_EQ(lock_x(0x011), NtStatus::Success);
    // Still locked: a new number in the bucket, or another bucket, is processed.
    EXPECT_EQ(lock_x(0x012), NtStatus::LockNotGranted);
    EXPECT_EQ(lock_x(0x012), NtStatus::LockNotGranted);  // a failure is not recorded
    EXPECT_EQ(lock_x(0x021), NtStatus::LockNotGranted);
    // Bucket 65 does not exist: processed every time.
    EXPECT_EQ(lock_x(0x411), NtStatus::LockNotGranted);
    EXPECT_EQ(unlock(0x411), NtStatus::Success);
    EXPECT_EQ(unlock(0x411), NtStatus::RangeNotLocked);
    EXPECT_EQ(lock_x(0x411), NtStatus::Success);

    // Bucket 64, the last one: an unlock is replayed as well.
    EXPECT_EQ(lock_x(0x401), NtStatus::LockNotGranted);
    EXPECT_EQ(unlock(0x402), NtStatus::Success);
    EXPECT_EQ(unlock(0x402), NtStatus::Success);  // replay: not RANGE_NOT_LOCKED
    EXPECT_EQ(lock_x(0x402), NtStatus::Success);  // same number: not processed
    EXPECT_EQ(unlock(0x403), NtStatus::RangeNotLocked);
}

TEST_F(E2eLock, ResiliencyRequestIsChecked) {
    // MS-SMB2 3.3.5.15.9: a short NETWORK_RESILIENCY_REQUEST, or a timeout above the maximum
    // (5 minutes), is INVALID_PARAMETER.
    EXPECT_STATUS(request_resiliency(1000, 4), NtStatus::InvalidParameter);
    EXPECT_STATUS(request_resiliency(300'001), NtStatus::InvalidParameter);
    // The open stays an ordinary one after the refusals.
    EXPECT_EQ(lock_x(0x11), NtStatus::Success);
    EXPECT_EQ(lock_x(0x11), NtStatus::LockNotGranted);
    auto ok = request_resiliency(0);
    ASSERT_STATUS(ok, NtStatus::Success);
    EXPECT_EQ(ok.body.ctl_code, fsctl::kLmrRequestResiliency);
    EXPECT_TRUE(ok.body.output.empty());
}

}  // namespace
}  // namespace daxsmbd::client
