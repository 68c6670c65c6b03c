#include "protocol/query_info.h"

namespace daxsmbd::protocol {

Result<QueryInfoRequest> QueryInfoRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    QueryInfoRequest v;
    DAX_TRY(v.info_type, r.u8());
    DAX_TRY(v.file_info_class, r.u8());
    DAX_TRY(v.output_buffer_length, r.u32());
    DAX_TRY(auto in_offset, r.u16());
    DAX_CHECK(r.skip(2));  // Reserved
    DAX_TRY(auto in_length, r.u32());
    DAX_TRY(v.additional_information, r.u32());
    DAX_TRY(v.flags, r.u32());
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(v.input, variable_field(r, in_offset, in_length, kBufferOffset));
    return v;
}

void QueryInfoRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(info_type);
    w.u8(file_info_class);
    w.u32(output_buffer_length);
    size_t in_pos = w.size();
    w.u16(0);
    w.u16(0);
    w.u32(uint32_t(input.size()));
    w.u32(additional_information);
    w.u32(flags);
    write_file_id(w, file_id);
    if (input.empty()) {
        w.u8(0);  // the Buffer is at least one byte; InputBufferOffset stays 0
        return;
    }
    w.patch_u16(in_pos, uint16_t(w.offset_from_base()));
    w.bytes(input);
}

Result<QueryInfoResponse> QueryInfoResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_TRY(auto offset, r.u16());
    DAX_TRY(auto length, r.u32());
    QueryInfoResponse v;
    DAX_TRY(v.buffer, variable_field(r, offset, length, kBufferOffset));
    return v;
}

void QueryInfoResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(uint16_t(kBufferOffset));
    w.u32(uint32_t(buffer.size()));
    w.bytes(buffer);
}

}  // namespace daxsmbd::protocol
