// create_file() on a temporary share: the disposition table of MS-SMB2 2.2.13 / MS-FSA 2.1.5.1,
// parameter validation in Windows' order, share permissions, attributes, share modes and
// delete-on-close, without a socket.
#include "server/handlers/create.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "server/rpcpipe/pipe_endpoint.h"
#include "server/vfs/dir.h"
#include "server/vfs/ea.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server::handlers {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;
namespace cd = protocol::create_disposition;
namespace co = protocol::create_options;
namespace sa = protocol::share_access;
namespace fa = protocol::file_attributes;
namespace ca = protocol::create_action;

constexpr uint32_t kReadOnlyShareAccess = am::kFileGenericRead | am::kFileGenericExecute;

class CreateTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/daxsmbd-create-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        auto r = vfs::ShareRoot::open(dir_);
        ASSERT_TRUE(r);
        root_ = std::make_shared<vfs::ShareRoot>(std::move(*r));
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    static CreateParams params(std::string name, uint32_t disposition,
                               uint32_t access = am::kFileGenericRead | am::kFileGenericWrite |
                                                 am::kDelete,
                               uint32_t options = 0) {
        CreateParams p;
        p.name = std::move(name);
        p.desired_access = access;
        p.share_access = sa::kAll;
        p.create_disposition = disposition;
        p.create_options = options;
        return p;
    }
    Result<CreateOutcome> create(const CreateParams& p) { return create_file(root_, files_, p); }

    void write_file(const std::string& rel, const std::string& data) {
        std::ofstream(dir_ + "/" + rel, std::ios::binary) << data;
    }
    std::string read_file(const std::string& rel) {
        std::ifstream in(dir_ + "/" + rel, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
    bool exists(const std::string& rel) { return std::filesystem::exists(dir_ + "/" + rel); }

    std::string dir_;
    std::shared_ptr<vfs::ShareRoot> root_;
    FileTable files_;
};

// ---- dispositions (MS-SMB2 2.2.13 CreateDisposition, MS-FSA 2.1.5.1.1/2.1.5.1.2) -------------

struct DispositionCase {
    uint32_t disposition;
    bool exists;
    NtStatus status;
    uint32_t action;
    bool truncated;
};

TEST_F(CreateTest, DispositionTable) {
    const DispositionCase cases[] = {
        {cd::kSupersede, true, NtStatus::Success, ca::kSuperseded, true},
        {cd::kSupersede, false, NtStatus::Success, ca::kCreated, false},
        {cd::kOpen, true, NtStatus::Success, ca::kOpened, false},
        {cd::kOpen, false, NtStatus::ObjectNameNotFound, 0, false},
        {cd::kCreate, true, NtStatus::ObjectNameCollision, 0, false},
        {cd::kCreate, false, NtStatus::Success, ca::kCreated, false},
        {cd::kOpenIf, true, NtStatus::Success, ca::kOpened, false},
        {cd::kOpenIf, false, NtStatus::Success, ca::kCreated, false},
        {cd::kOverwrite, true, NtStatus::Success, ca::kOverwritten, true},
        {cd::kOverwrite, false, NtStatus::ObjectNameNotFound, 0, false},
        {cd::kOverwriteIf, true, NtStatus::Success, ca::kOverwritten, true},
        {cd::kOverwriteIf, false, NtStatus::Success, ca::kCreated, false},
        {6, true, NtStatus::InvalidParameter, 0, false},
        {6, false, NtStatus::InvalidParameter, 0, false},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(::testing::Message()
                     << "disposition " << c.disposition << " exists " << c.exists);
        std::filesystem::remove(dir_ + "/f.txt");
        if (c.exists) write_file("f.txt", "hello");
        auto r = create(params("f.txt", c.disposition));
        ASSERT_EQ(r.status(), c.status);
        if (!r) {
            EXPECT_EQ(exists("f.txt"), c.exists);
            continue;
        }
        EXPECT_EQ(r->create_action, c.action);
        EXPECT_TRUE(exists("f.txt"));
        EXPECT_EQ(read_file("f.txt"), c.exists && !c.truncated ? "hello" : "");
        EXPECT_EQ(r->info.end_of_file, c.exists && !c.truncated ? 5u : 0u);
        EXPECT_FALSE(r->open->local.is_directory);
        EXPECT_GE(r->open->local.fd, 0);
        EXPECT_EQ(r->open->local.path, "f.txt");
        struct stat st {};
        ASSERT_EQ(::fstat(r->open->local.fd, &st), 0);
        EXPECT_EQ(r->open->local.file_id, uint64_t(st.st_ino));
        EXPECT_EQ(r->info.file_id, uint64_t(st.st_ino));
    }
}

TEST_F(CreateTest, MissingParentIsPathNotFound) {
    EXPECT_EQ(create(params("nodir\\f.txt", cd::kOpenIf)).status(), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(create(params("nodir\\f.txt", cd::kOpen)).status(), NtStatus::ObjectPathNotFound);
    write_file("plain", "x");
    EXPECT_EQ(create(params("plain\\f.txt", cd::kOpenIf)).status(), NtStatus::ObjectPathNotFound);
}

TEST_F(CreateTest, NestedCreateAndCaseInsensitiveOpen) {
    auto d = create(params("Sub", cd::kCreate, am::kFileGenericRead, co::kDirectoryFile));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->create_action, ca::kCreated);
    EXPECT_TRUE(d->open->local.is_directory);
    EXPECT_TRUE(std::filesystem::is_directory(dir_ + "/Sub"));
    auto f = create(params("Sub\\Foo.TXT", cd::kCreate));
    ASSERT_TRUE(f);
    auto again = create(params("SUB\\foo.txt", cd::kOpen, am::kFileGenericRead));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->create_action, ca::kOpened);
    EXPECT_EQ(again->open->local.path, "Sub/Foo.TXT");  // the on-disk spelling
    EXPECT_EQ(again->info.file_id, f->info.file_id);
    // CREATE of a name that exists in another case collides.
    EXPECT_EQ(create(params("sub\\FOO.txt", cd::kCreate)).status(), NtStatus::ObjectNameCollision);
}

