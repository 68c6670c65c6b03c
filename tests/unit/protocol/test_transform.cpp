// TRANSFORM_HEADER and the unchained COMPRESSION_TRANSFORM_HEADER (MS-SMB2 2.2.41, 2.2.42.1).
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/transform.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

TransformHeader sample() {
    TransformHeader h;
    for (size_t i = 0; i < 16; ++i)
        h.signature[i] = std::byte(0xA0 + i);
    for (size_t i = 0; i < 11; ++i)
        h.nonce[i] = std::byte(0x10 + i);  // CCM: 11 bytes, rest 0
    h.original_message_size = 0x64;
    h.flags = transform_flags::kEncrypted;
    h.session_id = 0x1122334455667788ull;
    return h;
}

ByteVector sample_bytes() {
    return hex(
        "FD534D42"                          // ProtocolId
        "A0A1A2A3A4A5A6A7A8A9AAABACADAEAF"  // Signature
        "101112131415161718191A0000000000"  // Nonce
        "64000000"                          // OriginalMessageSize
        "0000"                              // Reserved
        "0100"                              // Flags = Encrypted
        "8877665544332211");                // SessionId
}

}  // namespace

TEST(Transform, GoldenSerialize) {
    ByteVector v;
    ByteWriter w(v);
    sample().serialize(w);
    EXPECT_EQ(v.size(), TransformHeader::kSize);
    EXPECT_EQ(v, sample_bytes());
}

TEST(Transform, GoldenParse) {
    auto msg = sample_bytes();
    msg.push_back(std::byte{0xEE});  // ciphertext follows
    auto h = TransformHeader::parse(msg);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->signature, sample().signature);
    EXPECT_EQ(h->nonce, sample().nonce);
    EXPECT_EQ(h->original_message_size, 0x64u);
    EXPECT_EQ(h->flags, 1);
    EXPECT_EQ(h->session_id, 0x1122334455667788ull);
}

TEST(Transform, AadIsBytes20To51) {
    // MS-SMB2 3.1.4.3: the AAD is the header from Nonce to SessionId, 32 bytes.
    auto bytes = sample_bytes();
    ByteVector want(bytes.begin() + 20, bytes.end());
    ASSERT_EQ(want.size(), 32u);
    auto aad = sample().aad();
    EXPECT_EQ(ByteVector(aad.begin(), aad.end()), want);
    auto view = transform_aad(bytes);
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(ByteVector(view->begin(), view->end()), want);
    EXPECT_EQ(view->data(), bytes.data() + 20);
    EXPECT_EQ(transform_aad(Bytes(bytes).first(51)).status(), NtStatus::InvalidParameter);
}

TEST(Transform, Malformed) {
    auto bytes = sample_bytes();
    bytes[0] = std::byte{0xFE};
    EXPECT_EQ(TransformHeader::parse(bytes).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(transform_aad(bytes).status(), NtStatus::InvalidParameter);
    bytes = sample_bytes();
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_EQ(TransformHeader::parse(Bytes(bytes).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
}

TEST(CompressionTransform, GoldenRoundTrip) {
    CompressionTransformHeader h;
    h.original_compressed_segment_size = 0x1000;
    h.compression_algorithm = 0x0003;  // LZ77+Huffman
    h.flags = compression_flags::kNone;
    h.offset = 0x50;
    ByteVector v;
    ByteWriter w(v);
    h.serialize(w);
    EXPECT_EQ(v, hex("FC534D42 00100000 0300 0000 50000000"));
    auto back = CompressionTransformHeader::parse(v);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->original_compressed_segment_size, 0x1000u);
    EXPECT_EQ(back->compression_algorithm, 3);
    EXPECT_EQ(back->flags, 0);
    EXPECT_EQ(back->offset, 0x50u);
    for (size_t n = 0; n < v.size(); ++n)
        EXPECT_EQ(CompressionTransformHeader::parse(Bytes(v).first(n)).status(),
                  NtStatus::InvalidParameter);
    v[0] = std::byte{0xFD};
    EXPECT_EQ(CompressionTransformHeader::parse(v).status(), NtStatus::InvalidParameter);
}
