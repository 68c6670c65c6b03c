// QUERY_INFO: the class tables, encoders and security descriptor of info_classes.h, and the
// handler end to end (request bytes in, response bytes and error data out) on a connection
// without a socket, over a temporary share.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "protocol/access_mask.h"
#include "protocol/error.h"
#include "protocol/file_info.h"
#include "protocol/fs_info.h"
#include "protocol/query_info.h"
#include "protocol/sid.h"
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
#include "tests/unit/hex.h"

namespace {

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::server;
namespace asio = boost::asio;
namespace fic = protocol::file_info_class;
namespace fsc = protocol::fs_info_class;
namespace am = protocol::access_mask;
namespace info = daxsmbd::server::handlers::info;

using daxsmbd::test::hex;  // tests/unit/hex.h
using test_support::NullTransport;
using test_support::TempDir;

// ---- Tables ------------------------------------------------------------------------------

TEST(InfoClasses, QueryFileClassesFollowMsSmb2) {
    using CS = info::ClassSupport;
    EXPECT_EQ(info::query_file_class_support(fic::kFileBasicInformation), CS::Supported);
    EXPECT_EQ(info::query_file_class_support(fic::kFileIdInformation), CS::Supported);
    EXPECT_EQ(info::query_file_class_support(fic::kFileNormalizedNameInformation), CS::Supported);
    // Documented in MS-FSCC 2.4, not queryable over SMB2 (MS-SMB2 2.2.37).
    EXPECT_EQ(info::query_file_class_support(fic::kFileNameInformation), CS::NotSupported);
    EXPECT_EQ(info::query_file_class_support(fic::kFileRenameInformation), CS::NotSupported);
    EXPECT_EQ(info::query_file_class_support(fic::kFilePipeInformation), CS::NotSupported);
    EXPECT_EQ(info::query_file_class_support(fic::kFileAlternateNameInformation), CS::Supported);
    EXPECT_EQ(info::query_file_class_support(0), CS::Invalid);
    EXPECT_EQ(info::query_file_class_support(200), CS::Invalid);

    EXPECT_EQ(info::query_fs_class_support(fsc::kFileFsVolumeInformation), CS::Supported);
    EXPECT_EQ(info::query_fs_class_support(fsc::kFileFsControlInformation), CS::Supported);
    EXPECT_EQ(info::query_fs_class_support(fsc::kFileFsLabelInformation), CS::NotSupported);
    EXPECT_EQ(info::query_fs_class_support(12), CS::Invalid);

    EXPECT_EQ(info::set_file_class_support(fic::kFileRenameInformation), CS::Supported);
    EXPECT_EQ(info::set_file_class_support(fic::kFileDispositionInformationEx), CS::Supported);
    EXPECT_EQ(info::set_file_class_support(fic::kFilePipeInformation), CS::NotSupported);
    EXPECT_EQ(info::set_file_class_support(fic::kFileStandardInformation), CS::Invalid);
    EXPECT_EQ(info::set_file_class_support(250), CS::Invalid);
    EXPECT_EQ(info::set_fs_class_support(fsc::kFileFsControlInformation), CS::NotSupported);
    EXPECT_EQ(info::set_fs_class_support(fsc::kFileFsSizeInformation), CS::Invalid);
}

TEST(InfoClasses, MinimumOutputSizesAreWindowsSizes) {
    // The values smbtorture smb2.getinfo.qfile_buffercheck / qfs_buffercheck check.
    const std::pair<uint8_t, size_t> file[] = {{4, 40},  {5, 24}, {6, 8},    {7, 4},   {8, 4},
                                               {16, 4},  {17, 4}, {18, 104}, {22, 32}, {28, 16},
                                               {34, 56}, {35, 8}, {14, 8},   {59, 24}};
    for (auto [c, n] : file)
        EXPECT_EQ(info::query_file_min_output(c), n) << int(c);
    const std::pair<uint8_t, size_t> fs[] = {{1, 24}, {3, 24}, {4, 8},  {5, 16},
                                             {6, 48}, {7, 32}, {8, 64}, {11, 28}};
    for (auto [c, n] : fs)
        EXPECT_EQ(info::query_fs_min_output(c), n) << int(c);
}

TEST(InfoClasses, FitOutputCutsAndSaysBufferOverflow) {
    ByteVector d(10, std::byte{1});
    EXPECT_EQ(info::fit_output(d, 10), NtStatus::Success);
    EXPECT_EQ(d.size(), 10u);
    EXPECT_EQ(info::fit_output(d, 7), NtStatus::BufferOverflow);
    EXPECT_EQ(d.size(), 7u);
}

TEST(InfoClasses, StandardInfoLinksAndDirectories) {
    vfs::FileInfo fi;
    fi.nlink = 2;
    fi.end_of_file = 5;
    fi.allocation_size = 4096;
    auto s = info::standard_info(fi, false);
    EXPECT_EQ(s.number_of_links, 2u);
    EXPECT_EQ(s.end_of_file, 5);
    EXPECT_EQ(s.allocation_size, 4096);
    s = info::standard_info(fi, true);
    EXPECT_EQ(s.number_of_links, 1u);  // MS-FSA 2.1.5.12.27: the pending link does not count
    EXPECT_TRUE(s.delete_pending);
    fi.is_directory = true;
    fi.nlink = 5;
    s = info::standard_info(fi, false);
    EXPECT_EQ(s.number_of_links, 1u);
    EXPECT_TRUE(s.directory);
}

TEST(InfoClasses, WindowsPaths) {
    EXPECT_EQ(info::windows_path("a/b/c.txt", true), "\\a\\b\\c.txt");
    EXPECT_EQ(info::windows_path("a/b/c.txt", false), "a\\b\\c.txt");
    EXPECT_EQ(info::windows_path("", true), "\\");
    EXPECT_EQ(info::windows_path("", false), "");
}

TEST(InfoClasses, ShortNames) {
    // 8.3 names stay themselves, in upper case.
    EXPECT_EQ(info::short_name("bufsize.txt"), "BUFSIZE.TXT");
    EXPECT_EQ(info::short_name("README"), "README");
    EXPECT_EQ(info::short_name("."), ".");
    // Others: two leading characters, hash digits, '~', one digit, three extension characters.
    std::string s = info::short_name("torture_smb2_getfinfo_access");
    ASSERT_EQ(s.size(), 8u);
    EXPECT_EQ(s.substr(0, 2), "TO");
    EXPECT_EQ(s[6], '~');
    s = info::short_name("a long file name.text");
    ASSERT_EQ(s.size(), 12u);
    EXPECT_EQ(s.substr(0, 2), "AL");
    EXPECT_EQ(s.substr(8), ".TEX");
    EXPECT_EQ(info::short_name(".bashrc").find('.'), std::string::npos);
    EXPECT_EQ(info::short_name("x.tar.gz").substr(0, 1), "X");
    // Every character is a legal 8.3 one, and the name does not depend on case.
    for (char c : info::short_name("Ünïcödé näme?.dat"))
        EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '~' || c == '_' || c == '.')
            << c;
    EXPECT_EQ(info::short_name("Some Long Name.txt"), info::short_name("SOME LONG NAME.TXT"));
    EXPECT_NE(info::short_name("some long name 1.txt"), info::short_name("some long name 2.txt"));
}

