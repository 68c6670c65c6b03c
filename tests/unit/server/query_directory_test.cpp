// QUERY_DIRECTORY: the enumeration loop (info::list_directory) on a temporary share, and the
// handler end to end (request bytes in, response bytes out) on a connection without a socket.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>

#include "protocol/access_mask.h"
#include "protocol/dir_info.h"
#include "protocol/query_directory.h"
#include "server/connection.h"
#include "server/handlers/handlers.h"
#include "server/handlers/info_classes.h"
#include "server/io/uring_engine.h"
#include "server/rpcpipe/pipe_endpoint.h"
#include "server/server.h"
#include "server/state/file_table.h"
#include "server/vfs/dir.h"
#include "server/vfs/ea.h"
#include "server/vfs/open.h"
#include "tests/support/null_transport.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::server;
namespace asio = boost::asio;
namespace fic = protocol::file_info_class;
namespace info = daxsmbd::server::handlers::info;
using test_support::NullTransport;
using test_support::TempDir;

std::vector<std::string> names(const std::vector<DirEntry>& es) {
    std::vector<std::string> out;
    for (auto& e : es)
        out.push_back(e.name);
    return out;
}

class ListTest : public ::testing::Test {
  protected:
    void SetUp() override {
        tmp.file("a.txt", "hello");
        tmp.file("B.TXT");
        tmp.dir("sub");
        auto r = vfs::ShareRoot::open(tmp.path);
        ASSERT_TRUE(r);
        root = std::make_unique<vfs::ShareRoot>(std::move(*r));
        auto c = vfs::DirectoryCursor::open(*root, "");
        ASSERT_TRUE(c);
        cursor = std::make_unique<vfs::DirectoryCursor>(std::move(*c));
    }
    Result<std::vector<DirEntry>> list(uint8_t cls, std::string_view pattern, size_t len,
                                       bool single = false, bool first = false) {
        info::ListRequest req;
        req.info_class = cls;
        req.pattern = pattern;
        req.output_buffer_length = len;
        req.return_single_entry = single;
        req.first_query = first;
        req.root = root.get();
        DAX_TRY(auto buf, info::list_directory(*cursor, req));
        EXPECT_LE(buf.size(), len);
        return DirectoryInfoWriter::parse(cls, buf);
    }
    TempDir tmp;
    std::unique_ptr<vfs::ShareRoot> root;
    std::unique_ptr<vfs::DirectoryCursor> cursor;
};

TEST_F(ListTest, DotEntriesFirstThenEveryFileWithItsMetadata) {
    {
        auto fd = vfs::open_beneath(*root, "a.txt", O_RDWR);
        ASSERT_TRUE(fd);
        const std::byte v[] = {std::byte{'x'}};
        ASSERT_TRUE(vfs::set_ea(fd->get(), "COLOUR", v));
    }
    auto es = list(fic::kFileIdBothDirectoryInformation, "*", 65536, false, true);
    ASSERT_TRUE(es) << status_name(es.status());
    ASSERT_EQ(es->size(), 5u);
    EXPECT_EQ((*es)[0].name, ".");
    EXPECT_EQ((*es)[1].name, "..");
    auto n = names(*es);
    std::set<std::string> rest(n.begin() + 2, n.end());
    EXPECT_EQ(rest, (std::set<std::string>{"a.txt", "B.TXT", "sub"}));
    for (auto& e : *es) {
        EXPECT_TRUE(e.short_name.empty()) << "no 8.3 names are generated";
        EXPECT_EQ(e.file_index, 0u);
        if (e.name == "a.txt") {
            EXPECT_EQ(e.file_id, tmp.ino("a.txt"));
            EXPECT_EQ(e.end_of_file, 5);
            EXPECT_EQ(e.file_attributes, file_attributes::kNormal);
            std::vector<vfs::Ea> eas{vfs::Ea{"COLOUR", {std::byte{'x'}}, 0}};
            EXPECT_EQ(e.ea_size, vfs::ea_list_size(eas));
            EXPECT_GT(e.ea_size, 0u);
        }
        if (e.name == "sub" || e.name == "." || e.name == "..") {
            EXPECT_TRUE(e.file_attributes & file_attributes::kDirectory) << e.name;
            EXPECT_EQ(e.end_of_file, 0);
        }
        if (e.name == "sub") {
            EXPECT_EQ(e.file_id, tmp.ino("sub"));
        }
    }
    // Everything was returned: the next call finds nothing more.
    auto more = list(fic::kFileIdBothDirectoryInformation, "*", 65536);
    EXPECT_EQ(more.status(), NtStatus::NoMoreFiles);
}

