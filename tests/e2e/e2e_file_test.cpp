// End-to-end file access through daxsmbd's own client against the in-process server: compounds
// (MS-SMB2 3.3.5.2.7), multi-credit I/O (3.3.5.2.5), the file commands, and the share boundary
// (architecture.md: `..` and symlinks cannot leave the share).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "protocol/access_mask.h"
#include "protocol/dir_info.h"
#include "protocol/file_info.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;

constexpr uint32_t kRw = am::kFileGenericRead | am::kFileGenericWrite | am::kDelete;

class E2eFile : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { server_ = new TestServer(); }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->error(); }

    // Connected, logged in as alice and tree-connected to `data`.
    static std::unique_ptr<Smb2Client> login(uint16_t dialect = dialect::k311,
                                             bool signing_required = false) {
        auto c = std::make_unique<Smb2Client>();
        auto st = c->connect("127.0.0.1", server_->port());
        EXPECT_TRUE(st) << status_name(st.status());
        NegotiateOptions n;
        n.dialects = {dialect};
        n.signing_required = signing_required;
        auto r = c->negotiate(n);
        EXPECT_STATUS(r, NtStatus::Success);
        auto s = c->session_setup("alice", "pw");
        EXPECT_STATUS(s, NtStatus::Success);
        auto t = c->tree_connect("data");
        EXPECT_STATUS(t, NtStatus::Success);
        return c;
    }
    static std::string local(const std::string& name) { return server_->share_dir() + "/" + name; }

    static TestServer* server_;
};
TestServer* E2eFile::server_ = nullptr;

// ---- compounds ---------------------------------------------------------------------------------

// CREATE + WRITE + READ + CLOSE in one related chain, the later elements using the
// {all-ones} FileId placeholder (MS-SMB2 3.2.4.1.4, 3.3.5.2.7.2); with and without signing.
void related_chain(Smb2Client& c, const std::string& name, const std::string& local_path) {
    CreateRequest cr;
    cr.name = name;
    cr.desired_access = kRw;
    cr.share_access = share_access::kAll;
    cr.create_disposition = create_disposition::kOverwriteIf;
    const std::string text = "written inside a related compound: " + name;
    WriteRequest wr;
    wr.file_id = kPlaceholderFileId;
    wr.data = as_bytes(text);
    ReadRequest rd;
    rd.file_id = kPlaceholderFileId;
    rd.length = 4096;
    CloseRequest cl;
    cl.file_id = kPlaceholderFileId;
    cl.flags = close_flags::kPostqueryAttrib;
    CallOptions related;
    related.related = true;
    CallOptions related_write = related;
    related_write.payload = text.size();
    CallOptions related_read = related;
    related_read.payload = rd.length;

    auto replies = c.compound()
                       .add(Command::Create, cr)
                       .add(Command::Write, wr, related_write)
                       .add(Command::Read, rd, related_read)
                       .add(Command::Close, cl, related)
                       .run();
    ASSERT_EQ(replies.size(), 4u);
    for (auto& r : replies)
        EXPECT_STATUS(r, NtStatus::Success) << " (" << command_name(r.header.command) << ")";
    auto create = replies[0].parse<CreateResponse>();
    ASSERT_TRUE(create);
    EXPECT_EQ(create->create_action, create_action::kCreated);
    auto write = replies[1].parse<WriteResponse>();
    ASSERT_TRUE(write);
    EXPECT_EQ(write->count, text.size());
    auto read = replies[2].parse<ReadResponse>();
    ASSERT_TRUE(read);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(read->data.data()), read->data.size()),
              text);
    auto close = replies[3].parse<CloseResponse>();
    ASSERT_TRUE(close);
    EXPECT_EQ(close->end_of_file, int64_t(text.size()));
    // MS-SMB2 3.3.4.1.3: the responses come back as one chain, related flag on all but the first.
    EXPECT_FALSE(replies[0].header.is_related());
    for (size_t i = 1; i < 4; ++i)
        EXPECT_TRUE(replies[i].header.is_related()) << i;
    auto disk = file_contents(local_path);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(disk.data()), disk.size()), text);
}

