// End-to-end test of the control socket (daxsmbd-admin status / close-session): the in-process
// server with its control socket in the test's directory, two clients of two users holding
// files open, then the requests daxsmbd-admin sends, through the same client code.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "protocol/access_mask.h"
#include "server/control/commands.h"
#include "server/control/control_socket.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;
namespace control = server::control;

std::string hex_id(uint64_t id) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(id));
    return buf;
}

// The line of `text` that starts with `prefix` (empty when none does).
std::string line_of(const std::string& text, const std::string& prefix) {
    size_t at = std::string::npos;
    for (size_t pos = 0; (pos = text.find(prefix, pos)) != std::string::npos; ++pos)
        if (pos == 0 || text[pos - 1] == '\n') {
            at = pos;
            break;
        }
    if (at == std::string::npos) return {};
    return text.substr(at, text.find('\n', at) - at);
}

class E2eControl : public ::testing::Test {
  protected:
    void SetUp() override {
        TestServer::Options o;
        o.worker_threads = 2;  // the two clients' connections on two loops
        o.extra_users = {{"bob", "pw2"}};
        server_ = std::make_unique<TestServer>(o);
        ASSERT_TRUE(server_->ok()) << server_->error();
        path_ = server_->dir() + "/run/control";  // a directory that does not exist yet
        std::string error;
        socket_ = control::ControlSocket::start(path_, control::server_commands(server_->server()),
                                                &error);
        ASSERT_TRUE(socket_) << error;
    }

    void TearDown() override {
        socket_.reset();
        server_.reset();
    }

    // Logs `user` on and opens `name` on share data, kept open.
    void hold_open(Smb2Client& c, const std::string& user, const std::string& password,
                   const std::string& name, FileId* fid) {
        ASSERT_TRUE(c.connect("127.0.0.1", server_->port()));
        ASSERT_STATUS(c.negotiate(), NtStatus::Success);
        ASSERT_STATUS(c.session_setup(user, password), NtStatus::Success);
        ASSERT_STATUS(c.tree_connect("data"), NtStatus::Success);
        auto cr = c.open(name, am::kFileGenericRead | am::kFileGenericWrite,
                         create_disposition::kOverwriteIf);
        ASSERT_STATUS(cr, NtStatus::Success);
        *fid = cr.body.file_id;
    }

    control::Reply ask(const std::string& request) { return control::send_request(path_, request); }