// EaSize of every kind of entry is the size FileEaInformation reports for the opened file:
// plain files and directories (read without opening them), a symlink described by its target,
// and "." (the listed directory).
TEST_F(ListTest, EaSizeOfEachEntryIsTheSizeOfItsEaList) {
    if (!root->supports_user_xattrs()) GTEST_SKIP() << "no user xattrs on " << tmp.path;
    const std::byte x[] = {std::byte{'x'}}, yz[] = {std::byte{'y'}, std::byte{'z'}};
    auto set = [&](const char* rel, const char* name, std::span<const std::byte> v, int flags) {
        auto fd = vfs::open_beneath(*root, rel, flags);
        ASSERT_TRUE(fd);
        ASSERT_TRUE(vfs::set_ea(fd->get(), name, v));
    };
    set("a.txt", "COLOUR", x, O_RDWR);
    set("a.txt", "SHAPE", yz, O_RDWR);
    set("sub", "ON_DIR", yz, O_RDONLY | O_DIRECTORY);
    set("", "ON_ROOT", x, O_RDONLY | O_DIRECTORY);
    ASSERT_EQ(::symlink("a.txt", (tmp.path + "/to-a").c_str()), 0);
    auto c = vfs::DirectoryCursor::open(*root, "");
    ASSERT_TRUE(c);
    cursor = std::make_unique<vfs::DirectoryCursor>(std::move(*c));

    auto es = list(fic::kFileFullDirectoryInformation, "*", 65536, false, true);
    ASSERT_TRUE(es) << status_name(es.status());
    std::map<std::string, uint32_t> got;
    for (auto& e : *es)
        got[e.name] = e.ea_size;
    const std::vector<vfs::Ea> a_eas{vfs::Ea{"COLOUR", {x[0]}, 0},
                                     vfs::Ea{"SHAPE", {yz[0], yz[1]}, 0}};
    const uint32_t a_size = vfs::ea_list_size(a_eas);
    EXPECT_EQ(a_size, 16u + 8 + 5 + 1 + 2);
    EXPECT_EQ(got.at("a.txt"), a_size);
    EXPECT_EQ(got.at("to-a"), a_size);
    EXPECT_EQ(got.at("B.TXT"), 0u);
    EXPECT_EQ(got.at("sub"),
              vfs::ea_list_size(std::vector<vfs::Ea>{{"ON_DIR", {yz[0], yz[1]}, 0}}));
    const uint32_t root_size = vfs::ea_list_size(std::vector<vfs::Ea>{{"ON_ROOT", {x[0]}, 0}});
    EXPECT_EQ(got.at("."), root_size);
    EXPECT_EQ(got.at(".."), root_size);  // the share root's ".." is the root itself
}

TEST_F(ListTest, PatternMatchesIgnoringCase) {
    auto es = list(fic::kFileNamesInformation, "*.TxT", 65536, false, true);
    ASSERT_TRUE(es);
    auto n = names(*es);
    EXPECT_EQ(std::set<std::string>(n.begin(), n.end()), (std::set<std::string>{"a.txt", "B.TXT"}));
}

TEST_F(ListTest, NoMatchIsNoSuchFileOnTheFirstQueryAndNoMoreFilesLater) {
    EXPECT_EQ(list(fic::kFileDirectoryInformation, "zz*", 65536, false, true).status(),
              NtStatus::NoSuchFile);
    EXPECT_EQ(list(fic::kFileDirectoryInformation, "zz*", 65536, false, false).status(),
              NtStatus::NoMoreFiles);
}

TEST_F(ListTest, ReturnSingleEntryWalksEveryEntryOnce) {
    std::vector<std::string> seen;
    for (int i = 0; i < 10; ++i) {
        auto es = list(fic::kFileBothDirectoryInformation, "*", 65536, true, i == 0);
        if (!es) {
            EXPECT_EQ(es.status(), NtStatus::NoMoreFiles);
            break;
        }
        ASSERT_EQ(es->size(), 1u);
        seen.push_back((*es)[0].name);
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<std::string>{".", "..", "B.TXT", "a.txt", "sub"}));
}

