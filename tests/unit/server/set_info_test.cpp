// SET_INFO: the blocking helpers of info_classes.h (rename, hard link, allocation, emptiness) on
// a temporary share, and the handler end to end on a connection without a socket.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "protocol/access_mask.h"
#include "protocol/file_info.h"
#include "protocol/fs_info.h"
#include "protocol/security_descriptor.h"
#include "protocol/set_info.h"
#include "server/connection.h"
#include "server/errno_status.h"
#include "server/handlers/handlers.h"
#include "server/handlers/info_classes.h"
#include "server/io/uring_engine.h"
#include "server/rpcpipe/pipe_endpoint.h"
#include "server/server.h"
#include "server/state/file_table.h"
#include "server/vfs/dir.h"
#include "server/vfs/ea.h"
#include "server/vfs/metadata.h"
#include "server/vfs/open.h"
#include "tests/support/null_transport.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::server;
namespace asio = boost::asio;
namespace fic = protocol::file_info_class;
namespace am = protocol::access_mask;
namespace info = daxsmbd::server::handlers::info;

using test_support::NullTransport;
using test_support::TempDir;

// Sets DOS attributes the way daxsmbd stores them.
void set_dos_attributes(const TempDir& t, const std::string& rel, uint32_t attrs) {
    int fd = ::open(t.at(rel).c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(vfs::write_dos_xattr(fd, vfs::DosXattr{attrs, 0}));
    ::close(fd);
}

FileKey key_of(const TempDir& t, const std::string& rel) {
    auto st = t.stat(rel);
    return FileKey{st.st_dev, st.st_ino};
}

// ---- Blocking helpers ----------------------------------------------------------------------

class SetInfoHelpers : public ::testing::Test {
  protected:
    void SetUp() override {
        tmp.file("a.txt", "AAAA");
        tmp.file("b.txt", "BB");
        ::mkdir(tmp.at("sub").c_str(), 0755);
        auto r = vfs::ShareRoot::open(tmp.path);
        ASSERT_TRUE(r);
        root = std::make_unique<vfs::ShareRoot>(std::move(*r));
    }
    Result<std::string> rename(const std::string& from, std::string_view to, bool replace) {
        struct stat st {};
        ::stat(tmp.at(from).c_str(), &st);
        return info::rename_file(*root, files, key_of(tmp, from), S_ISDIR(st.st_mode), from, to,
                                 replace);
    }
    TempDir tmp;
    FileTable files;
    std::unique_ptr<vfs::ShareRoot> root;
};

TEST_F(SetInfoHelpers, RenameMovesAndReportsTheNewPath) {
    auto r = rename("a.txt", "sub\\c.txt", false);
    ASSERT_TRUE(r) << status_name(r.status());
    EXPECT_EQ(*r, "sub/c.txt");
    EXPECT_FALSE(tmp.exists("a.txt"));
    EXPECT_EQ(tmp.read("sub/c.txt"), "AAAA");
    // One leading backslash is tolerated.
    r = rename("sub/c.txt", "\\d.txt", false);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "d.txt");
    // '/' separates components as in CREATE.
    r = rename("d.txt", "sub/e.txt", false);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "sub/e.txt");
}

TEST_F(SetInfoHelpers, RenameOntoAnExistingName) {
    EXPECT_EQ(rename("a.txt", "b.txt", false).status(), NtStatus::ObjectNameCollision);
    // The lookup ignores case: B.TXT is b.txt.
    EXPECT_EQ(rename("a.txt", "B.TXT", false).status(), NtStatus::ObjectNameCollision);
    auto r = rename("a.txt", "B.TXT", true);
    ASSERT_TRUE(r) << status_name(r.status());
    // Replaced, and the name takes the client's spelling.
    EXPECT_EQ(*r, "B.TXT");
    EXPECT_EQ(tmp.read("B.TXT"), "AAAA");
    EXPECT_FALSE(tmp.exists("b.txt"));
    EXPECT_FALSE(tmp.exists("a.txt"));
}

TEST_F(SetInfoHelpers, RenameInCaseOnlyAndToItself) {
    auto r = rename("a.txt", "a.txt", false);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "a.txt");
    r = rename("a.txt", "A.Txt", false);
    ASSERT_TRUE(r) << status_name(r.status());
    EXPECT_EQ(*r, "A.Txt");
    EXPECT_TRUE(tmp.exists("A.Txt"));
    EXPECT_FALSE(tmp.exists("a.txt"));
}

