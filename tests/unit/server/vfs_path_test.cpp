#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "server/vfs/open.h"
#include "server/vfs/path.h"
#include "tests/unit/server/vfs_test_util.h"

namespace daxsmbd::server::vfs {
namespace {

using testing::VfsTest;
using Components = std::vector<std::string>;

Components parse_ok(std::string_view p) {
    auto r = parse_smb_path(p);
    EXPECT_TRUE(r.ok()) << p << ": " << status_name(r.status());
    return r.ok() ? r->components : Components{"<error>"};
}

NtStatus parse_err(std::string_view p) {
    return parse_smb_path(p).status();
}

// ---- parse_smb_path ----

TEST(VfsPathParse, RootForms) {
    EXPECT_TRUE(parse_smb_path("")->is_root());
    EXPECT_TRUE(parse_smb_path("\\")->is_root());
    EXPECT_EQ(parse_err("\\\\"), NtStatus::ObjectNameInvalid);
}

TEST(VfsPathParse, ComponentsAndSeparators) {
    EXPECT_EQ(parse_ok("a\\b\\c"), (Components{"a", "b", "c"}));
    EXPECT_EQ(parse_ok("\\a\\b"), (Components{"a", "b"}));
    auto t = parse_smb_path("dir\\sub\\");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->components, (Components{"dir", "sub"}));
    EXPECT_TRUE(t->trailing_separator);
    EXPECT_FALSE(parse_smb_path("dir\\sub")->trailing_separator);
    EXPECT_EQ(parse_smb_path("dir\\sub")->joined(), "dir/sub");
    EXPECT_EQ(parse_err("a\\\\b"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("\\\\a"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("a\\b\\\\"), NtStatus::ObjectNameInvalid);
}

TEST(VfsPathParse, DotComponents) {
    EXPECT_EQ(parse_ok("a\\.\\b"), (Components{"a", "b"}));
    EXPECT_EQ(parse_ok(".\\a"), (Components{"a"}));
    EXPECT_EQ(parse_ok("a\\b\\..\\c"), (Components{"a", "c"}));
    EXPECT_TRUE(parse_smb_path("a\\..")->is_root());
    // Climbing above the root: what Samba answers and smbtorture expects of Windows.
    EXPECT_EQ(parse_err(".."), NtStatus::ObjectPathSyntaxBad);
    EXPECT_EQ(parse_err("\\.."), NtStatus::ObjectPathSyntaxBad);
    EXPECT_EQ(parse_err("a\\..\\.."), NtStatus::ObjectPathSyntaxBad);
    EXPECT_EQ(parse_err("..\\share2\\x"), NtStatus::ObjectPathSyntaxBad);
    EXPECT_EQ(parse_err("a\\..\\..\\outside\\secret"), NtStatus::ObjectPathSyntaxBad);
    // Not dot components.
    EXPECT_EQ(parse_ok("..."), (Components{"..."}));
    EXPECT_EQ(parse_ok(".hidden"), (Components{".hidden"}));
}

TEST(VfsPathParse, InvalidCharactersRejected) {
    for (char c : std::string("\"*<>?|/")) {
        std::string p = std::string("dir\\a") + c + "b";
        EXPECT_EQ(parse_err(p), NtStatus::ObjectNameInvalid) << p;
        EXPECT_EQ(parse_err(std::string(1, c) + "\\x"), NtStatus::ObjectNameInvalid) << c;
    }
    for (int c = 1; c < 0x20; ++c) {
        std::string p = std::string("a") + char(c);
        EXPECT_EQ(parse_err(p), NtStatus::ObjectNameInvalid) << c;
    }
    EXPECT_EQ(parse_err(std::string("a\0b", 3)), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("\xff\xfe"), NtStatus::ObjectNameInvalid);  // not UTF-8
    // Allowed: space, DEL, non-ASCII, and characters Win32 dislikes but NT allows.
    EXPECT_EQ(parse_ok("a b\x7f\\n\xc3\xa4me [1];,=+"),
              (Components{"a b\x7f", "n\xc3\xa4me [1];,=+"}));
}

TEST(VfsPathParse, Streams) {
    auto s = parse_smb_path("dir\\f.txt:Zone.Identifier:$DATA");
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->components, (Components{"dir", "f.txt"}));
    EXPECT_EQ(s->stream_name, "Zone.Identifier");
    EXPECT_EQ(s->stream_type, "$DATA");
    EXPECT_TRUE(s->has_stream());

    auto plain = parse_smb_path("f.txt:s");
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain->stream_name, "s");
    EXPECT_EQ(plain->stream_type, "");

