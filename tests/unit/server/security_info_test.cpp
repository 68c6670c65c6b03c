// NT security descriptors on a temporary share, without a socket: the xattr store
// (vfs/security_store.h), query / set / create completion (handlers/security_info.h) and
// create_file()'s check of a stored DACL.
#include "server/handlers/security_info.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "protocol/query_info.h"
#include "server/handlers/create.h"
#include "server/handlers/info_classes.h"
#include "server/state/session.h"
#include "server/vfs/security_store.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server::handlers {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;
namespace cd = protocol::create_disposition;
namespace co = protocol::create_options;
namespace si = protocol::security_information;
namespace wk = auth::well_known_sid;

class SecurityInfoTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/daxsmbd-secinfo-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        auto r = vfs::ShareRoot::open(dir_);
        ASSERT_TRUE(r);
        root_ = std::make_shared<vfs::ShareRoot>(std::move(*r));
        std::ofstream(dir_ + "/f.txt") << "data";
        fd_ = ::open((dir_ + "/f.txt").c_str(), O_RDONLY);
        ASSERT_GE(fd_, 0);
        struct stat st {};
        ::fstat(fd_, &st);
        uid_ = st.st_uid;
        gid_ = st.st_gid;
        mode_ = st.st_mode & 07777;
    }
    void TearDown() override {
        if (fd_ >= 0) ::close(fd_);
        std::filesystem::remove_all(dir_);
    }
    static auth::AccessToken token(uint32_t uid) {
        Session s;
        auto id = std::make_shared<vfs::UnixIdentity>();
        id->uid = uid;
        id->gid = uid;
        s.identity = id;
        return security::token_of(s);
    }
    CreateParams params(const std::string& name, uint32_t disposition, uint32_t access,
                        uint32_t uid = 1001) {
        CreateParams p;
        p.name = name;
        p.desired_access = access;
        p.share_access = share_access::kAll;
        p.create_disposition = disposition;
        p.token = token(uid);
        return p;
    }
    Result<CreateOutcome> create(const CreateParams& p) { return create_file(root_, files_, p); }

    std::string dir_;
    std::shared_ptr<vfs::ShareRoot> root_;
    FileTable files_;
    int fd_ = -1;
    uint32_t uid_ = 0, gid_ = 0;
    mode_t mode_ = 0;
};

SecurityDescriptor dacl_sd(std::vector<Ace> aces) {
    SecurityDescriptor sd;
    sd.set_dacl(Acl{Acl::kRevision, std::move(aces)});
    return sd;
}

TEST_F(SecurityInfoTest, StoreRoundTripAndAbsence) {
    auto none = vfs::read_security_descriptor(fd_);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(*none);

    SecurityDescriptor sd = dacl_sd({Ace::allowed(wk::everyone(), am::kFileGenericRead)});
    sd.owner = wk::unix_user(5);
    sd.group = wk::unix_group(6);
    ASSERT_TRUE(vfs::write_security_descriptor(fd_, sd));
    auto back = vfs::read_security_descriptor(fd_);
    ASSERT_TRUE(back.ok());
    ASSERT_TRUE(*back);
    EXPECT_EQ(**back, sd);

    // The value on disk: format version 1, reserved 0, then the self-relative descriptor.
    unsigned char raw[256];
    ssize_t n = ::fgetxattr(fd_, vfs::kNtAclXattrName, raw, sizeof raw);
    ASSERT_GT(n, 4);
    EXPECT_EQ(raw[0], 1);
    EXPECT_EQ(raw[1], 0);
    EXPECT_EQ(raw[4], 1);     // SD revision
    EXPECT_EQ(raw[7], 0x80);  // SE_SELF_RELATIVE
}

TEST_F(SecurityInfoTest, CorruptStoredValueIsAnErrorNotAbsence) {
    const unsigned char bad_version[] = {2, 0, 0, 0, 1, 0, 4, 0x80};
    ASSERT_EQ(::fsetxattr(fd_, vfs::kNtAclXattrName, bad_version, sizeof bad_version, 0), 0);
    EXPECT_EQ(vfs::read_security_descriptor(fd_).status(), NtStatus::InvalidSecurityDescr);
    const unsigned char truncated[] = {1, 0, 0, 0, 1, 0, 4, 0x80};
    ASSERT_EQ(::fsetxattr(fd_, vfs::kNtAclXattrName, truncated, sizeof truncated, 0), 0);
    EXPECT_EQ(vfs::read_security_descriptor(fd_).status(), NtStatus::InvalidSecurityDescr);
    // A CREATE of such a file is denied, not let through.
    auto r = create(params("f.txt", cd::kOpen, am::kFileReadData));
    EXPECT_EQ(r.status(), NtStatus::AccessDenied);
}

TEST_F(SecurityInfoTest, QueryWithoutStoredDescriptorIsThePosixOne) {
    auto q = security::query_descriptor(fd_, si::kOwner | si::kGroup | si::kDacl);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(*q, info::synthetic_security_descriptor({uid_, gid_, mode_}, 0x7));
}

