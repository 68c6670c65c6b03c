#include "smbdirect/smbd_codec.h"

#include <algorithm>
#include <utility>

namespace daxsmbd::smbdirect {

namespace {

// Every read below is bounds-checked by ByteReader; in this file a short read means a message
// that MS-SMBD says to drop the connection for.
template <class T>
Result<T> or_disconnect(Result<T> r) {
    if (!r) return Error(kDisconnect);
    return r;
}

}  // namespace

// ---- negotiate ----

Result<NegotiateRequest> NegotiateRequest::parse(Bytes msg) {
    if (msg.size() < kNegotiateRequestSize) return Error(kDisconnect);
    ByteReader r(msg);
    NegotiateRequest q;
    DAX_TRY(q.min_version, or_disconnect(r.u16()));
    DAX_TRY(q.max_version, or_disconnect(r.u16()));
    DAX_TRY(q.reserved, or_disconnect(r.u16()));
    DAX_TRY(q.credits_requested, or_disconnect(r.u16()));
    DAX_TRY(q.preferred_send_size, or_disconnect(r.u32()));
    DAX_TRY(q.max_receive_size, or_disconnect(r.u32()));
    DAX_TRY(q.max_fragmented_size, or_disconnect(r.u32()));
    return q;
}

void NegotiateRequest::serialize(ByteVector& out) const {
    ByteWriter w(out, out.size());
    w.u16(min_version);
    w.u16(max_version);
    w.u16(reserved);
    w.u16(credits_requested);
    w.u32(preferred_send_size);
    w.u32(max_receive_size);
    w.u32(max_fragmented_size);
}

Result<NegotiateResponse> NegotiateResponse::parse(Bytes msg) {
    if (msg.size() < kNegotiateResponseSize) return Error(kDisconnect);
    ByteReader r(msg);
    NegotiateResponse p;
    DAX_TRY(p.min_version, or_disconnect(r.u16()));
    DAX_TRY(p.max_version, or_disconnect(r.u16()));
    DAX_TRY(p.negotiated_version, or_disconnect(r.u16()));
    DAX_TRY(p.reserved, or_disconnect(r.u16()));
    DAX_TRY(p.credits_requested, or_disconnect(r.u16()));
    DAX_TRY(p.credits_granted, or_disconnect(r.u16()));
    DAX_TRY(p.status, or_disconnect(r.u32()));
    DAX_TRY(p.max_read_write_size, or_disconnect(r.u32()));
    DAX_TRY(p.preferred_send_size, or_disconnect(r.u32()));
    DAX_TRY(p.max_receive_size, or_disconnect(r.u32()));
    DAX_TRY(p.max_fragmented_size, or_disconnect(r.u32()));
    return p;
}

void NegotiateResponse::serialize(ByteVector& out) const {
    ByteWriter w(out, out.size());
    w.u16(min_version);
    w.u16(max_version);
    w.u16(negotiated_version);
    w.u16(reserved);
    w.u16(credits_requested);
    w.u16(credits_granted);
    w.u32(status);
    w.u32(max_read_write_size);
    w.u32(preferred_send_size);
    w.u32(max_receive_size);
    w.u32(max_fragmented_size);
}

namespace {

// MS-SMBD 3.1.5.3: a failure response has only the version range and Status set.
NegotiateOutcome failure(NtStatus status) {
    NegotiateOutcome o;
    o.response = NegotiateResponse{};
    o.response.negotiated_version = 0;
    o.response.status = to_u32(status);
    return o;
}

}  // namespace

Result<NegotiateOutcome> accept_negotiate(Bytes msg, const SmbdConfig& config,
                                          uint16_t receive_credits) {
    DAX_TRY(auto req, NegotiateRequest::parse(msg));
    if (req.min_version > kProtocolVersion1 || req.max_version < kProtocolVersion1)
        return failure(NtStatus::NotSupported);
    if (req.credits_requested == 0 || req.max_receive_size < kMinReceiveSize ||
        req.max_fragmented_size < kMinFragmentedSize)
        return Error(kDisconnect);
    if (receive_credits == 0) return failure(NtStatus::InsufficientResources);

    NegotiatedParameters p;
    p.max_receive_size =
        std::max(kMinReceiveSize, std::min(config.max_receive_size, req.preferred_send_size));
    p.max_send_size = std::min(config.max_send_size, req.max_receive_size);
    p.max_fragmented_send_size = req.max_fragmented_size;
    p.max_fragmented_recv_size = config.max_fragmented_recv_size;
    p.max_read_write_size = config.max_read_write_size;
    p.receive_credit_target = req.credits_requested;

    NegotiateOutcome o;
    o.response.negotiated_version = kProtocolVersion1;
    o.response.credits_requested = config.send_credit_target;
    o.response.credits_granted = receive_credits;
    o.response.status = 0;
    o.response.max_read_write_size = p.max_read_write_size;
    // MS-SMBD 2.2.2: PreferredSendSize <= the request's MaxReceiveSize, which the min ensures.
    o.response.preferred_send_size = p.max_send_size;
    o.response.max_receive_size = p.max_receive_size;
    o.response.max_fragmented_size = p.max_fragmented_recv_size;
    o.parameters = p;
    return o;
}

Result<NegotiatedParameters> check_negotiate_response(Bytes msg, const SmbdConfig& config) {
    DAX_TRY(auto resp, NegotiateResponse::parse(msg));
    if (resp.negotiated_version != kProtocolVersion1 || resp.max_receive_size < kMinReceiveSize ||
        resp.max_fragmented_size < kMinFragmentedSize || resp.credits_granted == 0 ||
        resp.credits_requested == 0 || resp.preferred_send_size > config.max_receive_size ||
        resp.status != 0)
        return Error(kDisconnect);
    NegotiatedParameters p;
    p.receive_credit_target = resp.credits_requested;
    p.max_receive_size =
        std::max(kMinReceiveSize, std::min(config.max_receive_size, resp.preferred_send_size));
    p.max_send_size = std::min(config.max_send_size, resp.max_receive_size);
    p.max_read_write_size = std::min(config.max_read_write_size, resp.max_read_write_size);
    p.max_fragmented_send_size = resp.max_fragmented_size;
    p.max_fragmented_recv_size = config.max_fragmented_recv_size;
    p.send_credits = resp.credits_granted;
    return p;
}

// ---- data transfer ----

Result<DataTransferMessage> DataTransferMessage::parse(Bytes msg,
                                                       uint32_t max_fragmented_recv_size) {
    if (msg.size() < kDataTransferMinSize) return Error(kDisconnect);
    ByteReader r(msg);
    DataTransferMessage m;
    auto& h = m.header;
    DAX_TRY(h.credits_requested, or_disconnect(r.u16()));
    DAX_TRY(h.credits_granted, or_disconnect(r.u16()));
    DAX_TRY(h.flags, or_disconnect(r.u16()));
    DAX_TRY(h.reserved, or_disconnect(r.u16()));
    DAX_TRY(h.remaining_data_length, or_disconnect(r.u32()));
    DAX_TRY(h.data_offset, or_disconnect(r.u32()));
    DAX_TRY(h.data_length, or_disconnect(r.u32()));
    // MS-SMBD 3.1.5.8, in the spec's order.
    if (h.credits_requested == 0) return Error(kDisconnect);
    if (h.data_offset % 8 != 0) return Error(kDisconnect);
    if (uint64_t(h.data_offset) + h.data_length > msg.size()) return Error(kDisconnect);
    if (uint64_t(h.data_length) + h.remaining_data_length > max_fragmented_recv_size)
        return Error(kDisconnect);
    // A payload inside the header is nonsense no sender produces (2.2.3: DataOffset is past the
    // Padding); refusing it keeps header bytes from being handed up as SMB2 data.
    if (h.data_length > 0 && h.data_offset < kDataTransferDataOffset) return Error(kDisconnect);
    if (h.data_length > 0) m.payload = msg.subspan(h.data_offset, h.data_length);
    return m;
}

void write_data_transfer(ByteVector& out, const DataTransferHeader& header, Bytes payload) {
    ByteWriter w(out, out.size());
    w.u16(header.credits_requested);
    w.u16(header.credits_granted);
    w.u16(header.flags);
    w.u16(0);
    w.u32(header.remaining_data_length);
    w.u32(payload.empty() ? 0 : kDataTransferDataOffset);
    w.u32(uint32_t(payload.size()));
    if (payload.empty()) return;  // MS-SMBD 3.1.5.4: Padding and Buffer are not present
    w.u32(0);                     // Padding up to DataOffset 24
    w.bytes(payload);
}

void set_send_fields(MutableBytes msg, uint16_t credits_requested, uint16_t credits_granted,
                     uint16_t flags) {
    if (msg.size() < kDataTransferMinSize) return;
    protocol::store_le16(msg.data(), credits_requested);
    protocol::store_le16(msg.data() + 2, credits_granted);
    protocol::store_le16(msg.data() + 4, flags);
}

Result<std::vector<Fragment>> plan_fragments(size_t size, uint32_t max_send_size,
                                             uint32_t max_fragmented_send_size) {
    // MS-SMBD 3.1.4.2 / 3.1.5.4: larger than the peer reassembles is a local error.
    if (size > max_fragmented_send_size) return Error(NtStatus::InvalidParameter);
    if (max_send_size <= kDataTransferDataOffset) return Error(NtStatus::InvalidParameter);
    std::vector<Fragment> plan;
    if (size == 0) {
        plan.push_back(Fragment{});
        return plan;
    }
    size_t per = max_send_size - kDataTransferDataOffset;
    plan.reserve((size + per - 1) / per);
    for (size_t off = 0; off < size;) {
        size_t n = std::min(per, size - off);
        plan.push_back(Fragment{off, n, uint32_t(size - off - n)});
        off += n;
    }
    return plan;
}

// ---- reassembly ----

Result<Reassembler::Received> Reassembler::receive(Bytes msg,
                                                   std::optional<uint32_t> invalidated_token) {
    completed_.clear();  // the previous completed message's view ends here
    auto parsed = DataTransferMessage::parse(msg, max_fragmented_recv_size_);
    if (!parsed) {
        buffer_.clear();
        remaining_ = 0;
        return Error(kDisconnect);
    }
    const auto& m = *parsed;
    const auto& h = m.header;
    if (invalidated_token) token_ = invalidated_token;  // overwrites, MS-SMBD 3.1.5.8

    Received out;
    out.header = h;
    if (!in_progress()) {
        if (h.remaining_data_length == 0) {
            // Whole message in one fragment (or an empty credit/keepalive message, which
            // carries no upper-layer message but still hands over a pending token).
            if (h.data_length > 0) out.message = m.payload;
            out.invalidated_token = std::exchange(token_, std::nullopt);
            return out;
        }
        // DataLength + RemainingDataLength <= MaxFragmentedRecvSize was checked by parse, so
        // this reservation is bounded.
        buffer_.reserve(size_t(h.data_length) + h.remaining_data_length);
        buffer_.insert(buffer_.end(), m.payload.begin(), m.payload.end());
        remaining_ = h.remaining_data_length;
        return out;
    }
    // Continuation: FragmentReassemblyRemaining is reduced by DataLength and must land on the
    // sender's RemainingDataLength; reaching 0 early or late is a broken sequence.
    if (h.data_length > remaining_ || h.remaining_data_length != remaining_ - h.data_length) {
        buffer_.clear();
        remaining_ = 0;
        return Error(kDisconnect);
    }
    buffer_.insert(buffer_.end(), m.payload.begin(), m.payload.end());
    remaining_ = h.remaining_data_length;
    if (remaining_ == 0) {
        completed_.swap(buffer_);
        buffer_.clear();
        out.message = Bytes(completed_);
        out.invalidated_token = std::exchange(token_, std::nullopt);
    }
    return out;
}

// ---- buffer descriptors ----

Result<std::vector<BufferDescriptorV1>> parse_buffer_descriptors(Bytes data) {
    if (data.empty() || data.size() % kBufferDescriptorV1Size != 0)
        return Error(NtStatus::InvalidParameter);
    ByteReader r(data);
    std::vector<BufferDescriptorV1> list;
    list.reserve(data.size() / kBufferDescriptorV1Size);
    while (r.remaining() > 0) {
        BufferDescriptorV1 d;
        DAX_TRY(d.offset, r.u64());
        DAX_TRY(d.token, r.u32());
        DAX_TRY(d.length, r.u32());
        list.push_back(d);
    }
    return list;
}

void write_buffer_descriptors(std::span<const BufferDescriptorV1> list, ByteVector& out) {
    ByteWriter w(out, out.size());
    for (const auto& d : list) {
        w.u64(d.offset);
        w.u32(d.token);
        w.u32(d.length);
    }
}

uint64_t total_length(std::span<const BufferDescriptorV1> list) {
    uint64_t n = 0;
    for (const auto& d : list)
        n += d.length;  // at most 2^32 elements of < 2^32: no overflow
    return n;
}

Result<std::vector<BufferDescriptorV1>> select_range(std::span<const BufferDescriptorV1> list,
                                                     uint64_t offset, uint64_t length) {
    if (offset > UINT64_MAX - length || offset + length > total_length(list))
        return Error(NtStatus::InvalidParameter);
    std::vector<BufferDescriptorV1> out;
    uint64_t skip = offset;
    uint64_t left = length;
    for (const auto& d : list) {
        if (left == 0) break;
        if (skip >= d.length) {  // also skips zero-length elements
            skip -= d.length;
            continue;
        }
        if (d.offset > UINT64_MAX - skip) return Error(NtStatus::InvalidParameter);
        uint32_t take = uint32_t(std::min<uint64_t>(d.length - skip, left));
        out.push_back(BufferDescriptorV1{d.offset + skip, d.token, take});
        left -= take;
        skip = 0;
    }
    return out;
}

}  // namespace daxsmbd::smbdirect