    // status until `wanted` is in it (a closed session's connection goes on its own loop); the
    // last report.
    std::string status_with(const std::string& wanted) {
        std::string text;
        for (int i = 0; i < 100; ++i) {
            auto r = ask("status");
            EXPECT_TRUE(r.ok) << r.text;
            text = r.text;
            if (text.find(wanted) != std::string::npos) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return text;
    }

    std::unique_ptr<TestServer> server_;
    std::string path_;
    std::unique_ptr<control::ControlSocket> socket_;
};

TEST_F(E2eControl, TheSocketIsRootOnly) {
    struct stat st {};
    ASSERT_EQ(stat(path_.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(stat((server_->dir() + "/run").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(E2eControl, StatusListsConnectionsSessionsTreesAndOpenFiles) {
    Smb2Client alice, bob;
    FileId a{}, b{};
    hold_open(alice, "alice", "pw", "alice-file.txt", &a);
    hold_open(bob, "bob", "pw2", "sub-bob.txt", &b);
    ByteVector data(4096, std::byte{1});
    ASSERT_STATUS(alice.write(a, 0, data), NtStatus::Success);

    auto r = ask("status");
    ASSERT_TRUE(r.ok) << r.text;
    const std::string& t = r.text;
    EXPECT_NE(t.find("Connections: 2\n"), std::string::npos) << t;
    EXPECT_NE(t.find("Sessions: 2\n"), std::string::npos) << t;
    EXPECT_NE(t.find("Open files: 2\n"), std::string::npos) << t;
    EXPECT_NE(t.find("127.0.0.1"), std::string::npos) << t;
    EXPECT_NE(t.find("dialect 3.1.1"), std::string::npos) << t;
    // Each session with its user, its tree of share data and its id as the client has it.
    EXPECT_NE(line_of(t, "  " + hex_id(alice.session_id()) + "  ").find("alice"), std::string::npos)
        << t;
    EXPECT_NE(line_of(t, "  " + hex_id(bob.session_id()) + "  ").find("bob"), std::string::npos)
        << t;
    EXPECT_NE(t.find("[data]"), std::string::npos) << t;
    // A connection's request lines can be switched on and off by the id status shows first.
    const std::string first = t.substr(t.find("Connections: 2\n") + 15);
    const std::string cid = first.substr(2, first.find(' ', 2) - 2);
    auto on = ask("debug-connection " + cid + " on");
    EXPECT_TRUE(on.ok) << on.text;
    EXPECT_EQ(on.text, "connection " + cid + ": request lines on\n");
    EXPECT_STATUS(alice.write(a, 0, data), NtStatus::Success);  // logged (not captured here)
    EXPECT_TRUE(ask("debug-connection " + cid + " off").ok);
    // Each open with its session and path.
    EXPECT_NE(t.find("session " + hex_id(alice.session_id()) + "  [data] alice-file.txt"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("session " + hex_id(bob.session_id()) + "  [data] sub-bob.txt"),
              std::string::npos)
        << t;
}

TEST_F(E2eControl, CloseSessionEndsItAndLeavesTheOthersServing) {
    Smb2Client alice, bob;
    FileId a{}, b{};
    hold_open(alice, "alice", "pw", "a.txt", &a);
    hold_open(bob, "bob", "pw2", "b.txt", &b);
    const std::string sid = hex_id(alice.session_id());

    auto r = ask("close-session " + sid);
    ASSERT_TRUE(r.ok) << r.text;
    EXPECT_NE(r.text.find("closed session " + sid + " of alice"), std::string::npos) << r.text;

    // alice's open, session and connection are gone; bob is untouched.
    const std::string t = status_with("Connections: 1\n");
    EXPECT_EQ(t.find("alice"), std::string::npos) << t;
    EXPECT_EQ(t.find("a.txt"), std::string::npos) << t;
    EXPECT_NE(t.find("Connections: 1\n"), std::string::npos) << t;
    EXPECT_NE(t.find("Open files: 1\n"), std::string::npos) << t;
    EXPECT_NE(t.find("b.txt"), std::string::npos) << t;
    EXPECT_NE(alice.read(a, 0, 1).status, NtStatus::Success);
    ByteVector data(512, std::byte{2});
    EXPECT_STATUS(bob.write(b, 0, data), NtStatus::Success);

    // Closing it again: there is no such session any more.
    r = ask("close-session " + sid);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.text, "no session " + sid);
}

TEST_F(E2eControl, BadRequestsGetAnErrorAndTheSocketKeepsServing) {
    auto r = ask("frobnicate");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.text.find("unknown command 'frobnicate'"), std::string::npos) << r.text;
    r = ask("close-session");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.text.find("usage: close-session ID"), std::string::npos) << r.text;
    r = ask("close-session alice");
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.text, "'alice' is not a session id");
    r = ask("debug-connection 99999 on");
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.text, "no connection 99999");
    r = ask("debug-connection 1 maybe");
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.text, "usage: debug-connection ID on|off");
    r = ask("status extra");
    EXPECT_FALSE(r.ok);
    r = ask(std::string(8192, 'x'));  // longer than a request may be
    EXPECT_FALSE(r.ok);
    r = ask("status");
    EXPECT_TRUE(r.ok) << r.text;
    EXPECT_NE(r.text.find("Connections: 0\n"), std::string::npos) << r.text;
}

TEST_F(E2eControl, ASecondDaemonDoesNotTakeALiveSocketButReplacesAStaleOne) {
    std::string error;
    auto second = control::ControlSocket::start(path_, {}, &error);
    EXPECT_FALSE(second);
    EXPECT_NE(error.find("another daxsmbd serves"), std::string::npos) << error;
    EXPECT_TRUE(ask("status").ok);  // still the first one's

    // The first one stops (its file goes); a file left as by a crash is replaced.
    socket_.reset();
    struct stat st {};
    EXPECT_NE(stat(path_.c_str(), &st), 0);
    {
        auto crashed = control::ControlSocket::start(path_, {}, &error);
        ASSERT_TRUE(crashed) << error;
        // Leave its file behind: link it away and back, as a daemon killed by SIGKILL would.
        ASSERT_EQ(::link(path_.c_str(), (path_ + ".left").c_str()), 0);
    }
    ASSERT_EQ(::rename((path_ + ".left").c_str(), path_.c_str()), 0);
    socket_ =
        control::ControlSocket::start(path_, control::server_commands(server_->server()), &error);
    ASSERT_TRUE(socket_) << error;
    EXPECT_TRUE(ask("status").ok);
}

}  // namespace
}  // namespace daxsmbd::client
