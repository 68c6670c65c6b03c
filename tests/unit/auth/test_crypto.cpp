#include <gtest/gtest.h>

#include "auth/crypto.h"
#include "auth/userdb.h"
#include "tests/unit/auth/hex_util.h"

namespace daxsmbd::auth {
namespace {

using test::hex;
using test::unhex;

Bytes str(std::string_view s) {
    return protocol::as_bytes(s);
}

// RFC 1320 A.5 test suite.
TEST(Md4, Rfc1320Vectors) {
    EXPECT_EQ(hex(md4({str("")})), "31d6cfe0d16ae931b73c59d7e0c089c0");
    EXPECT_EQ(hex(md4({str("a")})), "bde52cb31de33e46245e05fbdbd6fb24");
    EXPECT_EQ(hex(md4({str("abc")})), "a448017aaf21d8525fc10ae87aa6729d");
    EXPECT_EQ(hex(md4({str("message digest")})), "d9130a8164549fe818874806e1c7014b");
    EXPECT_EQ(hex(md4({str("abcdefghijklmnopqrstuvwxyz")})), "d79e1c308aa5bbcdeea8ed63df412da9");
    EXPECT_EQ(hex(md4({str("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")})),
              "043f8582f241db351ce627e153e7f0e4");
    EXPECT_EQ(hex(md4({str("1234567890123456789012345678901234567890"),
                       str("1234567890123456789012345678901234567890")})),
              "e33b4ddc9c38f2199c3e7b164fcc0536");
}

// MS-NLMP 4.2.2.1.2: NTOWFv1("Password").
TEST(Md4, NtHashOfPassword) {
    EXPECT_EQ(hex(nt_hash_of_password("Password")), "a4f49c406510bdcab6824ee7c30fd852");
}

// RFC 6229 key 0x0102030405, keystream offsets 0..31; plus the classic "Key"/"Plaintext".
TEST(Rc4, Rfc6229Keystream) {
    auto key = unhex("0102030405");
    Rc4 rc4(test::view(key));
    ByteVector zeros(32);
    rc4.process(zeros);
    EXPECT_EQ(hex(zeros), "b2396305f03dc027ccc3524a0a1118a86982944f18fc82d589c403a47a0d0919");
}

TEST(Rc4, StateCarriesAcrossCalls) {
    Rc4 a(str("Key"));
    std::string first = hex(a.process_copy(str("Plain")));
    std::string second = hex(a.process_copy(str("text")));
    EXPECT_EQ(first + second, "bbf316e8d940af0ad3");
    Rc4 b(str("Wiki"));
    EXPECT_EQ(hex(b.process_copy(str("pedia"))), "1021bf0420");
}

// RFC 2202 test case 1 and RFC 4231 test case 1.
TEST(Hmac, Rfc2202And4231) {
    ByteVector key(16, std::byte{0x0b});
    EXPECT_EQ(hex(hmac_md5(test::view(key), {str("Hi "), str("There")})),
              "9294727a3638bb1c13f48ef8158bfc9d");
    ByteVector key20(20, std::byte{0x0b});
    EXPECT_EQ(hex(hmac_sha256(test::view(key20), {str("Hi There")})),
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(Crypto, ConstantTimeEqual) {
    auto a = unhex("0102"), b = unhex("0102"), c = unhex("0103"), d = unhex("01");
    EXPECT_TRUE(constant_time_equal(test::view(a), test::view(b)));
    EXPECT_FALSE(constant_time_equal(test::view(a), test::view(c)));
    EXPECT_FALSE(constant_time_equal(test::view(a), test::view(d)));
}

TEST(Crypto, RandomBytesDiffer) {
    std::array<std::byte, 16> a{}, b{};
    random_bytes(a);
    random_bytes(b);
    EXPECT_NE(a, b);
}

}  // namespace
}  // namespace daxsmbd::auth
