// End-to-end test of configuration reload (Server::reload, what SIGHUP and daxsmbd-admin reload
// apply): shares added, removed and changed while clients stay connected, and a reload that
// cannot be applied changing nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>

#include "protocol/access_mask.h"
#include "server/metrics/registry.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;

bool has_line(const server::ReloadOutcome& o, const std::string& part) {
    return std::any_of(o.lines.begin(), o.lines.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

class E2eReload : public ::testing::Test {
  protected:
    void SetUp() override {
        server_ = std::make_unique<TestServer>();
        ASSERT_TRUE(server_->ok()) << server_->error();
        extra_dir_ = server_->dir() + "/extra";
        ASSERT_EQ(::mkdir(extra_dir_.c_str(), 0755), 0);
    }

    void login(Smb2Client& c) {
        ASSERT_TRUE(c.connect("127.0.0.1", server_->port()));
        ASSERT_STATUS(c.negotiate(), NtStatus::Success);
        ASSERT_STATUS(c.session_setup("alice", "pw"), NtStatus::Success);
    }

    // The running configuration with one more writable share `extra`.
    server::Config with_extra() {
        server::Config next = server_->config();
        server::ShareConfig sc;
        sc.name = "extra";
        sc.path = extra_dir_;
        sc.read_only = false;
        next.shares.push_back(sc);
        return next;
    }

    server::Server& server() { return server_->server(); }

    std::unique_ptr<TestServer> server_;
    std::string extra_dir_;
};

TEST_F(E2eReload, AddedShareServesNewTreeConnectsWhileOldOnesWork) {
    Smb2Client first;
    login(first);
    ASSERT_STATUS(first.tree_connect("data"), NtStatus::Success);
    auto cr = first.open("kept.txt", am::kFileGenericRead | am::kFileGenericWrite,
                         create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    EXPECT_STATUS(first.tree_connect("extra"), NtStatus::BadNetworkName);

    auto outcome = server().reload(with_extra());
    ASSERT_TRUE(outcome.applied) << outcome.error;
    EXPECT_TRUE(has_line(outcome, "share [extra] added")) << outcome.lines.front();

    Smb2Client second;
    login(second);
    ASSERT_STATUS(second.tree_connect("extra"), NtStatus::Success);
    auto made = second.open("new.txt", am::kFileGenericWrite, create_disposition::kCreate);
    ASSERT_STATUS(made, NtStatus::Success);
    EXPECT_STATUS(second.write(made.body.file_id, 0, pattern(4096, 1)), NtStatus::Success);
    EXPECT_STATUS(second.close(made.body.file_id), NtStatus::Success);
    struct stat st {};
    EXPECT_EQ(::stat((extra_dir_ + "/new.txt").c_str(), &st), 0);

    // The first connection's tree and open of `data` went through the reload untouched.
    ASSERT_STATUS(first.write(cr.body.file_id, 0, pattern(4096, 2)), NtStatus::Success);
    EXPECT_STATUS(first.close(cr.body.file_id), NtStatus::Success);

    // The added share has a metrics slot of its own.
    auto snap = server().metrics.snapshot();
    EXPECT_TRUE(std::any_of(snap.shares.begin(), snap.shares.end(),
                            [](const auto& s) { return s.name == "extra"; }));
}

TEST_F(E2eReload, RemovedShareEndsItsTreesWithNetworkNameDeleted) {
    ASSERT_TRUE(server().reload(with_extra()).applied);
    Smb2Client c;
    login(c);
    ASSERT_STATUS(c.tree_connect("data"), NtStatus::Success);
    const uint32_t data_tree = c.tree_id();
    ASSERT_STATUS(c.tree_connect("extra"), NtStatus::Success);
    const uint32_t extra_tree = c.tree_id();
    auto held = c.open("held.txt", am::kFileGenericWrite, create_disposition::kOverwriteIf);
    ASSERT_STATUS(held, NtStatus::Success);

    auto outcome = server().reload(server_->config());  // `extra` is gone again
    ASSERT_TRUE(outcome.applied) << outcome.error;
    EXPECT_TRUE(has_line(outcome, "share [extra] removed (1 tree connects ended)"))
        << outcome.lines.front();

    // MS-SMB2 3.3.5.2.11: requests on the ended tree find no tree.
    c.set_tree_id(extra_tree);
    EXPECT_STATUS(c.write(held.body.file_id, 0, pattern(16, 3)), NtStatus::NetworkNameDeleted);
    EXPECT_STATUS(c.tree_connect("extra"), NtStatus::BadNetworkName);
    // Its open was closed: the file is no longer held by the server.
    EXPECT_EQ(server().opens.size(), 0u);
    // The other tree of the same session works on.
    c.set_tree_id(data_tree);
    auto other = c.open("other.txt", am::kFileGenericWrite, create_disposition::kOverwriteIf);
    EXPECT_STATUS(other, NtStatus::Success);
    // A removed share leaves the metrics.
    auto snap = server().metrics.snapshot();
    EXPECT_FALSE(std::any_of(snap.shares.begin(), snap.shares.end(),
                             [](const auto& s) { return s.name == "extra"; }));
}

TEST_F(E2eReload, ChangedShareAppliesToNewTreeConnectsOnly) {
    Smb2Client old_tree;
    login(old_tree);
    ASSERT_STATUS(old_tree.tree_connect("data"), NtStatus::Success);

    server::Config next = server_->config();
    next.shares.at(0).read_only = true;
    auto outcome = server().reload(next);
    ASSERT_TRUE(outcome.applied) << outcome.error;
    EXPECT_TRUE(has_line(outcome, "share [data] changed (read only)")) << outcome.lines.front();

    Smb2Client new_tree;
    login(new_tree);
    ASSERT_STATUS(new_tree.tree_connect("data"), NtStatus::Success);
    EXPECT_STATUS(new_tree.open("w.txt", am::kFileGenericWrite, create_disposition::kOverwriteIf),
                  NtStatus::AccessDenied);
    // The tree connected before the reload keeps the settings it connected with.
    auto w = old_tree.open("w.txt", am::kFileGenericWrite, create_disposition::kOverwriteIf);
    EXPECT_STATUS(w, NtStatus::Success);
}

TEST_F(E2eReload, ShareThatCannotBeOpenedRefusesTheWholeReload) {
    server::Config next = with_extra();
    server::ShareConfig broken;
    broken.name = "broken";
    broken.path = server_->dir() + "/does-not-exist";
    next.shares.push_back(broken);
    next.shares.at(0).read_only = true;  // would change `data`
    auto outcome = server().reload(next);
    EXPECT_FALSE(outcome.applied);
    EXPECT_NE(outcome.error.find("share [broken]: cannot open path"), std::string::npos)
        << outcome.error;

    // Nothing of it applied: no `extra`, `data` still writable.
    Smb2Client c;
    login(c);
    EXPECT_STATUS(c.tree_connect("extra"), NtStatus::BadNetworkName);
    ASSERT_STATUS(c.tree_connect("data"), NtStatus::Success);
    EXPECT_STATUS(c.open("w.txt", am::kFileGenericWrite, create_disposition::kOverwriteIf),
                  NtStatus::Success);
}

TEST_F(E2eReload, ReloadOfTheSameConfigurationChangesNothing) {
    auto outcome = server().reload(server_->config());
    ASSERT_TRUE(outcome.applied);
    ASSERT_EQ(outcome.lines.size(), 1u);
    EXPECT_EQ(outcome.lines[0], "nothing changed");
}

}  // namespace
}  // namespace daxsmbd::client
