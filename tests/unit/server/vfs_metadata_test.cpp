#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "server/vfs/metadata.h"
#include "server/vfs/open.h"
#include "tests/unit/server/vfs_test_util.h"

namespace daxsmbd::server::vfs {
namespace {

using testing::VfsTest;

constexpr int64_t kY2k = 125911584000000000;  // 2000-01-01T00:00:00Z as FILETIME

// ---- FILETIME ----

TEST(VfsFiletime, Conversions) {
    EXPECT_EQ(timespec_to_filetime({0, 0}), kFiletimeUnixEpoch);
    EXPECT_EQ(timespec_to_filetime({946684800, 0}), kY2k);
    EXPECT_EQ(timespec_to_filetime({1, 234567899}), kFiletimeUnixEpoch + 12345678);  // truncates
    EXPECT_EQ(timespec_to_filetime({-11644473600, 0}), 0);                           // 1601-01-01
    EXPECT_EQ(timespec_to_filetime({-11644473601, 0}), 0);           // before 1601: clamped
    EXPECT_EQ(timespec_to_filetime({INT64_MAX / 2, 0}), INT64_MAX);  // saturates

    struct timespec ts = filetime_to_timespec(kFiletimeUnixEpoch + 12345678);
    EXPECT_EQ(ts.tv_sec, 1);
    EXPECT_EQ(ts.tv_nsec, 234567800);
    ts = filetime_to_timespec(kFiletimeUnixEpoch - 1);  // 100 ns before 1970
    EXPECT_EQ(ts.tv_sec, -1);
    EXPECT_EQ(ts.tv_nsec, 999999900);
    for (int64_t ft : {int64_t(0), int64_t(1), kFiletimeUnixEpoch - 1, kY2k, kY2k + 9999999})
        EXPECT_EQ(timespec_to_filetime(filetime_to_timespec(ft)), ft) << ft;
}

// ---- the DOS xattr format ----

TEST(VfsDosXattr, GoldenBytes) {
    auto bytes = encode_dos_xattr({0x00000021, 0x0102030405060708});
    const unsigned char expect[12] = {0x21, 0,    0,    0,    0x08, 0x07,
                                      0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
    EXPECT_EQ(std::memcmp(bytes.data(), expect, 12), 0);
    auto back = decode_dos_xattr(bytes);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->attributes, 0x21u);
    EXPECT_EQ(back->creation_time, 0x0102030405060708);

    EXPECT_FALSE(decode_dos_xattr(std::span(bytes).first(11)));  // short: absent
    std::byte longer[16]{};
    std::memcpy(longer, bytes.data(), 12);
    longer[15] = std::byte{0xEE};  // a later version's extra field is ignored
    EXPECT_EQ(decode_dos_xattr(longer), back);
}

// ---- file_info_from rules ----

struct statx make_statx(mode_t mode) {
    struct statx st {};
    st.stx_mask = STATX_BASIC_STATS;
    st.stx_mode = static_cast<uint16_t>(mode);
    st.stx_ino = 4242;
    st.stx_nlink = 1;
    st.stx_size = 1000;
    st.stx_blocks = 8;
    st.stx_mtime = {1000, 0, 0};
    st.stx_ctime = {900, 0, 0};
    st.stx_atime = {1100, 0, 0};
    st.stx_dev_major = 8;
    st.stx_dev_minor = 1;
    return st;
}

TEST(VfsFileInfo, AttributesFromMode) {
    EXPECT_EQ(file_info_from(make_statx(S_IFREG | 0644), std::nullopt).file_attributes,
              kAttrNormal);
    EXPECT_EQ(file_info_from(make_statx(S_IFREG | 0444), std::nullopt).file_attributes,
              kAttrReadonly);
    EXPECT_EQ(file_info_from(make_statx(S_IFREG | 0464), std::nullopt).file_attributes,
              kAttrNormal);  // any write bit
    EXPECT_EQ(file_info_from(make_statx(S_IFDIR | 0755), std::nullopt).file_attributes,
              kAttrDirectory);
    EXPECT_EQ(file_info_from(make_statx(S_IFDIR | 0555), std::nullopt).file_attributes,
              kAttrDirectory);  // never READONLY from a directory's mode
}

TEST(VfsFileInfo, AttributesFromXattrWin) {
    DosXattr x{kAttrHidden | kAttrArchive | kAttrDirectory | 0x80000000u, 0};
    auto fi = file_info_from(make_statx(S_IFREG | 0444), x);
    // Only stored bits count; READONLY from the mode does not apply once the xattr exists.
    EXPECT_EQ(fi.file_attributes, kAttrHidden | kAttrArchive);
    EXPECT_EQ(file_info_from(make_statx(S_IFREG | 0644), DosXattr{0, 0}).file_attributes,
              kAttrNormal);
    EXPECT_EQ(file_info_from(make_statx(S_IFDIR | 0755), DosXattr{kAttrSystem, 0}).file_attributes,
              kAttrSystem | kAttrDirectory);
}

TEST(VfsFileInfo, SizesTimesAndIds) {
    auto fi = file_info_from(make_statx(S_IFREG | 0644), std::nullopt);
    EXPECT_EQ(fi.file_id, 4242u);
    EXPECT_EQ(fi.end_of_file, 1000u);
    EXPECT_EQ(fi.allocation_size, 4096u);
    EXPECT_EQ(fi.last_write_time, timespec_to_filetime({1000, 0}));
    EXPECT_EQ(fi.change_time, timespec_to_filetime({900, 0}));
    EXPECT_EQ(fi.last_access_time, timespec_to_filetime({1100, 0}));
    EXPECT_EQ(fi.creation_time, timespec_to_filetime({900, 0}));  // no btime: min(mtime, ctime)
    EXPECT_FALSE(fi.is_directory);

    auto st = make_statx(S_IFREG | 0644);
    st.stx_mask |= STATX_BTIME;
    st.stx_btime = {800, 0, 0};
    EXPECT_EQ(file_info_from(st, std::nullopt).creation_time, timespec_to_filetime({800, 0}));
    EXPECT_EQ(file_info_from(st, DosXattr{0, kY2k}).creation_time, kY2k);  // xattr wins
    EXPECT_EQ(file_info_from(st, DosXattr{0, 0}).creation_time, timespec_to_filetime({800, 0}));

    auto dir = file_info_from(make_statx(S_IFDIR | 0755), std::nullopt);
    EXPECT_TRUE(dir.is_directory);
    EXPECT_EQ(dir.end_of_file, 0u);
    EXPECT_EQ(dir.allocation_size, 0u);
}

// ---- on a real file system ----

class VfsMetadata : public VfsTest {
  protected:
    UniqueFd open_rw(const ShareRoot& root, const char* rel, int extra = 0) {
        auto fd = open_beneath(root, rel, O_RDWR | extra);
        EXPECT_TRUE(fd.ok()) << rel << ": " << status_name(fd.status());
        return fd.ok() ? std::move(fd).value() : UniqueFd();
    }
};

TEST_F(VfsMetadata, QueryInfoMatchesStat) {
    share_file("f", "12345");
    auto root = open_share();
    auto fd = open_rw(root, "f");
    auto fi = query_info(fd.get());
    ASSERT_TRUE(fi.ok());
    struct stat st {};
    ASSERT_EQ(::stat(in_share("f").c_str(), &st), 0);
    EXPECT_EQ(fi->file_id, st.st_ino);
    EXPECT_EQ(fi->device, st.st_dev);
    EXPECT_EQ(fi->end_of_file, 5u);
    EXPECT_EQ(fi->nlink, 1u);
    EXPECT_EQ(fi->file_attributes, kAttrNormal);
    EXPECT_EQ(fi->last_write_time, timespec_to_filetime(st.st_mtim));
}

TEST_F(VfsMetadata, DosAttributesRoundTripThroughXattr) {
    share_file("f");
    auto root = open_share();
    ASSERT_TRUE(root.supports_user_xattrs());
    {
        auto fd = open_rw(root, "f");
        BasicInfoUpdate u;
        u.file_attributes = kAttrHidden | kAttrSystem | kAttrArchive;
        ASSERT_TRUE(set_basic_info(fd.get(), u).ok());
        EXPECT_EQ(query_info(fd.get())->file_attributes, kAttrHidden | kAttrSystem | kAttrArchive);
    }
    // The raw xattr holds exactly the documented 12 bytes.
    unsigned char raw[32];
    ASSERT_EQ(::getxattr(in_share("f").c_str(), kDosXattrName, raw, sizeof raw), 12);
    EXPECT_EQ(raw[0], kAttrHidden | kAttrSystem | kAttrArchive);
    {
        auto fd = open_beneath(root, "f", O_RDONLY);  // new open sees it
        ASSERT_TRUE(fd.ok());
        EXPECT_EQ(query_info(fd->get())->file_attributes, kAttrHidden | kAttrSystem | kAttrArchive);
        auto path_fd = open_beneath(root, "f", O_PATH);  // and through an O_PATH descriptor
        ASSERT_TRUE(path_fd.ok());
        EXPECT_EQ(query_info(path_fd->get())->file_attributes,
                  kAttrHidden | kAttrSystem | kAttrArchive);
    }
    {
        auto fd = open_rw(root, "f");
        BasicInfoUpdate u;
        u.file_attributes = kAttrNormal;  // = clear all settable attributes
        ASSERT_TRUE(set_basic_info(fd.get(), u).ok());
        EXPECT_EQ(query_info(fd.get())->file_attributes, kAttrNormal);
        u.file_attributes = kAttrReadonly;
        ASSERT_TRUE(set_basic_info(fd.get(), u).ok());
        EXPECT_EQ(query_info(fd.get())->file_attributes, kAttrReadonly);
        // 0 leaves attributes alone.
        ASSERT_TRUE(set_basic_info(fd.get(), BasicInfoUpdate{}).ok());
        EXPECT_EQ(query_info(fd.get())->file_attributes, kAttrReadonly);
    }
}

TEST_F(VfsMetadata, NonSettableBitsSurviveAttributeChanges) {
    share_file("f");
    auto root = open_share();
    auto fd = open_rw(root, "f");
    ASSERT_TRUE(write_dos_xattr(fd.get(), DosXattr{kAttrSparseFile | kAttrHidden, kY2k}).ok());
    BasicInfoUpdate u;
    u.file_attributes = kAttrArchive | kAttrCompressed;  // COMPRESSED is not settable: ignored
    ASSERT_TRUE(set_basic_info(fd.get(), u).ok());
    auto x = read_dos_xattr(fd.get());
    ASSERT_TRUE(x);
    EXPECT_EQ(x->attributes, kAttrSparseFile | kAttrArchive);
    EXPECT_EQ(x->creation_time, kY2k);  // an attribute change keeps the creation time
}

TEST_F(VfsMetadata, InvalidBasicInfo) {
    share_file("f");
    share_dir("d");
    auto root = open_share();
    auto fd = open_rw(root, "f");
    BasicInfoUpdate u;
    u.file_attributes = kAttrDirectory;
    EXPECT_EQ(set_basic_info(fd.get(), u).status(), NtStatus::InvalidParameter);
    u = {};
    u.last_write_time = -3;
    EXPECT_EQ(set_basic_info(fd.get(), u).status(), NtStatus::InvalidParameter);
    u = {};
    u.creation_time = -1;  // -1 / -2 are valid and change nothing
    u.last_access_time = -2;
    EXPECT_TRUE(set_basic_info(fd.get(), u).ok());
    EXPECT_FALSE(read_dos_xattr(fd.get()));

    auto dfd = open_beneath(root, "d", O_RDONLY | O_DIRECTORY);
    ASSERT_TRUE(dfd.ok());
    u = {};
    u.file_attributes = kAttrTemporary;
    EXPECT_EQ(set_basic_info(dfd->get(), u).status(), NtStatus::InvalidParameter);
    u.file_attributes = kAttrHidden | kAttrDirectory;  // DIRECTORY on a directory is fine
    ASSERT_TRUE(set_basic_info(dfd->get(), u).ok());
    EXPECT_EQ(query_info(dfd->get())->file_attributes, kAttrHidden | kAttrDirectory);
}

TEST_F(VfsMetadata, ShareRootKeepsHiddenAndSystem) {
    auto root = open_share();
    BasicInfoUpdate u;
    u.file_attributes = kAttrHidden | kAttrSystem | kAttrArchive;
    u.is_share_root = true;
    ASSERT_TRUE(set_basic_info(root.fd(), u).ok());
    EXPECT_EQ(query_info(root.fd())->file_attributes, kAttrArchive | kAttrDirectory);
}

TEST_F(VfsMetadata, CreationTimePersistsAcrossReopen) {
    share_file("f");
    auto root = open_share();
    {
        auto fd = open_rw(root, "f");
        BasicInfoUpdate u;
        u.creation_time = kY2k + 1234567;
        u.last_write_time = kY2k + 7654321;
        u.last_access_time = kY2k + 42;
        ASSERT_TRUE(set_basic_info(fd.get(), u).ok());
    }
    auto fd = open_beneath(root, "f", O_RDONLY);
    ASSERT_TRUE(fd.ok());
    auto fi = query_info(fd->get());
    ASSERT_TRUE(fi.ok());
    EXPECT_EQ(fi->creation_time, kY2k + 1234567);
    EXPECT_EQ(fi->last_write_time, kY2k + 7654321);
    EXPECT_EQ(fi->last_access_time, kY2k + 42);
    EXPECT_EQ(fi->file_attributes, kAttrNormal);  // creation time alone keeps attributes
}

TEST_F(VfsMetadata, ClientSetChangeTimeStandsUntilTheFileChanges) {
    share_file("f");
    auto root = open_share();
    auto fd = open_rw(root, "f");
    BasicInfoUpdate u;
    u.change_time = kY2k + 99;
    ASSERT_TRUE(set_basic_info(fd.get(), u).ok());
    auto fi = query_info(fd.get());
    ASSERT_TRUE(fi.ok());
    EXPECT_EQ(fi->change_time, kY2k + 99);
    // The raw xattr now carries the change time and its anchor.
    unsigned char raw[64];
    EXPECT_EQ(::getxattr(in_share("f").c_str(), kDosXattrName, raw, sizeof raw), 28);

    // A change after the anchor (here: an anchor far in the past) shows the real ctime again.
    auto x = read_dos_xattr(fd.get());
    ASSERT_TRUE(x.has_value());
    EXPECT_EQ(x->change_time, kY2k + 99);
    x->change_time_anchor = kY2k;
    ASSERT_TRUE(write_dos_xattr(fd.get(), *x).ok());
    struct stat st {};
    ASSERT_EQ(::fstat(fd.get(), &st), 0);
    fi = query_info(fd.get());
    ASSERT_TRUE(fi.ok());
    EXPECT_EQ(fi->change_time, timespec_to_filetime(st.st_ctim));
    // Old 12-byte values still decode, without a change time.
    auto old = decode_dos_xattr(encode_dos_xattr({0x20, kY2k}));
    ASSERT_TRUE(old.has_value());
    EXPECT_EQ(old->change_time, 0);
}

TEST_F(VfsMetadata, CreationTimeDefaultsToBirthTime) {
    share_file("f");
    auto root = open_share();
    auto fd = open_rw(root, "f");
    struct statx st {};
    ASSERT_EQ(::statx(fd.get(), "", AT_EMPTY_PATH, STATX_BTIME | STATX_BASIC_STATS, &st), 0);
    auto fi = query_info(fd.get());
    ASSERT_TRUE(fi.ok());
    if (st.stx_mask & STATX_BTIME)
        EXPECT_EQ(fi->creation_time, statx_ts_to_filetime(st.stx_btime));
    else
        EXPECT_EQ(fi->creation_time, std::min(fi->last_write_time, fi->change_time));
    // Later writes do not move the creation time.
    BasicInfoUpdate u;
    u.last_write_time = fi->creation_time + 10000000;
    ASSERT_TRUE(set_basic_info(fd.get(), u).ok());
    EXPECT_EQ(query_info(fd.get())->creation_time, fi->creation_time);
}

TEST_F(VfsMetadata, FileIdStableAcrossReopenAndRename) {
    share_file("a");
    share_file("other");
    share_dir("d");
    auto root = open_share();
    uint64_t id;
    {
        auto fd = open_beneath(root, "a", O_RDONLY);
        ASSERT_TRUE(fd.ok());
        id = query_info(fd->get())->file_id;
    }
    {
        auto fd = open_beneath(root, "a", O_PATH);
        ASSERT_TRUE(fd.ok());
        EXPECT_EQ(query_info(fd->get())->file_id, id);
    }
    ASSERT_TRUE(rename_beneath(root, "a", "d/renamed", false).ok());
    auto fd = open_beneath(root, "d/renamed", O_RDONLY);
    ASSERT_TRUE(fd.ok());
    EXPECT_EQ(query_info(fd->get())->file_id, id);
    auto ofd = open_beneath(root, "other", O_RDONLY);
    ASSERT_TRUE(ofd.ok());
    EXPECT_NE(query_info(ofd->get())->file_id, id);
}

TEST_F(VfsMetadata, QueryInfoAtDoesNotFollowSymlinks) {
    share_file("target", "abc");
    share_symlink("link", "target");
    auto root = open_share();
    auto li = query_info_at(root.fd(), "link");
    ASSERT_TRUE(li.ok());
    EXPECT_TRUE(li->is_symlink);
    EXPECT_NE(li->file_id, inode_of(in_share("target")));
    auto ti = query_info_at(root.fd(), "target");
    ASSERT_TRUE(ti.ok());
    EXPECT_FALSE(ti->is_symlink);
    EXPECT_EQ(ti->file_id, inode_of(in_share("target")));
    EXPECT_EQ(query_info_at(root.fd(), "missing").status(), NtStatus::ObjectNameNotFound);
}

}  // namespace
}  // namespace daxsmbd::server::vfs
