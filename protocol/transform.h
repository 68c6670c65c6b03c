// SMB2 TRANSFORM_HEADER (encryption, MS-SMB2 2.2.41) and the unchained
// COMPRESSION_TRANSFORM_HEADER (MS-SMB2 2.2.42.1). Headers only: the AEAD and the
// decompressor live in auth/ and server/.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

namespace transform_flags {
// 3.1.1 Flags / 3.0.x EncryptionAlgorithm: the same value 0x0001 (MS-SMB2 2.2.41).
constexpr uint16_t kEncrypted = 0x0001;
constexpr uint16_t kEncryptionAlgorithmAes128Ccm = 0x0001;
}  // namespace transform_flags

// MS-SMB2 2.2.41
struct TransformHeader {
    static constexpr size_t kSize = 52;
    static constexpr size_t kAadOffset = 20;  // Nonce .. SessionId
    static constexpr size_t kAadSize = 32;
    static constexpr size_t kCcmNonceSize = 11;  // MS-SMB2 3.1.4.3
    static constexpr size_t kGcmNonceSize = 12;

    std::array<std::byte, 16> signature{};  // AEAD tag
    std::array<std::byte, 16> nonce{};      // CCM uses 11 bytes, GCM 12; the rest are 0
    uint32_t original_message_size = 0;
    uint16_t flags = transform_flags::kEncrypted;
    uint64_t session_id = 0;

    // Parses the first 52 bytes of `msg` (ProtocolId FD 'S' 'M' 'B'); the ciphertext is
    // msg[52..]. Flags and sizes are left to the receiver's checks (MS-SMB2 3.3.5.2.1.1).
    static Result<TransformHeader> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
    // The same 52 bytes into a fixed buffer (the send path: no allocation).
    void serialize_to(std::span<std::byte, kSize> out) const;
    // The additional authenticated data: bytes 20..51 of the serialized header (MS-SMB2 3.1.4.3).
    std::array<std::byte, kAadSize> aad() const;
};

// The AAD bytes of a received transform message, as a view into it.
Result<Bytes> transform_aad(Bytes msg);

namespace compression_flags {
constexpr uint16_t kNone = 0x0000;
constexpr uint16_t kChained = 0x0001;
}  // namespace compression_flags

// MS-SMB2 2.2.42.1 (unchained). In the chained form (2.2.42.2) bytes 8..15 are the first
// payload header: CompressionAlgorithm(2) Flags(2) Length(4); parse() reads them into the same
// fields, so a caller that sees flags == kChained reads `offset` as that Length.
struct CompressionTransformHeader {
    static constexpr size_t kSize = 16;

    uint32_t original_compressed_segment_size = 0;
    uint16_t compression_algorithm = 0;
    uint16_t flags = compression_flags::kNone;
    uint32_t offset = 0;  // bytes of uncompressed data between this header and the compressed data

    static Result<CompressionTransformHeader> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
