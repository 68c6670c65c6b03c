// End-to-end login hardening against the in-process server: anonymous logons only where
// configured and then only to IPC$ and "guest ok" shares; the logon throttle holds back the
// answers to an address with failures without stalling the event loop for anyone else.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Smb2Client> connect_to(TestServer& s, ClientOptions o = {}) {
    auto c = std::make_unique<Smb2Client>(o);
    auto st = c->connect("127.0.0.1", s.port());
    EXPECT_TRUE(st) << status_name(st.status());
    return c;
}

// ---- anonymous and guest -----------------------------------------------------------------------

TEST(E2eAuth, AnonymousIsRefusedByDefault) {
    TestServer server;
    ASSERT_TRUE(server.ok()) << server.error();
    auto c = connect_to(server);
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    EXPECT_STATUS(c->session_setup("", ""), NtStatus::LogonFailure);
    EXPECT_FALSE(c->session_valid());
}

TEST(E2eAuth, AnonymousWithBadUserReachesOnlyIpcAndGuestShares) {
    TestServer::Options o;
    o.configure = [](server::Config& cfg) {
        cfg.global.guest_ok = true;  // map to guest = bad user
        server::ShareConfig pub;
        pub.name = "pub";
        pub.path = cfg.shares.at(0).path;
        pub.guest_ok = true;
        cfg.shares.push_back(pub);
    };
    TestServer server(o);
    ASSERT_TRUE(server.ok()) << server.error();
    auto c = connect_to(server);
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("", ""), NtStatus::Success);
    // [data] is not "guest ok": an anonymous session must not reach it (before this check,
    // `map to guest = bad user` opened every share to anonymous users).
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::AccessDenied);
    EXPECT_STATUS(c->tree_connect("IPC$"), NtStatus::Success);
    EXPECT_STATUS(c->tree_connect("pub"), NtStatus::Success);
    // A real user still reaches [data].
    auto u = connect_to(server);
    ASSERT_STATUS(u->negotiate(), NtStatus::Success);
    ASSERT_STATUS(u->session_setup("alice", "pw"), NtStatus::Success);
    EXPECT_STATUS(u->tree_connect("data"), NtStatus::Success);
}

TEST(E2eAuth, BadUserDoesNotTurnWrongPasswordsIntoGuests) {
    TestServer::Options o;
    o.configure = [](server::Config& cfg) { cfg.global.guest_ok = true; };
    TestServer server(o);
    ASSERT_TRUE(server.ok()) << server.error();
    auto c = connect_to(server);
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    EXPECT_STATUS(c->session_setup("alice", "wrong"), NtStatus::LogonFailure);
    EXPECT_STATUS(c->session_setup("nobody-here", "pw"), NtStatus::LogonFailure);
}

// ---- logon throttle ----------------------------------------------------------------------------

TestServer::Options throttled(std::chrono::milliseconds base) {
    TestServer::Options o;
    o.worker_threads = 1;  // one event loop: a blocked loop would stall every client
    o.configure = [base](server::Config& cfg) {
        cfg.global.logon_failure_delay_ms = unsigned(base.count());
        cfg.global.logon_failure_max_delay_ms = unsigned(base.count()) * 4;
        cfg.global.logon_failure_window_s = 300;
    };
    return o;
}

TEST(E2eAuth, FailuresAreCountedPerAddress) {
    TestServer server(throttled(1ms));
    ASSERT_TRUE(server.ok()) << server.error();
    ClientOptions from2;
    from2.source_address = "127.0.0.2";
    auto c = connect_to(server, from2);
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    EXPECT_STATUS(c->session_setup("alice", "wrong"), NtStatus::LogonFailure);
    EXPECT_STATUS(c->session_setup("mallory", "pw"), NtStatus::LogonFailure);
    auto& t = server.server().logon_throttle();
    const auto now = server::LogonThrottle::Clock::now();
    EXPECT_EQ(t.failures("127.0.0.2", now), 2u);
    EXPECT_EQ(t.failures("127.0.0.1", now), 0u);
    // A success does not clear the count (a guesser with one valid account cannot reset it).
    EXPECT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    EXPECT_EQ(t.failures("127.0.0.2", server::LogonThrottle::Clock::now()), 2u);
}

// The failing client's answer is held back (a long delay: it cannot arrive within the client's
// short timeout), while a client from another address logs on and works at once on the same
// single event loop. Then even a correct password from the throttled address waits.
TEST(E2eAuth, ThrottleHoldsBackOneAddressOnly) {
    TestServer server(throttled(60s));
    ASSERT_TRUE(server.ok()) << server.error();
    ClientOptions from2;
    from2.source_address = "127.0.0.2";
    from2.timeout = 1500ms;
    auto bad = connect_to(server, from2);
    ASSERT_STATUS(bad->negotiate(), NtStatus::Success);
    auto held = bad->session_setup("alice", "wrong");
    EXPECT_FALSE(held.from_server) << "answered: " << status_name(held.status);
    EXPECT_EQ(held.status, local_status::kTimeout);

    auto good = connect_to(server);  // from 127.0.0.1
    ASSERT_STATUS(good->negotiate(), NtStatus::Success);
    ASSERT_STATUS(good->session_setup("alice", "pw"), NtStatus::Success);
    EXPECT_STATUS(good->tree_connect("data"), NtStatus::Success);
    EXPECT_STATUS(good->echo(), NtStatus::Success);

    auto retry = connect_to(server, from2);
    ASSERT_STATUS(retry->negotiate(), NtStatus::Success);
    auto ok_but_held = retry->session_setup("alice", "pw");
    EXPECT_FALSE(ok_but_held.from_server) << "answered: " << status_name(ok_but_held.status);
}

}  // namespace
}  // namespace daxsmbd::client
