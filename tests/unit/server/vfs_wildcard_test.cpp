#include <gtest/gtest.h>

#include <string>

#include "server/vfs/wildcard.h"

namespace daxsmbd::server::vfs {
namespace {

bool m(std::string_view pattern, std::string_view name, bool ci = true) {
    return wildcard_match(pattern, name, ci);
}

// MS-FSA 2.1.4.4 part 1: special cases.
TEST(VfsWildcard, SpecialCases) {
    EXPECT_TRUE(m("", ""));
    EXPECT_FALSE(m("", "a"));
    EXPECT_FALSE(m("a", ""));
    EXPECT_FALSE(m("*", ""));
    for (const char* name : {"a", "abc", "no_dot_at_all", "a.b.c", ".", "..", ".hidden"}) {
        EXPECT_TRUE(m("*", name)) << name;
        EXPECT_TRUE(m("*.*", name)) << name;  // also names without a dot
    }
}

TEST(VfsWildcard, StarAndQuestionMark) {
    EXPECT_TRUE(m("*.txt", "a.txt"));
    EXPECT_TRUE(m("*.txt", ".txt"));
    EXPECT_TRUE(m("*.txt", "a.b.txt"));
    EXPECT_FALSE(m("*.txt", "a.txt.bak"));
    EXPECT_FALSE(m("*.txt", "txt"));
    EXPECT_TRUE(m("*.txt", "A.TXT"));
    EXPECT_FALSE(m("*.txt", "A.TXT", /*ci=*/false));
    EXPECT_TRUE(m("a?c", "abc"));
    EXPECT_TRUE(m("a?c", "a.c"));
    EXPECT_FALSE(m("a?c", "ac"));
    EXPECT_FALSE(m("a?c", "abbc"));
    EXPECT_TRUE(m("??", "\xc3\xa4\xc3\xb6"));  // '?' is one character, not one byte
    EXPECT_FALSE(m("???", "\xc3\xa4\xc3\xb6"));
    EXPECT_TRUE(m("a*b*c", "aXXbYYc"));
    EXPECT_FALSE(m("a*b*c", "aXXbYY"));
    EXPECT_TRUE(m("*a", "banana"));
    EXPECT_TRUE(m("ab*", "ab"));
    EXPECT_TRUE(m("exact.name", "EXACT.Name"));
    EXPECT_FALSE(m("exact.name", "EXACT.Name", false));
    EXPECT_TRUE(m("\xc3\x84*", "\xc3\xa4rger"));  // Ä* matches ärger case-insensitively
}

TEST(VfsWildcard, DosStar) {
    // '<' runs up to (and may swallow) the final dot.
    EXPECT_TRUE(m("<.txt", "a.txt"));
    EXPECT_TRUE(m("<.txt", "a.b.txt"));
    EXPECT_TRUE(m("<.txt", "a.txt.txt"));
    EXPECT_FALSE(m("<.txt", "atxt"));
    EXPECT_FALSE(m("<.txt", "a.txt.bak"));
    EXPECT_TRUE(m("<", "abc"));   // no dot: everything
    EXPECT_FALSE(m("<", "a.b"));  // cannot pass the final dot
    EXPECT_TRUE(m("<b", "a.b"));  // ...but may swallow it
    EXPECT_TRUE(m("<.<", "a.b"));
    EXPECT_TRUE(m("<<", "a.b"));  // the second '<' starts after the final dot
    EXPECT_TRUE(m("a<", "a"));
}

TEST(VfsWildcard, DosQm) {
    EXPECT_TRUE(m("foo>", "foo"));  // matches nothing at the end of the name
    EXPECT_TRUE(m("foo>", "foox"));
    EXPECT_FALSE(m("foo>", "fooxy"));
    EXPECT_TRUE(m("foo>", "foo."));  // and consumes a final dot that ends the name
    EXPECT_FALSE(m("foo>", "foo.x"));
    EXPECT_TRUE(m("foo>>>.txt", "foo.txt"));  // zero-width at the dot
    EXPECT_TRUE(m("foo>>>.txt", "fooa.txt"));
    EXPECT_TRUE(m("foo>>>.txt", "fooabc.txt"));
    EXPECT_FALSE(m("foo>>>.txt", "fooabcd.txt"));
    EXPECT_TRUE(m(">>>>>>>>.>>>", "readme.txt"));  // the classic DOS "????????.???"
    EXPECT_TRUE(m(">>>>>>>>.>>>", "a.b"));
    EXPECT_FALSE(m(">>>>>>>>.>>>", "toolongname.txt"));
}

TEST(VfsWildcard, DosDot) {
    EXPECT_TRUE(m("foo\"", "foo"));   // nothing at the end of the name
    EXPECT_TRUE(m("foo\"", "foo."));  // or a dot
    EXPECT_FALSE(m("foo\"", "foox"));
    EXPECT_TRUE(m("foo\"txt", "foo.txt"));
    EXPECT_FALSE(m("foo\"txt", "fooxtxt"));
    EXPECT_TRUE(m("\"", "."));
    EXPECT_FALSE(m("\"", "a"));
    EXPECT_TRUE(m("<\"*", "abc"));  // DOS "*.*" translated: names without a dot too
    EXPECT_TRUE(m("<\"*", "a.b.c"));
}

TEST(VfsWildcard, HostilePatternsStayCheap) {
    std::string stars(20000, '*');
    EXPECT_TRUE(m(stars + "a", std::string(250, 'a')));
    std::string alt;
    for (int i = 0; i < 5000; ++i)
        alt += "*a";
    EXPECT_FALSE(m(alt + "b", std::string(250, 'a')));  // more literals than characters
    std::string qm(30000, '>');
    EXPECT_TRUE(m(qm, std::string(250, 'x')));
}

TEST(VfsWildcard, HasWildcards) {
    EXPECT_FALSE(has_wildcards("plain.txt"));
    for (const char* p : {"*", "a?", "<", ">", "\""})
        EXPECT_TRUE(has_wildcards(p)) << p;
}

}  // namespace
}  // namespace daxsmbd::server::vfs