// ---- files vs directories (MS-FSA 2.1.5.1 phase 7) ------------------------------------------

TEST_F(CreateTest, DirectoryAndFileOptions) {
    ASSERT_TRUE(create(params("d", cd::kCreate, am::kFileGenericRead, co::kDirectoryFile)));
    write_file("f", "x");
    EXPECT_EQ(create(params("d", cd::kOpen, am::kFileGenericRead, co::kNonDirectoryFile)).status(),
              NtStatus::FileIsADirectory);
    EXPECT_EQ(create(params("f", cd::kOpen, am::kFileGenericRead, co::kDirectoryFile)).status(),
              NtStatus::NotADirectory);
    EXPECT_EQ(create(params("f", cd::kCreate, am::kFileGenericRead, co::kDirectoryFile)).status(),
              NtStatus::ObjectNameCollision);
    // Without either option the object decides.
    auto d = create(params("d", cd::kOpenIf, am::kFileGenericRead));
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->open->local.is_directory);
    EXPECT_EQ(d->info.file_attributes & fa::kDirectory, fa::kDirectory);
    // Directories are never overwritten.
    EXPECT_EQ(create(params("d", cd::kOverwriteIf)).status(), NtStatus::ObjectNameCollision);
    EXPECT_EQ(create(params("d", cd::kSupersede)).status(), NtStatus::ObjectNameCollision);
    // DIRECTORY_FILE allows only CREATE / OPEN / OPEN_IF.
    EXPECT_EQ(
        create(params("d", cd::kOverwriteIf, am::kFileGenericRead, co::kDirectoryFile)).status(),
        NtStatus::InvalidParameter);
    // DIRECTORY_FILE + NON_DIRECTORY_FILE.
    EXPECT_EQ(create(params("x", cd::kOpenIf, am::kFileGenericRead,
                            co::kDirectoryFile | co::kNonDirectoryFile))
                  .status(),
              NtStatus::InvalidParameter);
    // A trailing backslash names a directory.
    EXPECT_TRUE(create(params("d\\", cd::kOpen, am::kFileGenericRead)));
    EXPECT_EQ(create(params("f\\", cd::kOpen, am::kFileGenericRead)).status(),
              NtStatus::ObjectNameInvalid);
    EXPECT_EQ(create(params("new\\", cd::kCreate)).status(), NtStatus::ObjectNameInvalid);
}

