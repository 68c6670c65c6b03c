#include "protocol/read.h"

namespace daxsmbd::protocol {

Result<ReadRequest> ReadRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    ReadRequest v;
    DAX_TRY(v.padding, r.u8());
    DAX_TRY(v.flags, r.u8());
    DAX_TRY(v.length, r.u32());
    DAX_TRY(v.offset, r.u64());
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(v.minimum_count, r.u32());
    DAX_TRY(v.channel, r.u32());
    DAX_TRY(v.remaining_bytes, r.u32());
    DAX_TRY(auto ci_offset, r.u16());
    DAX_TRY(auto ci_length, r.u16());
    DAX_TRY(v.channel_info, variable_field(r, ci_offset, ci_length, kBufferOffset));
    return v;
}

void ReadRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(padding);
    w.u8(flags);
    w.u32(length);
    w.u64(offset);
    write_file_id(w, file_id);
    w.u32(minimum_count);
    w.u32(channel);
    w.u32(remaining_bytes);
    if (channel_info.empty()) {
        w.u16(0);
        w.u16(0);
        w.u8(0);  // the Buffer is at least one byte
    } else {
        w.u16(uint16_t(w.offset_from_base() + 4));
        w.u16(uint16_t(channel_info.size()));
        w.bytes(channel_info);
    }
}

Result<ReadResponse> ReadResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    ReadResponse v;
    DAX_TRY(v.data_offset, r.u8());
    DAX_CHECK(r.skip(1));  // Reserved
    DAX_TRY(v.data_length, r.u32());
    DAX_TRY(v.data_remaining, r.u32());
    DAX_TRY(v.flags, r.u32());
    DAX_TRY(v.data, variable_field(r, v.data_offset, v.data_length, kDataOffset));
    return v;
}

void ReadResponse::serialize(ByteWriter& w) const {
    serialize_without_data(w, uint32_t(data.size()));
    w.bytes(data);
}

void ReadResponse::serialize_without_data(ByteWriter& w, uint32_t length) const {
    w.u16(kStructureSize);
    w.u8(kDataOffset);
    w.u8(0);  // Reserved
    w.u32(length);
    w.u32(data_remaining);
    w.u32(flags);
}

}  // namespace daxsmbd::protocol