    auto def = parse_smb_path("f.txt::$DATA");  // the default stream, spelled out
    ASSERT_TRUE(def.ok());
    EXPECT_EQ(def->components, (Components{"f.txt"}));
    EXPECT_FALSE(def->has_stream());
    EXPECT_EQ(def->stream_type, "$DATA");

    EXPECT_TRUE(parse_smb_path("f.txt:s:$data").ok());  // type is case-insensitive
    EXPECT_TRUE(parse_smb_path("f:s*?\"<>|").ok());     // stream names allow these (2.1.5.3)
    EXPECT_EQ(parse_err("f.txt:s:$INDEX_ALLOCATION"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("f.txt:"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("f.txt::"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("f.txt:a:$DATA:x"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("dir:s\\f.txt"), NtStatus::ObjectNameInvalid);  // ':' before the end
    EXPECT_EQ(parse_err(":s"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("f.txt:s\\"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("f.txt:a/b"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(parse_err("a*:s"), NtStatus::ObjectNameInvalid);  // base still validated
}

TEST(VfsPathParse, Lengths) {
    EXPECT_EQ(parse_ok(std::string(255, 'a')).at(0).size(), 255u);
    EXPECT_EQ(parse_err(std::string(256, 'a')), NtStatus::NameTooLong);
    EXPECT_EQ(parse_err("d\\" + std::string(256, 'a') + "\\x"), NtStatus::NameTooLong);
    // 128 x U+00E9 = 128 characters but 256 bytes: refused (Linux stores 255 bytes).
    std::string e;
    for (int i = 0; i < 128; ++i)
        e += "\xc3\xa9";
    EXPECT_EQ(parse_err(e), NtStatus::NameTooLong);
    EXPECT_EQ(parse_err("f:" + std::string(256, 's')), NtStatus::NameTooLong);
    EXPECT_TRUE(parse_smb_path("f:" + std::string(255, 's')).ok());
    // Whole path over 32760 UTF-16 units.
    std::string longp;
    while (longp.size() <= kMaxPathUtf16)
        longp += std::string(200, 'x') + "\\";
    longp.pop_back();
    EXPECT_EQ(parse_err(longp), NtStatus::NameTooLong);
}

TEST(VfsPathParse, CheckFileNameAndRepresentable) {
    EXPECT_EQ(check_file_name("ok.txt"), NtStatus::Success);
    EXPECT_EQ(check_file_name(""), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(check_file_name("."), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(check_file_name(".."), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(check_file_name("a\\b"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(check_file_name("a:b"), NtStatus::ObjectNameInvalid);
    EXPECT_EQ(check_file_name(std::string(256, 'n')), NtStatus::NameTooLong);
    EXPECT_TRUE(is_representable_name("n\xc3\xa4me"));
    EXPECT_FALSE(is_representable_name("bad\xff"));
    EXPECT_FALSE(is_representable_name("what?"));
    EXPECT_FALSE(is_representable_name("back\\slash"));
}

// ---- resolve_path ----

class VfsResolve : public VfsTest {
  protected:
    Result<ResolvedPath> resolve(const ShareRoot& root, std::string_view smb) {
        auto p = parse_smb_path(smb);
        if (!p) return Error(p.status());
        return resolve_path(root, *p);
    }
};

TEST_F(VfsResolve, ExactNames) {
    share_dir("dir");
    share_file("dir/file.txt");
    auto root = open_share();
    auto r = resolve(root, "\\dir\\file.txt");
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    EXPECT_TRUE(r->exists);
    EXPECT_EQ(r->rel, "dir/file.txt");
    EXPECT_EQ(r->parent, "dir");
    EXPECT_EQ(r->name, "file.txt");

    auto missing = resolve(root, "dir\\new.txt");
    ASSERT_TRUE(missing.ok());
    EXPECT_FALSE(missing->exists);
    EXPECT_EQ(missing->rel, "dir/new.txt");
    EXPECT_EQ(missing->name, "new.txt");

    auto rootp = resolve(root, "");
    ASSERT_TRUE(rootp.ok());
    EXPECT_TRUE(rootp->exists);
    EXPECT_EQ(rootp->rel, "");
}

TEST_F(VfsResolve, MissingOrNonDirectoryComponentIsPathNotFound) {
    share_file("file.txt");
    auto root = open_share();
    EXPECT_EQ(resolve(root, "nodir\\x").status(), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(resolve(root, "file.txt\\x").status(), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(resolve(root, "file.txt\\").status(), NtStatus::ObjectNameInvalid);
}

TEST_F(VfsResolve, CaseInsensitiveLookupFindsOnDiskSpelling) {
    share_dir("SubDir");
    share_file("SubDir/ReadMe.TXT", "hello");
    share_file("\xc3\x84rger.txt");  // Ärger.txt
    auto root = open_share();
    auto r = resolve(root, "subdir\\readme.txt");
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    EXPECT_TRUE(r->exists);
    EXPECT_EQ(r->rel, "SubDir/ReadMe.TXT");
    EXPECT_EQ(r->name, "ReadMe.TXT");
    EXPECT_EQ(r->parent, "SubDir");

    auto u = resolve(root, "\xc3\xa4RGER.TXT");  // äRGER.TXT
    ASSERT_TRUE(u.ok());
    EXPECT_TRUE(u->exists);
    EXPECT_EQ(u->rel, "\xc3\x84rger.txt");

    // A new name keeps the client's spelling but the parent's on-disk one.
    auto n = resolve(root, "SUBDIR\\New.txt");
    ASSERT_TRUE(n.ok());
    EXPECT_FALSE(n->exists);
    EXPECT_EQ(n->rel, "SubDir/New.txt");
}

TEST_F(VfsResolve, CaseSensitiveShareDoesNotFoldCase) {
    share_file("ReadMe.TXT");
    auto root = open_share(/*case_sensitive=*/true);
    auto r = resolve(root, "readme.txt");
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->exists);
    EXPECT_EQ(r->rel, "readme.txt");
    auto exact = resolve(root, "ReadMe.TXT");
    ASSERT_TRUE(exact.ok());
    EXPECT_TRUE(exact->exists);
    share_dir("Dir");
    EXPECT_EQ(resolve(root, "dir\\x").status(), NtStatus::ObjectPathNotFound);
}

TEST_F(VfsResolve, SeveralCaseVariantsPickTheSmallestDeterministically) {
    share_file("aBc");
    share_file("Abc");
    auto root = open_share();
    auto r = resolve(root, "ABC");
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->exists);
    EXPECT_EQ(r->rel, "Abc");  // "Abc" < "aBc" byte-wise
    auto exact = resolve(root, "aBc");
    ASSERT_TRUE(exact.ok());
    EXPECT_EQ(exact->rel, "aBc");  // an exact match is never replaced
}

TEST_F(VfsResolve, SymlinksInsideFollowedOutsideRefused) {
    share_dir("sub");
    share_file("sub/target.txt", "inside");
    share_symlink("in_link", "sub/target.txt");
    share_symlink("sub/up_link", "../sub/target.txt");  // ".." that stays inside
    share_symlink("dir_link", "sub");
    share_symlink("out_rel", "../outside/secret");
    share_symlink("out_abs", outside_ + "/secret");
    share_symlink("out_dir", "../outside");
    share_symlink("etc", "/etc");
    auto root = open_share();

    for (const char* p : {"in_link", "sub\\up_link", "dir_link\\target.txt", "IN_LINK"}) {
        auto r = resolve(root, p);
        ASSERT_TRUE(r.ok()) << p << ": " << status_name(r.status());
        EXPECT_TRUE(r->exists) << p;
    }
    for (const char* p : {"out_rel", "out_abs", "out_dir\\secret", "etc\\passwd", "ETC\\passwd"}) {
        EXPECT_EQ(resolve(root, p).status(), NtStatus::AccessDenied) << p;
    }
}

// ---- open_beneath and the name-changing calls ----

using VfsOpen = VfsTest;

TEST_F(VfsOpen, SymlinkPointingOutsideIsRefused) {
    share_symlink("out_rel", "../outside/secret");
    share_symlink("out_dir", "../outside");
    auto root = open_share();
    EXPECT_EQ(open_beneath(root, "out_rel", O_RDONLY).status(), NtStatus::AccessDenied);
    EXPECT_EQ(open_beneath(root, "out_dir/secret", O_RDONLY).status(), NtStatus::AccessDenied);
    EXPECT_EQ(open_beneath(root, "out_dir", O_RDONLY | O_DIRECTORY).status(),
              NtStatus::AccessDenied);
    // Creating through an escaping link must not create anything outside either.
    share_symlink("out_new", "../outside/created");
    EXPECT_EQ(open_beneath(root, "out_new", O_WRONLY | O_CREAT, 0644).status(),
              NtStatus::AccessDenied);
    EXPECT_FALSE(exists(outside_ + "/created"));
}

TEST_F(VfsOpen, AbsoluteSymlinkIsRefused) {
    share_symlink("abs", outside_ + "/secret");
    share_symlink("abs_in", share_ + "/file");  // absolute even though it names the share
    share_file("file");
    auto root = open_share();
    EXPECT_EQ(open_beneath(root, "abs", O_RDONLY).status(), NtStatus::AccessDenied);
    EXPECT_EQ(open_beneath(root, "abs_in", O_RDONLY).status(), NtStatus::AccessDenied);
}

TEST_F(VfsOpen, DotDotEscapesAreRefused) {
    share_dir("sub");
    auto root = open_share();
    EXPECT_EQ(open_beneath(root, "../outside/secret", O_RDONLY).status(), NtStatus::AccessDenied);
    EXPECT_EQ(open_beneath(root, "sub/../../outside/secret", O_RDONLY).status(),
              NtStatus::AccessDenied);
    EXPECT_EQ(open_beneath(root, outside_ + "/secret", O_RDONLY).status(), NtStatus::AccessDenied);
    EXPECT_EQ(open_beneath(root, "..", O_RDONLY | O_DIRECTORY).status(), NtStatus::AccessDenied);
    EXPECT_EQ(mkdir_beneath(root, "../outside/newdir").status(), NtStatus::AccessDenied);
    EXPECT_FALSE(exists(outside_ + "/newdir"));
    EXPECT_EQ(unlink_beneath(root, "../outside/secret").status(), NtStatus::AccessDenied);
    EXPECT_TRUE(exists(outside_ + "/secret"));
    EXPECT_EQ(rename_beneath(root, "../outside/secret", "stolen", false).status(),
              NtStatus::AccessDenied);
    share_file("mine");
    EXPECT_EQ(rename_beneath(root, "mine", "../outside/mine", false).status(),
              NtStatus::AccessDenied);
    EXPECT_TRUE(exists(in_share("mine")));
    // ".." that stays inside is fine for openat2.
    auto ok = open_beneath(root, "sub/..", O_RDONLY | O_DIRECTORY);
    EXPECT_TRUE(ok.ok());
}

TEST_F(VfsOpen, SymlinkInsideShareIsFollowed) {
    share_dir("sub");
    share_file("sub/target.txt", "inside data");
    share_symlink("link", "sub/target.txt");
    share_symlink("sub/rel_up", "../sub/target.txt");
    share_symlink("dirlink", "sub");
    auto root = open_share();
    for (const char* p : {"link", "sub/rel_up", "dirlink/target.txt"}) {
        auto fd = open_beneath(root, p, O_RDONLY);
        ASSERT_TRUE(fd.ok()) << p << ": " << status_name(fd.status());
        EXPECT_EQ(read_all(fd->get()), "inside data") << p;
    }
}

TEST_F(VfsOpen, ErrorsDistinguishNameAndPath) {
    share_dir("dir");
    share_file("dir/file");
    auto root = open_share();
    EXPECT_EQ(open_beneath(root, "dir/missing", O_RDONLY).status(), NtStatus::ObjectNameNotFound);
    EXPECT_EQ(open_beneath(root, "nodir/missing", O_RDONLY).status(), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(open_beneath(root, "nodir/x", O_WRONLY | O_CREAT, 0644).status(),
              NtStatus::ObjectPathNotFound);
    EXPECT_EQ(open_beneath(root, "dir/file/x", O_RDONLY).status(), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(open_beneath(root, "dir/file", O_RDONLY | O_DIRECTORY).status(),
              NtStatus::NotADirectory);
    EXPECT_EQ(open_beneath(root, "dir", O_RDWR).status(), NtStatus::FileIsADirectory);
    EXPECT_EQ(open_beneath(root, "dir/file", O_RDWR | O_CREAT | O_EXCL, 0644).status(),
              NtStatus::ObjectNameCollision);
    auto created = open_beneath(root, "dir/new", O_RDWR | O_CREAT | O_EXCL, 0600);
    ASSERT_TRUE(created.ok());
    EXPECT_EQ(fcntl(created->get(), F_GETFL) & O_NONBLOCK, 0);  // cleared again
    EXPECT_NE(fcntl(created->get(), F_GETFD) & FD_CLOEXEC, 0);
    auto rootfd = open_beneath(root, "", O_RDONLY | O_DIRECTORY);
    EXPECT_TRUE(rootfd.ok());
}

TEST_F(VfsOpen, FifoIsRefusedWithoutBlocking) {
    ASSERT_EQ(::mkfifo(in_share("fifo").c_str(), 0644), 0);
    auto root = open_share();
    EXPECT_EQ(open_beneath(root, "fifo", O_RDONLY).status(), NtStatus::AccessDenied);
    EXPECT_TRUE(open_beneath(root, "fifo", O_PATH).ok());  // metadata access is fine
}

TEST_F(VfsOpen, MkdirBeneath) {
    auto root = open_share();
    ASSERT_TRUE(mkdir_beneath(root, "newdir", 0755).ok());
    struct stat st {};
    ASSERT_EQ(::stat(in_share("newdir").c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_TRUE(mkdir_beneath(root, "newdir/inner").ok());
    EXPECT_EQ(mkdir_beneath(root, "newdir").status(), NtStatus::ObjectNameCollision);
    EXPECT_EQ(mkdir_beneath(root, "").status(), NtStatus::ObjectNameCollision);
    EXPECT_EQ(mkdir_beneath(root, "missing/x").status(), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(mkdir_beneath(root, "newdir/..").status(), NtStatus::ObjectNameInvalid);
}

TEST_F(VfsOpen, UnlinkBeneath) {
    share_file("f");
    share_dir("empty");
    share_dir("full");
    share_file("full/child");
    share_symlink("link_to_full", "full");
    auto root = open_share();
    EXPECT_EQ(unlink_beneath(root, "full").status(), NtStatus::DirectoryNotEmpty);
    EXPECT_TRUE(exists(in_share("full/child")));
    EXPECT_TRUE(unlink_beneath(root, "f").ok());
    EXPECT_FALSE(exists(in_share("f")));
    EXPECT_TRUE(unlink_beneath(root, "empty").ok());
    EXPECT_FALSE(exists(in_share("empty")));
    EXPECT_TRUE(unlink_beneath(root, "link_to_full").ok());  // removes the link only
    EXPECT_FALSE(exists(in_share("link_to_full")));
    EXPECT_TRUE(exists(in_share("full/child")));
    EXPECT_EQ(unlink_beneath(root, "f").status(), NtStatus::ObjectNameNotFound);
    EXPECT_EQ(unlink_beneath(root, "nodir/f").status(), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(unlink_beneath(root, "").status(), NtStatus::AccessDenied);
}

TEST_F(VfsOpen, RenameWithoutReplace) {
    share_file("a", "AAA");
    share_file("b", "BBB");
    share_dir("d");
    auto root = open_share();
    EXPECT_EQ(rename_beneath(root, "a", "b", false).status(), NtStatus::ObjectNameCollision);
    {
        auto fa = open_beneath(root, "a", O_RDONLY);
        auto fb = open_beneath(root, "b", O_RDONLY);
        ASSERT_TRUE(fa.ok() && fb.ok());
        EXPECT_EQ(read_all(fa->get()), "AAA");
        EXPECT_EQ(read_all(fb->get()), "BBB");
    }
    EXPECT_EQ(rename_beneath(root, "a", "d", false).status(), NtStatus::ObjectNameCollision);
    ASSERT_TRUE(rename_beneath(root, "a", "d/moved", false).ok());
    EXPECT_FALSE(exists(in_share("a")));
    EXPECT_TRUE(exists(in_share("d/moved")));
    EXPECT_EQ(rename_beneath(root, "a", "c", false).status(), NtStatus::ObjectNameNotFound);
    EXPECT_EQ(rename_beneath(root, "b", "nodir/c", false).status(), NtStatus::ObjectPathNotFound);
    EXPECT_EQ(rename_beneath(root, "", "x", false).status(), NtStatus::AccessDenied);
}

TEST_F(VfsOpen, RenameWithReplace) {
    share_file("a", "AAA");
    share_file("b", "BBB");
    share_dir("d");
    share_dir("d2");
    share_file("victim", "V");
    auto root = open_share();
    ASSERT_TRUE(rename_beneath(root, "a", "b", true).ok());
    EXPECT_FALSE(exists(in_share("a")));
    auto fb = open_beneath(root, "b", O_RDONLY);
    ASSERT_TRUE(fb.ok());
    EXPECT_EQ(read_all(fb->get()), "AAA");
    // A directory is never replaced (MS-FSA 2.1.5.15.12).
    EXPECT_EQ(rename_beneath(root, "b", "d", true).status(), NtStatus::AccessDenied);
    EXPECT_EQ(rename_beneath(root, "d2", "d", true).status(), NtStatus::AccessDenied);
    EXPECT_TRUE(exists(in_share("d2")));
    // A directory may replace a file.
    ASSERT_TRUE(rename_beneath(root, "d2", "victim", true).ok());
    struct stat st {};
    ASSERT_EQ(::stat(in_share("victim").c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    // Replace with a non-existing target is a plain rename.
    EXPECT_TRUE(rename_beneath(root, "b", "c", true).ok());
}

}  // namespace
}  // namespace daxsmbd::server::vfs
