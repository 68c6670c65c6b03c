// End-to-end: the abuse limits (architecture.md "Limits on everything a client can make the
// server hold"; README "Limits"). Each test sets one limit small, exceeds it, checks the status
// or the closed connection, and checks that another client is still served.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/change_notify.h"
#include "protocol/echo.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/unit/server/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
using namespace std::chrono_literals;
namespace am = protocol::access_mask;

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
