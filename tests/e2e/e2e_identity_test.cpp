// Users act as themselves on disk (README "Identity"): a user with a uid of its own creates
// files that are its own, gets what the kernel's permission checks give that uid
// (MAXIMUM_ALLOWED narrowed to it), and a new object inherits the parent's stored inheritable
// ACEs (MS-DTYP 2.5.3.4) after the parent's DACL allowed the create. Needs root (the server
// switches credentials); the uids used have no account on the machine.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "auth/access_check.h"
#include "dax/flush.h"
#include "dax/mapping.h"
#include "dax/stats.h"
#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "protocol/security_descriptor.h"
#include "server/server.h"
#include "server/state/share.h"
#include "server/vfs/fs_credentials.h"
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

constexpr uint32_t kBob = 61201;
constexpr uint32_t kBobGroup = 61202;

class E2eIdentity : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        if (!server::vfs::credentials_switchable()) return;
        TestServer::Options o;
        o.unix_users.push_back({"bob", "bobpw", kBob, kBobGroup});
        server_ = new TestServer(o);
        // The share is everyone's to create in (bob has no account and owns nothing).
        ::chmod(server_->share_dir().c_str(), 01777);
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override {
        if (!server::vfs::credentials_switchable())
            GTEST_SKIP() << "needs CAP_SETUID and CAP_SETGID (root)";
        ASSERT_TRUE(server_->ok()) << server_->error();
    }
    static std::unique_ptr<Smb2Client> login_bob() {
        auto c = std::make_unique<Smb2Client>();
        EXPECT_TRUE(c->connect("127.0.0.1", server_->port()));
        EXPECT_STATUS(c->negotiate({}), NtStatus::Success);
        EXPECT_STATUS(c->session_setup("bob", "bobpw"), NtStatus::Success);
        EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
        return c;
    }
    static std::string local(const std::string& name) { return server_->share_dir() + "/" + name; }
    static void put_local(const std::string& name, mode_t mode) {
        std::ofstream(local(name)) << "root's data";
        ::chmod(local(name).c_str(), mode);
    }
    static void store_descriptor(const std::string& name, const SecurityDescriptor& sd) {
        server::vfs::UniqueFd fd(::open(local(name).c_str(), O_RDONLY | O_CLOEXEC));
        ASSERT_GE(fd.get(), 0);
        ASSERT_TRUE(server::vfs::write_security_descriptor(fd.get(), sd));
    }
    static std::optional<SecurityDescriptor> stored_descriptor(const std::string& name) {
        server::vfs::UniqueFd fd(::open(local(name).c_str(), O_RDONLY | O_CLOEXEC));
        if (fd.get() < 0) return std::nullopt;
        auto sd = server::vfs::read_security_descriptor(fd.get());
        if (!sd || !*sd) return std::nullopt;
        return **sd;
    }
    static TestServer* server_;
};
TestServer* E2eIdentity::server_ = nullptr;

