#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/xattr.h>

#include <string>
#include <vector>

#include "server/errno_status.h"
#include "server/vfs/ea.h"
#include "server/vfs/metadata.h"
#include "server/vfs/open.h"
#include "tests/unit/server/vfs_test_util.h"

namespace daxsmbd::server::vfs {
namespace {

using testing::VfsTest;

std::vector<std::byte> bytes(std::string_view s) {
    std::vector<std::byte> v(s.size());
    for (size_t i = 0; i < s.size(); ++i)
        v[i] = std::byte(s[i]);
    return v;
}

TEST(VfsEaName, Rules) {
    EXPECT_TRUE(is_valid_ea_name("MYEA"));
    EXPECT_TRUE(is_valid_ea_name(".LONGNAME"));
    EXPECT_TRUE(is_valid_ea_name("with space-and_dash.dot"));
    EXPECT_FALSE(is_valid_ea_name(""));
    for (char c : std::string("\\/:*?\"<>|,+=[];"))
        EXPECT_FALSE(is_valid_ea_name(std::string("A") + c)) << c;
    EXPECT_FALSE(is_valid_ea_name(std::string("A\x01")));
    EXPECT_TRUE(is_valid_ea_name(std::string(250, 'A')));   // "user." + 250 = 255
    EXPECT_FALSE(is_valid_ea_name(std::string(251, 'A')));  // Linux xattr name cap
}

TEST(VfsEaSize, ChainedFullEaInformationLength) {
    // MS-FSCC 2.4.16: 8-byte header + name + NUL + value, 4-byte aligned except the last.
    EXPECT_EQ(ea_list_size({}), 0u);
    std::vector<Ea> one{{"A", bytes("x"), 0}};
    EXPECT_EQ(ea_list_size(one), 11u);
    std::vector<Ea> two{{"A", bytes("x"), 0}, {"BC", bytes("yz"), 0}};
    EXPECT_EQ(ea_list_size(two), 12u + 13u);
    std::vector<Ea> aligned{{"ABC", bytes("1234"), 0}, {"D", bytes("1"), 0}};  // 16 stays 16
    EXPECT_EQ(ea_list_size(aligned), 16u + 11u);
}

class VfsEa : public VfsTest {
  protected:
    UniqueFd open_file(const ShareRoot& root, const char* rel, int flags = O_RDWR) {
        auto fd = open_beneath(root, rel, flags);
        EXPECT_TRUE(fd.ok()) << status_name(fd.status());
        return fd.ok() ? std::move(fd).value() : UniqueFd();
    }
};

TEST_F(VfsEa, SetGetListDelete) {
    share_file("f");
    auto root = open_share();
    auto fd = open_file(root, "f");
    auto none = list_eas(fd.get());
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
    EXPECT_EQ(*ea_size(fd.get()), 0u);

    ASSERT_TRUE(set_ea(fd.get(), "myEa", bytes("hello")).ok());
    // Stored upper-case as a user xattr.
    char raw[16];
    ASSERT_EQ(::getxattr(in_share("f").c_str(), "user.MYEA", raw, sizeof raw), 5);

    auto got = get_ea(fd.get(), "MyEA");
    ASSERT_TRUE(got.ok() && *got);
    EXPECT_EQ((*got)->name, "MYEA");
    EXPECT_EQ((*got)->value, bytes("hello"));

    auto all = list_eas(fd.get());
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 1u);
    EXPECT_EQ((*all)[0].name, "MYEA");
    EXPECT_EQ(*ea_size(fd.get()), 8u + 4 + 1 + 5);

    ASSERT_TRUE(set_ea(fd.get(), "MYEA", {}).ok());  // empty value deletes
    auto gone = get_ea(fd.get(), "myea");
    ASSERT_TRUE(gone.ok());
    EXPECT_FALSE(*gone);
    EXPECT_TRUE(set_ea(fd.get(), "NEVER_SET", {}).ok());  // deleting an absent EA is fine
}

TEST_F(VfsEa, OwnXattrsAreNotEas) {
    share_file("f");
    auto root = open_share();
    auto fd = open_file(root, "f");
    ASSERT_TRUE(write_dos_xattr(fd.get(), DosXattr{kAttrHidden, 0}).ok());
    ASSERT_EQ(::setxattr(in_share("f").c_str(), "user.daxsmbd.other", "x", 1, 0), 0);
    ASSERT_TRUE(set_ea(fd.get(), "VISIBLE", bytes("1")).ok());
    auto all = list_eas(fd.get());
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 1u);
    EXPECT_EQ((*all)[0].name, "VISIBLE");
    EXPECT_EQ(*ea_size(fd.get()), ea_list_size(*all));
    // A client EA that upper-cases to the private prefix is a different xattr.
    ASSERT_TRUE(set_ea(fd.get(), "daxsmbd.dosattrib", bytes("zz")).ok());
    auto dos = read_dos_xattr(fd.get());
    ASSERT_TRUE(dos);
    EXPECT_EQ(dos->attributes, kAttrHidden);
}