TEST_F(E2eFile, RelatedCompoundCreateWriteReadClose) {
    auto c = login();
    related_chain(*c, "compound.txt", local("compound.txt"));
}

TEST_F(E2eFile, RelatedCompoundSigned) {
    auto c = login(dialect::k311, true);
    ASSERT_TRUE(c->signing_required());
    related_chain(*c, "compound-signed.txt", local("compound-signed.txt"));
}

TEST_F(E2eFile, RelatedCompoundSigned30) {
    auto c = login(dialect::k300, true);
    related_chain(*c, "compound-signed30.txt", local("compound-signed30.txt"));
}

TEST_F(E2eFile, RelatedCompoundAfterFailedCreate) {
    auto c = login();
    CreateRequest cr;
    cr.name = "does-not-exist.txt";
    cr.desired_access = kRw;
    cr.share_access = share_access::kAll;
    cr.create_disposition = create_disposition::kOpen;
    ReadRequest rd;
    rd.file_id = kPlaceholderFileId;
    rd.length = 16;
    CloseRequest cl;
    cl.file_id = kPlaceholderFileId;
    CallOptions related;
    related.related = true;
    auto replies = c->compound()
                       .add(Command::Create, cr)
                       .add(Command::Read, rd, related)
                       .add(Command::Close, cl, related)
                       .run();
    ASSERT_EQ(replies.size(), 3u);
    EXPECT_STATUS(replies[0], NtStatus::ObjectNameNotFound);
    // MS-SMB2 3.3.5.2.7.2: the elements that depend on the failed CREATE fail with its status.
    EXPECT_STATUS(replies[1], NtStatus::ObjectNameNotFound);
    EXPECT_STATUS(replies[2], NtStatus::ObjectNameNotFound);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
}

TEST_F(E2eFile, UnrelatedCompound) {
    auto c = login();
    CreateRequest a;
    a.name = "unrelated-a.txt";
    a.desired_access = kRw;
    a.share_access = share_access::kAll;
    a.create_disposition = create_disposition::kOverwriteIf;
    CreateRequest b = a;
    b.name = "unrelated-b.txt";
    auto replies = c->compound()
                       .add(Command::Create, a)
                       .add(Command::Echo, EchoRequest{})
                       .add(Command::Create, b)
                       .run();
    ASSERT_EQ(replies.size(), 3u);
    for (auto& r : replies)
        ASSERT_STATUS(r, NtStatus::Success);
    auto ra = replies[0].parse<CreateResponse>();
    auto rb = replies[2].parse<CreateResponse>();
    ASSERT_TRUE(ra);
    ASSERT_TRUE(rb);
    EXPECT_FALSE(ra->file_id == rb->file_id);
    EXPECT_STATUS(c->close(ra->file_id), NtStatus::Success);
    EXPECT_STATUS(c->close(rb->file_id), NtStatus::Success);
    EXPECT_EQ(::access(local("unrelated-a.txt").c_str(), F_OK), 0);
    EXPECT_EQ(::access(local("unrelated-b.txt").c_str(), F_OK), 0);
}

TEST_F(E2eFile, FirstElementRelatedIsInvalidParameter) {
    auto c = login();
    CallOptions related;
    related.related = true;
    auto replies = c->compound().add(Command::Echo, EchoRequest{}, related).run();
    ASSERT_EQ(replies.size(), 1u);
    // MS-SMB2 3.3.5.2.7.2: the first element of a chain cannot be related.
    EXPECT_STATUS(replies[0], NtStatus::InvalidParameter);
}

