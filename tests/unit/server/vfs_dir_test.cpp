#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "server/vfs/dir.h"
#include "server/vfs/path.h"
#include "tests/unit/server/vfs_test_util.h"

namespace daxsmbd::server::vfs {
namespace {

using testing::VfsTest;

class VfsDir : public VfsTest {
  protected:
    // Drains the cursor; names in order.
    std::vector<std::string> names(DirectoryCursor& c, std::string_view pattern = "*") {
        std::vector<std::string> out;
        for (;;) {
            auto e = c.next(pattern);
            EXPECT_TRUE(e.ok()) << status_name(e.status());
            if (!e.ok() || !*e) break;
            out.push_back((*e)->name);
        }
        return out;
    }
    std::map<std::string, DirEntry> entries(DirectoryCursor& c) {
        std::map<std::string, DirEntry> out;
        for (;;) {
            auto e = c.next();
            EXPECT_TRUE(e.ok());
            if (!e.ok() || !*e) break;
            out[(*e)->name] = **e;
        }
        return out;
    }
};

TEST_F(VfsDir, ListsDotDotDotAndEveryEntry) {
    share_file("a.txt", "aaaa");
    share_file("B.doc");
    share_dir("sub");
    auto root = open_share();
    auto c = DirectoryCursor::open(root, "");
    ASSERT_TRUE(c.ok());
    auto n = names(*c);
    ASSERT_GE(n.size(), 2u);
    EXPECT_EQ(n[0], ".");
    EXPECT_EQ(n[1], "..");
    EXPECT_EQ(std::multiset<std::string>(n.begin() + 2, n.end()),
              (std::multiset<std::string>{"a.txt", "B.doc", "sub"}));
    EXPECT_TRUE(c->at_end());
    auto again = c->next();
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(*again);  // stays at the end
}

TEST_F(VfsDir, EntryInfo) {
    share_file("a.txt", "aaaa");
    share_dir("sub");
    auto root = open_share();
    auto c = DirectoryCursor::open(root, "");
    ASSERT_TRUE(c.ok());
    auto e = entries(*c);
    ASSERT_EQ(e.count("a.txt"), 1u);
    EXPECT_EQ(e["a.txt"].info.end_of_file, 4u);
    EXPECT_EQ(e["a.txt"].info.file_id, inode_of(in_share("a.txt")));
    EXPECT_FALSE(e["a.txt"].info.is_directory);
    EXPECT_TRUE(e["sub"].info.is_directory);
    EXPECT_EQ(e["sub"].info.file_attributes, kAttrDirectory);
    // At the share root, "." and ".." both describe the root.
    EXPECT_EQ(e["."].info.file_id, root.root_inode());
    EXPECT_EQ(e[".."].info.file_id, root.root_inode());
}

TEST_F(VfsDir, DotDotInSubdirectoryIsTheParent) {
    share_dir("sub");
    share_dir("sub/inner");
    share_file("sub/inner/x");
    auto root = open_share();
    auto c = DirectoryCursor::open(root, "sub/inner");
    ASSERT_TRUE(c.ok());
    auto e = entries(*c);
    EXPECT_EQ(e["."].info.file_id, inode_of(in_share("sub/inner")));
    EXPECT_EQ(e[".."].info.file_id, inode_of(in_share("sub")));
    EXPECT_EQ(e.size(), 3u);
}

TEST_F(VfsDir, RewindStartsOver) {
    share_file("one");
    share_file("two");
    auto root = open_share();
    auto c = DirectoryCursor::open(root, "");
    ASSERT_TRUE(c.ok());
    auto first = names(*c);
    c->rewind();
    EXPECT_FALSE(c->at_end());
    auto second = names(*c);
    EXPECT_EQ(first, second);
    EXPECT_EQ(first.size(), 4u);
    // Rewind in the middle too.
    c->rewind();
    ASSERT_TRUE(c->next().ok());
    c->rewind();
    EXPECT_EQ(names(*c), first);
}

TEST_F(VfsDir, PutBackReturnsTheSameEntryNext) {
    share_file("one");
    share_file("two");
    auto root = open_share();
    auto c = DirectoryCursor::open(root, "");
    ASSERT_TRUE(c.ok());
    std::vector<std::string> seen;
    bool put = false;
    for (;;) {
        auto e = c->next();
        ASSERT_TRUE(e.ok());
        if (!*e) break;
        if (!put && (*e)->name == "one") {
            // Pretend it did not fit into the client's buffer.
            put = true;
            c->put_back(std::move(**e));
            auto again = c->next("no-match-needed");
            ASSERT_TRUE(again.ok() && *again);
            EXPECT_EQ((*again)->name, "one");
            EXPECT_EQ((*again)->info.file_id, inode_of(in_share("one")));
            seen.push_back((*again)->name);
            continue;
        }
        seen.push_back((*e)->name);
    }
    EXPECT_TRUE(put);
    EXPECT_EQ(std::multiset<std::string>(seen.begin(), seen.end()),
              (std::multiset<std::string>{".", "..", "one", "two"}));
    // A put-back entry is delivered even after the end was reached.
    EXPECT_TRUE(c->at_end());
    DirEntry late;
    late.name = "late";
    c->put_back(late);
    EXPECT_FALSE(c->at_end());
    auto e = c->next();
    ASSERT_TRUE(e.ok() && *e);
    EXPECT_EQ((*e)->name, "late");
    EXPECT_TRUE(c->at_end());
}

TEST_F(VfsDir, PatternFilters) {
    share_file("a.txt");
    share_file("B.TXT");
    share_file("c.doc");
    auto root = open_share();
    auto c = DirectoryCursor::open(root, "");
    ASSERT_TRUE(c.ok());
    auto n = names(*c, "*.txt");
    EXPECT_EQ(std::multiset<std::string>(n.begin(), n.end()),
              (std::multiset<std::string>{"a.txt", "B.TXT"}));
    c->rewind();
    EXPECT_EQ(names(*c, "c.doc"), std::vector<std::string>{"c.doc"});
    c->rewind();
    EXPECT_EQ(names(*c, "."), std::vector<std::string>{"."});

    auto cs_root = ShareRoot::open(share_, ShareOptions{true, {}});
    ASSERT_TRUE(cs_root.ok());
    auto cs = DirectoryCursor::open(*cs_root, "");
    ASSERT_TRUE(cs.ok());
    EXPECT_EQ(names(*cs, "*.txt"), std::vector<std::string>{"a.txt"});
}

TEST_F(VfsDir, ReservedRootNameIsNeitherListedNorReachable) {
    share_dir(".daxsmbd");
    share_file(".daxsmbd/state", "server only");
    share_dir("sub");
    share_dir("sub/.daxsmbd");  // only the root's is reserved
    auto r = ShareRoot::open(share_, ShareOptions{false, ".daxsmbd"});
    ASSERT_TRUE(r.ok());
    auto c = DirectoryCursor::open(*r, "");
    ASSERT_TRUE(c.ok());
    auto n = names(*c, "*");
    EXPECT_EQ(std::count(n.begin(), n.end(), ".daxsmbd"), 0);
    EXPECT_EQ(std::count(n.begin(), n.end(), "sub"), 1);
    for (const char* p : {".daxsmbd", ".DAXSMBD\\state", ".daxsmbd\\state"}) {
        auto sp = parse_smb_path(p);
        ASSERT_TRUE(sp.ok());
        EXPECT_EQ(resolve_path(*r, *sp).status(), NtStatus::AccessDenied) << p;
    }
    auto sub = DirectoryCursor::open(*r, "sub");
    ASSERT_TRUE(sub.ok());
    auto sn = names(*sub, ".daxsmbd");
    EXPECT_EQ(sn, std::vector<std::string>{".daxsmbd"});
    auto sp = parse_smb_path("sub\\.daxsmbd");
    ASSERT_TRUE(sp.ok());
    EXPECT_TRUE(resolve_path(*r, *sp).ok());
}

TEST_F(VfsDir, SymlinksInsideFollowedOutsideNot) {
    share_dir("sub");
    share_file("sub/target", "12345678");
    share_symlink("in_link", "sub/target");
    share_symlink("out_link", "../outside/secret");
    share_symlink("dangling", "nothing-here");
    auto root = open_share();
    auto c = DirectoryCursor::open(root, "");
    ASSERT_TRUE(c.ok());
    auto e = entries(*c);
    ASSERT_EQ(e.count("in_link"), 1u);
    EXPECT_TRUE(e["in_link"].is_symlink);
    EXPECT_TRUE(e["in_link"].symlink_followed);
    EXPECT_EQ(e["in_link"].info.file_id, inode_of(in_share("sub/target")));
    EXPECT_EQ(e["in_link"].info.end_of_file, 8u);
    ASSERT_EQ(e.count("out_link"), 1u);
    EXPECT_TRUE(e["out_link"].is_symlink);
    EXPECT_FALSE(e["out_link"].symlink_followed);
    EXPECT_TRUE(e["out_link"].info.is_symlink);
    EXPECT_NE(e["out_link"].info.file_id, inode_of(outside_ + "/secret"));
    ASSERT_EQ(e.count("dangling"), 1u);
    EXPECT_FALSE(e["dangling"].symlink_followed);
}

TEST_F(VfsDir, UnrepresentableNamesAreSkipped) {
    share_file("good");
    share_file("bad:colon");
    share_file("bad*star");
    share_file("bad\\backslash");
    share_file("bad\xff");
    auto root = open_share();
    auto c = DirectoryCursor::open(root, "");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(names(*c), (std::vector<std::string>{".", "..", "good"}));
}

TEST_F(VfsDir, OpenErrors) {
    share_file("file");
    share_symlink("out", "../outside");
    auto root = open_share();
    EXPECT_EQ(DirectoryCursor::open(root, "missing").status(), NtStatus::ObjectNameNotFound);
    EXPECT_EQ(DirectoryCursor::open(root, "file").status(), NtStatus::NotADirectory);
    EXPECT_EQ(DirectoryCursor::open(root, "out").status(), NtStatus::AccessDenied);
}

}  // namespace
}  // namespace daxsmbd::server::vfs