TEST_F(CreateTest, ConcurrentOpenIfOfTheSameDirectory) {
    // The second OPEN_IF finds the directory the first one made (smbtorture mkdir-dup).
    auto a = create(params("m", cd::kOpenIf, am::kFileGenericRead, co::kDirectoryFile));
    auto b = create(params("m", cd::kOpenIf, am::kFileGenericRead, co::kDirectoryFile));
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->create_action, ca::kCreated);
    EXPECT_EQ(b->create_action, ca::kOpened);
}

TEST_F(CreateTest, ShareRoot) {
    auto r = create(params("", cd::kOpen, am::kFileGenericRead));
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->open->local.is_directory);
    EXPECT_EQ(r->open->local.path, "");
    EXPECT_EQ(create(params("", cd::kOverwriteIf)).status(), NtStatus::AccessDenied);
    EXPECT_EQ(create(params("", cd::kOpen, am::kDelete, co::kDeleteOnClose)).status(),
              NtStatus::AccessDenied);
    EXPECT_EQ(create(params("", cd::kOpen, am::kFileGenericRead, co::kNonDirectoryFile)).status(),
              NtStatus::FileIsADirectory);
}

// ---- names ------------------------------------------------------------------------------------

TEST_F(CreateTest, Names) {
    EXPECT_EQ(create(params("\\lead", cd::kOpenIf)).status(), NtStatus::InvalidParameter);
    write_file("s", "data");
    // No streams on this server, not even the explicit default data stream (smbtorture
    // smb2.create_no_streams).
    for (const char* n : {"s:stream", "s:stream:$DATA", "s::$DATA", "s:", "new:x"}) {
        EXPECT_EQ(create(params(n, cd::kOpenIf)).status(), NtStatus::ObjectNameInvalid) << n;
    }
    EXPECT_FALSE(exists("new"));
    EXPECT_EQ(read_file("s"), "data");
    EXPECT_EQ(create(params("a*b", cd::kOpenIf)).status(), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(create(params("..\\up", cd::kOpenIf)).status(), NtStatus::ObjectPathSyntaxBad);
    // '/' separates like '\\' (Samba compatible), and cannot climb out either.
    ASSERT_TRUE(create(params("sl", cd::kCreate, am::kFileGenericRead, co::kDirectoryFile)));
    auto f = create(params("sl/inner.txt", cd::kCreate));
    ASSERT_TRUE(f);
    EXPECT_EQ(f->open->local.path, "sl/inner.txt");
    EXPECT_TRUE(exists("sl/inner.txt"));
    EXPECT_EQ(create(params("/sl", cd::kOpen)).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(create(params("sl/../../x", cd::kOpenIf)).status(), NtStatus::ObjectPathSyntaxBad);
}

TEST_F(CreateTest, SymlinkLeavingTheShareIsRefused) {
    std::filesystem::create_directory_symlink("/etc", dir_ + "/escape");
    EXPECT_EQ(create(params("escape\\passwd", cd::kOpen, am::kFileGenericRead)).status(),
              NtStatus::AccessDenied);
    EXPECT_EQ(create(params("escape", cd::kOpen, am::kFileGenericRead)).status(),
              NtStatus::AccessDenied);
}

// ---- validation order (smbtorture smb2.create.gentest, MS-FSA 2.1.5.1 phase 1) --------------

TEST_F(CreateTest, ParameterValidation) {
    auto p = params("v", cd::kOpenIf, am::kMaximumAllowed);
    p.impersonation_level = 4;
    EXPECT_EQ(create(p).status(), NtStatus::BadImpersonationLevel);

    p = params("v", cd::kOpenIf, am::kMaximumAllowed, 0xF0000000);
    EXPECT_EQ(create(p).status(), NtStatus::InvalidParameter);
    for (uint32_t bit : {0x01000000u, 0x80000000u}) {
        EXPECT_EQ(create(params("v", cd::kOpenIf, am::kMaximumAllowed, bit)).status(),
                  NtStatus::InvalidParameter);
    }
    for (uint32_t bit : {uint32_t(co::kOpenByFileId), uint32_t(co::kReserveOpfilter), 0x80u}) {
        EXPECT_EQ(create(params("v", cd::kOpenIf, am::kMaximumAllowed, bit)).status(),
                  NtStatus::NotSupported);
    }
    // Invalid access bits are ACCESS_DENIED, checked before the attributes.
    p = params("v", cd::kCreate, 0x08000000);
    p.file_attributes = 0x8;  // VOLUME
    EXPECT_EQ(create(p).status(), NtStatus::AccessDenied);
    p.desired_access = am::kMaximumAllowed;
    EXPECT_EQ(create(p).status(), NtStatus::InvalidParameter);
    for (uint32_t attr : {0x8u, 0x40u, 0x8000u, 0x10000u}) {
        p.file_attributes = attr;
        EXPECT_EQ(create(p).status(), NtStatus::InvalidParameter) << std::hex << attr;
    }
    EXPECT_EQ(create(params("v", cd::kOpenIf, 0)).status(), NtStatus::AccessDenied);
    // SYNCHRONIZE alone is a valid (if useless) request (MS-FSA; smbtorture smb2.sharemode).
    auto sync = create(params("v", cd::kOpenIf, am::kSynchronize));
    ASSERT_TRUE(sync);
    EXPECT_EQ(sync->open->granted_access, am::kSynchronize);
    sync->open.reset();
    std::filesystem::remove(dir_ + "/v");
    EXPECT_EQ(create(params("v", cd::kOpenIf, 0x00000200)).status(), NtStatus::AccessDenied);
    EXPECT_EQ(create(params("v", cd::kOpenIf, am::kAccessSystemSecurity)).status(),
              NtStatus::PrivilegeNotHeld);
    // DELETE_ON_CLOSE needs DELETE.
    EXPECT_EQ(create(params("v", cd::kOpenIf, am::kFileGenericRead, co::kDeleteOnClose)).status(),
              NtStatus::InvalidParameter);
    p = params("v", cd::kOpenIf, am::kFileReadData);
    p.share_access = 0x8;
    EXPECT_EQ(create(p).status(), NtStatus::InvalidParameter);
    EXPECT_FALSE(exists("v"));
}

// ---- access --------------------------------------------------------------------------------

TEST_F(CreateTest, GrantedAccess) {
    auto r = create(params("g", cd::kOpenIf, am::kGenericRead));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->open->granted_access, am::kFileGenericRead);
    r = create(params("g", cd::kOpen, am::kMaximumAllowed));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->open->granted_access, am::kFileAllAccess);
    EXPECT_EQ(r->maximal_access, am::kFileAllAccess);
    // EXECUTE is granted as asked (FileAccessInformation reports it so, smbtorture
    // smb2.getinfo.granted); READ accepts EXECUTE in place of READ_DATA (MS-SMB2 3.3.5.12).
    r = create(params("g", cd::kOpen, am::kFileExecute | am::kFileReadAttributes));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->open->granted_access, am::kFileExecute | am::kFileReadAttributes);
    // An overwrite's implied WRITE_DATA is not reported as granted (smbtorture gentest).
    r = create(params("g", cd::kOverwriteIf,
                      am::kFileReadData | am::kFileWriteData | am::kFileAppendData));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->open->granted_access,
              am::kFileReadData | am::kFileWriteData | am::kFileAppendData);
}