// What Windows answers (smbtorture smb2.compound.invalid1, unrelated1): the elements related to
// an invalid first element fail with INVALID_PARAMETER too; an unrelated element with the
// placeholder FileId names no open (FILE_CLOSED).
TEST_F(E2eFile, ElementsRelatedToAnInvalidElementFailAndUnrelatedPlaceholderIsFileClosed) {
    auto c = login();
    CreateRequest cr;
    cr.name = "invalid-chain.txt";
    cr.desired_access = kRw;
    cr.share_access = share_access::kAll;
    cr.create_disposition = create_disposition::kOpenIf;
    CloseRequest cl;
    cl.file_id = kPlaceholderFileId;
    CallOptions related;
    related.related = true;
    auto replies = c->compound()
                       .add(Command::Create, cr, related)
                       .add(Command::Close, cl, related)
                       .add(Command::Close, cl)
                       .run();
    ASSERT_EQ(replies.size(), 3u);
    EXPECT_STATUS(replies[0], NtStatus::InvalidParameter);
    EXPECT_STATUS(replies[1], NtStatus::InvalidParameter);
    EXPECT_STATUS(replies[2], NtStatus::FileClosed);
    // Nothing was created by the refused CREATE.
    EXPECT_NE(::access(local("invalid-chain.txt").c_str(), F_OK), 0);

    // A related element after an element that had no file: FILE_CLOSED (related5, invalid3),
    // even when an element before that one opened a file.
    cr.create_disposition = create_disposition::kOverwriteIf;
    replies = c->compound()
                  .add(Command::Create, cr)
                  .add(Command::Close, cl)
                  .add(Command::Close, cl, related)
                  .run();
    ASSERT_EQ(replies.size(), 3u);
    EXPECT_STATUS(replies[0], NtStatus::Success);
    EXPECT_STATUS(replies[1], NtStatus::FileClosed);
    EXPECT_STATUS(replies[2], NtStatus::FileClosed);
    auto created = replies[0].parse<CreateResponse>();
    ASSERT_TRUE(created);
    EXPECT_STATUS(c->close(created->file_id), NtStatus::Success);
}

TEST_F(E2eFile, Echo) {
    auto c = login();
    auto e = c->echo();
    ASSERT_STATUS(e, NtStatus::Success);
}

// ---- multi-credit I/O --------------------------------------------------------------------------

class E2eLargeIo : public E2eFile, public ::testing::WithParamInterface<uint16_t> {};

// 1 MiB in one WRITE and back in one READ, each charged 16 credits (MS-SMB2 3.1.5.2).
TEST_P(E2eLargeIo, OneMiBInOneWriteAndOneRead) {
    auto c = login(GetParam());
    ASSERT_TRUE(c->multi_credit());
    ASSERT_GE(c->max_write_size(), 1u << 20);
    ASSERT_GE(c->max_read_size(), 1u << 20);
    ASSERT_GE(c->credits(), 16u);
    std::string name = "large-" + std::to_string(GetParam()) + ".bin";
    auto cr = c->open(name, kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ByteVector data = pattern(1 << 20, GetParam());
    auto w = c->write(cr.body.file_id, 0, data);
    ASSERT_STATUS(w, NtStatus::Success);
    EXPECT_EQ(w.body.count, data.size());
    auto r = c->read(cr.body.file_id, 0, 1 << 20);
    ASSERT_STATUS(r, NtStatus::Success);
    ASSERT_EQ(r.body.data.size(), data.size());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), r.body.data.begin()));
    // Reading past the end: END_OF_FILE (MS-FSA 2.1.5.2).
    EXPECT_STATUS(c->read(cr.body.file_id, 1 << 20, 65536), NtStatus::EndOfFile);
    // QUERY_INFO FileStandardInformation sees the size.
    QueryInfoRequest qi;
    qi.info_type = info_type::kFile;
    qi.file_info_class = file_info_class::kFileStandardInformation;
    qi.output_buffer_length = 1024;
    qi.file_id = cr.body.file_id;
    auto q = c->query_info(qi);
    ASSERT_STATUS(q, NtStatus::Success);
    auto std_info = FileStandardInfo::decode(q.body.buffer);
    ASSERT_TRUE(std_info);
    EXPECT_EQ(std_info->end_of_file, 1 << 20);
    EXPECT_FALSE(std_info->directory);
    EXPECT_STATUS(c->flush(cr.body.file_id), NtStatus::Success);
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
    EXPECT_EQ(file_contents(local(name)), data);
}

