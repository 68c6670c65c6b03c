// auth::SessionEncryption: TRANSFORM sealing/opening with every cipher, the nonce rule and the
// receive checks of MS-SMB2 3.3.5.2.1.1.
#include "auth/encryption.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "auth/kdf.h"
#include "protocol/header.h"
#include "tests/unit/auth/hex_util.h"

namespace daxsmbd::auth {
namespace {

using protocol::TransformHeader;
using test::hex;

ByteVector key_of(uint16_t cipher, uint8_t seed) {
    ByteVector k(is_aes256(cipher) ? 32 : 16);
    for (size_t i = 0; i < k.size(); ++i)
        k[i] = std::byte(seed + i * 7);
    return k;
}

// A sender and a receiver: the receiver's open key is the sender's seal key.
struct Pair {
    SessionEncryption sender;
    SessionEncryption receiver;
};
Pair make_pair(uint16_t cipher) {
    auto a = key_of(cipher, 1), b = key_of(cipher, 2);
    auto s = SessionEncryption::create(cipher, a, b);
    auto r = SessionEncryption::create(cipher, b, a);
    EXPECT_TRUE(s.ok() && r.ok());
    return Pair{std::move(*s), std::move(*r)};
}

ByteVector message(size_t n) {
    ByteVector m(n);
    for (size_t i = 0; i < n; ++i)
        m[i] = std::byte(i * 13 + 5);
    protocol::store_le32(m.data(), protocol::kSmb2ProtocolId);
    return m;
}

// Seals `plain` (split into fragments at `cuts`) and returns header + ciphertext.
ByteVector seal(SessionEncryption& e, uint64_t sid, const ByteVector& plain,
                std::vector<size_t> cuts = {}) {
    ByteVector work = plain;
    std::vector<MutableBytes> frags;
    size_t at = 0;
    cuts.push_back(work.size());
    for (size_t c : cuts) {
        frags.push_back(MutableBytes(work.data() + at, c - at));
        at = c;
    }
    ByteVector out(TransformHeader::kSize);
    EXPECT_TRUE(
        e.seal(sid, frags, std::span<std::byte, TransformHeader::kSize>(out.data(), out.size()))
            .ok());
    out.insert(out.end(), work.begin(), work.end());
    return out;
}

class SessionEncryptionTest : public ::testing::TestWithParam<uint16_t> {};

TEST_P(SessionEncryptionTest, SealOpenRoundTripWithFragments) {
    auto p = make_pair(GetParam());
    // Fragment boundaries inside and across AES blocks, as header+body and READ data.
    for (std::vector<size_t> cuts :
         {std::vector<size_t>{}, {64}, {1, 17, 33}, {80, 4096 + 3}, {15, 16, 31, 5000}}) {
        auto plain = message(70000);
        auto msg = seal(p.sender, 0x1122, plain, cuts);
        auto th = TransformHeader::parse(msg);
        ASSERT_TRUE(th.ok());
        EXPECT_EQ(th->session_id, 0x1122u);
        EXPECT_EQ(th->original_message_size, plain.size());
        EXPECT_EQ(th->flags, 1);
        EXPECT_NE(hex(Bytes(msg).subspan(52, 64)), hex(Bytes(plain).subspan(0, 64)));
        ASSERT_TRUE(p.receiver.open(msg).ok());
        EXPECT_EQ(hex(Bytes(msg).subspan(52)), hex(plain));
    }
}

TEST_P(SessionEncryptionTest, CipherFragmentsGiveTheSameResultAsOneBuffer) {
    // The gathered path (READ data in its own buffer, streamed through the AEAD) must give the
    // same tag and ciphertext as one contiguous buffer, for any fragment boundaries.
    auto key = key_of(GetParam(), 3);
    auto c = Cipher::create(GetParam(), key);
    ASSERT_TRUE(c.ok());
    ByteVector nonce(16, std::byte{0x42});
    ByteVector aad(32, std::byte{0x17});
    for (std::vector<size_t> cuts :
         {std::vector<size_t>{64}, {1, 2, 3}, {15, 16, 31, 1000}, {80, 65536 + 80, 200000}}) {
        auto plain = message(300001);
        ByteVector one = plain;
        std::array<std::byte, 16> tag1{}, tag2{};
        ASSERT_TRUE(c->encrypt(nonce, aad, MutableBytes(one), tag1).ok());
        ByteVector many = plain;
        std::vector<MutableBytes> frags;
        size_t at = 0;
        cuts.push_back(many.size());
        for (size_t cut : cuts) {
            frags.push_back(MutableBytes(many.data() + at, cut - at));
            at = cut;
        }
        ASSERT_TRUE(c->encrypt(nonce, aad, frags, tag2).ok());
        EXPECT_EQ(hex(tag1), hex(tag2));
        EXPECT_TRUE(one == many);
        ASSERT_TRUE(c->decrypt(nonce, aad, frags, tag1).ok());
        EXPECT_TRUE(many == plain);
        // A wrong tag fails on the gathered path as well.
        tag2[0] ^= std::byte{1};
        EXPECT_EQ(c->decrypt(nonce, aad, MutableBytes(one), tag2).status(), NtStatus::AccessDenied);
    }
}

TEST_P(SessionEncryptionTest, NoncesNeverRepeat) {
    auto p = make_pair(GetParam());
    std::set<std::string> nonces;
    const size_t used = GetParam() == cipher_id::kAes128Ccm || GetParam() == cipher_id::kAes256Ccm
                            ? TransformHeader::kCcmNonceSize
                            : TransformHeader::kGcmNonceSize;
    for (int i = 0; i < 1000; ++i) {
        auto msg = seal(p.sender, 1, message(64));
        nonces.insert(hex(Bytes(msg).subspan(20, used)));
        // The unused nonce bytes are zero (MS-SMB2 2.2.41).
        for (size_t k = used; k < 16; ++k)
            EXPECT_EQ(msg[20 + k], std::byte{0});
    }
    EXPECT_EQ(nonces.size(), 1000u);
}

TEST_P(SessionEncryptionTest, ChannelsSharingANonceSequenceNeverRepeatANonce) {
    // Two channels of one multichannel session seal with the same key through cipher contexts
    // of their own: with the shared sequence their nonces never collide, and the peer opens
    // what either sent.
    const uint16_t cipher = GetParam();
    auto a = key_of(cipher, 1), b = key_of(cipher, 2);
    auto first = SessionEncryption::create(cipher, a, b);
    ASSERT_TRUE(first.ok());
    auto second = SessionEncryption::create(cipher, a, b, first->nonces());
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(first->nonces(), second->nonces());
    auto peer = SessionEncryption::create(cipher, b, a);
    ASSERT_TRUE(peer.ok());
    std::set<std::string> nonces;
    for (int i = 0; i < 500; ++i) {
        for (SessionEncryption* e : {&*first, &*second}) {
            auto plain = message(100 + i);
            auto msg = seal(*e, 7, plain);
            nonces.insert(hex(Bytes(msg).subspan(20, 16)));
            ASSERT_TRUE(peer->open(msg).ok());
            EXPECT_EQ(hex(Bytes(msg).subspan(52)), hex(plain));
        }
    }
    EXPECT_EQ(nonces.size(), 1000u);
    // Without the shared sequence each object starts its own counter at 0.
    auto separate = SessionEncryption::create(cipher, a, b);
    ASSERT_TRUE(separate.ok());
    EXPECT_NE(separate->nonces(), first->nonces());
}

TEST_P(SessionEncryptionTest, TamperedMessagesAreRefused) {
    auto p = make_pair(GetParam());
    auto good = seal(p.sender, 9, message(200));
    for (size_t at : {size_t(4), size_t(20), size_t(44), size_t(60), good.size() - 1}) {
        auto bad = good;
        bad[at] ^= std::byte{0x80};  // tag, nonce, SessionId (AAD), ciphertext
        EXPECT_EQ(p.receiver.open(bad).status(), NtStatus::AccessDenied) << at;
    }
    auto flags = good;
    protocol::store_le16(flags.data() + 42, 0);
    EXPECT_EQ(p.receiver.open(flags).status(), NtStatus::InvalidParameter);
    auto size = good;
    protocol::store_le32(size.data() + 36, uint32_t(good.size()));
    EXPECT_EQ(p.receiver.open(size).status(), NtStatus::InvalidParameter);
    ByteVector shorter(good.begin(), good.begin() + 52);
    EXPECT_EQ(p.receiver.open(shorter).status(), NtStatus::InvalidParameter);
    EXPECT_TRUE(p.receiver.open(good).ok());
}

INSTANTIATE_TEST_SUITE_P(AllCiphers, SessionEncryptionTest,
                         ::testing::Values(cipher_id::kAes128Ccm, cipher_id::kAes128Gcm,
                                           cipher_id::kAes256Ccm, cipher_id::kAes256Gcm));

}  // namespace
}  // namespace daxsmbd::auth