TEST(InfoClasses, ModeRulesOfMsFsa) {
    namespace fm = file_mode;
    EXPECT_EQ(info::mode_from_create_options(0x00000002 | 0x00000040 | 0x00001000),
              fm::kWriteThrough | fm::kDeleteOnClose);
    // smbtorture smb2.setinfo: 2 is taken, 1 is not a mode bit, 0 clears.
    EXPECT_EQ(*info::apply_mode(0, fm::kWriteThrough), fm::kWriteThrough);
    EXPECT_EQ(info::apply_mode(0, 1).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(*info::apply_mode(fm::kWriteThrough, 0), 0u);
    // The synchronous flags cannot be added or dropped, nor both given.
    EXPECT_EQ(info::apply_mode(0, fm::kSynchronousIoAlert).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(info::apply_mode(fm::kSynchronousIoAlert, 0).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(info::apply_mode(fm::kSynchronousIoAlert,
                               fm::kSynchronousIoAlert | fm::kSynchronousIoNonalert)
                  .status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(*info::apply_mode(fm::kSynchronousIoAlert, fm::kSynchronousIoNonalert),
              fm::kSynchronousIoNonalert);
    // Under NO_INTERMEDIATE_BUFFERING write-through stays as it was; DELETE_ON_CLOSE stays.
    EXPECT_EQ(*info::apply_mode(fm::kNoIntermediateBuffering | fm::kDeleteOnClose,
                                fm::kWriteThrough | fm::kSequentialOnly),
              fm::kNoIntermediateBuffering | fm::kDeleteOnClose | fm::kSequentialOnly);
}

// ---- Security descriptor -----------------------------------------------------------------

TEST(SyntheticSecurityDescriptor, RightsOfModeBits) {
    EXPECT_EQ(info::posix_bits_to_access(7), 0x001F01FFu);
    EXPECT_EQ(info::posix_bits_to_access(4), 0x00120089u);
    EXPECT_EQ(info::posix_bits_to_access(6), 0x0012019Fu);
    EXPECT_EQ(info::posix_bits_to_access(5), 0x001200A9u);
    EXPECT_EQ(info::posix_bits_to_access(0), 0u);
}

TEST(SyntheticSecurityDescriptor, OwnerGroupDaclGoldenBytes) {
    auto sd = info::synthetic_security_descriptor({1000, 100, 0640}, 0x7);
    ByteVector want =
        hex("01 00 04 80 14000000 24000000 00000000 34000000"           // header (MS-DTYP 2.4.6)
            "01 02 000000000016 01000000 e8030000"                      // S-1-22-1-1000
            "01 02 000000000016 02000000 64000000"                      // S-1-22-2-100
            "02 00 3800 0200 0000"                                      // ACL: 56 bytes, 2 ACEs
            "00 00 1800 9f011200 01 02 000000000016 01000000 e8030000"  // owner rw-
            "00 00 1800 89001200 01 02 000000000016 02000000 64000000"  // group r--
        );
    EXPECT_EQ(sd, want);
}

TEST(SyntheticSecurityDescriptor, OnlyTheRequestedParts) {
    auto none = info::synthetic_security_descriptor({0, 0, 0777}, 0);
    EXPECT_EQ(none, hex("01 00 00 80 00000000 00000000 00000000 00000000"));
    auto dacl = info::synthetic_security_descriptor({0, 0, 0007}, 0x4);
    EXPECT_EQ(dacl, hex("01 00 04 80 00000000 00000000 00000000 14000000"
                        "02 00 1c00 0100 0000"
                        "00 00 1400 ff011f00 01 01 000000000001 00000000"));  // Everyone rwx
}

// ---- File system information -------------------------------------------------------------

TEST(FsInfo, AttributesAreHonest) {
    namespace fa = fs_attributes;
    info::VolumeFacts v;
    v.user_xattrs = true;
    uint32_t a = info::fs_attributes(v);
    EXPECT_EQ(a, fa::kCasePreservedNames | fa::kUnicodeOnDisk | fa::kSupportsHardLinks |
                     fa::kSupportsSparseFiles | fa::kSupportsExtendedAttributes);
    EXPECT_FALSE(a & fa::kPersistentAcls);
    EXPECT_FALSE(a & fa::kNamedStreams);
    v.case_sensitive = true;
    v.read_only = true;
    v.user_xattrs = false;
    a = info::fs_attributes(v);
    EXPECT_TRUE(a & fa::kCaseSensitiveSearch);
    EXPECT_TRUE(a & fa::kReadOnlyVolume);
    EXPECT_FALSE(a & fa::kSupportsExtendedAttributes);
}

TEST(FsInfo, Encodings) {
    info::VolumeFacts v;
    v.label = "data";
    v.serial = 0x11223344;
    v.creation_time = 0x0102030405060708;
    v.space = vfs::fs_space_from(4096, 1000, 600, 500);
    auto vol = info::encode_fs_info(fsc::kFileFsVolumeInformation, v);
    EXPECT_EQ(vol, hex("0807060504030201 44332211 08000000 00 00 6400610074006100"));
    auto attr = info::encode_fs_info(fsc::kFileFsAttributeInformation, v);
    ASSERT_EQ(attr.size(), 20u);
    EXPECT_EQ(ByteVector(attr.begin() + 4, attr.end()),
              hex("ff000000 08000000 4e00540046005300"));  // 255, "NTFS"
    EXPECT_EQ(info::encode_fs_info(fsc::kFileFsDeviceInformation, v), hex("07000000 20000000"));
    auto ctl = info::encode_fs_info(fsc::kFileFsControlInformation, v);
    EXPECT_EQ(ctl, hex("0000000000000000 0000000000000000 0000000000000000"
                       "ffffffffffffffff ffffffffffffffff 00000000 00000000"));
    auto size = info::encode_fs_info(fsc::kFileFsFullSizeInformation, v);
    auto full = FileFsFullSizeInfo::decode(size);
    ASSERT_TRUE(full);
    EXPECT_EQ(full->total_allocation_units, 1000);
    EXPECT_EQ(full->caller_available_allocation_units, 500);
    EXPECT_EQ(full->actual_available_allocation_units, 600);
    EXPECT_EQ(full->sectors_per_allocation_unit * full->bytes_per_sector, 4096u);
    EXPECT_EQ(info::encode_fs_info(fsc::kFileFsSectorSizeInformation, v).size(), 28u);
    EXPECT_EQ(info::encode_fs_info(fsc::kFileFsObjectIdInformation, v).size(), 64u);
}

TEST(FsInfo, VolumeObjectIdIsStablePerShare) {
    EXPECT_EQ(info::volume_object_id(1, "/srv/a"), info::volume_object_id(1, "/srv/a"));
    EXPECT_NE(info::volume_object_id(1, "/srv/a"), info::volume_object_id(1, "/srv/b"));
    EXPECT_NE(info::volume_object_id(1, "/srv/a"), info::volume_object_id(2, "/srv/a"));
}

// ---- The handler ---------------------------------------------------------------------------

struct Reply {
    NtStatus status = NtStatus::InternalError;
    ByteVector out;  // 64 header bytes (left to the dispatcher) + body
    ByteVector error_data;
    uint8_t error_context_count = 0;
    bool body_written = false;
    // The output buffer of a QUERY_INFO response.
    ByteVector data() const {
        auto r = QueryInfoResponse::parse(out);
        EXPECT_TRUE(r);
        return r ? ByteVector(r->buffer.begin(), r->buffer.end()) : ByteVector{};
    }
};

class QueryInfoHandler : public ::testing::Test {
  protected:
    void SetUp() override {
        std::ofstream(tmp.path + "/file.txt") << "hello world";
        ::mkdir((tmp.path + "/dir").c_str(), 0750);
        std::ofstream(tmp.path + "/dir/inner.dat") << "x";
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
        tree->id = 3;
        tree->share = share;
        tree->read_only = false;
    }
    std::shared_ptr<Open> open(const std::string& rel, uint32_t access,
                               uint32_t create_options = 0) {
        auto fd = vfs::open_beneath(*share->root, rel, O_RDONLY);
        EXPECT_TRUE(fd) << rel;
        auto fi = vfs::query_info(fd->get());
        auto o = std::make_shared<Open>();
        o->local.fd = fd->release();
        o->local.path = rel;
        o->local.is_directory = fi->is_directory;
        o->local.file_id = fi->file_id;
        o->local.device = fi->device;
        o->granted_access = access;
        o->create_options = create_options;
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
    Reply run(const QueryInfoRequest& req) {
        ByteVector msg;
        ByteWriter w(msg);
        Header h;
        h.command = Command::QueryInfo;
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
        asio::co_spawn(io, server::handlers::query_info(ctx),
                       [&](std::exception_ptr e, NtStatus s) {
                           EXPECT_FALSE(e);
                           r.status = s;
                           work.reset();
                       });
        io.restart();
        io.run();
        r.error_data = ctx.error_data;
        r.error_context_count = ctx.error_context_count;
        r.body_written = ctx.body_written();
        return r;
    }
    Reply query(const Open& o, uint8_t type, uint8_t cls, uint32_t len = 65535,
                uint32_t additional = 0, uint32_t flags = 0, Bytes input = {}) {
        QueryInfoRequest q;
        q.info_type = type;
        q.file_info_class = cls;
        q.output_buffer_length = len;
        q.additional_information = additional;
        q.flags = flags;
        q.input = input;
        q.file_id = o.id;
        return run(q);
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

TEST_F(QueryInfoHandler, BasicStandardInternalMatchTheFile) {
    auto f = open("file.txt", kAll);
    auto fi = vfs::query_info(f->local.fd);
    ASSERT_TRUE(fi);
    auto r = query(*f, info_type::kFile, fic::kFileBasicInformation);
    ASSERT_EQ(r.status, NtStatus::Success);
    auto basic = FileBasicInfo::decode(r.data());
    ASSERT_TRUE(basic);
    EXPECT_EQ(*basic, info::basic_info(*fi));
    EXPECT_EQ(basic->file_attributes, file_attributes::kNormal);

    r = query(*f, info_type::kFile, fic::kFileStandardInformation);
    auto std_info = FileStandardInfo::decode(r.data());
    ASSERT_TRUE(std_info);
    EXPECT_EQ(std_info->end_of_file, 11);
    EXPECT_EQ(std_info->number_of_links, 1u);
    EXPECT_FALSE(std_info->delete_pending);
    EXPECT_FALSE(std_info->directory);

    // A pending delete shows, and the link no longer counts (smbtorture smb2.setinfo).
    ASSERT_TRUE(files.set_delete_pending(FileKey{f->local.device, f->local.file_id}, true));
    std_info = FileStandardInfo::decode(query(*f, info_type::kFile, 5).data());
    EXPECT_TRUE(std_info->delete_pending);
    EXPECT_EQ(std_info->number_of_links, 0u);
    ASSERT_TRUE(files.set_delete_pending(FileKey{f->local.device, f->local.file_id}, false));

    struct stat st {};
    ::stat((tmp.path + "/file.txt").c_str(), &st);
    auto internal = FileInternalInfo::decode(query(*f, info_type::kFile, 6).data());
    ASSERT_TRUE(internal);
    EXPECT_EQ(internal->index_number, st.st_ino);
}

TEST_F(QueryInfoHandler, AllInformationCarriesHandleStateAndPath) {
    constexpr uint32_t kAccess = am::kFileExecute | am::kFileReadAttributes;
    auto f = open("dir/inner.dat", kAccess, 0x00000002 /* FILE_WRITE_THROUGH */);
    f->local.position = 77;
    auto r = query(*f, info_type::kFile, fic::kFileAllInformation);
    ASSERT_EQ(r.status, NtStatus::Success);
    auto all = FileAllInfo::decode(r.data());
    ASSERT_TRUE(all);
    // smbtorture smb2.getinfo.granted: AccessFlags is exactly what the open was granted.
    EXPECT_EQ(all->access.access_flags, kAccess);
    EXPECT_EQ(all->position.current_byte_offset, 77);
    EXPECT_EQ(all->mode.mode, file_mode::kWriteThrough);
    EXPECT_EQ(all->name.file_name, "\\dir\\inner.dat");
    EXPECT_EQ(all->standard.end_of_file, 1);
}

TEST_F(QueryInfoHandler, AccessChecks) {
    auto f = open("file.txt", am::kFileReadData);  // no READ_ATTRIBUTES, no READ_EA
    for (uint8_t c :
         {fic::kFileBasicInformation, fic::kFileAllInformation, fic::kFileNetworkOpenInformation,
          fic::kFileAttributeTagInformation, fic::kFileFullEaInformation})
        EXPECT_EQ(query(*f, info_type::kFile, c).status, NtStatus::AccessDenied) << int(c);
    EXPECT_EQ(query(*f, info_type::kFile, fic::kFileStandardInformation).status, NtStatus::Success);
    EXPECT_EQ(query(*f, info_type::kSecurity, 0, 4096, 0x7).status, NtStatus::AccessDenied);
    auto rc = open("file.txt", am::kReadControl);
    EXPECT_EQ(query(*rc, info_type::kSecurity, 0, 4096, 0x7).status, NtStatus::Success);
    EXPECT_EQ(query(*rc, info_type::kSecurity, 0, 4096, 0x8).status, NtStatus::AccessDenied);
}

TEST_F(QueryInfoHandler, FileBufferChecksAsSmbtorture) {
    // smbtorture smb2.getinfo.qfile_buffercheck: below the minimum INFO_LENGTH_MISMATCH, below
    // the full size BUFFER_OVERFLOW, the full size SUCCESS.
    auto f = open("file.txt", kAll);
    for (uint8_t c : {4, 5, 6, 7, 8, 16, 17, 18, 22, 28, 34, 35}) {
        auto big = query(*f, info_type::kFile, c);
        ASSERT_EQ(big.status, NtStatus::Success) << int(c);
        const size_t full = big.data().size();
        const size_t min = info::query_file_min_output(c);
        for (size_t i = 0; i <= full; ++i) {
            auto r = query(*f, info_type::kFile, c, uint32_t(i));
            if (i < min) {
                EXPECT_EQ(r.status, NtStatus::InfoLengthMismatch) << int(c) << " " << i;
                EXPECT_FALSE(r.body_written);
                // MS-SMB2 3.3.5.20.1 on 3.1.1: one empty error context.
                EXPECT_EQ(r.error_context_count, 1);
                EXPECT_EQ(r.error_data, ByteVector(8, std::byte{0}));
            } else if (i < full) {
                EXPECT_EQ(r.status, NtStatus::BufferOverflow) << int(c) << " " << i;
                EXPECT_LE(r.data().size(), i);
            } else {
                EXPECT_EQ(r.status, NtStatus::Success) << int(c) << " " << i;
            }
        }
    }
}

TEST_F(QueryInfoHandler, FsBufferChecksAsSmbtorture) {
    auto root = open("", kAll);
    for (uint8_t c : {1, 3, 4, 5, 6, 7, 8, 11}) {
        auto big = query(*root, info_type::kFileSystem, c);
        ASSERT_EQ(big.status, NtStatus::Success) << int(c);
        const size_t full = big.data().size();
        const size_t min = info::query_fs_min_output(c);
        for (size_t i = 0; i <= full; ++i) {
            auto r = query(*root, info_type::kFileSystem, c, uint32_t(i));
            if (i < min)
                EXPECT_EQ(r.status, NtStatus::InfoLengthMismatch) << int(c) << " " << i;
            else if (i < full)
                EXPECT_EQ(r.status, NtStatus::BufferOverflow) << int(c) << " " << i;
            else
                EXPECT_EQ(r.status, NtStatus::Success) << int(c) << " " << i;
        }
    }
    // smbtorture smb2.getinfo.qfs1_buffer24: 24 bytes of volume information come back.
    auto r = query(*root, info_type::kFileSystem, fsc::kFileFsVolumeInformation, 24);
    EXPECT_EQ(r.status, NtStatus::BufferOverflow);
    EXPECT_EQ(r.data().size(), 24u);
    // The label is the share name.
    auto vol = FileFsVolumeInfo::decode(query(*root, info_type::kFileSystem, 1).data());
    ASSERT_TRUE(vol);
    EXPECT_EQ(vol->volume_label, "data");
    EXPECT_EQ(vol->volume_serial_number, share->root->volume_serial());
}

TEST_F(QueryInfoHandler, ClassesAndTypesThatAreRefused) {
    auto f = open("file.txt", kAll);
    EXPECT_EQ(query(*f, info_type::kFile, 200).status, NtStatus::InvalidInfoClass);
    EXPECT_EQ(query(*f, info_type::kFile, fic::kFileNameInformation).status,
              NtStatus::NotSupported);
    EXPECT_EQ(query(*f, info_type::kFileSystem, 99).status, NtStatus::InvalidInfoClass);
    EXPECT_EQ(query(*f, info_type::kFileSystem, fsc::kFileFsLabelInformation).status,
              NtStatus::NotSupported);
    EXPECT_EQ(query(*f, info_type::kQuota, 0).status, NtStatus::NotSupported);
    EXPECT_EQ(query(*f, 9, 0).status, NtStatus::InvalidParameter);
    EXPECT_EQ(query(*f, info_type::kFile, fic::kFileBasicInformation, 65537).status,
              NtStatus::InvalidParameter);  // above MaxTransactSize
}

TEST_F(QueryInfoHandler, AlternateNamesAreComputedFromTheLongName) {
    std::ofstream(tmp.path + "/dir/a long file name.text") << "y";
    auto f = open("file.txt", kAll);
    auto lng = open("dir/a long file name.text", kAll);
    auto root = open("", kAll);
    // Windows' minimum is sizeof(FILE_NAME_INFORMATION), 8 (smbtorture qfile_buffercheck).
    EXPECT_EQ(query(*f, info_type::kFile, fic::kFileAlternateNameInformation, 7).status,
              NtStatus::InfoLengthMismatch);
    auto r = query(*f, info_type::kFile, fic::kFileAlternateNameInformation);
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(FileNameInfo::decode(r.data())->file_name, "FILE.TXT");
    // A part of the variable name: BUFFER_OVERFLOW with what fits.
    r = query(*f, info_type::kFile, fic::kFileAlternateNameInformation, 9);
    EXPECT_EQ(r.status, NtStatus::BufferOverflow);
    EXPECT_EQ(r.data().size(), 9u);
    r = query(*lng, info_type::kFile, fic::kFileAlternateNameInformation);
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(FileNameInfo::decode(r.data())->file_name, info::short_name("a long file name.text"));
    EXPECT_EQ(query(*root, info_type::kFile, fic::kFileAlternateNameInformation).status,
              NtStatus::ObjectNameNotFound);
}

TEST_F(QueryInfoHandler, NamesAndIdsDependOnTheDialect) {
    auto root = open("", kAll);
    auto inner = open("dir/inner.dat", kAll);
    auto r = query(*inner, info_type::kFile, fic::kFileNormalizedNameInformation);
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(FileNameInfo::decode(r.data())->file_name, "dir\\inner.dat");
    r = query(*root, info_type::kFile, fic::kFileNormalizedNameInformation);
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(FileNameInfo::decode(r.data())->file_name, "");
    auto id = FileIdInfo::decode(query(*inner, info_type::kFile, fic::kFileIdInformation).data());
    ASSERT_TRUE(id);
    EXPECT_EQ(id->volume_serial_number, share->root->volume_serial());
    EXPECT_EQ(load_le64(id->file_id.data()), inner->local.file_id);

    conn->state.dialect = Dialect::Smb302;
    EXPECT_EQ(query(*inner, info_type::kFile, fic::kFileNormalizedNameInformation).status,
              NtStatus::NotSupported);
    EXPECT_EQ(query(*inner, info_type::kFile, fic::kFileIdInformation).status, NtStatus::Success);
    conn->state.dialect = Dialect::Smb210;
    EXPECT_EQ(query(*inner, info_type::kFile, fic::kFileIdInformation).status,
              NtStatus::NotSupported);
    // Before 3.1.1 INFO_LENGTH_MISMATCH has no error data.
    r = query(*inner, info_type::kFile, fic::kFileBasicInformation, 10);
    EXPECT_EQ(r.status, NtStatus::InfoLengthMismatch);
    EXPECT_TRUE(r.error_data.empty());
    EXPECT_EQ(r.error_context_count, 0);
}

TEST_F(QueryInfoHandler, StreamsOfFilesAndDirectories) {
    auto f = open("file.txt", kAll);
    auto s = FileStreamInfo::decode(query(*f, info_type::kFile, 22).data());
    ASSERT_TRUE(s);
    ASSERT_EQ(s->streams.size(), 1u);
    EXPECT_EQ(s->streams[0].name, "::$DATA");
    EXPECT_EQ(s->streams[0].size, 11);
    auto d = open("dir", kAll);
    auto r = query(*d, info_type::kFile, 22);
    EXPECT_EQ(r.status, NtStatus::Success);
    EXPECT_TRUE(r.data().empty());
}

TEST_F(QueryInfoHandler, SecurityDescriptorAndBufferTooSmall) {
    auto f = open("file.txt", kAll);
    ASSERT_EQ(::chmod((tmp.path + "/file.txt").c_str(), 0640), 0);
    struct stat st {};
    ::stat((tmp.path + "/file.txt").c_str(), &st);
    auto want = info::synthetic_security_descriptor({st.st_uid, st.st_gid, 0640}, 0x7);
    auto r = query(*f, info_type::kSecurity, 0, 4096, 0x7);
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(r.data(), want);
    auto owner = Sid::parse(Bytes(want).subspan(20));
    ASSERT_TRUE(owner);
    EXPECT_EQ(owner->to_string(), "S-1-22-1-" + std::to_string(st.st_uid));

    // MS-SMB2 3.3.5.20.3: too small -> BUFFER_TOO_SMALL with the size needed; on 3.1.1 inside
    // one error context (ByteCount 12).
    r = query(*f, info_type::kSecurity, 0, uint32_t(want.size() - 1), 0x7);
    EXPECT_EQ(r.status, NtStatus::BufferTooSmall);
    EXPECT_FALSE(r.body_written);
    EXPECT_EQ(r.error_context_count, 1);
    ByteVector ctx_data = hex("04000000 00000000");
    ctx_data.push_back(std::byte(want.size()));
    ctx_data.insert(ctx_data.end(), 3, std::byte{0});
    EXPECT_EQ(r.error_data, ctx_data);
    // smbtorture smb2.getinfo.qsec_buffercheck: AdditionalInformation 0, buffers 0 and 1.
    EXPECT_EQ(query(*f, info_type::kSecurity, 0, 0, 0).status, NtStatus::BufferTooSmall);
    EXPECT_EQ(query(*f, info_type::kSecurity, 0, 1, 0).status, NtStatus::BufferTooSmall);
    conn->state.dialect = Dialect::Smb300;
    r = query(*f, info_type::kSecurity, 0, 0, 0);
    EXPECT_EQ(r.error_context_count, 0);
    EXPECT_EQ(r.error_data, hex("14000000"));  // the 20-byte empty descriptor
}

TEST_F(QueryInfoHandler, FullEaEnumeration) {
    auto f = open("file.txt", kAll);
    namespace qf = query_info_flags;
    EXPECT_EQ(
        query(*f, info_type::kFile, fic::kFileFullEaInformation, 4096, 0, qf::kRestartScan).status,
        NtStatus::NoEasOnFile);
    {
        auto wfd = vfs::open_beneath(*share->root, "file.txt", O_RDWR);
        const std::byte one[] = {std::byte{'1'}};
        const std::byte two[] = {std::byte{'2'}, std::byte{'2'}};
        ASSERT_TRUE(vfs::set_ea(wfd->get(), "EAONE", one));
        ASSERT_TRUE(vfs::set_ea(wfd->get(), "SECONDEA", two));
    }
    auto r = query(*f, info_type::kFile, fic::kFileFullEaInformation, 4096, 0, qf::kRestartScan);
    ASSERT_EQ(r.status, NtStatus::Success);
    auto list = FileFullEaInfo::decode(r.data());
    ASSERT_TRUE(list);
    ASSERT_EQ(list->entries.size(), 2u);
    // The enumeration is at its end now.
    EXPECT_EQ(query(*f, info_type::kFile, 15, 4096).status, NtStatus::NoMoreEas);
    // One at a time.
    r = query(*f, info_type::kFile, 15, 4096, 0, qf::kRestartScan | qf::kReturnSingleEntry);
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(FileFullEaInfo::decode(r.data())->entries.size(), 1u);
    r = query(*f, info_type::kFile, 15, 4096, 0, qf::kReturnSingleEntry);
    ASSERT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(FileFullEaInfo::decode(r.data())->entries.size(), 1u);
    EXPECT_EQ(query(*f, info_type::kFile, 15, 4096).status, NtStatus::NoMoreEas);
    // Room for one entry (15 or 19 bytes, not both: 35): BUFFER_OVERFLOW, then the
    // rest; a buffer too small for any entry: BUFFER_TOO_SMALL.
    EXPECT_EQ(query(*f, info_type::kFile, 15, 3, 0, qf::kRestartScan).status,
              NtStatus::BufferTooSmall);
    r = query(*f, info_type::kFile, 15, 20, 0, qf::kRestartScan);
    EXPECT_EQ(r.status, NtStatus::BufferOverflow);
    EXPECT_EQ(FileFullEaInfo::decode(r.data())->entries.size(), 1u);
    r = query(*f, info_type::kFile, 15, 4096);
    EXPECT_EQ(r.status, NtStatus::Success);
    EXPECT_EQ(FileFullEaInfo::decode(r.data())->entries.size(), 1u);
    // By name, a missing EA comes back empty.
    FileGetEaInfo names;
    names.names = {"secondea", "NOSUCH"};
    ByteVector in;
    ByteWriter w(in);
    names.encode(w);
    r = query(*f, info_type::kFile, 15, 4096, 0, 0, in);
    ASSERT_EQ(r.status, NtStatus::Success);
    list = FileFullEaInfo::decode(r.data());
    ASSERT_TRUE(list);
    ASSERT_EQ(list->entries.size(), 2u);
    EXPECT_EQ(list->entries[0].name, "SECONDEA");
    EXPECT_EQ(list->entries[0].value.size(), 2u);
    EXPECT_EQ(list->entries[1].name, "NOSUCH");
    EXPECT_TRUE(list->entries[1].value.empty());
    auto ea = FileEaInfo::decode(query(*f, info_type::kFile, fic::kFileEaInformation).data());
    ASSERT_TRUE(ea);
    EXPECT_GT(ea->ea_size, 0u);
}

TEST_F(QueryInfoHandler, NamedPipesAnswerStandardOnly) {
    auto f = open("file.txt", kAll);
    share->is_ipc = true;
    auto r = query(*f, info_type::kFile, fic::kFileStandardInformation);
    ASSERT_EQ(r.status, NtStatus::Success);
    auto s = FileStandardInfo::decode(r.data());
    EXPECT_EQ(s->allocation_size, 4096);
    EXPECT_TRUE(s->delete_pending);
    EXPECT_EQ(query(*f, info_type::kFile, fic::kFileBasicInformation).status,
              NtStatus::NotSupported);
    EXPECT_EQ(query(*f, info_type::kFileSystem, 1).status, NtStatus::NotSupported);
    share->is_ipc = false;
}

}  // namespace
