#include "protocol/dcerpc.h"

#include <algorithm>
#include <cstdio>

namespace daxsmbd::protocol::rpc {

namespace {

// The first eight wire octets of the bind time feature negotiation syntax uuid
// 6CB71C2C-9812-4540-xxxx-xxxxxxxxxxxx (MS-RPCE 3.3.1.5.3).
constexpr std::array<uint8_t, 8> kBtfnPrefix = {0x2c, 0x1c, 0xb7, 0x6c, 0x12, 0x98, 0x40, 0x45};

// A PDU body ends where the authentication padding begins; with auth_length > 0 the
// sec_trailer starts at frag_length - auth_length - 8 (MS-RPCE 2.2.2.11).
struct Frame {
    CommonHeader header;
    Bytes pdu;        // exactly frag_length bytes
    size_t body_end;  // offset of the end of the PDU body (stub data) inside pdu
    std::optional<AuthVerifier> auth;
};

Result<Frame> open_frame(Bytes data, size_t min_body_start) {
    DAX_TRY(auto h, CommonHeader::parse(data));
    if (data.size() < h.frag_length) return Error(NtStatus::InvalidParameter);
    Frame f{h, data.first(h.frag_length), h.frag_length, std::nullopt};
    if (h.frag_length < min_body_start) return Error(NtStatus::InvalidParameter);
    if (h.auth_length != 0) {
        size_t tail = size_t(h.auth_length) + kSecTrailerSize;
        if (tail > h.frag_length - min_body_start) return Error(NtStatus::InvalidParameter);
        size_t trailer = h.frag_length - tail;
        ByteReader r(f.pdu);
        DAX_CHECK(r.seek(trailer));
        AuthVerifier a;
        DAX_TRY(a.auth_type, r.u8());
        DAX_TRY(a.auth_level, r.u8());
        DAX_TRY(a.auth_pad_length, r.u8());
        DAX_TRY(a.auth_reserved, r.u8());
        DAX_TRY(a.auth_context_id, r.u32());
        DAX_TRY(a.auth_value, r.bytes(h.auth_length));
        if (a.auth_pad_length > trailer - min_body_start) return Error(NtStatus::InvalidParameter);
        f.body_end = trailer - a.auth_pad_length;
        f.auth = a;
    }
    return f;
}

Status expect_ptype(const CommonHeader& h, PType a, PType b) {
    if (h.ptype != a && h.ptype != b) return Error(NtStatus::InvalidParameter);
    return {};
}

// Writes the header with a frag_length placeholder; finish() patches the lengths.
size_t begin_pdu(ByteWriter& w, CommonHeader h) {
    size_t at = w.size();
    h.frag_length = 0;
    h.serialize(w);
    return at;
}

void finish_pdu(ByteWriter& w, size_t start, uint16_t auth_length) {
    w.patch_u16(start + 8, uint16_t(w.size() - start));
    w.patch_u16(start + 10, auth_length);
}

void write_auth(ByteWriter& w, size_t pdu_start, const std::optional<AuthVerifier>& auth) {
    if (!auth) return;
    // Pad the body so that the sec_trailer starts 4-aligned, as Windows and impacket do.
    size_t pad = (4 - (w.size() - pdu_start) % 4) % 4;
    w.zeros(pad);
    w.u8(auth->auth_type);
    w.u8(auth->auth_level);
    w.u8(uint8_t(pad));
    w.u8(auth->auth_reserved);
    w.u32(auth->auth_context_id);
    w.bytes(auth->auth_value);
}

}  // namespace

std::string uuid_to_string(const Uuid& u) {
    char buf[37];
    auto b = [&](size_t i) { return unsigned(uint8_t(u[i])); };
    std::snprintf(buf, sizeof buf,
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b(3),
                  b(2), b(1), b(0), b(5), b(4), b(7), b(6), b(8), b(9), b(10), b(11), b(12), b(13),
                  b(14), b(15));
    return buf;
}

Result<SyntaxId> SyntaxId::read(ByteReader& r) {
    SyntaxId s;
    DAX_TRY(s.uuid, r.array<16>());
    DAX_TRY(s.version_major, r.u16());
    DAX_TRY(s.version_minor, r.u16());
    return s;
}

void SyntaxId::write(ByteWriter& w) const {
    w.bytes(uuid);
    w.u16(version_major);
    w.u16(version_minor);
}

std::optional<uint16_t> bind_time_features(const SyntaxId& s) {
    for (size_t i = 0; i < kBtfnPrefix.size(); ++i)
        if (uint8_t(s.uuid[i]) != kBtfnPrefix[i]) return std::nullopt;
    if (s.version_major != 1 || s.version_minor != 0) return std::nullopt;
    return uint16_t(uint8_t(s.uuid[8]) | uint8_t(s.uuid[9]) << 8);
}

bool CommonHeader::drep_supported() const {
    // Integer representation lives in the high nibble of byte 0 (1 = little-endian), character
    // representation in the low nibble (0 = ASCII), floats in byte 1 (0 = IEEE).
    return (packed_drep[0] & 0xF0) == 0x10 && (packed_drep[0] & 0x0F) == 0 && packed_drep[1] == 0;
}

Result<CommonHeader> CommonHeader::parse(Bytes pdu) {
    ByteReader r(pdu);
    CommonHeader h;
    DAX_TRY(h.rpc_vers, r.u8());
    DAX_TRY(h.rpc_vers_minor, r.u8());
    DAX_TRY(auto ptype, r.u8());
    h.ptype = PType(ptype);
    DAX_TRY(h.pfc_flags, r.u8());
    DAX_TRY(auto drep, r.array<4>());
    for (size_t i = 0; i < 4; ++i)
        h.packed_drep[i] = uint8_t(drep[i]);
    DAX_TRY(h.frag_length, r.u16());
    DAX_TRY(h.auth_length, r.u16());
    DAX_TRY(h.call_id, r.u32());
    if (h.frag_length < kCommonHeaderSize) return Error(NtStatus::InvalidParameter);
    return h;
}

void CommonHeader::serialize(ByteWriter& w) const {
    w.u8(rpc_vers);
    w.u8(rpc_vers_minor);
    w.u8(uint8_t(ptype));
    w.u8(pfc_flags);
    for (auto b : packed_drep)
        w.u8(b);
    w.u16(frag_length);
    w.u16(auth_length);
    w.u32(call_id);
}

// ---- bind / alter_context ----

Result<BindPdu> BindPdu::parse(Bytes data) {
    constexpr size_t kFixed = kCommonHeaderSize + 12;
    DAX_TRY(auto f, open_frame(data, kFixed));
    DAX_CHECK(expect_ptype(f.header, PType::Bind, PType::AlterContext));
    ByteReader r(f.pdu.first(f.body_end));
    DAX_CHECK(r.skip(kCommonHeaderSize));
    BindPdu b;
    b.header = f.header;
    b.auth = f.auth;
    DAX_TRY(b.max_xmit_frag, r.u16());
    DAX_TRY(b.max_recv_frag, r.u16());
    DAX_TRY(b.assoc_group_id, r.u32());
    DAX_TRY(uint8_t n, r.u8());
    DAX_CHECK(r.skip(3));  // reserved, reserved2
    b.contexts.reserve(n);
    for (uint8_t i = 0; i < n; ++i) {
        ContextElement c;
        DAX_TRY(c.context_id, r.u16());
        DAX_TRY(uint8_t nts, r.u8());
        DAX_CHECK(r.skip(1));
        DAX_TRY(c.abstract_syntax, SyntaxId::read(r));
        for (uint8_t t = 0; t < nts; ++t) {
            DAX_TRY(auto s, SyntaxId::read(r));
            c.transfer_syntaxes.push_back(s);
        }
        b.contexts.push_back(std::move(c));
    }
    return b;
}

ByteVector BindPdu::serialize() const {
    ByteVector out;
    ByteWriter w(out);
    size_t start = begin_pdu(w, header);
    w.u16(max_xmit_frag);
    w.u16(max_recv_frag);
    w.u32(assoc_group_id);
    w.u8(uint8_t(contexts.size()));
    w.zeros(3);
    for (const auto& c : contexts) {
        w.u16(c.context_id);
        w.u8(uint8_t(c.transfer_syntaxes.size()));
        w.u8(0);
        c.abstract_syntax.write(w);
        for (const auto& t : c.transfer_syntaxes)
            t.write(w);
    }
    write_auth(w, start, auth);
    finish_pdu(w, start, auth ? uint16_t(auth->auth_value.size()) : 0);
    return out;
}

// ---- bind_ack / alter_context_resp ----

Result<BindAckPdu> BindAckPdu::parse(Bytes data) {
    DAX_TRY(auto f, open_frame(data, kCommonHeaderSize + 10));
    DAX_CHECK(expect_ptype(f.header, PType::BindAck, PType::AlterContextResp));
    ByteReader r(f.pdu.first(f.body_end));
    DAX_CHECK(r.skip(kCommonHeaderSize));
    BindAckPdu a;
    a.header = f.header;
    DAX_TRY(a.max_xmit_frag, r.u16());
    DAX_TRY(a.max_recv_frag, r.u16());
    DAX_TRY(a.assoc_group_id, r.u32());
    DAX_TRY(uint16_t len, r.u16());
    DAX_TRY(Bytes addr, r.bytes(len));
    if (!addr.empty() && addr.back() == std::byte{0}) addr = addr.first(addr.size() - 1);
    a.secondary_address.assign(reinterpret_cast<const char*>(addr.data()), addr.size());
    DAX_CHECK(r.skip((4 - r.position() % 4) % 4));  // port_any_t is followed by 4-alignment
    DAX_TRY(uint8_t n, r.u8());
    DAX_CHECK(r.skip(3));
    for (uint8_t i = 0; i < n; ++i) {
        ContextResult c;
        DAX_TRY(c.result, r.u16());
        DAX_TRY(c.reason, r.u16());
        DAX_TRY(c.transfer_syntax, SyntaxId::read(r));
        a.results.push_back(c);
    }
    return a;
}

ByteVector BindAckPdu::serialize() const {
    ByteVector out;
    ByteWriter w(out);
    size_t start = begin_pdu(w, header);
    w.u16(max_xmit_frag);
    w.u16(max_recv_frag);
    w.u32(assoc_group_id);
    // port_any_t: the length counts the NUL; an empty address is sent as length 0.
    if (secondary_address.empty()) {
        w.u16(0);
    } else {
        w.u16(uint16_t(secondary_address.size() + 1));
        w.bytes(as_bytes(secondary_address));
        w.u8(0);
    }
    w.zeros((4 - (w.size() - start) % 4) % 4);
    w.u8(uint8_t(results.size()));
    w.zeros(3);
    for (const auto& c : results) {
        w.u16(c.result);
        w.u16(c.reason);
        c.transfer_syntax.write(w);
    }
    finish_pdu(w, start, 0);
    return out;
}

// ---- bind_nak ----

Result<BindNakPdu> BindNakPdu::parse(Bytes data) {
    DAX_TRY(auto f, open_frame(data, kCommonHeaderSize + 2));
    if (f.header.ptype != PType::BindNak) return Error(NtStatus::InvalidParameter);
    ByteReader r(f.pdu.first(f.body_end));
    DAX_CHECK(r.skip(kCommonHeaderSize));
    BindNakPdu n;
    n.header = f.header;
    n.versions.clear();
    DAX_TRY(n.provider_reject_reason, r.u16());
    // The version list is optional in practice (Windows omits it for some reasons).
    if (r.remaining() == 0) return n;
    DAX_TRY(uint8_t count, r.u8());
    for (uint8_t i = 0; i < count; ++i) {
        Version v;
        DAX_TRY(v.major, r.u8());
        DAX_TRY(v.minor, r.u8());
        n.versions.push_back(v);
    }
    return n;
}

ByteVector BindNakPdu::serialize() const {
    ByteVector out;
    ByteWriter w(out);
    size_t start = begin_pdu(w, header);
    w.u16(provider_reject_reason);
    w.u8(uint8_t(versions.size()));
    for (const auto& v : versions) {
        w.u8(v.major);
        w.u8(v.minor);
    }
    w.zeros((4 - (w.size() - start) % 4) % 4);
    finish_pdu(w, start, 0);
    return out;
}

// ---- request / response / fault ----

Result<RequestPdu> RequestPdu::parse(Bytes data) {
    DAX_TRY(auto h, CommonHeader::parse(data));
    size_t fixed = kRequestHeaderSize + ((h.pfc_flags & pfc::kObjectUuid) ? 16 : 0);
    DAX_TRY(auto f, open_frame(data, fixed));
    if (f.header.ptype != PType::Request) return Error(NtStatus::InvalidParameter);
    ByteReader r(f.pdu.first(f.body_end));
    DAX_CHECK(r.skip(kCommonHeaderSize));
    RequestPdu q;
    q.header = f.header;
    q.auth = f.auth;
    DAX_TRY(q.alloc_hint, r.u32());
    DAX_TRY(q.context_id, r.u16());
    DAX_TRY(q.opnum, r.u16());
    if (h.pfc_flags & pfc::kObjectUuid) {
        DAX_TRY(auto u, r.array<16>());
        q.object = u;
    }
    q.stub = r.rest();
    return q;
}

ByteVector RequestPdu::serialize() const {
    ByteVector out;
    ByteWriter w(out);
    CommonHeader h = header;
    h.ptype = PType::Request;
    if (object)
        h.pfc_flags |= pfc::kObjectUuid;
    else
        h.pfc_flags &= uint8_t(~pfc::kObjectUuid);
    size_t start = begin_pdu(w, h);
    w.u32(alloc_hint);
    w.u16(context_id);
    w.u16(opnum);
    if (object) w.bytes(*object);
    w.bytes(stub);
    write_auth(w, start, auth);
    finish_pdu(w, start, auth ? uint16_t(auth->auth_value.size()) : 0);
    return out;
}

Result<ResponsePdu> ResponsePdu::parse(Bytes data) {
    DAX_TRY(auto f, open_frame(data, kResponseHeaderSize));
    if (f.header.ptype != PType::Response) return Error(NtStatus::InvalidParameter);
    ByteReader r(f.pdu.first(f.body_end));
    DAX_CHECK(r.skip(kCommonHeaderSize));
    ResponsePdu p;
    p.header = f.header;
    DAX_TRY(p.alloc_hint, r.u32());
    DAX_TRY(p.context_id, r.u16());
    DAX_TRY(p.cancel_count, r.u8());
    DAX_CHECK(r.skip(1));
    p.stub = r.rest();
    return p;
}

ByteVector ResponsePdu::serialize() const {
    ByteVector out;
    ByteWriter w(out);
    CommonHeader h = header;
    h.ptype = PType::Response;
    size_t start = begin_pdu(w, h);
    w.u32(alloc_hint);
    w.u16(context_id);
    w.u8(cancel_count);
    w.u8(0);
    w.bytes(stub);
    finish_pdu(w, start, 0);
    return out;
}

Result<FaultPdu> FaultPdu::parse(Bytes data) {
    DAX_TRY(auto f, open_frame(data, kCommonHeaderSize + 12));
    if (f.header.ptype != PType::Fault) return Error(NtStatus::InvalidParameter);
    ByteReader r(f.pdu.first(f.body_end));
    DAX_CHECK(r.skip(kCommonHeaderSize));
    FaultPdu p;
    p.header = f.header;
    DAX_TRY(p.alloc_hint, r.u32());
    DAX_TRY(p.context_id, r.u16());
    DAX_TRY(p.cancel_count, r.u8());
    DAX_TRY(p.flags, r.u8());
    DAX_TRY(p.status, r.u32());
    return p;
}

ByteVector FaultPdu::serialize() const {
    ByteVector out;
    ByteWriter w(out);
    CommonHeader h = header;
    h.ptype = PType::Fault;
    size_t start = begin_pdu(w, h);
    w.u32(alloc_hint);
    w.u16(context_id);
    w.u8(cancel_count);
    w.u8(flags);
    w.u32(status);
    w.u32(0);  // reserved: Windows and Samba send a 32-byte fault
    finish_pdu(w, start, 0);
    return out;
}

uint32_t fault_status_for(NtStatus s) {
    switch (s) {
        case NtStatus::NotImplemented:
            return fault::kOpRngError;
        case NtStatus::InvalidParameter:
        case NtStatus::BadData:
            return fault::kBadStubData;
        case NtStatus::AccessDenied:
            return fault::kAccessDenied;
        case NtStatus::NoMemory:
        case NtStatus::InsufficientResources:
            return fault::kRemoteNoMemory;
        default:
            return fault::kFaultUnspec;
    }
}

std::vector<ByteVector> build_response_fragments(uint32_t call_id, uint16_t context_id, Bytes stub,
                                                 uint16_t max_frag) {
    // Room for the header and at least 8 stub bytes per fragment.
    size_t frag = std::max<size_t>(max_frag, kResponseHeaderSize + 8);
    size_t per_fragment = (frag - kResponseHeaderSize) / 8 * 8;
    std::vector<ByteVector> out;
    size_t offset = 0;
    do {
        size_t n = std::min(per_fragment, stub.size() - offset);
        ResponsePdu p;
        p.header.call_id = call_id;
        p.header.pfc_flags = 0;
        if (offset == 0) p.header.pfc_flags |= pfc::kFirstFrag;
        if (offset + n == stub.size()) p.header.pfc_flags |= pfc::kLastFrag;
        p.alloc_hint = uint32_t(stub.size() - offset);
        p.context_id = context_id;
        p.stub = stub.subspan(offset, n);
        out.push_back(p.serialize());
        offset += n;
    } while (offset < stub.size());
    return out;
}

// ---- RequestAssembler ----

Result<std::optional<AssembledRequest>> RequestAssembler::add(const RequestPdu& pdu) {
    bool first = pdu.header.pfc_flags & pfc::kFirstFrag;
    bool last = pdu.header.pfc_flags & pfc::kLastFrag;
    if (first) {
        if (in_progress_) {  // a new call before the previous one was complete
            reset();
            return Error(NtStatus::InvalidParameter);
        }
        current_ = AssembledRequest{pdu.header.call_id, pdu.context_id, pdu.opnum, pdu.object, {}};
        in_progress_ = true;
    } else if (!in_progress_ || pdu.header.call_id != current_.call_id ||
               pdu.context_id != current_.context_id || pdu.opnum != current_.opnum) {
        reset();
        return Error(NtStatus::InvalidParameter);
    }
    if (pdu.stub.size() > max_stub_ - current_.stub.size()) {
        reset();
        return Error(NtStatus::InvalidParameter);
    }
    current_.stub.insert(current_.stub.end(), pdu.stub.begin(), pdu.stub.end());
    if (!last) return std::optional<AssembledRequest>{};
    AssembledRequest done = std::move(current_);
    reset();
    return std::optional<AssembledRequest>{std::move(done)};
}

// ---- PipeSession ----

PipeSession::PipeSession(Interface iface) : PipeSession(std::move(iface), Options{}) {}

PipeSession::PipeSession(Interface iface, Options options)
    : iface_(std::move(iface)),
      options_(options),
      frag_(std::max(options.max_frag, kMustRecvFragSize)),
      assembler_(options.max_request_stub) {}

Status PipeSession::write(Bytes data) {
    if (broken_) return Error(NtStatus::PipeBroken);
    if (out_bytes_ > options_.max_pending_output) return Error(NtStatus::InsufficientResources);
    in_.insert(in_.end(), data.begin(), data.end());
    size_t consumed = 0;
    while (!broken_ && in_.size() - consumed >= kCommonHeaderSize) {
        Bytes rest = Bytes(in_).subspan(consumed);
        auto h = CommonHeader::parse(rest);
        // frag_length < 16 or above what we accept: the stream cannot be framed any more.
        if (!h || h->frag_length > std::max<size_t>(frag_, kDefaultMaxFrag)) {
            protocol_error(h ? h->call_id : 0);
            break;
        }
        if (rest.size() < h->frag_length) break;  // rest of the PDU comes with the next write
        process_pdu(rest.first(h->frag_length));
        consumed += h->frag_length;
    }
    if (broken_)
        in_.clear();
    else
        in_.erase(in_.begin(), in_.begin() + std::ptrdiff_t(consumed));
    return {};
}

ByteVector PipeSession::read(size_t max) {
    ByteVector result;
    if (out_.empty() || max == 0) return result;
    const ByteVector& front = out_.front();
    size_t n = std::min(max, front.size() - out_front_offset_);
    auto begin = front.begin() + std::ptrdiff_t(out_front_offset_);
    result.assign(begin, begin + std::ptrdiff_t(n));
    out_front_offset_ += n;
    out_bytes_ -= n;
    if (out_front_offset_ == front.size()) {
        out_.pop_front();
        out_front_offset_ = 0;
    }
    return result;
}

PipeSession::ReadResult PipeSession::read_message(size_t max) {
    ReadResult r;
    r.overflow = pending_size() > max;
    r.data = read(max);
    return r;
}

Result<PipeSession::ReadResult> PipeSession::transceive(Bytes in, size_t max_out) {
    DAX_CHECK(write(in));
    return read_message(max_out);
}

ByteVector PipeSession::peek(size_t max) const {
    if (out_.empty()) return {};
    const ByteVector& front = out_.front();
    auto begin = front.begin() + std::ptrdiff_t(out_front_offset_);
    size_t n = std::min(max, front.size() - out_front_offset_);
    return ByteVector(begin, begin + std::ptrdiff_t(n));
}

size_t PipeSession::pending_size() const {
    return out_.empty() ? 0 : out_.front().size() - out_front_offset_;
}

void PipeSession::queue(ByteVector pdu) {
    out_bytes_ += pdu.size();
    out_.push_back(std::move(pdu));
}

void PipeSession::queue_fault(uint32_t call_id, uint16_t context_id, uint32_t status,
                              uint8_t extra_flags) {
    FaultPdu f;
    f.header.call_id = call_id;
    f.header.pfc_flags = pfc::kFirstFrag | pfc::kLastFrag | extra_flags;
    f.context_id = context_id;
    f.status = status;
    queue(f.serialize());
}

void PipeSession::queue_bind_nak(uint32_t call_id, uint16_t reason) {
    BindNakPdu n;
    n.header.ptype = PType::BindNak;
    n.header.call_id = call_id;
    n.provider_reject_reason = reason;
    queue(n.serialize());
}

void PipeSession::protocol_error(uint32_t call_id) {
    // C706 11.2 / MS-RPCE 3.3.3: a protocol error ends the association. Over a named pipe the
    // best we can do is a final fault and refusing further input.
    queue_fault(call_id, 0, fault::kProtoError, pfc::kDidNotExecute);
    broken_ = true;
    assembler_.reset();
}

void PipeSession::process_pdu(Bytes pdu) {
    auto h = CommonHeader::parse(pdu);
    if (!h) {
        protocol_error(0);
        return;
    }
    switch (h->ptype) {
        case PType::Bind:
        case PType::AlterContext:
            on_bind(pdu, *h);
            return;
        case PType::Request:
            on_request(pdu, *h);
            return;
        case PType::Auth3:     // only meaningful with a security provider, which we never ack
        case PType::CoCancel:  // calls run to completion synchronously: nothing to cancel
            return;
        case PType::Orphaned:  // MS-RPCE 3.3.1.5.10: the client abandoned a fragmented call
            assembler_.reset();
            return;
        default:  // server-to-client PDUs and connectionless types
            protocol_error(h->call_id);
            return;
    }
}

std::vector<ContextResult> PipeSession::negotiate_contexts(
    const std::vector<ContextElement>& contexts) {
    std::vector<ContextResult> results;
    bool btfn_seen = false;
    for (const auto& c : contexts) {
        ContextResult r;
        r.result = result::kProviderRejection;
        // MS-RPCE 3.3.1.5.3: the feature negotiation element carries exactly one transfer
        // syntax; we support none of the features, so the response bitmask is 0.
        auto features = c.transfer_syntaxes.size() == 1 ? bind_time_features(c.transfer_syntaxes[0])
                                                        : std::nullopt;
        if (features && !btfn_seen) {
            btfn_seen = true;
            r.result = result::kNegotiateAck;
            r.reason = 0;
            results.push_back(r);
            continue;
        }
        if (c.abstract_syntax != iface_.abstract_syntax) {
            r.reason = provider_reason::kAbstractSyntaxNotSupported;
            results.push_back(r);
            continue;
        }
        bool ndr = std::find(c.transfer_syntaxes.begin(), c.transfer_syntaxes.end(),
                             kNdr20Syntax) != c.transfer_syntaxes.end();
        if (!ndr) {
            r.reason = provider_reason::kProposedTransferSyntaxesNotSupported;
            results.push_back(r);
            continue;
        }
        bool known = std::find(contexts_.begin(), contexts_.end(), c.context_id) != contexts_.end();
        if (!known && contexts_.size() >= options_.max_contexts) {
            r.reason = provider_reason::kLocalLimitExceeded;
            results.push_back(r);
            continue;
        }
        if (!known) contexts_.push_back(c.context_id);
        r.result = result::kAcceptance;
        r.reason = 0;
        r.transfer_syntax = kNdr20Syntax;
        results.push_back(r);
    }
    return results;
}

void PipeSession::on_bind(Bytes pdu, const CommonHeader& h) {
    bool alter = h.ptype == PType::AlterContext;
    // alter_context before bind, or a second bind (C706 11.2.4: one bind per association),
    // cannot be answered sensibly.
    if (alter && !bound_) return protocol_error(h.call_id);
    if (!h.version_supported()) {
        if (alter) return protocol_error(h.call_id);
        return queue_bind_nak(h.call_id, reject_reason::kProtocolVersionNotSupported);
    }
    if (!h.drep_supported()) {
        if (alter) return protocol_error(h.call_id);
        return queue_bind_nak(h.call_id, reject_reason::kNotSpecified);
    }
    if (!alter && bound_)
        return queue_bind_nak(h.call_id, reject_reason::kProtocolVersionNotSupported);
    auto bind = BindPdu::parse(pdu);
    if (!bind || bind->contexts.empty()) {
        // MS-RPCE 2.2.2.5: reason 4 also covers "protocol error while processing rpc_bind".
        if (alter) return protocol_error(h.call_id);
        return queue_bind_nak(h.call_id, reject_reason::kProtocolVersionNotSupported);
    }
    if (bind->auth) {
        // No security provider on our pipes: the SMB session already authenticated the caller.
        if (alter) return queue_fault(h.call_id, 0, fault::kAccessDenied, pfc::kDidNotExecute);
        return queue_bind_nak(h.call_id, reject_reason::kAuthenticationTypeNotRecognized);
    }

    BindAckPdu ack;
    ack.header.ptype = alter ? PType::AlterContextResp : PType::BindAck;
    ack.header.call_id = h.call_id;
    if (!alter) {
        // C706 12.6.4.3: fragments sent never exceed the peer's max_recv_frag and we accept what
        // we announce; clamp to our own limit and to the C706 minimum every peer must take.
        uint16_t client = std::min(bind->max_xmit_frag, bind->max_recv_frag);
        frag_ = std::max(kMustRecvFragSize,
                         std::min(client, std::max(options_.max_frag, kMustRecvFragSize)));
        assoc_group_id_ =
            bind->assoc_group_id != 0 ? bind->assoc_group_id : options_.assoc_group_id;
        // MS-RPCE 3.3.1.5.5: the secondary address is the endpoint itself.
        ack.secondary_address = iface_.secondary_address;
    }
    // Windows and Samba send one value for both sizes; Samba's client copies max_xmit_frag
    // into its own send size, so they must not differ.
    ack.max_xmit_frag = frag_;
    ack.max_recv_frag = frag_;
    ack.assoc_group_id = assoc_group_id_;
    ack.results = negotiate_contexts(bind->contexts);
    bound_ = true;
    queue(ack.serialize());
}

void PipeSession::on_request(Bytes pdu, const CommonHeader& h) {
    if (!bound_ || !h.version_supported() || !h.drep_supported()) return protocol_error(h.call_id);
    auto req = RequestPdu::parse(pdu);
    if (!req || req->auth) return protocol_error(h.call_id);
    auto call = assembler_.add(*req);
    if (!call) return protocol_error(h.call_id);
    if (!call->has_value()) return;  // more fragments to come
    run_call(std::move(**call));
}

void PipeSession::run_call(AssembledRequest call) {
    if (std::find(contexts_.begin(), contexts_.end(), call.context_id) == contexts_.end())
        return queue_fault(call.call_id, call.context_id, fault::kUnkIf, pfc::kDidNotExecute);
    auto stub = iface_.dispatch ? iface_.dispatch(call.opnum, call.stub)
                                : Result<ByteVector>(Error(NtStatus::NotImplemented));
    if (!stub) {
        // Unknown opnum and undecodable stub data are detected before the manager routine runs.
        bool not_run = stub.status() == NtStatus::NotImplemented ||
                       stub.status() == NtStatus::InvalidParameter;
        return queue_fault(call.call_id, call.context_id, fault_status_for(stub.status()),
                           not_run ? pfc::kDidNotExecute : 0);
    }
    for (auto& f : build_response_fragments(call.call_id, call.context_id, *stub, frag_))
        queue(std::move(f));
}

}  // namespace daxsmbd::protocol::rpc
