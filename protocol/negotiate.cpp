#include "protocol/negotiate.h"

#include <algorithm>

namespace daxsmbd::protocol {

bool NegotiateRequest::offers(uint16_t d) const {
    return std::find(dialects.begin(), dialects.end(), d) != dialects.end();
}

Result<NegotiateRequest> NegotiateRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    if (size != kStructureSize) return Error(NtStatus::InvalidParameter);
    NegotiateRequest req;
    DAX_TRY(auto dialect_count, r.u16());
    DAX_TRY(req.security_mode, r.u16());
    DAX_CHECK(r.skip(2));  // Reserved
    DAX_TRY(req.capabilities, r.u32());
    DAX_TRY(req.client_guid, r.array<16>());
    DAX_TRY(auto context_offset, r.u32());
    DAX_TRY(auto context_count, r.u16());
    DAX_CHECK(r.skip(2));                                              // Reserved2
    if (dialect_count == 0) return Error(NtStatus::InvalidParameter);  // MS-SMB2 3.3.5.4
    req.dialects.reserve(dialect_count);
    for (uint16_t i = 0; i < dialect_count; ++i) {
        DAX_TRY(auto d, r.u16());
        req.dialects.push_back(d);
    }
    // MS-SMB2 2.2.3: the 8 bytes at body offset 28 are NegotiateContextOffset/Count/Reserved2
    // only when 0x0311 is listed, else ClientStartTime (ignored).
    if (req.offers(dialect::k311) && context_count > 0) {
        DAX_TRY(req.contexts, parse_negotiate_contexts(msg, context_offset, context_count));
    }
    return req;
}

void NegotiateRequest::serialize(ByteWriter& w) const {
    size_t body = w.size();
    w.u16(kStructureSize);
    w.u16(uint16_t(dialects.size()));
    w.u16(security_mode);
    w.u16(0);
    w.u32(capabilities);
    w.bytes(client_guid);
    w.u32(0);  // NegotiateContextOffset (patched) / ClientStartTime
    w.u16(0);  // NegotiateContextCount
    w.u16(0);  // Reserved2
    for (uint16_t d : dialects)
        w.u16(d);
    if (offers(dialect::k311) && !contexts.empty()) {
        uint32_t off = serialize_negotiate_contexts(contexts, w);
        w.patch_u32(body + 28, off);
        w.patch_u16(body + 32, uint16_t(contexts.size()));
    }
}

Result<NegotiateResponse> NegotiateResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    if (size != kStructureSize) return Error(NtStatus::InvalidParameter);
    NegotiateResponse rsp;
    DAX_TRY(rsp.security_mode, r.u16());
    DAX_TRY(rsp.dialect_revision, r.u16());
    DAX_TRY(auto context_count, r.u16());
    DAX_TRY(rsp.server_guid, r.array<16>());
    DAX_TRY(rsp.capabilities, r.u32());
    DAX_TRY(rsp.max_transact_size, r.u32());
    DAX_TRY(rsp.max_read_size, r.u32());
    DAX_TRY(rsp.max_write_size, r.u32());
    DAX_TRY(rsp.system_time, r.u64());
    DAX_TRY(rsp.server_start_time, r.u64());
    DAX_TRY(auto sec_offset, r.u16());
    DAX_TRY(auto sec_length, r.u16());
    DAX_TRY(auto context_offset, r.u32());
    if (sec_length > 0) {
        // The buffer may not overlap the header or the fixed part.
        if (sec_offset < kHeaderSize + 64) return Error(NtStatus::InvalidParameter);
        DAX_TRY(auto buf, r.slice(sec_offset, sec_length));
        rsp.security_buffer.assign(buf.begin(), buf.end());
    }
    // MS-SMB2 2.2.4: NegotiateContextCount/Offset are reserved unless the dialect is 0x0311.
    if (rsp.dialect_revision == dialect::k311 && context_count > 0) {
        DAX_TRY(rsp.contexts, parse_negotiate_contexts(msg, context_offset, context_count));
    }
    return rsp;
}

void NegotiateResponse::serialize(ByteWriter& w) const {
    size_t body = w.size();
    w.u16(kStructureSize);
    w.u16(security_mode);
    w.u16(dialect_revision);
    w.u16(0);  // NegotiateContextCount, patched for 3.1.1
    w.bytes(server_guid);
    w.u32(capabilities);
    w.u32(max_transact_size);
    w.u32(max_read_size);
    w.u32(max_write_size);
    w.u64(system_time);
    w.u64(server_start_time);
    w.u16(kSecurityBufferOffset);
    w.u16(uint16_t(security_buffer.size()));
    w.u32(0);  // NegotiateContextOffset, patched for 3.1.1
    w.bytes(security_buffer);
    if (dialect_revision == dialect::k311 && !contexts.empty()) {
        uint32_t off = serialize_negotiate_contexts(contexts, w);
        w.patch_u16(body + 6, uint16_t(contexts.size()));
        w.patch_u32(body + 60, off);
    }
}

}  // namespace daxsmbd::protocol