TEST_F(SecurityInfoTest, SetReplacesOnlyTheNamedParts) {
    SecurityDescriptor given = dacl_sd({Ace::allowed(wk::authenticated_users(), 0x001F0000)});
    given.owner = wk::everyone();
    auto bytes = given.serialize();
    ASSERT_TRUE(bytes.ok());
    ASSERT_TRUE(security::set_descriptor(fd_, *bytes, si::kDacl));
    auto sd = security::effective_descriptor(fd_);
    ASSERT_TRUE(sd.ok());
    // Owner and group stay the POSIX ones; the DACL is the given one.
    EXPECT_EQ(*sd->owner, wk::unix_user(uid_));
    EXPECT_EQ(*sd->group, wk::unix_group(gid_));
    EXPECT_EQ(sd->dacl, given.dacl);
    // Now the owner too.
    ASSERT_TRUE(security::set_descriptor(fd_, *bytes, si::kOwner));
    sd = security::effective_descriptor(fd_);
    EXPECT_EQ(*sd->owner, wk::everyone());
    // Garbage is refused and changes nothing.
    ByteVector zeros(20);
    EXPECT_EQ(security::set_descriptor(fd_, zeros, si::kDacl).status(),
              NtStatus::InvalidSecurityDescr);
    EXPECT_EQ(security::effective_descriptor(fd_)->dacl, given.dacl);
}

// Windows stores generic rights of an ACE for the object itself mapped; inheritable ACEs keep
// them (smbtorture smb2.acls.CREATOR).
TEST_F(SecurityInfoTest, SetMapsGenericRightsOfTheObjectsOwnAces) {
    namespace af = protocol::ace_flags;
    SecurityDescriptor given =
        dacl_sd({Ace::allowed(wk::everyone(), 0x80000000u | 0x001F0000u),
                 Ace::allowed(wk::creator_owner(), 0x80000000u, af::kObjectInherit)});
    ASSERT_TRUE(security::set_descriptor(fd_, *given.serialize(), si::kDacl));
    auto sd = security::effective_descriptor(fd_);
    ASSERT_TRUE(sd.ok());
    ASSERT_EQ(sd->dacl->aces.size(), 2u);
    EXPECT_EQ(sd->dacl->aces[0].mask, 0x00120089u | 0x001F0000u);  // FILE_GENERIC_READ
    EXPECT_EQ(sd->dacl->aces[1].mask, 0x80000000u);                // kept for inheritance
}

TEST_F(SecurityInfoTest, NullAndEmptyDaclRoundTripDistinctly) {
    SecurityDescriptor null_dacl;
    null_dacl.set_dacl(std::nullopt);
    ASSERT_TRUE(security::set_descriptor(fd_, *null_dacl.serialize(), si::kDacl));
    auto q = security::query_descriptor(fd_, si::kDacl);
    ASSERT_TRUE(q.ok());
    EXPECT_TRUE(SecurityDescriptor::parse(*q)->null_dacl());

    SecurityDescriptor empty = dacl_sd({});
    ASSERT_TRUE(security::set_descriptor(fd_, *empty.serialize(), si::kDacl));
    q = security::query_descriptor(fd_, si::kDacl);
    auto sd = SecurityDescriptor::parse(*q);
    ASSERT_TRUE(sd.ok());
    EXPECT_FALSE(sd->null_dacl());
    ASSERT_TRUE(sd->dacl);
    EXPECT_TRUE(sd->dacl->aces.empty());

    // SE_DACL_PRESENT clear with DACL named: a NULL DACL (smbtorture smb2.create.nulldacl).
    SecurityDescriptor absent;
    ASSERT_TRUE(security::set_descriptor(fd_, *absent.serialize(), si::kDacl));
    EXPECT_TRUE(security::effective_descriptor(fd_)->null_dacl());
}

TEST_F(SecurityInfoTest, CreateCompletesAMissingOwnerGroupAndDacl) {
    SecurityDescriptor empty;  // no owner, group or DACL
    auto sd = security::complete_create_descriptor(empty, token(1001), 0640);
    EXPECT_EQ(*sd.owner, wk::unix_user(1001));
    EXPECT_EQ(*sd.group, wk::unix_group(1001));
    ASSERT_TRUE(sd.dacl_present() && sd.dacl);
    EXPECT_EQ(*sd.dacl, info::posix_dacl(wk::unix_user(1001), wk::unix_group(1001), 0640));
    // What was given is kept.
    SecurityDescriptor given = dacl_sd({});
    given.owner = wk::everyone();
    sd = security::complete_create_descriptor(given, token(1001), 0640);
    EXPECT_EQ(*sd.owner, wk::everyone());
    ASSERT_TRUE(sd.dacl);
    EXPECT_TRUE(sd.dacl->aces.empty());
}

