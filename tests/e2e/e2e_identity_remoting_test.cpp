// Identity remoting on TREE_CONNECT (MS-SMB2 2.2.9.2.1, 3.3.5.7; README "Remoted identity"): a
// session user listed in "identity remoting principals" connects a tree as another identity,
// whose token the stored NT ACL checks of that tree use; everybody else is refused, malformed
// contexts are INVALID_PARAMETER, and a share without "identity remoting" ignores the context.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "auth/access_check.h"
#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "protocol/security_descriptor.h"
#include "protocol/tree_connect.h"
#include "server/server.h"
#include "server/vfs/security_store.h"
#include "server/vfs/unique_fd.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;
namespace cd = protocol::create_disposition;
namespace wk = auth::well_known_sid;

// The remoted user U and a group of it (a domain that does not exist anywhere).
Sid user_u() {
    return Sid::make(5, {21, 1000, 2000, 3000, 1105});
}
Sid group_of_u() {
    return Sid::make(5, {21, 1000, 2000, 3000, 1200});
}
Sid nobody_owner() {
    return Sid::make(5, {21, 1000, 2000, 3000, 500});
}

RemotedIdentityTreeConnectContext remoted_u(bool length_prefixed_names = false) {
    RemotedIdentityTreeConnectContext c;
    c.user = SidAttr{user_u(), 0};
    c.user_name = "u";
    c.domain = "EXAMPLE";
    c.groups = std::vector<SidAttr>{{group_of_u(), se_group::kEnabled | se_group::kMandatory},
                                    {wk::everyone(), se_group::kEnabled | se_group::kMandatory}};
    c.privileges = std::vector<LuidAttr>{};
    c.primary_group = std::vector<SidAttr>{{group_of_u(), 0}};
    c.owner = user_u();
    c.length_prefixed_names = length_prefixed_names;
    return c;
}

class E2eIdentityRemoting : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        TestServer::Options o;
        o.extra_users.push_back({"svc", "svcpw"});
        o.configure = [](server::Config& c) {
            server::ShareConfig remote = c.shares.front();
            remote.name = "remote";
            remote.identity_remoting = true;
            remote.identity_remoting_principals = {"SVC"};  // matched case-insensitively
            c.shares.push_back(remote);
            server::ShareConfig plain = c.shares.front();
            plain.name = "plain";  // no identity remoting
            plain.identity_remoting_principals = {"svc"};
            c.shares.push_back(plain);
        };
        server_ = new TestServer(o);
        if (!server_->ok()) return;
        // Files whose stored DACLs allow reading to exactly one identity each; the mode bits
        // let the server's Unix user read both.
        put_only("only-u.txt", user_u());
        put_only("only-svc.txt", wk::unix_user(::getuid()));
        put_only("only-group-of-u.txt", group_of_u());
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->error(); }

    static void put_only(const std::string& name, const Sid& reader) {
        const std::string path = server_->share_dir() + "/" + name;
        std::ofstream(path) << "data";
        ::chmod(path.c_str(), 0644);
        SecurityDescriptor sd;
        sd.owner = nobody_owner();
        sd.group = nobody_owner();
        Acl acl;
        acl.aces.push_back(Ace::allowed(reader, am::kFileGenericRead));
        sd.set_dacl(acl);
        server::vfs::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        ASSERT_GE(fd.get(), 0);
        ASSERT_TRUE(server::vfs::write_security_descriptor(fd.get(), sd));
    }
    static std::unique_ptr<Smb2Client> login(const char* user, const char* password) {
        auto c = std::make_unique<Smb2Client>();
        EXPECT_TRUE(c->connect("127.0.0.1", server_->port()));
        EXPECT_STATUS(c->negotiate({}), NtStatus::Success);
        EXPECT_STATUS(c->session_setup(user, password), NtStatus::Success);
        return c;
    }
    static NtStatus open_status(Smb2Client& c, const char* name) {
        auto r = c.open(name, am::kFileReadData, cd::kOpen);
        if (r.ok()) c.close(r.body.file_id);
        EXPECT_TRUE(r.from_server);
        return r.status;
    }
    static TestServer* server_;
};
TestServer* E2eIdentityRemoting::server_ = nullptr;

