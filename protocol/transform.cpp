#include "protocol/transform.h"

#include <cstring>

#include "protocol/header.h"

namespace daxsmbd::protocol {

Result<TransformHeader> TransformHeader::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_TRY(auto proto, r.u32());
    if (proto != kTransformProtocolId) return Error(NtStatus::InvalidParameter);
    TransformHeader h;
    DAX_TRY(h.signature, r.array<16>());
    DAX_TRY(h.nonce, r.array<16>());
    DAX_TRY(h.original_message_size, r.u32());
    DAX_CHECK(r.skip(2));  // Reserved
    DAX_TRY(h.flags, r.u16());
    DAX_TRY(h.session_id, r.u64());
    return h;
}

void TransformHeader::serialize(ByteWriter& w) const {
    w.u32(kTransformProtocolId);
    w.bytes(signature);
    w.bytes(nonce);
    w.u32(original_message_size);
    w.u16(0);
    w.u16(flags);
    w.u64(session_id);
}

void TransformHeader::serialize_to(std::span<std::byte, kSize> out) const {
    store_le32(out.data(), kTransformProtocolId);
    std::memcpy(out.data() + 4, signature.data(), 16);
    std::memcpy(out.data() + 20, nonce.data(), 16);
    store_le32(out.data() + 36, original_message_size);
    store_le16(out.data() + 40, 0);
    store_le16(out.data() + 42, flags);
    store_le64(out.data() + 44, session_id);
}

std::array<std::byte, TransformHeader::kAadSize> TransformHeader::aad() const {
    ByteVector v;
    ByteWriter w(v);
    serialize(w);
    std::array<std::byte, kAadSize> a;
    std::memcpy(a.data(), v.data() + kAadOffset, kAadSize);
    return a;
}

Result<Bytes> transform_aad(Bytes msg) {
    if (msg.size() < TransformHeader::kSize || load_le32(msg.data()) != kTransformProtocolId)
        return Error(NtStatus::InvalidParameter);
    return msg.subspan(TransformHeader::kAadOffset, TransformHeader::kAadSize);
}

Result<CompressionTransformHeader> CompressionTransformHeader::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_TRY(auto proto, r.u32());
    if (proto != kCompressionProtocolId) return Error(NtStatus::InvalidParameter);
    CompressionTransformHeader h;
    DAX_TRY(h.original_compressed_segment_size, r.u32());
    DAX_TRY(h.compression_algorithm, r.u16());
    DAX_TRY(h.flags, r.u16());
    DAX_TRY(h.offset, r.u32());
    return h;
}

void CompressionTransformHeader::serialize(ByteWriter& w) const {
    w.u32(kCompressionProtocolId);
    w.u32(original_compressed_segment_size);
    w.u16(compression_algorithm);
    w.u16(flags);
    w.u32(offset);
}

}  // namespace daxsmbd::protocol
