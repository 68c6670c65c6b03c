#include "protocol/query_directory.h"

namespace daxsmbd::protocol {

Result<QueryDirectoryRequest> QueryDirectoryRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    QueryDirectoryRequest v;
    DAX_TRY(v.file_information_class, r.u8());
    DAX_TRY(v.flags, r.u8());
    DAX_TRY(v.file_index, r.u32());
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(auto name_offset, r.u16());
    DAX_TRY(auto name_length, r.u16());
    DAX_TRY(v.output_buffer_length, r.u32());
    if (name_length % 2 != 0) return Error(NtStatus::InvalidParameter);
    DAX_TRY(auto name, variable_field(r, name_offset, name_length, kBufferOffset));
    DAX_TRY(v.pattern, utf16le_to_utf8(name));
    return v;
}

void QueryDirectoryRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(file_information_class);
    w.u8(flags);
    w.u32(file_index);
    write_file_id(w, file_id);
    size_t name_pos = w.size();
    w.u16(0);
    w.u16(0);
    w.u32(output_buffer_length);
    if (pattern.empty()) {
        w.u8(0);  // the Buffer is at least one byte; FileNameOffset/Length stay 0
        return;
    }
    size_t start = w.size();
    w.patch_u16(name_pos, uint16_t(w.offset_from_base()));
    utf8_to_utf16le(pattern, w);
    w.patch_u16(name_pos + 2, uint16_t(w.size() - start));
}

Result<QueryDirectoryResponse> QueryDirectoryResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_TRY(auto offset, r.u16());
    DAX_TRY(auto length, r.u32());
    QueryDirectoryResponse v;
    DAX_TRY(v.buffer, variable_field(r, offset, length, kBufferOffset));
    return v;
}

void QueryDirectoryResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(uint16_t(kBufferOffset));
    w.u32(uint32_t(buffer.size()));
    w.bytes(buffer);
}

}  // namespace daxsmbd::protocol