TEST_F(E2eIdentityRemoting, AListedPrincipalActsAsTheRemotedUserOnThatTreeOnly) {
    auto c = login("svc", "svcpw");
    auto t = c->tree_connect("remote", {remoted_u()});
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.body.share_flags & share_flags::kIdentityRemoting);
    const uint32_t remoted_tree = c->tree_id();
    EXPECT_EQ(open_status(*c, "only-u.txt"), NtStatus::Success);
    EXPECT_EQ(open_status(*c, "only-group-of-u.txt"), NtStatus::Success);
    EXPECT_EQ(open_status(*c, "only-svc.txt"), NtStatus::AccessDenied);

    // A second tree of the same SMB session without the context: the service's own identity.
    auto t2 = c->tree_connect("remote");
    ASSERT_STATUS(t2, NtStatus::Success);
    EXPECT_FALSE(t2.body.share_flags & share_flags::kIdentityRemoting);
    EXPECT_NE(c->tree_id(), remoted_tree);
    EXPECT_EQ(open_status(*c, "only-svc.txt"), NtStatus::Success);
    EXPECT_EQ(open_status(*c, "only-u.txt"), NtStatus::AccessDenied);

    // And the first tree still is U's.
    c->set_tree_id(remoted_tree);
    EXPECT_EQ(open_status(*c, "only-u.txt"), NtStatus::Success);
    EXPECT_EQ(open_status(*c, "only-svc.txt"), NtStatus::AccessDenied);
}

// Microsoft's test suite writes UserName and Domain with a u16 length before them.
TEST_F(E2eIdentityRemoting, LengthPrefixedNamesAreAccepted) {
    auto c = login("svc", "svcpw");
    auto t = c->tree_connect("remote", {remoted_u(true)});
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.body.share_flags & share_flags::kIdentityRemoting);
    EXPECT_EQ(open_status(*c, "only-u.txt"), NtStatus::Success);
}

