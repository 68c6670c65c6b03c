// SMB 3.1.1 negotiate contexts (MS-SMB2 2.2.3.1, 2.2.4.1): one typed struct per context, a list
// codec, and the pure validation rules of MS-SMB2 3.3.5.4.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

// ContextType values (MS-SMB2 2.2.3.1).
namespace negotiate_context_type {
constexpr uint16_t kPreauthIntegrity = 0x0001;
constexpr uint16_t kEncryption = 0x0002;
constexpr uint16_t kCompression = 0x0003;
constexpr uint16_t kNetname = 0x0005;
constexpr uint16_t kTransport = 0x0006;
constexpr uint16_t kRdmaTransform = 0x0007;
constexpr uint16_t kSigning = 0x0008;
constexpr uint16_t kReserved = 0x0100;  // Samba/Linux: SMB3 POSIX extensions; kept as unknown
}  // namespace negotiate_context_type

// MS-SMB2 2.2.3.1.1
namespace hash_algorithm {
constexpr uint16_t kSha512 = 0x0001;
}

// MS-SMB2 2.2.3.1.2; kNone is what the response carries when there is no common cipher
// (MS-SMB2 3.3.5.4).
namespace cipher {
constexpr uint16_t kNone = 0x0000;
constexpr uint16_t kAes128Ccm = 0x0001;
constexpr uint16_t kAes128Gcm = 0x0002;
constexpr uint16_t kAes256Ccm = 0x0003;
constexpr uint16_t kAes256Gcm = 0x0004;
}  // namespace cipher

// MS-SMB2 2.2.3.1.3
namespace compression_algorithm {
constexpr uint16_t kNone = 0x0000;
constexpr uint16_t kLznt1 = 0x0001;
constexpr uint16_t kLz77 = 0x0002;
constexpr uint16_t kLz77Huffman = 0x0003;
constexpr uint16_t kPatternV1 = 0x0004;
constexpr uint16_t kLz4 = 0x0005;
}  // namespace compression_algorithm
namespace compression_capabilities_flags {
constexpr uint32_t kNone = 0x00000000;
constexpr uint32_t kChained = 0x00000001;
}  // namespace compression_capabilities_flags

// MS-SMB2 2.2.3.1.5
namespace transport_capabilities_flags {
constexpr uint32_t kAcceptTransportLevelSecurity = 0x00000001;
}

// MS-SMB2 2.2.3.1.6
namespace rdma_transform {
constexpr uint16_t kNone = 0x0000;
constexpr uint16_t kEncryption = 0x0001;
constexpr uint16_t kSigning = 0x0002;
}  // namespace rdma_transform

// MS-SMB2 2.2.3.1.7
namespace signing_algorithm {
constexpr uint16_t kHmacSha256 = 0x0000;
constexpr uint16_t kAesCmac = 0x0001;
constexpr uint16_t kAesGmac = 0x0002;
}  // namespace signing_algorithm

// Each context type: `decode` takes the context's Data (DataLength bytes) and fails with
// STATUS_INVALID_PARAMETER when Data is shorter than the fixed part plus the listed arrays, or
// when a count that MUST be non-zero is zero; `encode` appends Data only (no 8-byte header).
// Bytes after the arrays are ignored on decode.

// MS-SMB2 2.2.3.1.1
struct PreauthIntegrityCapabilities {
    static constexpr uint16_t kType = negotiate_context_type::kPreauthIntegrity;
    std::vector<uint16_t> hash_algorithms;
    ByteVector salt;
    static Result<PreauthIntegrityCapabilities> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const PreauthIntegrityCapabilities&) const = default;
};

// MS-SMB2 2.2.3.1.2
struct EncryptionCapabilities {
    static constexpr uint16_t kType = negotiate_context_type::kEncryption;
    std::vector<uint16_t> ciphers;  // client preference order
    static Result<EncryptionCapabilities> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const EncryptionCapabilities&) const = default;
};

