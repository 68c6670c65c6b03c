#include "protocol/write.h"

namespace daxsmbd::protocol {

Result<WriteRequest> WriteRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    WriteRequest v;
    DAX_TRY(v.data_offset, r.u16());
    DAX_TRY(v.length, r.u32());
    DAX_TRY(v.offset, r.u64());
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(v.channel, r.u32());
    DAX_TRY(v.remaining_bytes, r.u32());
    DAX_TRY(auto ci_offset, r.u16());
    DAX_TRY(auto ci_length, r.u16());
    DAX_TRY(v.flags, r.u32());
    DAX_TRY(v.data, variable_field(r, v.data_offset, v.length, kBufferOffset));
    DAX_TRY(v.channel_info, variable_field(r, ci_offset, ci_length, kBufferOffset));
    return v;
}

void WriteRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    size_t data_offset_pos = w.size();
    w.u16(0);
    w.u32(uint32_t(data.size()));
    w.u64(offset);
    write_file_id(w, file_id);
    w.u32(channel);
    w.u32(remaining_bytes);
    size_t ci_pos = w.size();
    w.u16(0);
    w.u16(0);
    w.u32(flags);
    bool rdma = channel != channel::kNone && data.empty();
    if (!rdma) w.patch_u16(data_offset_pos, uint16_t(w.offset_from_base()));
    w.bytes(data);
    if (!channel_info.empty()) {
        w.align(8);
        w.patch_u16(ci_pos, uint16_t(w.offset_from_base()));
        w.patch_u16(ci_pos + 2, uint16_t(channel_info.size()));
        w.bytes(channel_info);
    }
    if (data.empty() && channel_info.empty()) w.u8(0);  // the Buffer is at least one byte
}

Result<WriteResponse> WriteResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_CHECK(r.skip(2));  // Reserved
    WriteResponse v;
    DAX_TRY(v.count, r.u32());
    DAX_TRY(v.remaining, r.u32());
    DAX_CHECK(r.skip(4));  // WriteChannelInfoOffset/Length
    return v;
}

void WriteResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(0);
    w.u32(count);
    w.u32(remaining);
    w.u16(0);
    w.u16(0);
}

}  // namespace daxsmbd::protocol