TEST_F(VfsEa, ForeignLowerCaseXattrFoundCaseInsensitively) {
    share_file("f");
    ASSERT_EQ(::setxattr(in_share("f").c_str(), "user.mime_type", "text/plain", 10, 0), 0);
    auto root = open_share();
    auto fd = open_file(root, "f");
    auto got = get_ea(fd.get(), "MIME_TYPE");
    ASSERT_TRUE(got.ok() && *got);
    EXPECT_EQ((*got)->name, "mime_type");
    EXPECT_EQ((*got)->value, bytes("text/plain"));
    // Setting it replaces the differently spelled xattr: one EA remains, upper-case.
    ASSERT_TRUE(set_ea(fd.get(), "Mime_Type", bytes("image/png")).ok());
    auto all = list_eas(fd.get());
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 1u);
    EXPECT_EQ((*all)[0].name, "MIME_TYPE");
    EXPECT_EQ((*all)[0].value, bytes("image/png"));
}

TEST_F(VfsEa, Errors) {
    share_file("f");
    auto root = open_share();
    auto fd = open_file(root, "f");
    EXPECT_EQ(set_ea(fd.get(), "BAD:NAME", bytes("1")).status(), NtStatus::InvalidEaName);
    EXPECT_EQ(get_ea(fd.get(), "BAD*").status(), NtStatus::InvalidEaName);
    std::vector<std::byte> huge(65536, std::byte{1});
    EXPECT_EQ(set_ea(fd.get(), "HUGE", huge).status(), NtStatus::EaTooLarge);
    // The list-size limit is checked before anything is written.
    std::vector<Ea> batch{{"A", std::vector<std::byte>(40000, std::byte{1}), 0},
                          {"B", std::vector<std::byte>(40000, std::byte{2}), 0}};
    EXPECT_EQ(set_eas(fd.get(), batch).status(), NtStatus::EaTooLarge);
    EXPECT_TRUE(list_eas(fd.get())->empty());
    std::vector<Ea> bad_second{{"GOOD", bytes("1"), 0}, {"B?D", bytes("2"), 0}};
    EXPECT_EQ(set_eas(fd.get(), bad_second).status(), NtStatus::InvalidEaName);
    EXPECT_TRUE(list_eas(fd.get())->empty());
}

TEST_F(VfsEa, BatchAndOPathDescriptor) {
    share_file("f");
    auto root = open_share();
    auto fd = open_file(root, "f");
    std::vector<Ea> batch{
        {"ONE", bytes("1"), 0}, {"TWO", bytes("22"), 0}, {"one", bytes("111"), 0}};
    ASSERT_TRUE(set_eas(fd.get(), batch).ok());
    auto pfd = open_file(root, "f", O_PATH);
    auto all = list_eas(pfd.get());
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 2u);
    auto one = get_ea(pfd.get(), "One");
    ASSERT_TRUE(one.ok() && *one);
    EXPECT_EQ((*one)->value, bytes("111"));  // later entries of a batch win
}

TEST_F(VfsEa, SizeAtAnEntryOfADirectoryIsTheSizeOfTheOpenFile) {
    share_file("f");
    share_file("plain");
    share_file("own-only");
    share_dir("d");
    share_symlink("link", "f");
    auto root = open_share();
    {
        auto fd = open_file(root, "f");
        // Three EAs whose padding depends on which one is listed last.
        std::vector<Ea> batch{{"A", bytes("x"), 0}, {"BC", bytes("yz"), 0}, {"DEF", bytes("1"), 0}};
        ASSERT_TRUE(set_eas(fd.get(), batch).ok());
        auto own = open_file(root, "own-only");
        ASSERT_TRUE(write_dos_xattr(own.get(), DosXattr{kAttrHidden, 0}).ok());
    }
    {
        auto dfd = open_file(root, "d", O_RDONLY | O_DIRECTORY);
        ASSERT_TRUE(set_ea(dfd.get(), "ON_DIR", bytes("dir")).ok());
    }
    auto dir = open_file(root, ".", O_RDONLY | O_DIRECTORY);
    for (const char* name : {"f", "plain", "own-only", "d"}) {
        auto fd = open_file(root, name, O_PATH);
        auto want = ea_size(fd.get());
        ASSERT_TRUE(want.ok()) << name;
        auto got = ea_size_at(dir.get(), name);
        ASSERT_TRUE(got.ok()) << name << ": " << status_name(got.status());
        EXPECT_EQ(*got, *want) << name;
    }
    {
        auto fd = open_file(root, "f", O_PATH);
        auto all = list_eas(fd.get());
        ASSERT_TRUE(all.ok());
        ASSERT_EQ(all->size(), 3u);
        EXPECT_EQ(*ea_size_at(dir.get(), "f"), ea_list_size(*all));
    }
    EXPECT_EQ(*ea_size_at(dir.get(), "plain"), 0u);
    EXPECT_EQ(*ea_size_at(dir.get(), "own-only"), 0u);  // daxsmbd's own xattrs are no EAs
    // A symlink is not followed: its own xattrs (a symlink has no user xattrs) count.
    EXPECT_EQ(*ea_size_at(dir.get(), "link"), 0u);
    EXPECT_EQ(ea_size_at(dir.get(), "missing").status(), NtStatus::ObjectNameNotFound);
}

TEST_F(VfsEa, SizeAtTakesOneComponentOnly) {
    share_dir("d");
    share_file("d/f");
    auto root = open_share();
    auto dir = open_file(root, "d", O_RDONLY | O_DIRECTORY);
    for (std::string_view name : {std::string_view(""), std::string_view("."),
                                  std::string_view(".."), std::string_view("../outside/secret"),
                                  std::string_view("f/"), std::string_view("f\0x", 3)})
        EXPECT_EQ(ea_size_at(dir.get(), name).status(), NtStatus::ObjectNameInvalid) << name;
}

}  // namespace
}  // namespace daxsmbd::server::vfs
