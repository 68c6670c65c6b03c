#include <gtest/gtest.h>

#include <cstring>

#include "auth/kdf.h"
#include "auth/signing.h"
#include "tests/unit/auth/hex_util.h"

namespace daxsmbd::auth {
namespace {

using test::hex;
using test::unhex;
using test::view;

Signature sign1(SigningAlgorithm alg, const ByteVector& key, const ByteVector& msg,
                uint64_t mid = 0, bool server = false, bool cancel = false) {
    Bytes f[1] = {view(msg)};
    return compute_signature(alg, view(key), f, mid, server, cancel);
}

// RFC 4493 section 4 examples.
TEST(Signing, AesCmacRfc4493) {
    auto key = unhex("2b7e151628aed2a6abf7158809cf4f3c");
    auto m64 = unhex(
        "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
        "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710");
    auto first = [&](size_t n) { return ByteVector(m64.begin(), m64.begin() + n); };
    EXPECT_EQ(hex(sign1(SigningAlgorithm::AesCmac, key, {})), "bb1d6929e95937287fa37d129b756746");
    EXPECT_EQ(hex(sign1(SigningAlgorithm::AesCmac, key, first(16))),
              "070a16b46b4d4144f79bdd9dd04a287c");
    EXPECT_EQ(hex(sign1(SigningAlgorithm::AesCmac, key, first(40))),
              "dfa66747de9ae63030ca32611497c827");
    EXPECT_EQ(hex(sign1(SigningAlgorithm::AesCmac, key, m64)), "51f0bebf7e3b9d92fc49741779363cfe");
}

// The final SESSION_SETUP response of the 3.1.1 example in Microsoft's "anatomy of signing and
// cryptographic keys" blog: signed with AES-CMAC under SigningKey 73FE7A9A...
TEST(Signing, MicrosoftSessionSetupResponseSignature) {
    auto key = unhex("73FE7A9A77BEF0BDE49C650D8CCB5F76");
    auto msg = unhex(
        "FE534D4240000100000000000100800009000000000000000300000000000000FFFE000000000000"
        "1900000000100000EBE146DA120BA25FC3376A49DFE31BC10900000048001D00A11B3019A0030A01"
        "00A3120410010000003B453CDC3524164200000000");
    ByteVector wire_sig(msg.begin() + 48, msg.begin() + 64);
    std::memset(msg.data() + 48, 0, 16);
    EXPECT_EQ(hex(sign1(SigningAlgorithm::AesCmac, key, msg)), "ebe146da120ba25fc3376a49dfe31bc1");

    // Same through a reusable Signer, with the message split as header | body.
    auto s = Signer::create(SigningAlgorithm::AesCmac, view(key));
    ASSERT_TRUE(s.ok());
    Bytes frags[2] = {view(msg).first(64), view(msg).subspan(64)};
    for (int i = 0; i < 3; ++i)  // the context is reused: every run gives the same MAC
        EXPECT_TRUE(s->verify(frags, 3, true, false, view(wire_sig)));
    msg[70] ^= std::byte{1};
    EXPECT_FALSE(s->verify(frags, 3, true, false, view(wire_sig)));
}

// HMAC-SHA256 truncated to 16 bytes (2.x); expected value from python3 hmac/hashlib.
TEST(Signing, HmacSha256Truncated) {
    auto key = unhex("000102030405060708090a0b0c0d0e0f");
    ByteVector msg;
    for (int i = 0; i < 64; ++i)
        msg.push_back(std::byte(i));
    for (char c : std::string("hello smb"))
        msg.push_back(std::byte(c));
    EXPECT_EQ(hex(sign1(SigningAlgorithm::HmacSha256, key, msg)),
              "54c5fd02b9b2b0fced4e31c7be8ca3f3");
    auto s = Signer::create(SigningAlgorithm::HmacSha256, view(key));
    ASSERT_TRUE(s.ok());
    Bytes frags[3] = {view(msg).first(10), {}, view(msg).subspan(10)};
    EXPECT_EQ(hex(s->sign(frags, 0, false, false)), "54c5fd02b9b2b0fced4e31c7be8ca3f3");
    EXPECT_EQ(hex(s->sign(frags, 0, false, false)), "54c5fd02b9b2b0fced4e31c7be8ca3f3");
}

// AES-GMAC (MS-SMB2 3.1.4.1): nonce = MessageId LE64 || LE32(server bit | cancel bit << 1).
// Expected values from python3 cryptography: AESGCM(key).encrypt(nonce, b"", msg).
TEST(Signing, AesGmacNonce) {
    auto key = unhex("000102030405060708090a0b0c0d0e0f");
    ByteVector msg;
    for (int i = 0; i < 64; ++i)
        msg.push_back(std::byte(i));
    for (char c : std::string("hello smb"))
        msg.push_back(std::byte(c));
    EXPECT_EQ(hex(sign1(SigningAlgorithm::AesGmac, key, msg, 0x1122334455667788ull, true, false)),
              "77f39991b2947c5e8b461ed9a187f0be");
    EXPECT_EQ(hex(sign1(SigningAlgorithm::AesGmac, key, msg, 5, false, true)),
              "0c7e0545b7bd28d2ba58959869c16f81");
    auto s = Signer::create(SigningAlgorithm::AesGmac, view(key));
    ASSERT_TRUE(s.ok());
    Bytes frags[2] = {view(msg).first(33), view(msg).subspan(33)};
    auto sig = s->sign(frags, 5, false, true);
    EXPECT_EQ(hex(sig), "0c7e0545b7bd28d2ba58959869c16f81");
    EXPECT_TRUE(s->verify(frags, 5, false, true, bytes_of(sig)));
    EXPECT_FALSE(s->verify(frags, 6, false, true, bytes_of(sig)));  // other MessageId
    EXPECT_FALSE(s->verify(frags, 5, true, true, bytes_of(sig)));   // other direction
}

TEST(Signing, BadKeyLengthRefused) {
    auto k8 = unhex("0001020304050607");
    EXPECT_EQ(Signer::create(SigningAlgorithm::AesCmac, view(k8)).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(Signer::create(SigningAlgorithm::AesGmac, view(k8)).status(),
              NtStatus::InvalidParameter);
    EXPECT_TRUE(Signer::create(SigningAlgorithm::HmacSha256, view(k8)).ok());
}

struct TransformVector {
    uint16_t cipher;
    const char* key;
    const char* plain;
    const char* transformed;  // TRANSFORM_HEADER (52) + ciphertext
};

// "SMB 3.1.1 Encryption in Windows 10" (Microsoft Open Specifications blog), appendix A:
// the encrypted WRITE request of the AES-128-GCM and AES-128-CCM examples.
const TransformVector kVectors[] = {
    {cipher_id::kAes128Gcm, "A2F5E80E5D59103034F32E52F698E5EC",
     "FE534D4240000100000000000900010008000000000000000500000000000000FFFE000001000000"
     "25000000001000000000000000000000000000000000000031007000170000000000000000000000"
     "0600000004000000010000000400000000000000000000007000000000000000536D623320656E63"
     "72797074696F6E2074657374696E67",
     "FD534D42BD73D97D2BC9001BCAFAC0FDFF5FEEBCC7D6822D269CAF48904C664C0000000087000000"
     "0000010025000000001000006ECDD2A7AFC7B47763057A041B8FD4DAFFE990B70C9E09D36C084E02"
     "D14EF247F8BDE38ACF6256F8B1D3B56F77FBDEB312FEA5E92CBCC1ED8FB2EBBFAA75E49A4A394BB4"
     "4576545567C24D4C014D47C9FBDFDAFD2C4F9B72F8D256452620A299F48E29E53D6B61D1C13A19E9"
     "1AF013F00D17E3ABC2FC3D36C8C1B6B93973253852DBD442E46EE8"},
    {cipher_id::kAes128Ccm, "DFAAA31AAE40A2485D47AC4DF09FDA1D",
     "FE534D4240000100000000000900010008000000000000000500000000000000FFFE000001000000"
     "21000000001000000000000000000000000000000000000031007000170000000000000000000000"
     "0500000004000000010000000400000000000000000000007000000000000000536D623320656E63"
     "72797074696F6E2074657374696E67",
     "FD534D42E89551D666DAB8993488F5A97103116C9F6F1EAAD7E9F24AACD38F000000000087000000"
     "00000100210000000010000056A74778199A9D2B6E9C3A376FD88D27680694FED253A313BEB07381"
     "AE8689F973ACDB8D716E4477803BCE53A92E1B81FA3E965AD9AF2C89C08CE66A344664453B8FC881"
     "18EDC9814CF58E92AA465E6EFB09958A9FDAD96FBD55B36A710C30D5E7C64AD7B9449F9F17EDD024"
     "FE8BA79154F340A82740D1D5180C69B0A2DE6A4BA893BD55D3210E"},
};

TEST(Cipher, MicrosoftTransformVectors) {
    for (const auto& v : kVectors) {
        SCOPED_TRACE(v.cipher);
        auto key = unhex(v.key);
        auto plain = unhex(v.plain);
        auto transformed = unhex(v.transformed);
        Bytes t = view(transformed);
        Bytes nonce = t.subspan(20, 16);
        Bytes aad = t.subspan(20, 32);
        auto c = Cipher::create(v.cipher, view(key));
        ASSERT_TRUE(c.ok());
        ByteVector data = plain;
        std::array<std::byte, 16> tag{};
        ASSERT_TRUE(c->encrypt(nonce, aad, MutableBytes(data), tag).ok());
        EXPECT_EQ(hex(tag), hex(t.subspan(4, 16)));
        EXPECT_EQ(hex(data), hex(t.subspan(52)));
        // And back, with the same object (direction switches per call).
        ASSERT_TRUE(c->decrypt(nonce, aad, MutableBytes(data), t.subspan(4, 16)).ok());
        EXPECT_EQ(hex(data), hex(plain));
        // Gathered: header+body in one buffer, payload in another.
        ByteVector a(plain.begin(), plain.begin() + 112), b(plain.begin() + 112, plain.end());
        MutableBytes frags[2] = {MutableBytes(a), MutableBytes(b)};
        std::array<std::byte, 16> tag2{};
        ASSERT_TRUE(c->encrypt(nonce, aad, frags, tag2).ok());
        EXPECT_EQ(hex(tag2), hex(t.subspan(4, 16)));
        EXPECT_EQ(hex(a) + hex(b), hex(t.subspan(52)));
        ASSERT_TRUE(c->decrypt(nonce, aad, frags, t.subspan(4, 16)).ok());
        EXPECT_EQ(hex(a) + hex(b), hex(plain));
    }
}

TEST(Cipher, RoundTripAllCiphersAndTagFailure) {
    for (uint16_t id : {cipher_id::kAes128Ccm, cipher_id::kAes128Gcm, cipher_id::kAes256Ccm,
                        cipher_id::kAes256Gcm}) {
        SCOPED_TRACE(id);
        ByteVector key(is_aes256(id) ? 32 : 16);
        random_bytes(key);
        auto c = Cipher::create(id, view(key));
        ASSERT_TRUE(c.ok());
        EXPECT_EQ(c->nonce_size(),
                  (id == cipher_id::kAes128Gcm || id == cipher_id::kAes256Gcm) ? 12u : 11u);
        ByteVector aad(32);
        random_bytes(aad);
        ByteVector nonce(16);
        random_bytes(nonce);
        ByteVector plain(5000);
        random_bytes(plain);
        ByteVector data = plain;
        std::array<std::byte, 16> tag{};
        ASSERT_TRUE(c->encrypt(view(nonce), view(aad), MutableBytes(data), tag).ok());
        EXPECT_NE(data, plain);
        ByteVector copy = data;
        ASSERT_TRUE(c->decrypt(view(nonce), view(aad), MutableBytes(copy), bytes_of(tag)).ok());
        EXPECT_EQ(copy, plain);
        // Tampered tag, ciphertext and AAD all fail.
        auto bad_tag = tag;
        bad_tag[0] ^= std::byte{1};
        copy = data;
        EXPECT_EQ(
            c->decrypt(view(nonce), view(aad), MutableBytes(copy), bytes_of(bad_tag)).status(),
            NtStatus::AccessDenied);
        copy = data;
        copy[4000] ^= std::byte{0x80};
        EXPECT_EQ(c->decrypt(view(nonce), view(aad), MutableBytes(copy), bytes_of(tag)).status(),
                  NtStatus::AccessDenied);
        ByteVector aad2 = aad;
        aad2[31] ^= std::byte{1};
        copy = data;
        EXPECT_EQ(c->decrypt(view(nonce), view(aad2), MutableBytes(copy), bytes_of(tag)).status(),
                  NtStatus::AccessDenied);
        // The object still works after failures.
        copy = data;
        ASSERT_TRUE(c->decrypt(view(nonce), view(aad), MutableBytes(copy), bytes_of(tag)).ok());
        EXPECT_EQ(copy, plain);
    }
}

TEST(Cipher, BadParametersRefused) {
    ByteVector k16(16), k32(32);
    EXPECT_EQ(Cipher::create(cipher_id::kAes256Gcm, view(k16)).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(Cipher::create(cipher_id::kAes128Ccm, view(k32)).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(Cipher::create(7, view(k16)).status(), NtStatus::InvalidParameter);
    auto c = Cipher::create(cipher_id::kAes128Gcm, view(k16));
    ASSERT_TRUE(c.ok());
    ByteVector data(10), nonce(8), aad(32);
    std::array<std::byte, 16> tag{};
    EXPECT_EQ(c->encrypt(view(nonce), view(aad), MutableBytes(data), tag).status(),
              NtStatus::InvalidParameter);  // nonce too short
}

}  // namespace
}  // namespace daxsmbd::auth