TEST_F(CreateTest, ReadOnlyShare) {
    write_file("ro", "data");
    auto p = params("ro", cd::kOpen, am::kFileGenericRead);
    p.maximal_access = kReadOnlyShareAccess;
    EXPECT_TRUE(create(p));
    for (uint32_t access : {uint32_t(am::kFileWriteData), uint32_t(am::kDelete),
                            uint32_t(am::kGenericWrite), uint32_t(am::kFileWriteAttributes)}) {
        p.desired_access = access;
        EXPECT_EQ(create(p).status(), NtStatus::AccessDenied) << std::hex << access;
    }
    p.desired_access = am::kMaximumAllowed;
    auto r = create(p);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->open->granted_access, kReadOnlyShareAccess);
    // Dispositions that write.
    p.desired_access = am::kFileGenericRead;
    for (uint32_t d : {cd::kOverwriteIf, cd::kOverwrite, cd::kSupersede}) {
        p.create_disposition = d;
        EXPECT_EQ(create(p).status(), NtStatus::AccessDenied) << d;
    }
    p.name = "missing";
    for (uint32_t d : {cd::kOpenIf, cd::kCreate}) {
        p.create_disposition = d;
        EXPECT_EQ(create(p).status(), NtStatus::AccessDenied) << d;
    }
    EXPECT_FALSE(exists("missing"));
    EXPECT_EQ(read_file("ro"), "data");
    // DELETE_ON_CLOSE on a share without DELETE (MS-SMB2 3.3.5.9).
    p = params("ro", cd::kOpen, am::kDelete, co::kDeleteOnClose);
    p.maximal_access = kReadOnlyShareAccess;
    EXPECT_EQ(create(p).status(), NtStatus::AccessDenied);
}

