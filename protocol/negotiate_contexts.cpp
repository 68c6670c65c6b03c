#include "protocol/negotiate_contexts.h"

namespace daxsmbd::protocol {

namespace {

constexpr size_t kContextHeaderSize = 8;  // ContextType(2) DataLength(2) Reserved(4)

Result<std::vector<uint16_t>> read_u16_array(ByteReader& r, size_t count) {
    if (r.remaining() / 2 < count) return Error(NtStatus::InvalidParameter);
    std::vector<uint16_t> v;
    v.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        DAX_TRY(auto x, r.u16());
        v.push_back(x);
    }
    return v;
}

void write_u16_array(ByteWriter& w, const std::vector<uint16_t>& v) {
    for (uint16_t x : v)
        w.u16(x);
}

// Decodes one context's Data into the typed struct for `type`.
Result<NegotiateContext> decode_one(uint16_t type, Bytes data) {
    switch (type) {
        case negotiate_context_type::kPreauthIntegrity: {
            DAX_TRY(auto c, PreauthIntegrityCapabilities::decode(data));
            return NegotiateContext(std::move(c));
        }
        case negotiate_context_type::kEncryption: {
            DAX_TRY(auto c, EncryptionCapabilities::decode(data));
            return NegotiateContext(std::move(c));
        }
        case negotiate_context_type::kCompression: {
            DAX_TRY(auto c, CompressionCapabilities::decode(data));
            return NegotiateContext(std::move(c));
        }
        case negotiate_context_type::kNetname: {
            auto c = NetnameContext::decode(data);
            if (c) return NegotiateContext(std::move(c).value());
            // Ignored by the server anyway (MS-SMB2 3.3.5.4): keep the raw bytes.
            return NegotiateContext(
                UnknownNegotiateContext{type, ByteVector(data.begin(), data.end())});
        }
        case negotiate_context_type::kTransport: {
            DAX_TRY(auto c, TransportCapabilities::decode(data));
            return NegotiateContext(std::move(c));
        }
        case negotiate_context_type::kRdmaTransform: {
            DAX_TRY(auto c, RdmaTransformCapabilities::decode(data));
            return NegotiateContext(std::move(c));
        }
        case negotiate_context_type::kSigning: {
            DAX_TRY(auto c, SigningCapabilities::decode(data));
            return NegotiateContext(std::move(c));
        }
        default:
            return NegotiateContext(
                UnknownNegotiateContext{type, ByteVector(data.begin(), data.end())});
    }
}

}  // namespace

// MS-SMB2 2.2.3.1.1: HashAlgorithmCount(2) SaltLength(2) HashAlgorithms[] Salt[].
Result<PreauthIntegrityCapabilities> PreauthIntegrityCapabilities::decode(Bytes data) {
    ByteReader r(data);
    DAX_TRY(auto count, r.u16());
    DAX_TRY(auto salt_len, r.u16());
    if (count == 0) return Error(NtStatus::InvalidParameter);
    PreauthIntegrityCapabilities c;
    DAX_TRY(c.hash_algorithms, read_u16_array(r, count));
    DAX_TRY(auto salt, r.bytes(salt_len));
    c.salt.assign(salt.begin(), salt.end());
    return c;
}

void PreauthIntegrityCapabilities::encode(ByteWriter& w) const {
    w.u16(uint16_t(hash_algorithms.size()));
    w.u16(uint16_t(salt.size()));
    write_u16_array(w, hash_algorithms);
    w.bytes(salt);
}

// MS-SMB2 2.2.3.1.2: CipherCount(2) Ciphers[].
Result<EncryptionCapabilities> EncryptionCapabilities::decode(Bytes data) {
    ByteReader r(data);
    DAX_TRY(auto count, r.u16());
    if (count == 0) return Error(NtStatus::InvalidParameter);
    EncryptionCapabilities c;
    DAX_TRY(c.ciphers, read_u16_array(r, count));
    return c;
}

void EncryptionCapabilities::encode(ByteWriter& w) const {
    w.u16(uint16_t(ciphers.size()));
    write_u16_array(w, ciphers);
}

// MS-SMB2 2.2.3.1.3: CompressionAlgorithmCount(2) Padding(2) Flags(4) CompressionAlgorithms[].
Result<CompressionCapabilities> CompressionCapabilities::decode(Bytes data) {
    ByteReader r(data);
    DAX_TRY(auto count, r.u16());
    DAX_CHECK(r.skip(2));
    CompressionCapabilities c;
    DAX_TRY(c.flags, r.u32());
    // MS-SMB2 3.3.5.4: CompressionAlgorithmCount == 0 -> STATUS_INVALID_PARAMETER.
    if (count == 0) return Error(NtStatus::InvalidParameter);
    DAX_TRY(c.algorithms, read_u16_array(r, count));
    return c;
}

void CompressionCapabilities::encode(ByteWriter& w) const {
    w.u16(uint16_t(algorithms.size()));
    w.u16(0);
    w.u32(flags);
    write_u16_array(w, algorithms);
}

