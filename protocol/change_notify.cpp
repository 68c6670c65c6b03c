#include "protocol/change_notify.h"

namespace daxsmbd::protocol {

Result<ChangeNotifyRequest> ChangeNotifyRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    ChangeNotifyRequest v;
    DAX_TRY(v.flags, r.u16());
    DAX_TRY(v.output_buffer_length, r.u32());
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(v.completion_filter, r.u32());
    DAX_CHECK(r.skip(4));  // Reserved
    return v;
}

void ChangeNotifyRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(flags);
    w.u32(output_buffer_length);
    write_file_id(w, file_id);
    w.u32(completion_filter);
    w.u32(0);
}

Result<ChangeNotifyResponse> ChangeNotifyResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_TRY(auto offset, r.u16());
    DAX_TRY(auto length, r.u32());
    ChangeNotifyResponse v;
    if (length != 0) {
        if (offset < kBufferOffset) return Error(NtStatus::InvalidParameter);
        DAX_TRY(v.buffer, r.slice(offset, length));
    }
    return v;
}

void ChangeNotifyResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(uint16_t(kBufferOffset));
    w.u32(uint32_t(buffer.size()));
    w.bytes(buffer);
}

}  // namespace daxsmbd::protocol