// ---- attributes (MS-FSA 2.1.5.1.1, 2.1.5.1.2) -------------------------------------------------

TEST_F(CreateTest, AttributesOfNewAndOverwrittenFiles) {
    if (!root_->supports_user_xattrs()) GTEST_SKIP() << "no user xattrs on " << dir_;
    auto p = params("a", cd::kCreate);
    p.file_attributes = fa::kHidden | fa::kReadonly | fa::kNormal | fa::kSparseFile;
    auto r = create(p);
    ASSERT_TRUE(r);
    // Settable attributes stay, ARCHIVE is added; NORMAL and SPARSE are not set this way.
    EXPECT_EQ(r->info.file_attributes, fa::kHidden | fa::kReadonly | fa::kArchive);
    EXPECT_GT(r->info.creation_time, 0);
    r->open.reset();

    // A READONLY file refuses write access and delete on close, MAXIMUM_ALLOWED drops writes.
    EXPECT_EQ(create(params("a", cd::kOpen, am::kFileWriteData)).status(), NtStatus::AccessDenied);
    EXPECT_EQ(create(params("a", cd::kOpen, am::kDelete, co::kDeleteOnClose)).status(),
              NtStatus::CannotDelete);
    auto m = create(params("a", cd::kOpen, am::kMaximumAllowed));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->open->granted_access & am::kFileWriteData, 0u);
    EXPECT_NE(m->open->granted_access & am::kDelete, 0u);
    // Opening for DELETE alone is fine (smbtorture smb2.create.delete).
    EXPECT_TRUE(create(params("a", cd::kOpen, am::kDelete)));

    // Overwrite must keep HIDDEN / SYSTEM.
    write_file("h", "12345");
    p = params("h", cd::kOverwrite);
    p.file_attributes = fa::kHidden | fa::kSystem;
    ASSERT_TRUE(create(p));
    p.file_attributes = fa::kSystem;
    EXPECT_EQ(create(p).status(), NtStatus::AccessDenied);
    p.file_attributes = fa::kHidden;
    EXPECT_EQ(create(p).status(), NtStatus::AccessDenied);
    p.file_attributes = fa::kHidden | fa::kSystem | fa::kTemporary;
    auto o = create(p);
    ASSERT_TRUE(o);
    EXPECT_EQ(o->info.file_attributes, fa::kHidden | fa::kSystem | fa::kTemporary | fa::kArchive);
}

TEST_F(CreateTest, DirectoryAttributes) {
    auto p = params("td", cd::kCreate, am::kFileGenericRead, co::kDirectoryFile);
    p.file_attributes = fa::kTemporary;
    EXPECT_EQ(create(p).status(), NtStatus::InvalidParameter);
    EXPECT_FALSE(exists("td"));
    p.file_attributes = fa::kNormal;
    auto r = create(p);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->info.file_attributes, fa::kDirectory);
    EXPECT_EQ(r->info.allocation_size, 0u);
    EXPECT_EQ(r->info.end_of_file, 0u);
}

TEST_F(CreateTest, ReadonlyWithDeleteOnCloseCannotBeCreated) {
    auto p = params("rd", cd::kCreate, am::kFileGenericWrite | am::kDelete, co::kDeleteOnClose);
    p.file_attributes = fa::kReadonly;
    EXPECT_EQ(create(p).status(), NtStatus::CannotDelete);
    EXPECT_FALSE(exists("rd"));
}

TEST_F(CreateTest, EncryptedIsRefused) {
    auto p = params("e", cd::kCreate);
    p.file_attributes = fa::kEncrypted;
    EXPECT_EQ(create(p).status(), NtStatus::AccessDenied);
    EXPECT_FALSE(exists("e"));
}

// ---- create contexts applied by create_file ---------------------------------------------------

TEST_F(CreateTest, ExtendedAttributesOnCreate) {
    if (!root_->supports_user_xattrs()) GTEST_SKIP() << "no user xattrs on " << dir_;
    auto p = params("ea", cd::kCreate);
    std::vector<vfs::Ea> eas;
    eas.push_back(vfs::Ea{"COLOR", {std::byte{'r'}, std::byte{'e'}, std::byte{'d'}}, 0});
    p.eas = eas;
    auto r = create(p);
    ASSERT_TRUE(r);
    auto got = vfs::get_ea(r->open->local.fd, "color");
    ASSERT_TRUE(got);
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ((*got)->value.size(), 3u);
    // Invalid EA names fail the create and leave nothing behind.
    p.name = "ea2";
    p.eas = std::vector<vfs::Ea>{vfs::Ea{"bad:name", {std::byte{1}}, 0}};
    EXPECT_FALSE(create(p));
    EXPECT_FALSE(exists("ea2"));
}