TEST_F(ListTest, BufferBelowTheFixedPartIsInfoLengthMismatch) {
    size_t fixed = DirectoryInfoWriter::fixed_size(fic::kFileNamesInformation);
    ASSERT_EQ(fixed, 12u);  // MS-FSCC 2.4.33
    EXPECT_EQ(list(fic::kFileNamesInformation, "*", fixed - 1).status(),
              NtStatus::InfoLengthMismatch);
    // "." needs 12 + 2 bytes: it does not fit in 13 and stays for the next call (Samba).
    EXPECT_EQ(list(fic::kFileNamesInformation, "*", 13).status(), NtStatus::InfoLengthMismatch);
    auto es = list(fic::kFileNamesInformation, "*", 14);
    ASSERT_TRUE(es);
    EXPECT_EQ(names(*es), std::vector<std::string>{"."});
}

TEST_F(ListTest, FullBufferStopsAndTheNextCallResumesWithoutLossOrRepeat) {
    // Room for "." (12+2, padded to 16) and ".." (12+4) only.
    std::vector<std::string> seen;
    for (int i = 0; i < 10; ++i) {
        auto es = list(fic::kFileNamesInformation, "*", 32);
        if (!es) {
            EXPECT_EQ(es.status(), NtStatus::NoMoreFiles);
            break;
        }
        EXPECT_LE(es->size(), 2u);
        for (auto& n : names(*es))
            seen.push_back(n);
    }
    ASSERT_GE(seen.size(), 2u);
    EXPECT_EQ(seen[0], ".");
    EXPECT_EQ(seen[1], "..");
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<std::string>{".", "..", "B.TXT", "a.txt", "sub"}));
}

TEST_F(ListTest, ClassesOutsideTheDirectoryFamilyAreRefused) {
    EXPECT_EQ(list(fic::kFileBasicInformation, "*", 4096).status(), NtStatus::InvalidInfoClass);
    EXPECT_EQ(list(fic::kFileIdExtdDirectoryInformation, "*", 4096).status(),
              NtStatus::InvalidInfoClass);
}