TEST_F(E2eIdentity, NewFilesAndDirectoriesBelongToTheirCreator) {
    auto c = login_bob();
    auto f = c->open("bobs.txt", am::kFileGenericWrite, cd::kCreate);
    ASSERT_STATUS(f, NtStatus::Success);
    c->close(f.body.file_id);
    auto d = c->open("bobs-dir", am::kFileGenericRead, cd::kCreate, create_options::kDirectoryFile);
    ASSERT_STATUS(d, NtStatus::Success);
    c->close(d.body.file_id);
    struct stat st {};
    ASSERT_EQ(::stat(local("bobs.txt").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kBob);
    EXPECT_EQ(st.st_gid, kBobGroup);
    ASSERT_EQ(::stat(local("bobs-dir").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kBob);
    EXPECT_EQ(st.st_gid, kBobGroup);
}

TEST_F(E2eIdentity, ModeBitsApplyToTheUser) {
    put_local("root-0600", 0600);
    put_local("root-0644", 0644);
    auto c = login_bob();
    EXPECT_STATUS(c->open("root-0600", am::kFileReadData, cd::kOpen), NtStatus::AccessDenied);
    EXPECT_STATUS(c->open("root-0644", am::kFileWriteData, cd::kOpen), NtStatus::AccessDenied);
    // MAXIMUM_ALLOWED gets what the file allows: reading, not writing.
    auto m = c->open("root-0644", am::kMaximumAllowed, cd::kOpen);
    ASSERT_STATUS(m, NtStatus::Success);
    EXPECT_STATUS(c->read(m.body.file_id, 0, 4), NtStatus::Success);
    EXPECT_STATUS(c->write(m.body.file_id, 0, as_bytes("xx")), NtStatus::AccessDenied);
    c->close(m.body.file_id);
    // A file asked for by name with write access stays refused, whatever else is asked.
    EXPECT_STATUS(c->open("root-0644", am::kMaximumAllowed | am::kFileWriteData, cd::kOpen),
                  NtStatus::AccessDenied);
}

// DELETE is granted only where the unlink at CLOSE would succeed (write and search permission
// on the directory; in a sticky one, ownership): else a delete-on-close would be lost silently.
TEST_F(E2eIdentity, DeleteNeedsWhatUnlinkNeedsInTheDirectory) {
    ASSERT_EQ(::mkdir(local("closed").c_str(), 0755), 0);
    std::ofstream(local("closed/f.txt")) << "x";
    ::chmod(local("closed/f.txt").c_str(), 0666);
    put_local("sticky-root.txt", 0666);  // the share directory is 01777
    auto c = login_bob();
    EXPECT_STATUS(c->open("closed\\f.txt", am::kDelete, cd::kOpen), NtStatus::AccessDenied);
    EXPECT_STATUS(c->open("sticky-root.txt", am::kDelete, cd::kOpen), NtStatus::AccessDenied);
    // MAXIMUM_ALLOWED opens, without DELETE.
    auto m = c->open("closed\\f.txt", am::kMaximumAllowed, cd::kOpen);
    ASSERT_STATUS(m, NtStatus::Success);
    c->close(m.body.file_id);
    // Bob's own file in the sticky directory is his to delete.
    auto f = c->open("bobs-deletable.txt", am::kFileGenericWrite | am::kDelete, cd::kCreate);
    ASSERT_STATUS(f, NtStatus::Success);
    c->close(f.body.file_id);
    auto d = c->open("bobs-deletable.txt", am::kDelete, cd::kOpen, create_options::kDeleteOnClose);
    ASSERT_STATUS(d, NtStatus::Success);
    c->close(d.body.file_id);
    EXPECT_NE(::access(local("bobs-deletable.txt").c_str(), F_OK), 0);
    EXPECT_EQ(::access(local("closed/f.txt").c_str(), F_OK), 0);
    EXPECT_EQ(::access(local("sticky-root.txt").c_str(), F_OK), 0);
}

TEST_F(E2eIdentity, NewObjectsInheritTheParentsInheritableAces) {
    ASSERT_EQ(::mkdir(local("inherit").c_str(), 0777), 0);
    ::chmod(local("inherit").c_str(), 0777);
    SecurityDescriptor parent;
    parent.owner = wk::unix_user(0);
    parent.group = wk::unix_group(0);
    Acl acl;
    acl.aces.push_back(Ace::allowed(wk::everyone(), am::kFileAllAccess,
                                    ace_flags::kObjectInherit | ace_flags::kContainerInherit));
    parent.set_dacl(acl);
    parent.control |= sd_control::kDaclAutoInherited;  // children's ACEs say INHERITED_ACE
    store_descriptor("inherit", parent);

    auto c = login_bob();
    auto f = c->open("inherit\\child.txt", am::kFileGenericWrite, cd::kCreate);
    ASSERT_STATUS(f, NtStatus::Success);
    c->close(f.body.file_id);
    auto sd = stored_descriptor("inherit/child.txt");
    ASSERT_TRUE(sd) << "the child stores what it inherited";
    EXPECT_EQ(sd->owner, wk::unix_user(kBob));
    ASSERT_TRUE(sd->dacl_present());
    ASSERT_EQ(sd->dacl->aces.size(), 1u);
    EXPECT_EQ(sd->dacl->aces[0].sid, wk::everyone());
    EXPECT_EQ(sd->dacl->aces[0].flags, ace_flags::kInherited);

    // Without an inheritable ACE nothing is stored: the child shows its mode bits.
    ASSERT_EQ(::mkdir(local("plain").c_str(), 0777), 0);
    ::chmod(local("plain").c_str(), 0777);
    auto g = c->open("plain\\child.txt", am::kFileGenericWrite, cd::kCreate);
    ASSERT_STATUS(g, NtStatus::Success);
    c->close(g.body.file_id);
    EXPECT_FALSE(stored_descriptor("plain/child.txt"));
}

TEST_F(E2eIdentity, TheParentsStoredDaclMustAllowTheCreate) {
    ASSERT_EQ(::mkdir(local("no-add").c_str(), 0777), 0);
    ::chmod(local("no-add").c_str(), 0777);
    SecurityDescriptor parent;
    parent.owner = wk::unix_user(0);
    parent.group = wk::unix_group(0);
    Acl acl;
    acl.aces.push_back(Ace::allowed(wk::everyone(), am::kFileGenericRead | am::kFileTraverse));
    parent.set_dacl(acl);
    store_descriptor("no-add", parent);
    auto c = login_bob();
    EXPECT_STATUS(c->open("no-add\\f.txt", am::kFileGenericWrite, cd::kCreate),
                  NtStatus::AccessDenied);
    EXPECT_STATUS(
        c->open("no-add\\d", am::kFileGenericRead, cd::kCreate, create_options::kDirectoryFile),
        NtStatus::AccessDenied);
    EXPECT_NE(::access(local("no-add/f.txt").c_str(), F_OK), 0);
}

// A DAX share keeps the mappings of closed files for their next open (the map cache): a cached
// mapping must never serve an open the file's permissions refuse. Root (alice, the test's uid)
// maps a 0600 file, closes it; bob's open is refused, and a readable file's cached mapping
// serves bob's read with the right data.
TEST_F(E2eIdentity, DaxMapCacheServesOnlyOpensThatPassTheirOwnCheck) {
    auto share = server_->server().find_share("data");
    ASSERT_TRUE(share);
    dax::MapOptions o;
    o.chunk_size = 64 * 1024;
    o.require_sync = false;
    o.flush = *dax::resolve_flush_kind(dax::FlushKind::Auto, dax::detect_cpu_flush_support());
    share->dax = o;

    // Whole pages: a read of a partial last page is served by the block path.
    for (const char* name : {"dax-secret.bin", "dax-shared.bin"}) {
        std::ofstream(local(name)) << "root's data" << std::string(8192 - 11, 'x');
        ::chmod(local(name).c_str(), std::string(name) == "dax-secret.bin" ? 0600 : 0644);
    }
    auto alice = std::make_unique<Smb2Client>();
    ASSERT_TRUE(alice->connect("127.0.0.1", server_->port()));
    ASSERT_STATUS(alice->negotiate({}), NtStatus::Success);
    ASSERT_STATUS(alice->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(alice->tree_connect("data"), NtStatus::Success);
    for (const char* name : {"dax-secret.bin", "dax-shared.bin"}) {
        auto f = alice->open(name, am::kFileGenericRead | am::kFileGenericWrite, cd::kOpen);
        ASSERT_STATUS(f, NtStatus::Success);
        ASSERT_STATUS(alice->read(f.body.file_id, 0, 4), NtStatus::Success);  // mapped
        alice->close(f.body.file_id);
    }
    const auto before = server_->server().dax_maps.stats().snapshot();
    auto bob = login_bob();
    EXPECT_STATUS(bob->open("dax-secret.bin", am::kFileReadData, cd::kOpen),
                  NtStatus::AccessDenied);
    auto f = bob->open("dax-shared.bin", am::kFileReadData, cd::kOpen);
    ASSERT_STATUS(f, NtStatus::Success);
    auto r = bob->read(f.body.file_id, 0, 11);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.body.data.data()), r.body.data.size()),
              "root's data");
    bob->close(f.body.file_id);
    const auto after = server_->server().dax_maps.stats().snapshot();
    EXPECT_GT(after.reads, before.reads) << "bob's read used the map";
    EXPECT_GT(after.map_cache_hits, before.map_cache_hits) << "alice's cached map served bob";
    share->dax.reset();
}

}  // namespace
}  // namespace daxsmbd::client