TEST_F(CreateTest, AllocationSize) {
    auto p = params("alloc", cd::kOverwriteIf, am::kMaximumAllowed);
    p.allocation_size = 1u << 20;
    auto r = create(p);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->info.end_of_file, 0u);
    // fallocate(KEEP_SIZE) reserves without growing the file, where the file system can.
    if (::fallocate(r->open->local.fd, FALLOC_FL_KEEP_SIZE, 0, 1) == 0) {
        EXPECT_GE(r->info.allocation_size, 1u << 20);
    }
}

// ---- share modes and delete on close (MS-FSA 2.1.5.1.2.2, 2.1.5.4) ----------------------------

TEST_F(CreateTest, SharingViolation) {
    write_file("s", "x");
    auto p = params("s", cd::kOpen, am::kFileReadData);
    p.share_access = sa::kRead;
    auto a = create(p);
    ASSERT_TRUE(a);
    auto w = params("s", cd::kOpen, am::kFileWriteData);
    EXPECT_EQ(create(w).status(), NtStatus::SharingViolation);
    // The overwrite dispositions count as writes for sharing.
    EXPECT_EQ(create(params("s", cd::kOverwriteIf, am::kFileReadData)).status(),
              NtStatus::SharingViolation);
    EXPECT_EQ(read_file("s"), "x");
    // Attribute-only opens pass.
    EXPECT_TRUE(create(params("s", cd::kOpen, am::kFileReadAttributes)));
    auto r = params("s", cd::kOpen, am::kFileReadData);
    r.share_access = sa::kRead;
    auto b = create(r);
    ASSERT_TRUE(b);
    a->open.reset();
    EXPECT_EQ(create(w).status(), NtStatus::SharingViolation);  // b still holds it
    b->open.reset();
    EXPECT_TRUE(create(w));
}

TEST_F(CreateTest, DeleteOnClose) {
    auto doc = create(
        params("gone", cd::kCreate, am::kFileGenericWrite | am::kDelete, co::kDeleteOnClose));
    ASSERT_TRUE(doc);
    EXPECT_TRUE(doc->open->local.delete_on_close);
    // Until the delete-on-close open closes, other opens are possible.
    auto other = create(params("gone", cd::kOpen, am::kFileReadData));
    ASSERT_TRUE(other);
    doc->open.reset();  // ~Open releases the registration: delete becomes pending
    EXPECT_TRUE(exists("gone"));
    EXPECT_EQ(create(params("gone", cd::kOpen, am::kFileReadAttributes)).status(),
              NtStatus::DeletePending);
    other->open.reset();  // last open: deleted
    EXPECT_FALSE(exists("gone"));
    EXPECT_EQ(files_.file_count(), 0u);
    // The name is free again.
    EXPECT_TRUE(create(params("gone", cd::kCreate)));
}

TEST_F(CreateTest, DeleteOnCloseRemovesEmptyDirectory) {
    ASSERT_TRUE(create(params("rmme", cd::kCreate, am::kFileGenericRead, co::kDirectoryFile)));
    auto r = create(params("rmme", cd::kOpen, am::kDelete | am::kFileReadAttributes,
                           co::kDirectoryFile | co::kDeleteOnClose));
    ASSERT_TRUE(r);
    ASSERT_TRUE(r->open->local.file_registration);
    EXPECT_TRUE(r->open->local.file_registration->release());
    EXPECT_FALSE(exists("rmme"));
}

TEST_F(CreateTest, ExplicitReleaseLeavesNothingInTheTable) {
    auto r = create(params("t", cd::kCreate));
    ASSERT_TRUE(r);
    EXPECT_EQ(files_.file_count(), 1u);
    r->open->local.file_registration->release();
    EXPECT_EQ(files_.file_count(), 0u);
    r->open.reset();  // destruction after release does nothing more
    EXPECT_TRUE(exists("t"));
}

}  // namespace
}  // namespace daxsmbd::server::handlers
