#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include "server/vfs/share_root.h"
#include "tests/unit/server/vfs_test_util.h"

namespace daxsmbd::server::vfs {
namespace {

using testing::VfsTest;

TEST(VfsFsInfo, MagicNames) {
    EXPECT_EQ(fs_type_name_from_magic(0xEF53), "ext4");
    EXPECT_EQ(fs_type_name_from_magic(0x58465342), "xfs");
    EXPECT_EQ(fs_type_name_from_magic(0x9123683E), "btrfs");
    EXPECT_EQ(fs_type_name_from_magic(0x01021994), "tmpfs");
    EXPECT_EQ(fs_type_name_from_magic(0x12345678), "unknown");
}

TEST(VfsFsInfo, SpaceConversion) {
    FsSpace s = fs_space_from(4096, 1000, 300, 250);
    EXPECT_EQ(s.total_units, 1000u);
    EXPECT_EQ(s.actual_available_units, 300u);
    EXPECT_EQ(s.caller_available_units, 250u);
    EXPECT_EQ(s.bytes_per_sector, 512u);
    EXPECT_EQ(s.sectors_per_unit, 8u);
    EXPECT_EQ(s.bytes_per_unit(), 4096u);
    FsSpace odd = fs_space_from(100, 10, 5, 5);
    EXPECT_EQ(odd.bytes_per_sector, 100u);
    EXPECT_EQ(odd.sectors_per_unit, 1u);
    EXPECT_EQ(fs_space_from(0, 1, 1, 1).bytes_per_unit(), 512u);
}

TEST_F(VfsTest, ShareRootSnapshot) {
    auto root = open_share(true);
    struct stat st {};
    ASSERT_EQ(::stat(share_.c_str(), &st), 0);
    EXPECT_EQ(root.device(), st.st_dev);
    EXPECT_EQ(root.root_inode(), st.st_ino);
    EXPECT_TRUE(root.case_sensitive());
    EXPECT_EQ(root.path(), share_);
    const uint64_t dev = st.st_dev;
    EXPECT_EQ(root.volume_serial(), uint32_t(dev ^ (dev >> 32)));
    EXPECT_GT(root.volume_creation_time(), 0);
    struct statfs sf {};
    ASSERT_EQ(::statfs(share_.c_str(), &sf), 0);
    EXPECT_EQ(root.fs_magic(), uint64_t(sf.f_type) & 0xFFFFFFFF);
    EXPECT_EQ(root.fs_type_name(), fs_type_name_from_magic(root.fs_magic()));
    EXPECT_EQ(root.max_name_length(), uint32_t(sf.f_namelen));
    EXPECT_FALSE(root.read_only());
    EXPECT_TRUE(root.supports_user_xattrs());  // the fixture picked such a directory
    auto space = root.space();
    ASSERT_TRUE(space.ok());
    struct statvfs sv {};
    ASSERT_EQ(::statvfs(share_.c_str(), &sv), 0);
    EXPECT_EQ(space->total_units, sv.f_blocks);
    EXPECT_EQ(space->bytes_per_unit(), sv.f_frsize);
    EXPECT_LE(space->caller_available_units, space->actual_available_units);
    EXPECT_FALSE(open_share().case_sensitive());  // the default
}

TEST_F(VfsTest, ShareRootOpenErrors) {
    EXPECT_EQ(ShareRoot::open(base_ + "/missing").status(), NtStatus::ObjectNameNotFound);
    write_file(base_ + "/plain", "x");
    EXPECT_EQ(ShareRoot::open(base_ + "/plain").status(), NtStatus::ObjectPathNotFound);
}

}  // namespace
}  // namespace daxsmbd::server::vfs