// 1 MiB as 4 x 256 KiB writes at increasing offsets, read back as 16 x 64 KiB.
TEST_P(E2eLargeIo, ChunkedWritesAndReads) {
    auto c = login(GetParam());
    std::string name = "chunked-" + std::to_string(GetParam()) + ".bin";
    auto cr = c->open(name, kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ByteVector data = pattern(1 << 20, GetParam() + 7);
    for (size_t off = 0; off < data.size(); off += 256 * 1024) {
        auto w = c->write(cr.body.file_id, off, Bytes(data).subspan(off, 256 * 1024));
        ASSERT_STATUS(w, NtStatus::Success) << " at " << off;
    }
    ByteVector back;
    for (size_t off = 0; off < data.size(); off += 65536) {
        auto r = c->read(cr.body.file_id, off, 65536);
        ASSERT_STATUS(r, NtStatus::Success) << " at " << off;
        back.insert(back.end(), r.body.data.begin(), r.body.data.end());
    }
    EXPECT_EQ(back, data);
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
}

INSTANTIATE_TEST_SUITE_P(Dialects, E2eLargeIo,
                         ::testing::Values(dialect::k210, dialect::k300, dialect::k311),
                         [](const ::testing::TestParamInfo<uint16_t>& i) {
                             return "d" + std::to_string(i.param);
                         });

TEST_F(E2eFile, Dialect202IsLimitedTo64KiB) {
    auto c = login(dialect::k202);
    EXPECT_FALSE(c->multi_credit());
    EXPECT_EQ(c->max_read_size(), 65536u);
    auto cr = c->open("small-202.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ByteVector data = pattern(65536, 202);
    ASSERT_STATUS(c->write(cr.body.file_id, 0, data), NtStatus::Success);
    auto r = c->read(cr.body.file_id, 0, 65536);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), r.body.data.begin(), r.body.data.end()));
    // MS-SMB2 3.3.5.12: Length above MaxReadSize.
    EXPECT_STATUS(c->read(cr.body.file_id, 0, 65537), NtStatus::InvalidParameter);
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
}

TEST_F(E2eFile, ReadAboveMaxReadSizeIsInvalidParameter) {
    auto c = login();
    c->options().credit_target = 256;
    ASSERT_STATUS(c->echo(), NtStatus::Success);  // collect credits for a 129-credit READ
    auto cr = c->open("maxread.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    EXPECT_STATUS(c->read(cr.body.file_id, 0, c->max_read_size() + 1), NtStatus::InvalidParameter);
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
}

TEST_F(E2eFile, WriteAboveMaxWriteSizeIsInvalidParameter) {
    auto c = login();
    c->options().credit_target = 256;
    ASSERT_STATUS(c->echo(), NtStatus::Success);  // collect credits for a 129-credit WRITE
    auto cr = c->open("maxwrite.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ByteVector big(c->max_write_size() + 1, std::byte{1});
    // MS-SMB2 3.3.5.13: Length above MaxWriteSize.
    EXPECT_STATUS(c->write(cr.body.file_id, 0, big), NtStatus::InvalidParameter);
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
    EXPECT_EQ(file_contents(local("maxwrite.bin")).size(), 0u);
}

// ---- other file commands -----------------------------------------------------------------------

TEST_F(E2eFile, QueryDirectoryListsFiles) {
    auto c = login();
    ASSERT_EQ(::mkdir(local("listing").c_str(), 0755), 0);
    for (const char* n : {"one.txt", "two.txt", "three.txt"}) {
        auto cr = c->open(std::string("listing\\") + n, kRw, create_disposition::kCreate);
        ASSERT_STATUS(cr, NtStatus::Success) << n;
        EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
    }
    auto dir =
        c->open("listing", am::kFileListDirectory | am::kFileReadAttributes | am::kSynchronize,
                create_disposition::kOpen, create_options::kDirectoryFile);
    ASSERT_STATUS(dir, NtStatus::Success);
    QueryDirectoryRequest q;
    q.file_information_class = file_info_class::kFileIdBothDirectoryInformation;
    q.file_id = dir.body.file_id;
    q.pattern = "*";
    q.output_buffer_length = 65536;
    auto r = c->query_directory(q);
    ASSERT_STATUS(r, NtStatus::Success);
    auto entries = DirectoryInfoWriter::parse(q.file_information_class, r.body.buffer);
    ASSERT_TRUE(entries);
    std::vector<std::string> names;
    for (auto& e : *entries)
        names.push_back(e.name);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{".", "..", "one.txt", "three.txt", "two.txt"}));
    // MS-SMB2 3.3.5.18: the enumeration is finished.
    EXPECT_STATUS(c->query_directory(q), NtStatus::NoMoreFiles);
    EXPECT_STATUS(c->close(dir.body.file_id), NtStatus::Success);
}

