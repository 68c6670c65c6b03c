#include "protocol/set_info.h"

namespace daxsmbd::protocol {

Result<SetInfoRequest> SetInfoRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    SetInfoRequest v;
    DAX_TRY(v.info_type, r.u8());
    DAX_TRY(v.file_info_class, r.u8());
    DAX_TRY(auto length, r.u32());
    DAX_TRY(auto offset, r.u16());
    DAX_CHECK(r.skip(2));  // Reserved
    DAX_TRY(v.additional_information, r.u32());
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(v.buffer, variable_field(r, offset, length, kBufferOffset));
    return v;
}

void SetInfoRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(info_type);
    w.u8(file_info_class);
    w.u32(uint32_t(buffer.size()));
    size_t off_pos = w.size();
    w.u16(0);
    w.u16(0);
    w.u32(additional_information);
    write_file_id(w, file_id);
    if (buffer.empty()) {
        w.u8(0);  // the Buffer is at least one byte
        return;
    }
    w.patch_u16(off_pos, uint16_t(w.offset_from_base()));
    w.bytes(buffer);
}

Result<SetInfoResponse> SetInfoResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    return SetInfoResponse{};
}

void SetInfoResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
}

}  // namespace daxsmbd::protocol