TEST(QueryDirectoryPattern, PathSeparatorsAndStreamsAreNotPatterns) {
    EXPECT_TRUE(info::check_pattern("*.txt"));
    EXPECT_TRUE(info::check_pattern("<\">?*"));
    EXPECT_TRUE(info::check_pattern(".."));
    EXPECT_EQ(info::check_pattern("a\\b").status(), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(info::check_pattern("a/b").status(), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(info::check_pattern("a:s").status(), NtStatus::ObjectNameInvalid);
}

// ---- The handler ---------------------------------------------------------------------------

struct Reply {
    NtStatus status = NtStatus::InternalError;
    ByteVector out;  // 64 header bytes (not filled by handlers) + body
};

class QueryDirectoryHandler : public ::testing::Test {
  protected:
    void SetUp() override {
        tmp.file("one.txt", "1");
        tmp.file("two.dat", "22");
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
        tree->id = 7;
        tree->share = share;
        tree->read_only = false;
    }
    std::shared_ptr<Open> open(const std::string& rel, uint32_t access) {
        auto fd = vfs::open_beneath(*share->root, rel, O_RDONLY);
        EXPECT_TRUE(fd);
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
    Reply run(const QueryDirectoryRequest& req) {
        ByteVector msg;
        ByteWriter w(msg);
        Header h;
        h.command = Command::QueryDirectory;
        h.session_id = session->id;
        h.tree_id = tree->id;
        h.serialize(w);
        req.serialize(w);
        Reply r;
        r.out.resize(kHeaderSize);
        RequestContext ctx(*conn, server, h, msg, r.out);
        ctx.session = session;
        ctx.tree = tree;
        ctx.session_id = session->id;
        ctx.tree_id = tree->id;
        ctx.pending = std::make_shared<PendingRequest>();
        auto work = asio::make_work_guard(io);
        asio::co_spawn(io, server::handlers::query_directory(ctx),
                       [&](std::exception_ptr e, NtStatus s) {
                           EXPECT_FALSE(e);
                           r.status = s;
                           work.reset();
                       });
        io.restart();
        io.run();
        return r;
    }
    QueryDirectoryRequest request(const Open& o, std::string pattern, uint8_t flags = 0) {
        QueryDirectoryRequest q;
        q.file_information_class = fic::kFileFullDirectoryInformation;
        q.flags = flags;
        q.file_id = o.id;
        q.pattern = std::move(pattern);
        q.output_buffer_length = 4096;
        return q;
    }
    std::vector<std::string> entries(const Reply& r, uint8_t cls) {
        auto resp = QueryDirectoryResponse::parse(r.out);
        EXPECT_TRUE(resp);
        auto es = DirectoryInfoWriter::parse(cls, resp->buffer);
        EXPECT_TRUE(es);
        auto n = names(*es);
        std::sort(n.begin(), n.end());
        return n;
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

constexpr uint32_t kList = access_mask::kFileListDirectory | access_mask::kFileReadAttributes;

TEST_F(QueryDirectoryHandler, FirstQueryListsThenNoMoreFiles) {
    auto d = open("", kList);
    auto r = run(request(*d, "*"));
    ASSERT_EQ(r.status, NtStatus::Success);
    auto resp = QueryDirectoryResponse::parse(r.out);
    ASSERT_TRUE(resp);
    EXPECT_EQ(load_le16(r.out.data() + kHeaderSize + 2), 0x48);  // OutputBufferOffset
    EXPECT_EQ(entries(r, fic::kFileFullDirectoryInformation),
              (std::vector<std::string>{".", "..", "one.txt", "two.dat"}));
    EXPECT_EQ(run(request(*d, "*")).status, NtStatus::NoMoreFiles);
    // A restart lists again from the start, with the new pattern it brings.
    auto again = run(request(*d, "*.txt", query_directory_flags::kRestartScans));
    ASSERT_EQ(again.status, NtStatus::Success);
    EXPECT_EQ(entries(again, fic::kFileFullDirectoryInformation),
              std::vector<std::string>{"one.txt"});
}

TEST_F(QueryDirectoryHandler, LaterQueriesKeepThePatternUnlessReopened) {
    auto d = open("", kList);
    auto first = run(request(*d, "zz*"));
    EXPECT_EQ(first.status, NtStatus::NoSuchFile);
    // Without RESTART / REOPEN the pattern of the enumeration stays "zz*" (MS-FSA 2.1.5.6.3).
    EXPECT_EQ(run(request(*d, "*")).status, NtStatus::NoMoreFiles);
    // SMB2_REOPEN starts a new enumeration with the new pattern.
    auto r = run(request(*d, "two*", query_directory_flags::kReopen));
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(entries(r, fic::kFileFullDirectoryInformation), std::vector<std::string>{"two.dat"});
    EXPECT_EQ(run(request(*d, "two*", query_directory_flags::kReopen | 0)).status,
              NtStatus::Success);
    EXPECT_EQ(run(request(*d, "nothing", query_directory_flags::kReopen)).status,
              NtStatus::NoSuchFile);
}

TEST_F(QueryDirectoryHandler, RefusesFilesMissingAccessBadClassesAndHugeBuffers) {
    auto f = open("one.txt", access_mask::kFileReadData);
    EXPECT_EQ(run(request(*f, "*")).status, NtStatus::InvalidParameter);
    EXPECT_EQ(run(request(*f, "*", query_directory_flags::kReopen)).status,
              NtStatus::InvalidParameter);

    auto no_list = open("", access_mask::kFileReadAttributes);
    EXPECT_EQ(run(request(*no_list, "*")).status, NtStatus::AccessDenied);

    auto d = open("", kList);
    auto q = request(*d, "*");
    q.file_information_class = fic::kFileStandardInformation;
    EXPECT_EQ(run(q).status, NtStatus::InvalidInfoClass);
    q = request(*d, "*");
    q.output_buffer_length = 65537;  // above MaxTransactSize
    EXPECT_EQ(run(q).status, NtStatus::InvalidParameter);
    EXPECT_EQ(run(request(*d, "a\\b")).status, NtStatus::ObjectNameInvalid);

    QueryDirectoryRequest closed = request(*d, "*");
    closed.file_id = FileId{999, 999};
    EXPECT_EQ(run(closed).status, NtStatus::FileClosed);
}

TEST_F(QueryDirectoryHandler, SingleEntryAndIndexSpecified) {
    auto d = open("", kList);
    auto r = run(request(*d, "*", query_directory_flags::kReturnSingleEntry));
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(entries(r, fic::kFileFullDirectoryInformation), std::vector<std::string>{"."});
    // INDEX_SPECIFIED is ignored: the enumeration goes on where it stood.
    auto q =
        request(*d, "*",
                query_directory_flags::kIndexSpecified | query_directory_flags::kReturnSingleEntry);
    q.file_index = 12345;
    r = run(q);
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(entries(r, fic::kFileFullDirectoryInformation), std::vector<std::string>{".."});
}

}  // namespace