TEST_F(E2eFile, ByteRangeLocks) {
    auto c = login();
    auto a = c->open("locked.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(a, NtStatus::Success);
    auto b = c->open("locked.bin", kRw, create_disposition::kOpen);
    ASSERT_STATUS(b, NtStatus::Success);
    LockRequest lk;
    lk.file_id = a.body.file_id;
    lk.locks = {LockElement{0, 100, lock_flags::kExclusiveLock | lock_flags::kFailImmediately}};
    ASSERT_STATUS(c->lock(lk), NtStatus::Success);
    LockRequest other = lk;
    other.file_id = b.body.file_id;
    // MS-FSA 2.1.5.7: a conflicting lock that must not wait is STATUS_LOCK_NOT_GRANTED.
    EXPECT_STATUS(c->lock(other), NtStatus::LockNotGranted);
    // I/O from the other open into the locked range conflicts (MS-FSA 2.1.5.2/2.1.5.3).
    EXPECT_STATUS(c->write(b.body.file_id, 10, as_bytes("x")), NtStatus::FileLockConflict);
    LockRequest unlock = lk;
    unlock.locks = {LockElement{0, 100, lock_flags::kUnlock}};
    ASSERT_STATUS(c->lock(unlock), NtStatus::Success);
    EXPECT_STATUS(c->lock(other), NtStatus::Success);
    EXPECT_STATUS(c->close(a.body.file_id), NtStatus::Success);
    EXPECT_STATUS(c->close(b.body.file_id), NtStatus::Success);
}

TEST_F(E2eFile, ValidateNegotiateInfo30) {
    auto c = std::make_unique<Smb2Client>();
    ASSERT_TRUE(c->connect("127.0.0.1", server_->port()));
    NegotiateOptions n;
    n.dialects = {dialect::k300, dialect::k302};
    auto neg = c->negotiate(n);
    ASSERT_STATUS(neg, NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);
    c->options().force_sign = true;  // MS-SMB2 3.2.5.14.12: sent signed
    ValidateNegotiateInfoRequest v;
    v.capabilities = n.capabilities;
    v.guid = c->options().client_guid;
    v.security_mode = security_mode::kSigningEnabled;
    v.dialects = n.dialects;
    ByteVector in;
    ByteWriter w(in);
    v.encode(w);
    IoctlRequest io;
    io.ctl_code = fsctl::kValidateNegotiateInfo;
    io.file_id = kPlaceholderFileId;
    io.input = in;
    io.max_output_response = 64 * 1024;
    io.flags = ioctl_flags::kIsFsctl;
    auto r = c->ioctl(io);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_TRUE(r.signature_verified);
    auto resp = ValidateNegotiateInfoResponse::decode(r.body.output);
    ASSERT_TRUE(resp);
    // MS-SMB2 3.3.5.15.12: the values the server sent in its NEGOTIATE response.
    EXPECT_EQ(resp->capabilities, neg.body.capabilities);
    EXPECT_EQ(resp->guid, neg.body.server_guid);
    EXPECT_EQ(resp->security_mode, neg.body.security_mode);
    EXPECT_EQ(resp->dialect, neg.body.dialect_revision);
}

TEST_F(E2eFile, ClosedHandleIsFileClosed) {
    auto c = login();
    auto cr = c->open("closed.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ASSERT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
    EXPECT_STATUS(c->read(cr.body.file_id, 0, 10), NtStatus::FileClosed);
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::FileClosed);
}

// MS-SMB2 3.3.5.x: an open is found by FileId.Volatile and must match FileId.Persistent too;
// the two halves are different numbers, so a client that sends one half twice names no open.
TEST_F(E2eFile, BothHalvesOfTheFileIdMustMatch) {
    auto c = login();
    auto cr = c->open("halves.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    const FileId id = cr.body.file_id;
    EXPECT_NE(id.persistent, id.volatile_);
    EXPECT_STATUS(c->read(FileId{id.volatile_, id.volatile_}, 0, 10), NtStatus::FileClosed);
    EXPECT_STATUS(c->read(FileId{id.persistent ^ 1, id.volatile_}, 0, 10), NtStatus::FileClosed);
    EXPECT_STATUS(c->read(id, 0, 10), NtStatus::EndOfFile);  // found: the file is empty
    EXPECT_STATUS(c->close(id), NtStatus::Success);
}

TEST_F(E2eFile, TreeDisconnectClosesAccessToTheTree) {
    auto c = login();
    uint32_t tid = c->tree_id();
    ASSERT_STATUS(c->tree_disconnect(), NtStatus::Success);
    c->set_tree_id(tid);
    EXPECT_STATUS(c->open("after-tdis.txt", kRw, create_disposition::kOverwriteIf),
                  NtStatus::NetworkNameDeleted);
}

// ---- the share boundary ------------------------------------------------------------------------

TEST_F(E2eFile, DotDotCannotLeaveTheShare) {
    auto c = login();
    for (const char* path : {"..\\..\\etc\\passwd", "..\\..\\..\\..\\..\\..\\etc\\passwd",
                             "sub\\..\\..\\etc\\passwd", ".."}) {
        auto r = c->open(path, am::kFileGenericRead, create_disposition::kOpen);
        EXPECT_TRUE(r.from_server && is_error(r.status))
            << path << ": " << describe(r) << " (must be refused)";
        if (r.ok()) (void)c->close(r.body.file_id);
    }
    // Creating outside the share through `..` is refused too.
    auto r = c->open("..\\daxsmbd-e2e-escape.txt", kRw, create_disposition::kCreate);
    EXPECT_TRUE(r.from_server && is_error(r.status)) << describe(r);
    EXPECT_NE(::access((server_->dir() + "/daxsmbd-e2e-escape.txt").c_str(), F_OK), 0);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
}

TEST_F(E2eFile, SymlinksCannotLeaveTheShare) {
    ASSERT_EQ(::symlink("/etc", local("etc").c_str()), 0);
    ASSERT_EQ(::symlink("/etc/passwd", local("passwd-link").c_str()), 0);
    ASSERT_EQ(::symlink(server_->dir().c_str(), local("up").c_str()), 0);
    auto c = login();
    for (const char* path : {"etc\\passwd", "passwd-link", "up\\users.db", "etc\\hostname"}) {
        auto r = c->open(path, am::kFileGenericRead, create_disposition::kOpen);
        EXPECT_TRUE(r.from_server && is_error(r.status))
            << path << ": " << describe(r) << " (must be refused)";
        if (r.ok()) {
            auto rd = c->read(r.body.file_id, 0, 4096);
            ADD_FAILURE() << path << " opened; a READ got " << describe(rd) << " with "
                          << rd.body.data.size() << " bytes";
            (void)c->close(r.body.file_id);
        }
    }
    // Listing the directory symlink must not show the outside directory.
    auto d = c->open("etc", am::kFileListDirectory | am::kSynchronize, create_disposition::kOpen,
                     create_options::kDirectoryFile);
    if (d.ok()) {
        QueryDirectoryRequest q;
        q.file_information_class = file_info_class::kFileNamesInformation;
        q.file_id = d.body.file_id;
        q.pattern = "passwd";
        q.output_buffer_length = 4096;
        auto r = c->query_directory(q);
        EXPECT_FALSE(r.ok()) << "QUERY_DIRECTORY through a symlink to /etc found passwd";
        (void)c->close(d.body.file_id);
    }
    // Creating through the symlinked directory is refused and writes nothing outside.
    auto w = c->open("up\\escaped.txt", kRw, create_disposition::kCreate);
    EXPECT_TRUE(w.from_server && is_error(w.status)) << describe(w);
    EXPECT_NE(::access((server_->dir() + "/escaped.txt").c_str(), F_OK), 0);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
}

}  // namespace
}  // namespace daxsmbd::client