// MS-SMB2 2.2.3.1.4: NetName, UTF-16 without a length field other than DataLength. Some
// clients include a terminating NUL; it is dropped.
Result<NetnameContext> NetnameContext::decode(Bytes data) {
    while (data.size() >= 2 && load_le16(data.data() + data.size() - 2) == 0)
        data = data.first(data.size() - 2);
    NetnameContext c;
    DAX_TRY(c.name, utf16le_to_utf8(data));
    return c;
}

void NetnameContext::encode(ByteWriter& w) const {
    utf8_to_utf16le(name, w);
}

// MS-SMB2 2.2.3.1.5: Flags(4).
Result<TransportCapabilities> TransportCapabilities::decode(Bytes data) {
    ByteReader r(data);
    TransportCapabilities c;
    DAX_TRY(c.flags, r.u32());
    return c;
}

void TransportCapabilities::encode(ByteWriter& w) const {
    w.u32(flags);
}

// MS-SMB2 2.2.3.1.6: TransformCount(2) Reserved1(2) Reserved2(4) RDMATransformIds[].
Result<RdmaTransformCapabilities> RdmaTransformCapabilities::decode(Bytes data) {
    ByteReader r(data);
    DAX_TRY(auto count, r.u16());
    DAX_CHECK(r.skip(6));
    if (count == 0) return Error(NtStatus::InvalidParameter);
    RdmaTransformCapabilities c;
    DAX_TRY(c.transform_ids, read_u16_array(r, count));
    return c;
}

void RdmaTransformCapabilities::encode(ByteWriter& w) const {
    w.u16(uint16_t(transform_ids.size()));
    w.u16(0);
    w.u32(0);
    write_u16_array(w, transform_ids);
}

// MS-SMB2 2.2.3.1.7: SigningAlgorithmCount(2) SigningAlgorithms[].
Result<SigningCapabilities> SigningCapabilities::decode(Bytes data) {
    ByteReader r(data);
    DAX_TRY(auto count, r.u16());
    if (count == 0) return Error(NtStatus::InvalidParameter);
    SigningCapabilities c;
    DAX_TRY(c.algorithms, read_u16_array(r, count));
    return c;
}

void SigningCapabilities::encode(ByteWriter& w) const {
    w.u16(uint16_t(algorithms.size()));
    write_u16_array(w, algorithms);
}

uint16_t negotiate_context_type_of(const NegotiateContext& c) {
    return std::visit(
        [](const auto& x) -> uint16_t {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, UnknownNegotiateContext>)
                return x.type;
            else
                return T::kType;
        },
        c);
}

Result<NegotiateContextList> parse_negotiate_contexts(Bytes msg, uint64_t offset, uint16_t count) {
    ByteReader r(msg);
    NegotiateContextList list;
    list.reserve(count);
    uint64_t pos = offset;
    for (uint16_t i = 0; i < count; ++i) {
        if (i > 0) pos = (pos + 7) & ~uint64_t(7);  // MS-SMB2 2.2.3: next 8-aligned offset
        DAX_TRY(auto hdr, r.slice(pos, kContextHeaderSize));
        uint16_t type = load_le16(hdr.data());
        uint16_t data_len = load_le16(hdr.data() + 2);
        DAX_TRY(auto data, r.slice(pos + kContextHeaderSize, data_len));
        DAX_TRY(auto ctx, decode_one(type, data));
        list.push_back(std::move(ctx));
        pos += kContextHeaderSize + data_len;
    }
    return list;
}

uint32_t serialize_negotiate_contexts(const NegotiateContextList& list, ByteWriter& w) {
    uint32_t first = 0;
    for (size_t i = 0; i < list.size(); ++i) {
        w.align(8);
        if (i == 0) first = uint32_t(w.offset_from_base());
        size_t hdr = w.size();
        w.u16(negotiate_context_type_of(list[i]));
        w.u16(0);  // DataLength, patched below
        w.u32(0);  // Reserved
        size_t data_start = w.size();
        std::visit([&](const auto& x) { x.encode(w); }, list[i]);
        w.patch_u16(hdr + 2, uint16_t(w.size() - data_start));
    }
    return first;
}

Status validate_negotiate_contexts(const NegotiateContextList& list) {
    size_t preauth = 0, encryption = 0, compression = 0, rdma = 0, signing = 0;
    for (const auto& c : list) {
        switch (negotiate_context_type_of(c)) {
            case negotiate_context_type::kPreauthIntegrity:
                ++preauth;
                break;
            case negotiate_context_type::kEncryption:
                ++encryption;
                break;
            case negotiate_context_type::kCompression:
                ++compression;
                break;
            case negotiate_context_type::kRdmaTransform:
                ++rdma;
                break;
            case negotiate_context_type::kSigning:
                ++signing;
                break;
            default:
                break;
        }
    }
    // MS-SMB2 3.3.5.4
    if (preauth != 1 || encryption > 1 || compression > 1 || rdma > 1 || signing > 1)
        return Error(NtStatus::InvalidParameter);
    return {};
}

}  // namespace daxsmbd::protocol