// New objects: the stored descriptor names the context's Owner; on disk they belong to the
// calling service's Unix user (README "Remoted identity").
TEST_F(E2eIdentityRemoting, NewObjectsAreOwnedByTheRemotedOwner) {
    const std::string dir = server_->share_dir() + "/inherit";
    ASSERT_EQ(::mkdir(dir.c_str(), 0777), 0);
    SecurityDescriptor parent;
    parent.owner = nobody_owner();
    parent.group = nobody_owner();
    Acl acl;
    acl.aces.push_back(Ace::allowed(wk::everyone(), am::kFileAllAccess,
                                    ace_flags::kObjectInherit | ace_flags::kContainerInherit));
    parent.set_dacl(acl);
    {
        server::vfs::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        ASSERT_GE(fd.get(), 0);
        ASSERT_TRUE(server::vfs::write_security_descriptor(fd.get(), parent));
    }
    auto ctx = remoted_u();
    ctx.owner = group_of_u();
    auto c = login("svc", "svcpw");
    ASSERT_STATUS(c->tree_connect("remote", {ctx}), NtStatus::Success);
    auto f = c->open("inherit\\new.txt", am::kFileGenericWrite, cd::kCreate);
    ASSERT_STATUS(f, NtStatus::Success);
    c->close(f.body.file_id);
    server::vfs::UniqueFd fd(::open((dir + "/new.txt").c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_GE(fd.get(), 0);
    auto sd = server::vfs::read_security_descriptor(fd.get());
    ASSERT_TRUE(sd && *sd);
    EXPECT_EQ((*sd)->owner, group_of_u());
    EXPECT_EQ((*sd)->group, group_of_u());  // the primary group
    struct stat st {};
    ASSERT_EQ(::fstat(fd.get(), &st), 0);
    EXPECT_EQ(st.st_uid, ::getuid());
}

// Deny-only groups match deny ACEs, never allow ACEs.
TEST_F(E2eIdentityRemoting, DenyOnlyGroupsGrantNothing) {
    auto ctx = remoted_u();
    ctx.groups = std::vector<SidAttr>{{group_of_u(), se_group::kUseForDenyOnly}};
    ctx.primary_group.reset();
    auto c = login("svc", "svcpw");
    ASSERT_STATUS(c->tree_connect("remote", {ctx}), NtStatus::Success);
    EXPECT_EQ(open_status(*c, "only-group-of-u.txt"), NtStatus::AccessDenied);
    EXPECT_EQ(open_status(*c, "only-u.txt"), NtStatus::Success);
}

TEST_F(E2eIdentityRemoting, AnUnlistedSessionIsRefused) {
    auto c = login("alice", "pw");
    EXPECT_STATUS(c->tree_connect("remote", {remoted_u()}), NtStatus::AccessDenied);
    // The refusal is about remoting only: the share itself is alice's to connect.
    auto t = c->tree_connect("remote");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_FALSE(t.body.share_flags & share_flags::kIdentityRemoting);
}

TEST_F(E2eIdentityRemoting, MalformedContextsAreInvalidParameter) {
    auto c = login("svc", "svcpw");
    // Truncated: the fixed part of SMB2_REMOTED_IDENTITY_TREE_CONNECT is 28 bytes.
    ByteVector truncated(10, std::byte{0});
    truncated[0] = std::byte{0x01};  // TicketType 1
    truncated[2] = std::byte{0x1C};  // TicketSize 28
    truncated[4] = std::byte{0x1C};  // User right after the fixed part
    EXPECT_STATUS(c->tree_connect("remote", {UnknownTreeConnectContext{1, truncated}}),
                  NtStatus::InvalidParameter);
    // The User offset points past the end of the context.
    ByteVector past_end(28, std::byte{0});
    past_end[0] = std::byte{0x01};
    past_end[2] = std::byte{28};
    past_end[4] = std::byte{0xF0};
    EXPECT_STATUS(c->tree_connect("remote", {UnknownTreeConnectContext{1, past_end}}),
                  NtStatus::InvalidParameter);
    // Well-formed but without the User the token is built from.
    auto no_user = remoted_u();
    no_user.user.reset();
    EXPECT_STATUS(c->tree_connect("remote", {no_user}), NtStatus::InvalidParameter);
    // Two identities for one tree.
    EXPECT_STATUS(c->tree_connect("remote", {remoted_u(), remoted_u()}),
                  NtStatus::InvalidParameter);
    // The SMB session goes on working.
    EXPECT_STATUS(c->tree_connect("remote", {remoted_u()}), NtStatus::Success);
}

TEST_F(E2eIdentityRemoting, AShareWithoutRemotingIgnoresTheContext) {
    auto c = login("svc", "svcpw");
    auto t = c->tree_connect("plain", {remoted_u()});
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_FALSE(t.body.share_flags & share_flags::kIdentityRemoting);
    EXPECT_EQ(open_status(*c, "only-svc.txt"), NtStatus::Success);
    EXPECT_EQ(open_status(*c, "only-u.txt"), NtStatus::AccessDenied);
    // Nobody is refused there for sending one.
    auto a = login("alice", "pw");
    EXPECT_STATUS(a->tree_connect("plain", {remoted_u()}), NtStatus::Success);
}

// An unknown TicketType makes the server ignore the context (MS-SMB2 3.3.5.7).
TEST_F(E2eIdentityRemoting, AnUnknownTicketTypeIsIgnored) {
    auto ctx = remoted_u();
    ctx.ticket_type = 2;
    auto c = login("alice", "pw");
    auto t = c->tree_connect("remote", {ctx});
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_FALSE(t.body.share_flags & share_flags::kIdentityRemoting);
}

}  // namespace
}  // namespace daxsmbd::client
