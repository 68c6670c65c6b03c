#include <gtest/gtest.h>

#include "server/vfs/case_fold.h"

namespace daxsmbd::server::vfs {
namespace {

TEST(VfsCaseFold, UpcaseCoversTheDocumentedScripts) {
    EXPECT_EQ(upcase(U'a'), U'A');
    EXPECT_EQ(upcase(U'Z'), U'Z');
    EXPECT_EQ(upcase(U'1'), U'1');
    EXPECT_EQ(upcase(U'ä'), U'Ä');
    EXPECT_EQ(upcase(U'ÿ'), U'Ÿ');  // U+00FF -> U+0178
    EXPECT_EQ(upcase(U'÷'), U'÷');  // U+00F7 is not a letter
    EXPECT_EQ(upcase(U'ā'), U'Ā');  // Latin Extended-A, even = capital
    EXPECT_EQ(upcase(U'ł'), U'Ł');  // U+0142 -> U+0141, odd = capital block
    EXPECT_EQ(upcase(U'ž'), U'Ž');  // U+017E -> U+017D
    EXPECT_EQ(upcase(U'ı'), U'ı');  // dotless i deliberately unmapped
    EXPECT_EQ(upcase(U'ſ'), U'ſ');  // long s deliberately unmapped
    EXPECT_EQ(upcase(U'α'), U'Α');
    EXPECT_EQ(upcase(U'ς'), U'Σ');  // final sigma
    EXPECT_EQ(upcase(U'ό'), U'Ό');  // U+03CC -> U+038C
    EXPECT_EQ(upcase(U'ώ'), U'Ώ');  // U+03CE -> U+038F
    EXPECT_EQ(upcase(U'ж'), U'Ж');
    EXPECT_EQ(upcase(U'ё'), U'Ё');    // U+0451 -> U+0401
    EXPECT_EQ(upcase(U'ә'), U'Ә');    // U+04D9 -> U+04D8
    EXPECT_EQ(upcase(U'ա'), U'Ա');    // Armenian
    EXPECT_EQ(upcase(U'ẁ'), U'Ẁ');    // Latin Extended Additional
    EXPECT_EQ(upcase(U'ｚ'), U'Ｚ');  // fullwidth
    EXPECT_EQ(upcase(U'中'), U'中');
}

TEST(VfsCaseFold, EqualIgnoreCase) {
    EXPECT_TRUE(equal_ignore_case("ReadMe.TXT", "readme.txt"));
    EXPECT_TRUE(equal_ignore_case("ÄÖÜ", "äöü"));
    EXPECT_TRUE(equal_ignore_case("ΣΟΦΊΑ", "σοφία"));
    EXPECT_TRUE(equal_ignore_case("ПРИВЕТ", "привет"));
    EXPECT_FALSE(equal_ignore_case("readme.txt", "readme.txt2"));
    EXPECT_FALSE(equal_ignore_case("a", ""));
    EXPECT_FALSE(equal_ignore_case("i", "ı"));
    // Invalid UTF-8 compares exactly and never equals valid text.
    EXPECT_TRUE(equal_ignore_case("a\xff", "A\xff"));
    EXPECT_FALSE(equal_ignore_case("\xff", "\xfe"));
}

TEST(VfsCaseFold, Utf8Decoding) {
    EXPECT_TRUE(is_valid_utf8("plain"));
    EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xe4\xb8\xad \xf0\x9f\x98\x80"));
    EXPECT_FALSE(is_valid_utf8("\xff"));
    EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
    EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate U+D800
    EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // > U+10FFFF
    EXPECT_FALSE(is_valid_utf8("\xe4\xb8"));          // truncated
    EXPECT_EQ(utf16_length("abc"), 3u);
    EXPECT_EQ(utf16_length("\xc3\xa9"), 1u);
    EXPECT_EQ(utf16_length("\xf0\x9f\x98\x80"), 2u);  // surrogate pair on the wire
    size_t i = 0;
    EXPECT_EQ(next_code_point("\xe4\xb8\xad", i), U'中');
    EXPECT_EQ(i, 3u);
}

TEST(VfsCaseFold, AsciiUpper) {
    EXPECT_EQ(ascii_upper("myEa.x\xc3\xa9"), "MYEA.X\xc3\xa9");
}

}  // namespace
}  // namespace daxsmbd::server::vfs