TEST_F(SecurityInfoTest, CreateStoresTheSecDDescriptorOnFilesAndDirectories) {
    SecurityDescriptor given = dacl_sd({Ace::allowed(wk::authenticated_users(), 0x001F0000)});
    auto p = params("new.txt", cd::kCreate, am::kFileGenericRead | am::kFileGenericWrite);
    p.security_descriptor = given;
    auto r = create(p);
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    auto sd = vfs::read_security_descriptor(r->open->local.fd);
    ASSERT_TRUE(sd.ok() && *sd);
    EXPECT_EQ((*sd)->dacl, given.dacl);
    EXPECT_EQ(*(*sd)->owner, wk::unix_user(1001));

    p = params("newdir", cd::kCreate, am::kFileGenericRead);
    p.create_options = co::kDirectoryFile;
    p.security_descriptor = given;
    r = create(p);
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    sd = vfs::read_security_descriptor(r->open->local.fd);
    ASSERT_TRUE(sd.ok() && *sd);
    EXPECT_EQ((*sd)->dacl, given.dacl);
    // Without a SecD context nothing is stored.
    r = create(params("plain.txt", cd::kCreate, am::kFileGenericRead));
    ASSERT_TRUE(r.ok());
    sd = vfs::read_security_descriptor(r->open->local.fd);
    ASSERT_TRUE(sd.ok());
    EXPECT_FALSE(*sd);
}

TEST_F(SecurityInfoTest, StoredDaclIsEnforcedOnOpen) {
    // The owner (uid 1001) with an empty DACL: only READ_CONTROL and WRITE_DAC.
    SecurityDescriptor sd = dacl_sd({});
    sd.owner = wk::unix_user(1001);
    sd.group = wk::unix_group(1001);
    ASSERT_TRUE(vfs::write_security_descriptor(fd_, sd));
    EXPECT_EQ(create(params("f.txt", cd::kOpen, am::kFileReadData)).status(),
              NtStatus::AccessDenied);
    EXPECT_EQ(create(params("f.txt", cd::kOpen, am::kGenericWrite)).status(),
              NtStatus::AccessDenied);
    auto rc = create(params("f.txt", cd::kOpen, am::kReadControl));
    ASSERT_TRUE(rc.ok()) << status_name(rc.status());
    EXPECT_EQ(rc->open->granted_access, am::kReadControl);
    // MAXIMUM_ALLOWED gets what is left, and FILE_READ_ATTRIBUTES through the parent's
    // FILE_LIST_DIRECTORY (MS-FSA 2.1.5.1.2.1; the parent has no stored descriptor).
    auto mx = create(params("f.txt", cd::kOpen, am::kMaximumAllowed));
    ASSERT_TRUE(mx.ok());
    EXPECT_EQ(mx->open->granted_access,
              am::kReadControl | am::kWriteDac | am::kDelete | am::kFileReadAttributes);
    // Someone else gets nothing but DELETE (through the parent's FILE_DELETE_CHILD).
    EXPECT_EQ(create(params("f.txt", cd::kOpen, am::kReadControl, 7)).status(),
              NtStatus::AccessDenied);
    EXPECT_TRUE(create(params("f.txt", cd::kOpen, am::kDelete, 7)).ok());
    // Overwriting needs FILE_WRITE_DATA.
    EXPECT_EQ(create(params("f.txt", cd::kOverwriteIf, am::kReadControl)).status(),
              NtStatus::AccessDenied);

    // A NULL DACL grants everything.
    SecurityDescriptor null_dacl = sd;
    null_dacl.set_dacl(std::nullopt);
    ASSERT_TRUE(vfs::write_security_descriptor(fd_, null_dacl));
    auto w = create(params("f.txt", cd::kOpen, am::kGenericWrite, 7));
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->open->granted_access, am::kFileGenericWrite);

    // Without a token (no session) stored descriptors are not evaluated.
    ASSERT_TRUE(vfs::write_security_descriptor(fd_, sd));
    auto p = params("f.txt", cd::kOpen, am::kFileReadData);
    p.token.reset();
    EXPECT_TRUE(create(p).ok());
}

TEST_F(SecurityInfoTest, ParentWithoutDeleteChildKeepsDeleteDenied) {
    ASSERT_EQ(::mkdir((dir_ + "/d").c_str(), 0777), 0);
    std::ofstream(dir_ + "/d/g.txt") << "x";
    int dfd = ::open((dir_ + "/d").c_str(), O_RDONLY | O_DIRECTORY);
    int gfd = ::open((dir_ + "/d/g.txt").c_str(), O_RDONLY);
    ASSERT_GE(dfd, 0);
    ASSERT_GE(gfd, 0);
    ASSERT_TRUE(vfs::write_security_descriptor(gfd, dacl_sd({})));
    // The parent grants everything but FILE_DELETE_CHILD.
    ASSERT_TRUE(vfs::write_security_descriptor(
        dfd, dacl_sd({Ace::allowed(wk::everyone(), am::kFileAllAccess & ~am::kFileDeleteChild)})));
    EXPECT_EQ(create(params("d\\g.txt", cd::kOpen, am::kDelete)).status(), NtStatus::AccessDenied);
    ASSERT_TRUE(vfs::write_security_descriptor(
        dfd, dacl_sd({Ace::allowed(wk::everyone(), am::kFileDeleteChild)})));
    EXPECT_TRUE(create(params("d\\g.txt", cd::kOpen, am::kDelete)).ok());
    ::close(dfd);
    ::close(gfd);
}

}  // namespace
}  // namespace daxsmbd::server::handlers
