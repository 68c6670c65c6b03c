#include "protocol/session_setup.h"

namespace daxsmbd::protocol {

Result<SessionSetupRequest> SessionSetupRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    if (size != kStructureSize) return Error(NtStatus::InvalidParameter);
    SessionSetupRequest req;
    DAX_TRY(req.flags, r.u8());
    DAX_TRY(req.security_mode, r.u8());
    DAX_TRY(req.capabilities, r.u32());
    DAX_TRY(req.channel, r.u32());
    DAX_TRY(auto offset, r.u16());
    DAX_TRY(auto length, r.u16());
    DAX_TRY(req.previous_session_id, r.u64());
    DAX_TRY(req.security_buffer, variable_field(r, offset, length, kSecurityBufferOffset));
    return req;
}

void SessionSetupRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(flags);
    w.u8(security_mode);
    w.u32(capabilities);
    w.u32(channel);
    w.u16(kSecurityBufferOffset);
    w.u16(uint16_t(security_buffer.size()));
    w.u64(previous_session_id);
    w.bytes(security_buffer);
}

Result<SessionSetupResponse> SessionSetupResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    if (size != kStructureSize) return Error(NtStatus::InvalidParameter);
    SessionSetupResponse rsp;
    DAX_TRY(rsp.session_flags, r.u16());
    DAX_TRY(auto offset, r.u16());
    DAX_TRY(auto length, r.u16());
    DAX_TRY(auto buf, variable_field(r, offset, length, kSecurityBufferOffset));
    rsp.security_buffer.assign(buf.begin(), buf.end());
    return rsp;
}

void SessionSetupResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(session_flags);
    w.u16(kSecurityBufferOffset);
    w.u16(uint16_t(security_buffer.size()));
    w.bytes(security_buffer);
}

}  // namespace daxsmbd::protocol