// MS-SMB2 2.2.3.1.3
struct CompressionCapabilities {
    static constexpr uint16_t kType = negotiate_context_type::kCompression;
    uint32_t flags = compression_capabilities_flags::kNone;
    std::vector<uint16_t> algorithms;
    static Result<CompressionCapabilities> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const CompressionCapabilities&) const = default;
};

// MS-SMB2 2.2.3.1.4. The server never answers it and ignores its content (MS-SMB2 3.3.5.4),
// so a NetName that is not valid UTF-16 is kept as an UnknownNegotiateContext by the list
// parser instead of failing the NEGOTIATE.
struct NetnameContext {
    static constexpr uint16_t kType = negotiate_context_type::kNetname;
    std::string name;  // UTF-8
    static Result<NetnameContext> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const NetnameContext&) const = default;
};

// MS-SMB2 2.2.3.1.5
struct TransportCapabilities {
    static constexpr uint16_t kType = negotiate_context_type::kTransport;
    uint32_t flags = 0;
    static Result<TransportCapabilities> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const TransportCapabilities&) const = default;
};

// MS-SMB2 2.2.3.1.6
struct RdmaTransformCapabilities {
    static constexpr uint16_t kType = negotiate_context_type::kRdmaTransform;
    std::vector<uint16_t> transform_ids;
    static Result<RdmaTransformCapabilities> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const RdmaTransformCapabilities&) const = default;
};

// MS-SMB2 2.2.3.1.7
struct SigningCapabilities {
    static constexpr uint16_t kType = negotiate_context_type::kSigning;
    std::vector<uint16_t> algorithms;  // preference order
    static Result<SigningCapabilities> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const SigningCapabilities&) const = default;
};

// Any other ContextType (MS-SMB2 3.3.5.4: ignored by the server), kept as raw Data.
struct UnknownNegotiateContext {
    uint16_t type = 0;
    ByteVector data;
    void encode(ByteWriter& w) const { w.bytes(data); }
    bool operator==(const UnknownNegotiateContext&) const = default;
};

using NegotiateContext =
    std::variant<PreauthIntegrityCapabilities, EncryptionCapabilities, CompressionCapabilities,
                 NetnameContext, TransportCapabilities, RdmaTransformCapabilities,
                 SigningCapabilities, UnknownNegotiateContext>;
using NegotiateContextList = std::vector<NegotiateContext>;

uint16_t negotiate_context_type_of(const NegotiateContext& c);

// Parses `count` contexts, the first at msg offset `offset`, each following one at the next
// 8-byte boundary (relative to msg[0]) after the previous context's Data (MS-SMB2 2.2.3).
// Every header and Data is bounds-checked against msg; failures are STATUS_INVALID_PARAMETER.
Result<NegotiateContextList> parse_negotiate_contexts(Bytes msg, uint64_t offset, uint16_t count);

// Appends the contexts, each preceded by padding to an 8-byte boundary relative to w.base().
// Returns the msg offset (from w.base()) of the first context, to be put in
// NegotiateContextOffset. With an empty list nothing is written and 0 is returned.
uint32_t serialize_negotiate_contexts(const NegotiateContextList& list, ByteWriter& w);

// The checks of MS-SMB2 3.3.5.4 that need no server configuration: exactly one
// PREAUTH_INTEGRITY_CAPABILITIES, at most one each of ENCRYPTION, COMPRESSION, RDMA_TRANSFORM
// and SIGNING; otherwise STATUS_INVALID_PARAMETER.
Status validate_negotiate_contexts(const NegotiateContextList& list);

// First context of type T, or nullptr.
template <class T>
const T* find_negotiate_context(const NegotiateContextList& list) {
    for (const auto& c : list)
        if (const T* p = std::get_if<T>(&c)) return p;
    return nullptr;
}

}  // namespace daxsmbd::protocol