TEST_F(SetInfoHelpers, RenameRefusals) {
    // A directory, a READONLY file and an open file are never replaced (MS-FSA 2.1.5.15.12).
    EXPECT_EQ(rename("a.txt", "sub", true).status(), NtStatus::AccessDenied);
    set_dos_attributes(tmp, "b.txt", vfs::kAttrReadonly);
    EXPECT_EQ(rename("a.txt", "b.txt", true).status(), NtStatus::AccessDenied);
    set_dos_attributes(tmp, "b.txt", 0);
    auto token = files.add(key_of(tmp, "b.txt"), ShareMode{am::kFileReadData, 7}, false, "b.txt");
    ASSERT_TRUE(token);
    EXPECT_EQ(rename("a.txt", "b.txt", true).status(), NtStatus::AccessDenied);
    ASSERT_TRUE(files.set_delete_pending(key_of(tmp, "b.txt"), true));
    EXPECT_EQ(rename("a.txt", "b.txt", true).status(), NtStatus::DeletePending);
    // The source's own delete is pending.
    ASSERT_TRUE(files.add(key_of(tmp, "a.txt"), ShareMode{am::kDelete, 7}, false, "a.txt"));
    ASSERT_TRUE(files.set_delete_pending(key_of(tmp, "a.txt"), true));
    EXPECT_EQ(rename("a.txt", "z.txt", false).status(), NtStatus::AccessDenied);
    ASSERT_TRUE(files.set_delete_pending(key_of(tmp, "a.txt"), false));
    // Names that cannot be targets.
    EXPECT_EQ(rename("a.txt", "", false).status(), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(rename("a.txt", "\\", false).status(), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(rename("a.txt", ":stream", false).status(), NtStatus::NotSupported);
    EXPECT_EQ(rename("a.txt", "x.txt:s", false).status(), NtStatus::NotSupported);
    EXPECT_EQ(rename("a.txt", "no\\such\\x.txt", false).status(), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(rename("a.txt", "x*.txt", false).status(), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(info::rename_file(*root, files, key_of(tmp, "sub"), true, "", "y", false).status(),
              NtStatus::AccessDenied);  // the share root
    EXPECT_TRUE(tmp.exists("a.txt"));
}

TEST_F(SetInfoHelpers, OpensOfTheDestinationDirectory) {
    const FileKey sub = key_of(tmp, "sub");
    // Held with DELETE access (and sharing everything): Windows' destination open, which shares
    // read and write only, conflicts (smbtorture smb2.rename.share_delete_and_delete_access).
    auto t1 = files.add(sub, ShareMode{am::kDelete | am::kFileListDirectory, 7}, false, "sub");
    ASSERT_TRUE(t1);
    EXPECT_EQ(rename("a.txt", "sub\\x.txt", false).status(), NtStatus::SharingViolation);
    EXPECT_EQ(
        info::link_file(*root, files, key_of(tmp, "a.txt"), "a.txt", "sub\\l", false).status(),
        NtStatus::SharingViolation);
    files.remove(sub, *t1, [](const std::string&) {});
    // Not sharing write (smbtorture smb2.rename.no_share_delete_no_delete_access).
    auto t2 = files.add(sub, ShareMode{am::kFileListDirectory, 1}, false, "sub");
    ASSERT_TRUE(t2);
    EXPECT_EQ(rename("a.txt", "sub\\x.txt", false).status(), NtStatus::SharingViolation);
    files.remove(sub, *t2, [](const std::string&) {});
    // Without DELETE and sharing everything: fine (smbtorture smb2.rename.share_delete_no_...).
    auto t3 =
        files.add(sub, ShareMode{am::kFileListDirectory | am::kFileWriteData, 7}, false, "sub");
    ASSERT_TRUE(t3);
    EXPECT_TRUE(rename("a.txt", "sub\\x.txt", false));
    // A destination directory whose delete is pending.
    ASSERT_TRUE(files.set_delete_pending(sub, true));
    EXPECT_EQ(rename("b.txt", "sub\\y.txt", false).status(), NtStatus::DeletePending);
}

TEST_F(SetInfoHelpers, HardLinks) {
    ASSERT_TRUE(info::link_file(*root, files, key_of(tmp, "a.txt"), "a.txt", "sub\\l.txt", false));
    EXPECT_EQ(tmp.stat("a.txt").st_nlink, 2u);
    EXPECT_EQ(tmp.stat("sub/l.txt").st_ino, tmp.stat("a.txt").st_ino);
    // Linking onto itself succeeds; onto another name needs ReplaceIfExists.
    EXPECT_TRUE(info::link_file(*root, files, key_of(tmp, "a.txt"), "a.txt", "sub\\l.txt", true));
    EXPECT_EQ(info::link_file(*root, files, key_of(tmp, "a.txt"), "a.txt", "b.txt", false).status(),
              NtStatus::ObjectNameCollision);
    ASSERT_TRUE(info::link_file(*root, files, key_of(tmp, "a.txt"), "a.txt", "b.txt", true));
    EXPECT_EQ(tmp.read("b.txt"), "AAAA");
    EXPECT_EQ(tmp.stat("a.txt").st_nlink, 3u);
}

// A rename or hard link that replaces a file tells the FileTable's unlink listeners (the DAX map
// cache) which file lost its name; one that replaces nothing tells nothing.
TEST_F(SetInfoHelpers, ReplacingRenameAndLinkTellTheUnlinkListeners) {
    tmp.file("c.txt", "CC");
    std::vector<FileKey> heard;
    files.add_unlink_listener([&](const FileKey& k) { heard.push_back(k); });
    ASSERT_TRUE(rename("a.txt", "d.txt", false));
    EXPECT_TRUE(heard.empty());
    const FileKey b = key_of(tmp, "b.txt");
    ASSERT_TRUE(rename("d.txt", "b.txt", true));
    EXPECT_EQ(heard, std::vector<FileKey>{b});
    const FileKey c = key_of(tmp, "c.txt");
    ASSERT_TRUE(info::link_file(*root, files, key_of(tmp, "b.txt"), "b.txt", "c.txt", true));
    EXPECT_EQ(heard, (std::vector<FileKey>{b, c}));
}

TEST_F(SetInfoHelpers, DirectoryIsEmpty) {
    EXPECT_TRUE(*info::directory_is_empty(*root, "sub"));
    tmp.file("sub/x");
    EXPECT_FALSE(*info::directory_is_empty(*root, "sub"));
    EXPECT_EQ(info::directory_is_empty(*root, "nope").status(), NtStatus::ObjectNameNotFound);
}

TEST_F(SetInfoHelpers, AllocationTruncatesBelowTheEndAndReservesAbove) {
    int fd = ::open(tmp.at("a.txt").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(info::set_allocation(fd, 2));
    EXPECT_EQ(tmp.stat("a.txt").st_size, 2);
    ASSERT_TRUE(info::set_allocation(fd, 0));
    EXPECT_EQ(tmp.stat("a.txt").st_size, 0);
    ASSERT_TRUE(info::set_allocation(fd, 3 * 4096));
    EXPECT_EQ(tmp.stat("a.txt").st_size, 0);
    EXPECT_GE(tmp.stat("a.txt").st_blocks * 512, 3 * 4096);
    // Less than reserved (but above the end of file): the excess is released.
    ASSERT_TRUE(info::set_allocation(fd, 4096));
    EXPECT_EQ(tmp.stat("a.txt").st_blocks * 512, 4096);
    EXPECT_EQ(tmp.stat("a.txt").st_size, 0);
    ::close(fd);
}

// ---- The handler ---------------------------------------------------------------------------

template <class T>
ByteVector enc(const T& v) {
    ByteVector out;
    ByteWriter w(out);
    v.encode(w);
    return out;
}

class SetInfoHandler : public ::testing::Test {
  protected:
    void SetUp() override {
        tmp.file("f.txt", "0123456789");
        ::mkdir(tmp.at("d").c_str(), 0755);
        tmp.file("d/in.txt", "x");
        ::mkdir(tmp.at("empty").c_str(), 0755);
        conn = std::make_shared<Connection>(server, io.get_executor(),
                                            std::make_unique<NullTransport>(), 1);
        conn->io_engine = &engine;
        conn->state.dialect = Dialect::Smb311;
        conn->state.max_transact_size = 65536;
        session = server.sessions.create();
        session->state = Session::State::Valid;
        auto r = vfs::ShareRoot::open(tmp.path);
        ASSERT_TRUE(r);
        share = std::make_shared<Share>();
        share->config.name = "data";
        share->root = std::make_shared<vfs::ShareRoot>(std::move(*r));
        tree = std::make_shared<TreeConnect>();
        tree->id = 5;
        tree->share = share;
        tree->read_only = false;
    }
    std::shared_ptr<Open> open(const std::string& rel, uint32_t access) {
        struct stat st {};
        ::stat(tmp.at(rel).c_str(), &st);
        auto fd = vfs::open_beneath(*share->root, rel, S_ISDIR(st.st_mode) ? O_RDONLY : O_RDWR);
        EXPECT_TRUE(fd) << rel;
        auto fi = vfs::query_info(fd->get());
        auto o = std::make_shared<Open>();
        o->local.fd = fd->release();
        o->local.path = rel;
        o->local.is_directory = fi->is_directory;
        o->local.file_id = fi->file_id;
        o->local.device = fi->device;
        o->granted_access = access;
        o->session_id = session->id;
        o->tree_id = tree->id;
        o->tree = tree;
        FileKey key{fi->device, fi->file_id};
        auto token = files.add(key, ShareMode{access, 7}, false, rel);
        o->local.file_registration =
            std::make_shared<FileRegistration>(files, key, *token, share->root);
        server.opens.insert(o);
        return o;
    }
    // CLOSE as far as the file table is concerned.
    void close(std::shared_ptr<Open>& o) {
        server.opens.remove(o->id.volatile_);
        o->local.file_registration->release();
        o.reset();
    }
    NtStatus set(const Open& o, uint8_t type, uint8_t cls, const ByteVector& buf,
                 uint32_t additional = 0) {
        SetInfoRequest q;
        q.info_type = type;
        q.file_info_class = cls;
        q.buffer = buf;
        q.additional_information = additional;
        q.file_id = o.id;
        ByteVector msg;
        ByteWriter w(msg);
        Header h;
        h.command = Command::SetInfo;
        h.session_id = session->id;
        h.tree_id = tree->id;
        h.serialize(w);
        q.serialize(w);
        ByteVector out(kHeaderSize);
        RequestContext ctx(*conn, server, h, msg, out);
        ctx.session = session;
        ctx.tree = tree;
        ctx.session_id = session->id;
        ctx.tree_id = tree->id;
        ctx.pending = std::make_shared<PendingRequest>();
        NtStatus status = NtStatus::InternalError;
        auto work = asio::make_work_guard(io);
        asio::co_spawn(io, server::handlers::set_info(ctx), [&](std::exception_ptr e, NtStatus s) {
            EXPECT_FALSE(e);
            status = s;
            work.reset();
        });
        io.restart();
        io.run();
        // MS-SMB2 2.2.40: success carries the 2-byte SET_INFO response, failure nothing.
        if (status == NtStatus::Success)
            EXPECT_EQ(ByteVector(out.begin() + kHeaderSize, out.end()),
                      ByteVector({std::byte{2}, std::byte{0}}));
        else
            EXPECT_EQ(out.size(), kHeaderSize);
        return status;
    }
    NtStatus set_file(const Open& o, uint8_t cls, const ByteVector& buf) {
        return set(o, info_type::kFile, cls, buf);
    }
    vfs::FileInfo info_of(const std::string& rel) {
        auto fd = vfs::open_beneath(*share->root, rel, O_PATH);
        return *vfs::query_info(fd->get());
    }

    TempDir tmp;
    FileTable files;  // outlives the opens the server holds
    asio::io_context io;
    Server server{Config{}};
    // The loop's io_uring engine, as the server gives every connection (handlers reach file
    // data through it: RequestContext::io()).
    io::Engine engine{io.get_executor()};
    std::shared_ptr<Connection> conn;
    std::shared_ptr<Session> session;
    std::shared_ptr<Share> share;
    std::shared_ptr<TreeConnect> tree;
};

constexpr uint32_t kAll = am::kFileAllAccess;
constexpr int64_t kTime = 132000000000000000;  // a FILETIME in 2019

TEST_F(SetInfoHandler, BasicInformationAsSmbtorture) {
    auto f = open("f.txt", kAll);
    FileBasicInfo b;
    b.creation_time = kTime + 100'0000000;
    b.last_access_time = kTime + 200'0000000;
    b.last_write_time = kTime + 300'0000000;
    b.file_attributes = file_attributes::kReadonly;
    ASSERT_EQ(set_file(*f, fic::kFileBasicInformation, enc(b)), NtStatus::Success);
    auto fi = info_of("f.txt");
    EXPECT_EQ(fi.creation_time, b.creation_time);
    EXPECT_EQ(fi.last_access_time, b.last_access_time);
    EXPECT_EQ(fi.last_write_time, b.last_write_time);
    EXPECT_EQ(fi.file_attributes, file_attributes::kReadonly);
    // Zero times and -1 / -2 leave the times alone; NORMAL clears the attributes.
    FileBasicInfo keep;
    keep.last_access_time = -1;
    keep.last_write_time = -2;
    keep.file_attributes = file_attributes::kNormal;
    ASSERT_EQ(set_file(*f, fic::kFileBasicInformation, enc(keep)), NtStatus::Success);
    fi = info_of("f.txt");
    EXPECT_EQ(fi.last_write_time, b.last_write_time);
    EXPECT_EQ(fi.creation_time, b.creation_time);
    EXPECT_EQ(fi.file_attributes, file_attributes::kNormal);
    // Attribute 0 leaves them alone.
    keep = FileBasicInfo{};
    keep.file_attributes = file_attributes::kHidden;
    ASSERT_EQ(set_file(*f, 4, enc(keep)), NtStatus::Success);
    keep.file_attributes = 0;
    ASSERT_EQ(set_file(*f, 4, enc(keep)), NtStatus::Success);
    EXPECT_EQ(info_of("f.txt").file_attributes, file_attributes::kHidden);
    // A file cannot become a directory; times below -2 are invalid.
    keep.file_attributes = file_attributes::kDirectory;
    EXPECT_EQ(set_file(*f, 4, enc(keep)), NtStatus::InvalidParameter);
    keep = FileBasicInfo{};
    keep.creation_time = -3;
    EXPECT_EQ(set_file(*f, 4, enc(keep)), NtStatus::InvalidParameter);
    // Short buffer, missing access.
    EXPECT_EQ(set_file(*f, 4, ByteVector(39)), NtStatus::InfoLengthMismatch);
    auto ro = open("f.txt", am::kFileReadData | am::kFileReadAttributes);
    EXPECT_EQ(set_file(*ro, 4, enc(FileBasicInfo{})), NtStatus::AccessDenied);
}

TEST_F(SetInfoHandler, SizesAsSmbtorture) {
    auto f = open("f.txt", kAll);
    ASSERT_EQ(set_file(*f, fic::kFileAllocationInformation, enc(FileAllocationInfo{0})),
              NtStatus::Success);
    EXPECT_EQ(tmp.stat("f.txt").st_size, 0);
    ASSERT_EQ(set_file(*f, fic::kFileAllocationInformation, enc(FileAllocationInfo{4096})),
              NtStatus::Success);
    EXPECT_EQ(info_of("f.txt").allocation_size, 4096u);
    EXPECT_EQ(tmp.stat("f.txt").st_size, 0);
    ASSERT_EQ(set_file(*f, fic::kFileEndOfFileInformation, enc(FileEndOfFileInfo{37})),
              NtStatus::Success);
    EXPECT_EQ(tmp.stat("f.txt").st_size, 37);
    ASSERT_EQ(set_file(*f, fic::kFileEndOfFileInformation, enc(FileEndOfFileInfo{7})),
              NtStatus::Success);
    EXPECT_EQ(tmp.stat("f.txt").st_size, 7);
    EXPECT_EQ(set_file(*f, fic::kFileEndOfFileInformation, enc(FileEndOfFileInfo{-1})),
              NtStatus::InvalidParameter);
    // Valid data length: Linux's is the end of file.
    EXPECT_EQ(set_file(*f, fic::kFileValidDataLengthInformation, enc(FileValidDataLengthInfo{7})),
              NtStatus::Success);
    EXPECT_EQ(set_file(*f, fic::kFileValidDataLengthInformation, enc(FileValidDataLengthInfo{3})),
              NtStatus::InvalidParameter);
    // Directories have no size; WRITE_DATA is needed.
    auto d = open("d", kAll);
    EXPECT_EQ(set_file(*d, fic::kFileEndOfFileInformation, enc(FileEndOfFileInfo{1})),
              NtStatus::InvalidParameter);
    EXPECT_EQ(set_file(*d, fic::kFileAllocationInformation, enc(FileAllocationInfo{1})),
              NtStatus::InvalidParameter);
    auto ro = open("f.txt", am::kFileReadData | am::kFileWriteAttributes);
    EXPECT_EQ(set_file(*ro, fic::kFileEndOfFileInformation, enc(FileEndOfFileInfo{1})),
              NtStatus::AccessDenied);
    EXPECT_EQ(set_file(*ro, fic::kFileAllocationInformation, enc(FileAllocationInfo{1})),
              NtStatus::AccessDenied);
}

TEST_F(SetInfoHandler, DispositionMakesTheDeletePendingAndCloseDeletes) {
    auto f = open("f.txt", kAll);
    const FileKey k{f->local.device, f->local.file_id};
    ASSERT_EQ(set_file(*f, fic::kFileDispositionInformation, enc(FileDispositionInfo{true})),
              NtStatus::Success);
    EXPECT_TRUE(files.delete_pending(k));
    ASSERT_EQ(set_file(*f, fic::kFileDispositionInformation, enc(FileDispositionInfo{false})),
              NtStatus::Success);
    EXPECT_FALSE(files.delete_pending(k));
    ASSERT_EQ(set_file(*f, fic::kFileDispositionInformation, enc(FileDispositionInfo{true})),
              NtStatus::Success);
    close(f);
    EXPECT_FALSE(tmp.exists("f.txt"));
}

TEST_F(SetInfoHandler, DispositionRefusals) {
    tmp.file("ro.txt");
    set_dos_attributes(tmp, "ro.txt", vfs::kAttrReadonly);
    auto ro = open("ro.txt", kAll);
    EXPECT_EQ(set_file(*ro, 13, enc(FileDispositionInfo{true})), NtStatus::CannotDelete);
    auto d = open("d", kAll);
    EXPECT_EQ(set_file(*d, 13, enc(FileDispositionInfo{true})), NtStatus::DirectoryNotEmpty);
    auto e = open("empty", kAll);
    EXPECT_EQ(set_file(*e, 13, enc(FileDispositionInfo{true})), NtStatus::Success);
    auto root = open("", kAll);
    EXPECT_EQ(set_file(*root, 13, enc(FileDispositionInfo{true})), NtStatus::AccessDenied);
    auto nodel = open("d/in.txt", am::kFileReadData | am::kFileWriteData);
    EXPECT_EQ(set_file(*nodel, 13, enc(FileDispositionInfo{true})), NtStatus::AccessDenied);
    EXPECT_EQ(set_file(*nodel, 13, ByteVector{}), NtStatus::InvalidParameter);  // no buffer
}

TEST_F(SetInfoHandler, DispositionEx) {
    namespace dx = file_disposition_ex;
    tmp.file("ro.txt");
    set_dos_attributes(tmp, "ro.txt", vfs::kAttrReadonly);
    auto ro = open("ro.txt", kAll);
    EXPECT_EQ(set_file(*ro, fic::kFileDispositionInformationEx, enc(FileDispositionInfoEx{0x100})),
              NtStatus::NotSupported);
    EXPECT_EQ(set_file(*ro, 64, enc(FileDispositionInfoEx{dx::kDelete})), NtStatus::CannotDelete);
    ASSERT_EQ(
        set_file(*ro, 64, enc(FileDispositionInfoEx{dx::kDelete | dx::kIgnoreReadonlyAttribute})),
        NtStatus::Success);
    EXPECT_TRUE(files.delete_pending(FileKey{ro->local.device, ro->local.file_id}));
    close(ro);
    EXPECT_FALSE(tmp.exists("ro.txt"));
    // ON_CLOSE marks only this handle: the file goes when it closes.
    auto f = open("f.txt", kAll);
    ASSERT_EQ(set_file(*f, 64, enc(FileDispositionInfoEx{dx::kDelete | dx::kOnClose})),
              NtStatus::Success);
    EXPECT_FALSE(files.delete_pending(FileKey{f->local.device, f->local.file_id}));
    EXPECT_TRUE(tmp.exists("f.txt"));
    close(f);
    EXPECT_FALSE(tmp.exists("f.txt"));
}

TEST_F(SetInfoHandler, PositionAndModeAsSmbtorture) {
    auto f = open("f.txt", kAll);
    ASSERT_EQ(set_file(*f, fic::kFilePositionInformation, enc(FilePositionInfo{123456})),
              NtStatus::Success);
    EXPECT_EQ(f->local.position, 123456u);
    EXPECT_EQ(set_file(*f, 14, enc(FilePositionInfo{-5})), NtStatus::InvalidParameter);
    ASSERT_EQ(set_file(*f, fic::kFileModeInformation, enc(FileModeInfo{2})), NtStatus::Success);
    EXPECT_TRUE(f->local.mode_set);
    EXPECT_EQ(f->local.mode, 2u);
    EXPECT_EQ(set_file(*f, 16, enc(FileModeInfo{1})), NtStatus::InvalidParameter);
    ASSERT_EQ(set_file(*f, 16, enc(FileModeInfo{0})), NtStatus::Success);
    EXPECT_EQ(f->local.mode, 0u);
    // Handle state changes also on a read-only share; file changes do not.
    tree->read_only = true;
    EXPECT_EQ(set_file(*f, 14, enc(FilePositionInfo{1})), NtStatus::Success);
    EXPECT_EQ(set_file(*f, 4, enc(FileBasicInfo{})), NtStatus::AccessDenied);
    EXPECT_EQ(set_file(*f, 20, enc(FileEndOfFileInfo{0})), NtStatus::AccessDenied);
}

TEST_F(SetInfoHandler, RenameUpdatesEveryHandleOfTheFile) {
    auto f = open("f.txt", kAll);
    auto other = open("f.txt", am::kFileReadAttributes);
    FileRenameInfo r;
    r.file_name = "d\\g.txt";
    ASSERT_EQ(set_file(*f, fic::kFileRenameInformation, enc(r)), NtStatus::Success);
    EXPECT_TRUE(tmp.exists("d/g.txt"));
    EXPECT_EQ(f->local.path, "d/g.txt");
    EXPECT_EQ(other->local.path, "d/g.txt");
    EXPECT_EQ(files.path(FileKey{f->local.device, f->local.file_id}), "d/g.txt");
    // Delete-on-close after the rename deletes the new name.
    ASSERT_EQ(set_file(*f, 13, enc(FileDispositionInfo{true})), NtStatus::Success);
    close(f);
    close(other);
    EXPECT_FALSE(tmp.exists("d/g.txt"));
}

TEST_F(SetInfoHandler, RenameRefusals) {
    auto f = open("f.txt", am::kFileReadData | am::kFileWriteAttributes);
    FileRenameInfo r;
    r.file_name = "x.txt";
    EXPECT_EQ(set_file(*f, 10, enc(r)), NtStatus::AccessDenied);  // no DELETE
    auto g = open("f.txt", kAll);
    r.root_directory = 1;
    EXPECT_EQ(set_file(*g, 10, enc(r)), NtStatus::InvalidParameter);
    EXPECT_EQ(set_file(*g, 10, ByteVector(19)), NtStatus::InfoLengthMismatch);
    // A directory with an open file below it.
    auto inner = open("d/in.txt", am::kFileReadData);
    auto d = open("d", kAll);
    r.root_directory = 0;
    r.file_name = "d2";
    EXPECT_EQ(set_file(*d, 10, enc(r)), NtStatus::AccessDenied);
    close(inner);
    EXPECT_EQ(set_file(*d, 10, enc(r)), NtStatus::Success);
    EXPECT_TRUE(tmp.exists("d2/in.txt"));
    // Hard links: not of directories.
    FileLinkInfo l;
    l.file_name = "d3";
    EXPECT_EQ(set_file(*d, fic::kFileLinkInformation, enc(l)), NtStatus::FileIsADirectory);
    l.file_name = "hard.txt";
    EXPECT_EQ(set_file(*g, fic::kFileLinkInformation, enc(l)), NtStatus::Success);
    EXPECT_EQ(tmp.stat("hard.txt").st_ino, tmp.stat("f.txt").st_ino);
}

TEST_F(SetInfoHandler, ExtendedAttributes) {
    auto f = open("f.txt", kAll);
    FileFullEaInfo eas;
    eas.entries.push_back(FullEaEntry{0, "NewEA", {std::byte{'t'}, std::byte{'m'}}});
    ByteVector buf;
    ByteWriter w(buf);
    eas.encode(w);
    ASSERT_EQ(set_file(*f, fic::kFileFullEaInformation, buf), NtStatus::Success);
    auto got = vfs::get_ea(f->local.fd, "NEWEA");
    ASSERT_TRUE(got);
    ASSERT_TRUE(*got);
    EXPECT_EQ((*got)->value.size(), 2u);
    // A zero-length value deletes it (MS-FSCC 2.4.16).
    eas.entries[0].value.clear();
    buf.clear();
    ByteWriter w2(buf);
    eas.encode(w2);
    ASSERT_EQ(set_file(*f, 15, buf), NtStatus::Success);
    EXPECT_FALSE(*vfs::get_ea(f->local.fd, "NEWEA"));
    // Malformed lists and bad flags.
    EXPECT_EQ(set_file(*f, 15, ByteVector(8, std::byte{0xff})), NtStatus::EaListInconsistent);
    eas.entries[0] = FullEaEntry{0x01, "X", {std::byte{1}}};
    buf.clear();
    ByteWriter w3(buf);
    eas.encode(w3);
    EXPECT_EQ(set_file(*f, 15, buf), NtStatus::InvalidEaName);
    auto ro = open("f.txt", am::kFileReadData);
    EXPECT_EQ(set_file(*ro, 15, buf), NtStatus::AccessDenied);
}

TEST_F(SetInfoHandler, ClassesSecurityFileSystemAndLimits) {
    auto f = open("f.txt", kAll);
    EXPECT_EQ(set_file(*f, fic::kFileStandardInformation, ByteVector(24)),
              NtStatus::InvalidInfoClass);
    EXPECT_EQ(set_file(*f, fic::kFilePipeInformation, ByteVector(8)), NtStatus::NotSupported);
    EXPECT_EQ(set_file(*f, fic::kFileShortNameInformation, enc(FileNameInfo{"F~1.TXT"})),
              NtStatus::ShortNamesNotEnabledOnVolume);
    EXPECT_EQ(set_file(*f, 13, ByteVector(65537, std::byte{0})), NtStatus::InvalidParameter);
    // Security: the access checks of MS-SMB2 3.3.5.21.3, then the descriptor is parsed and
    // stored (security_info_test.cpp).
    auto plain = open("f.txt", am::kFileReadData);
    EXPECT_EQ(set(*plain, info_type::kSecurity, 0, ByteVector(20), 0x4), NtStatus::AccessDenied);
    EXPECT_EQ(set(*plain, info_type::kSecurity, 0, ByteVector(20), 0x1), NtStatus::AccessDenied);
    EXPECT_EQ(set(*f, info_type::kSecurity, 0, ByteVector(20), 0x8), NtStatus::AccessDenied);
    EXPECT_EQ(set(*f, info_type::kSecurity, 0, ByteVector(20), 0x7),
              NtStatus::InvalidSecurityDescr);
    ByteVector null_dacl(20);
    null_dacl[0] = std::byte{1};     // Revision
    null_dacl[2] = std::byte{0x04};  // SE_DACL_PRESENT, OffsetDacl 0: NULL DACL
    null_dacl[3] = std::byte{0x80};  // SE_SELF_RELATIVE
    EXPECT_EQ(set(*f, info_type::kSecurity, 0, null_dacl, 0x4), NtStatus::Success);
    // File system classes.
    EXPECT_EQ(set(*plain, info_type::kFileSystem, fs_info_class::kFileFsControlInformation,
                  ByteVector(48)),
              NtStatus::AccessDenied);
    EXPECT_EQ(
        set(*f, info_type::kFileSystem, fs_info_class::kFileFsControlInformation, ByteVector(48)),
        NtStatus::NotSupported);
    EXPECT_EQ(
        set(*f, info_type::kFileSystem, fs_info_class::kFileFsSizeInformation, ByteVector(24)),
        NtStatus::InvalidInfoClass);
    EXPECT_EQ(set(*f, info_type::kQuota, 0, ByteVector(8)), NtStatus::NotSupported);
    EXPECT_EQ(set(*f, 7, 0, ByteVector(8)), NtStatus::InvalidParameter);
}

}  // namespace
