// End-to-end: the abuse limits (architecture.md "Limits on everything a client can make the
// server hold"; README "Limits"). Each test sets one limit small, exceeds it, checks the status
// or the closed connection, and checks that another client is still served.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/change_notify.h"
#include "protocol/echo.h"
#include "protocol/lock.h"
#include "protocol/read.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
using namespace std::chrono_literals;
namespace am = protocol::access_mask;
using server::metrics::Limit;

constexpr uint32_t kRw = am::kFileGenericRead | am::kFileGenericWrite | am::kDelete;

TestServer::Options with(std::function<void(server::Config&)> f) {
    TestServer::Options o;
    o.configure = std::move(f);
    return o;
}

std::unique_ptr<Smb2Client> connected(const TestServer& s, ClientOptions o = {}) {
    auto c = std::make_unique<Smb2Client>(o);
    EXPECT_TRUE(c->connect("127.0.0.1", s.port()));
    return c;
}

std::unique_ptr<Smb2Client> login(const TestServer& s, ClientOptions o = {}) {
    auto c = connected(s, o);
    EXPECT_STATUS(c->negotiate(), NtStatus::Success);
    EXPECT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
    return c;
}

// A client that gets through a whole exchange: the server still serves others.
void expect_served(const TestServer& s) {
    auto c = login(s);
    auto f = c->open("served.txt", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(f, NtStatus::Success);
    EXPECT_STATUS(c->close(f.body.file_id), NtStatus::Success);
}

TEST(E2eLimits, ConnectionsTotal) {
    TestServer s(with([](server::Config& c) { c.global.max_connections = 2; }));
    ASSERT_TRUE(s.ok()) << s.error();
    auto a = login(s);
    auto b = connected(s);
    EXPECT_STATUS(b->negotiate(), NtStatus::Success);
    // The third connection is accepted by the kernel and closed by the server at once.
    auto third = connected(s);
    EXPECT_EQ(third->wait_closed(5s), Smb2Client::PeerState::Closed);
    EXPECT_EQ(s.server().limit_hits.count(Limit::MaxConnectionsTotal), 1u);
    // The two admitted clients go on working.
    EXPECT_STATUS(a->echo(), NtStatus::Success);
    auto f = a->open("total.txt", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(f, NtStatus::Success);
    EXPECT_STATUS(a->close(f.body.file_id), NtStatus::Success);
    EXPECT_STATUS(b->session_setup("alice", "pw"), NtStatus::Success);
}

TEST(E2eLimits, ConnectionsPerAddress) {
    TestServer s(with([](server::Config& c) { c.global.max_connections_per_address = 1; }));
    ASSERT_TRUE(s.ok()) << s.error();
    ClientOptions from1;
    from1.source_address = "127.0.0.1";
    auto a = login(s, from1);
    auto second = connected(s, from1);
    EXPECT_EQ(second->wait_closed(5s), Smb2Client::PeerState::Closed);
    // Another address is not affected, and the first client still works.
    ClientOptions from2;
    from2.source_address = "127.0.0.2";
    auto other = login(s, from2);
    EXPECT_TRUE(other->session_valid());
    EXPECT_STATUS(other->echo(), NtStatus::Success);
    EXPECT_STATUS(a->echo(), NtStatus::Success);
}

TEST(E2eLimits, SessionsPerConnection) {
    TestServer s(with([](server::Config& c) { c.global.max_sessions_per_connection = 2; }));
    ASSERT_TRUE(s.ok()) << s.error();
    auto c = connected(s);
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    const uint64_t first = c->session_id();
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);  // a second session
    EXPECT_NE(c->session_id(), first);
    // A third new session on the same connection is refused; the connection stays up.
    EXPECT_STATUS(c->session_setup("alice", "pw"), NtStatus::InsufficientResources);
    EXPECT_EQ(s.server().limit_hits.count(Limit::MaxSessionsPerConnection), 1u);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
    expect_served(s);
}

TEST(E2eLimits, OpensPerSession) {
    TestServer s(with([](server::Config& c) { c.global.max_opens_per_session = 2; }));
    ASSERT_TRUE(s.ok()) << s.error();
    auto c = login(s);
    auto f1 = c->open("o1.txt", kRw, create_disposition::kOverwriteIf);
    auto f2 = c->open("o2.txt", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(f1, NtStatus::Success);
    ASSERT_STATUS(f2, NtStatus::Success);
    EXPECT_STATUS(c->open("o3.txt", kRw, create_disposition::kOverwriteIf),
                  NtStatus::InsufficientResources);
    EXPECT_EQ(s.server().limit_hits.count(Limit::MaxOpensPerSession), 1u);
    EXPECT_EQ(s.server().limit_hits.count(Limit::MaxTreeConnectsPerSession), 0u);
    // Refused before anything was created.
    struct stat st;
    EXPECT_NE(::stat((s.share_dir() + "/o3.txt").c_str(), &st), 0);
    // Another session is counted on its own.
    expect_served(s);
    // Closing one makes room again.
    EXPECT_STATUS(c->close(f1.body.file_id), NtStatus::Success);
    auto f3 = c->open("o3.txt", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(f3, NtStatus::Success);
    EXPECT_STATUS(c->close(f3.body.file_id), NtStatus::Success);
    EXPECT_STATUS(c->close(f2.body.file_id), NtStatus::Success);
}

TEST(E2eLimits, TreeConnectsPerSession) {
    TestServer s(with([](server::Config& c) { c.global.max_trees_per_session = 2; }));
    ASSERT_TRUE(s.ok()) << s.error();
    auto c = login(s);  // the first tree
    const uint32_t first = c->tree_id();
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);  // the second
    const uint32_t second = c->tree_id();
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::InsufficientResources);
    EXPECT_EQ(s.server().limit_hits.count(Limit::MaxTreeConnectsPerSession), 1u);
    // The session and its trees keep working.
    c->set_tree_id(first);
    auto f = c->open("trees.txt", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(f, NtStatus::Success);
    EXPECT_STATUS(c->close(f.body.file_id), NtStatus::Success);
    // Another session counts its own trees.
    expect_served(s);
    // A disconnected tree makes room again.
    c->set_tree_id(second);
    ASSERT_STATUS(c->tree_disconnect(), NtStatus::Success);
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
}

TEST(E2eLimits, LocksPerOpen) {
    TestServer s(with([](server::Config& c) { c.global.max_locks_per_open = 3; }));
    ASSERT_TRUE(s.ok()) << s.error();
    auto c = login(s);
    auto f = c->open("locks.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(f, NtStatus::Success);
    auto lock = [&](FileId id, std::vector<LockElement> els) {
        LockRequest r;
        r.file_id = id;
        r.locks = std::move(els);
        return c->lock(r);
    };
    constexpr uint32_t kExcl = lock_flags::kExclusiveLock | lock_flags::kFailImmediately;
    ASSERT_STATUS(lock(f.body.file_id, {{0, 1, kExcl}, {10, 1, kExcl}}), NtStatus::Success);
    // Two more in one request would make four: refused as a whole.
    EXPECT_STATUS(lock(f.body.file_id, {{20, 1, kExcl}, {30, 1, kExcl}}),
                  NtStatus::InsufficientResources);
    ASSERT_STATUS(lock(f.body.file_id, {{20, 1, kExcl}}), NtStatus::Success);
    // The fourth, immediate or blocking, is refused; nothing of the refused requests was kept.
    EXPECT_STATUS(lock(f.body.file_id, {{40, 1, kExcl}}), NtStatus::InsufficientResources);
    EXPECT_STATUS(lock(f.body.file_id, {{40, 1, lock_flags::kExclusiveLock}}),
                  NtStatus::InsufficientResources);
    EXPECT_STATUS(lock(f.body.file_id, {{30, 1, lock_flags::kUnlock}}), NtStatus::RangeNotLocked);
    // Another open of the same file has its own allowance; the held locks still hold.
    auto g = c->open("locks.bin", kRw, create_disposition::kOpen);
    ASSERT_STATUS(g, NtStatus::Success);
    EXPECT_STATUS(lock(g.body.file_id, {{0, 1, kExcl}}), NtStatus::LockNotGranted);
    EXPECT_STATUS(lock(g.body.file_id, {{100, 1, kExcl}, {101, 1, kExcl}, {102, 1, kExcl}}),
                  NtStatus::Success);
    // An unlock makes room again.
    ASSERT_STATUS(lock(f.body.file_id, {{0, 1, lock_flags::kUnlock}}), NtStatus::Success);
    EXPECT_STATUS(lock(f.body.file_id, {{40, 1, kExcl}}), NtStatus::Success);
    EXPECT_STATUS(c->close(g.body.file_id), NtStatus::Success);
    EXPECT_STATUS(c->close(f.body.file_id), NtStatus::Success);
    expect_served(s);
}

// Polls `done` until it holds or `limit` passes (waiting for the server, not timing it).
template <class F>
bool eventually(F done, std::chrono::seconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

TEST(E2eLimits, BytesInFlightPerConnection) {
    constexpr uint32_t kIo = 65536;
    constexpr uint64_t kCap = 256 * 1024;
    TestServer s(with([](server::Config& c) {
        c.global.max_io_size = kIo;
        c.global.max_bytes_in_flight = kCap;
    }));
    ASSERT_TRUE(s.ok()) << s.error();
    // 32 MiB to read: far more than the socket buffers between server and client hold.
    constexpr int kReads = 512;
    {
        int fd = ::open((s.share_dir() + "/big.bin").c_str(), O_CREAT | O_WRONLY, 0644);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::ftruncate(fd, off_t(kReads) * kIo), 0);
        ::close(fd);
    }
    ClientOptions greedy;
    greedy.credit_target = 2048;
    greedy.receive_buffer = 64 * 1024;
    greedy.timeout = std::chrono::seconds(30);
    auto a = login(s, greedy);
    auto f = a->open("big.bin", am::kFileGenericRead, create_disposition::kOpen);
    ASSERT_STATUS(f, NtStatus::Success);
    ASSERT_GE(a->credits(), uint32_t(kReads));
    // Pipelined READs, none of their responses read yet: the server's sends block, its
    // in-flight bytes reach the cap, and it stops reading this connection.
    std::vector<uint64_t> mids;
    for (int i = 0; i < kReads; ++i) {
        ReadRequest r;
        r.file_id = f.body.file_id;
        r.offset = uint64_t(i) * kIo;
        r.length = kIo;
        auto mid = a->send(Command::Read, r);
        ASSERT_TRUE(mid) << i;
        mids.push_back(*mid);
    }
    auto& bp = s.server().backpressure();
    ASSERT_TRUE(eventually([&] { return bp.pauses.load() > 0; }, 20s));
    // Meanwhile another client is served in full.
    auto b = login(s);
    auto g = b->open("other.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(g, NtStatus::Success);
    auto data = pattern(kIo, 7);
    EXPECT_STATUS(b->write(g.body.file_id, 0, data), NtStatus::Success);
    auto back = b->read(g.body.file_id, 0, kIo);
    ASSERT_STATUS(back, NtStatus::Success);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), back.body.data.begin(), back.body.data.end()));
    EXPECT_STATUS(b->echo(), NtStatus::Success);
    // The throttled client is slowed down, not broken: every READ completes in full.
    for (int i = 0; i < kReads; ++i) {
        auto raw = a->wait_reply(mids[size_t(i)]);
        ASSERT_TRUE(raw.ok()) << i << ": " << describe(raw);
        auto rr = ReadResponse::parse(raw.msg);
        ASSERT_TRUE(rr) << i;
        EXPECT_EQ(rr->data.size(), kIo) << i;
    }
    EXPECT_STATUS(a->echo(), NtStatus::Success);
    // A frame is read only while the connection is under the cap: at most one frame (a READ
    // request and the response it asks for) above it.
    EXPECT_LE(bp.peak_in_flight.load(), kCap + kIo + 4096);
    EXPECT_STATUS(a->close(f.body.file_id), NtStatus::Success);
}

ChangeNotifyRequest notify_on(FileId dir) {
    ChangeNotifyRequest n;
    n.file_id = dir;
    n.output_buffer_length = 4096;
    n.completion_filter = completion_filter::kFileName | completion_filter::kDirName;
    return n;
}

TEST(E2eLimits, AsyncRequestsPerConnection) {
    TestServer s(with([](server::Config& c) { c.global.max_async_per_connection = 1; }));
    ASSERT_TRUE(s.ok()) << s.error();
    ::mkdir((s.share_dir() + "/watched").c_str(), 0755);
    auto open_dir = [](Smb2Client& c) {
        auto d = c.open("watched", am::kFileListDirectory | am::kSynchronize,
                        create_disposition::kOpen, create_options::kDirectoryFile);
        EXPECT_STATUS(d, NtStatus::Success);
        return d.body.file_id;
    };
    auto c = login(s);
    FileId dir = open_dir(*c);
    CallOptions co;
    co.payload = 4096;
    auto first = c->send(Command::ChangeNotify, notify_on(dir), co);
    ASSERT_TRUE(first);
    auto interim = c->wait_reply(*first, true);
    ASSERT_STATUS(interim, NtStatus::Pending);
    // The second request that would go async is refused; the first one still waits.
    auto second = c->send(Command::ChangeNotify, notify_on(dir), co);
    ASSERT_TRUE(second);
    EXPECT_STATUS(c->wait_reply(*second), NtStatus::InsufficientResources);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
    // A blocking LOCK that has to wait counts the same way (pending CHANGE_NOTIFYs and blocking
    // locks are both bounded by this limit).
    auto f1 = c->open("locked.bin", kRw, create_disposition::kOverwriteIf);
    auto f2 = c->open("locked.bin", kRw, create_disposition::kOpen);
    ASSERT_STATUS(f1, NtStatus::Success);
    ASSERT_STATUS(f2, NtStatus::Success);
    LockRequest held;
    held.file_id = f1.body.file_id;
    held.locks = {LockElement{0, 10, lock_flags::kExclusiveLock | lock_flags::kFailImmediately}};
    ASSERT_STATUS(c->lock(held), NtStatus::Success);
    LockRequest waits;
    waits.file_id = f2.body.file_id;
    waits.locks = {LockElement{0, 10, lock_flags::kExclusiveLock}};
    EXPECT_STATUS(c->lock(waits), NtStatus::InsufficientResources);
    EXPECT_STATUS(c->close(f2.body.file_id), NtStatus::Success);
    EXPECT_STATUS(c->close(f1.body.file_id), NtStatus::Success);

    // Another connection has its own allowance.
    auto other = login(s);
    FileId other_dir = open_dir(*other);
    auto o = other->send(Command::ChangeNotify, notify_on(other_dir), co);
    ASSERT_TRUE(o);
    auto o_interim = other->wait_reply(*o, true);
    ASSERT_STATUS(o_interim, NtStatus::Pending);
    ASSERT_TRUE(other->cancel(*o, o_interim.header.async_id));
    EXPECT_STATUS(other->wait_reply(*o), NtStatus::Cancelled);

    // Once the first request ends, a new one may go async again.
    ASSERT_TRUE(c->cancel(*first, interim.header.async_id));
    EXPECT_STATUS(c->wait_reply(*first), NtStatus::Cancelled);
    auto third = c->send(Command::ChangeNotify, notify_on(dir), co);
    ASSERT_TRUE(third);
    auto third_interim = c->wait_reply(*third, true);
    ASSERT_STATUS(third_interim, NtStatus::Pending);
    ASSERT_TRUE(c->cancel(*third, third_interim.header.async_id));
    EXPECT_STATUS(c->wait_reply(*third), NtStatus::Cancelled);
}

TEST(E2eLimits, CreditsNeverGrowPastTheMaximum) {
    TestServer s(with([](server::Config& c) { c.global.max_credits = 40; }));
    ASSERT_TRUE(s.ok()) << s.error();
    ClientOptions greedy;
    greedy.credit_target = 5000;  // every request asks for thousands
    auto c = login(s, greedy);
    for (int i = 0; i < 20; ++i) {
        ASSERT_STATUS(c->echo(), NtStatus::Success);
        EXPECT_LE(c->credits(), 40u);
    }
    EXPECT_EQ(c->credits(), 40u);  // it got what the limit allows
    expect_served(s);
}

TEST(E2eLimits, MessageSize) {
    TestServer s(with([](server::Config& c) {
        c.global.max_io_size = 65536;
        c.global.max_message_size = 65536 + 4096;
    }));
    ASSERT_TRUE(s.ok()) << s.error();
    auto c = login(s);
    // A write of the whole max io size fits.
    std::vector<std::byte> data(65536, std::byte{0x5a});
    auto f = c->open("big.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(f, NtStatus::Success);
    EXPECT_STATUS(c->write(f.body.file_id, 0, data), NtStatus::Success);
    // A frame above the limit closes the connection before its body is read.
    std::vector<std::byte> huge(65536 + 4097, std::byte{0});
    ASSERT_TRUE(c->send_frame(huge));
    EXPECT_EQ(c->wait_closed(5s), Smb2Client::PeerState::Closed);
    expect_served(s);
}

TEST(E2eLimits, CompoundLength) {
    TestServer s(with([](server::Config& c) { c.global.max_compound_length = 2; }));
    ASSERT_TRUE(s.ok()) << s.error();
    auto c = login(s);
    auto two =
        c->compound().add(Command::Echo, EchoRequest{}).add(Command::Echo, EchoRequest{}).run();
    ASSERT_EQ(two.size(), 2u);
    EXPECT_TRUE(two[0].ok());
    EXPECT_TRUE(two[1].ok());
    auto three = c->compound()
                     .add(Command::Echo, EchoRequest{})
                     .add(Command::Echo, EchoRequest{})
                     .add(Command::Echo, EchoRequest{})
                     .run();
    ASSERT_EQ(three.size(), 3u);
    for (auto& r : three)
        EXPECT_FALSE(r.from_server);
    EXPECT_FALSE(c->echo().from_server);  // the connection is gone
    expect_served(s);
}

TEST(E2eLimits, AuthenticationTime) {
    TestServer s(with([](server::Config& c) { c.global.auth_timeout_s = 1; }));
    ASSERT_TRUE(s.ok()) << s.error();
    auto authed = login(s);
    auto idle = connected(s);
    ASSERT_STATUS(idle->negotiate(), NtStatus::Success);
    // The watchdog looks every 2 s; the unauthenticated connection is closed by then.
    EXPECT_EQ(idle->wait_closed(10s), Smb2Client::PeerState::Closed);
    // The authenticated one, older than the timeout too, is kept.
    EXPECT_STATUS(authed->echo(), NtStatus::Success);
    expect_served(s);
}

}  // namespace
}  // namespace daxsmbd::client
