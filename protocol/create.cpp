#include "protocol/create.h"

namespace daxsmbd::protocol {

Result<CreateRequest> CreateRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    CreateRequest v;
    DAX_TRY(v.security_flags, r.u8());
    DAX_TRY(v.requested_oplock_level, r.u8());
    DAX_TRY(v.impersonation_level, r.u32());
    DAX_TRY(v.smb_create_flags, r.u64());
    DAX_CHECK(r.skip(8));  // Reserved
    DAX_TRY(v.desired_access, r.u32());
    DAX_TRY(v.file_attributes, r.u32());
    DAX_TRY(v.share_access, r.u32());
    DAX_TRY(v.create_disposition, r.u32());
    DAX_TRY(v.create_options, r.u32());
    DAX_TRY(auto name_offset, r.u16());
    DAX_TRY(auto name_length, r.u16());
    DAX_TRY(auto ctx_offset, r.u32());
    DAX_TRY(auto ctx_length, r.u32());
    // The name is UTF-16: an odd byte count cannot be a name.
    if (name_length % 2 != 0) return Error(NtStatus::InvalidParameter);
    DAX_TRY(auto name, variable_field(r, name_offset, name_length, kBufferOffset));
    DAX_TRY(auto ctx, variable_field(r, ctx_offset, ctx_length, kBufferOffset));
    DAX_TRY(v.contexts, CreateContextList::parse(ctx));
    DAX_TRY(v.name, utf16le_to_utf8(name));
    return v;
}

void CreateRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(security_flags);
    w.u8(requested_oplock_level);
    w.u32(impersonation_level);
    w.u64(smb_create_flags);
    w.u64(0);  // Reserved
    w.u32(desired_access);
    w.u32(file_attributes);
    w.u32(share_access);
    w.u32(create_disposition);
    w.u32(create_options);
    size_t name_pos = w.size();
    w.u16(0);
    w.u16(0);
    size_t ctx_pos = w.size();
    w.u32(0);
    w.u32(0);
    size_t buffer_start = w.size();
    w.patch_u16(name_pos, uint16_t(w.offset_from_base()));
    utf8_to_utf16le(name, w);
    w.patch_u16(name_pos + 2, uint16_t(w.size() - buffer_start));
    if (!contexts.empty()) {
        w.align(8);
        size_t start = w.size();
        w.patch_u32(ctx_pos, uint32_t(w.offset_from_base()));
        contexts.serialize(w);
        w.patch_u32(ctx_pos + 4, uint32_t(w.size() - start));
    }
    if (w.size() == buffer_start) w.u8(0);
}

Result<CreateResponse> CreateResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    CreateResponse v;
    DAX_TRY(v.oplock_level, r.u8());
    DAX_TRY(v.flags, r.u8());
    DAX_TRY(v.create_action, r.u32());
    uint64_t t;
    DAX_TRY(t, r.u64());
    v.creation_time = int64_t(t);
    DAX_TRY(t, r.u64());
    v.last_access_time = int64_t(t);
    DAX_TRY(t, r.u64());
    v.last_write_time = int64_t(t);
    DAX_TRY(t, r.u64());
    v.change_time = int64_t(t);
    DAX_TRY(t, r.u64());
    v.allocation_size = int64_t(t);
    DAX_TRY(t, r.u64());
    v.end_of_file = int64_t(t);
    DAX_TRY(v.file_attributes, r.u32());
    DAX_CHECK(r.skip(4));  // Reserved2
    DAX_TRY(v.file_id, read_file_id(r));
    DAX_TRY(auto ctx_offset, r.u32());
    DAX_TRY(auto ctx_length, r.u32());
    DAX_TRY(auto ctx, variable_field(r, ctx_offset, ctx_length, kBufferOffset));
    DAX_TRY(v.contexts, CreateContextList::parse(ctx));
    return v;
}

void CreateResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(oplock_level);
    w.u8(flags);
    w.u32(create_action);
    w.u64(uint64_t(creation_time));
    w.u64(uint64_t(last_access_time));
    w.u64(uint64_t(last_write_time));
    w.u64(uint64_t(change_time));
    w.u64(uint64_t(allocation_size));
    w.u64(uint64_t(end_of_file));
    w.u32(file_attributes);
    w.u32(0);  // Reserved2
    write_file_id(w, file_id);
    size_t ctx_pos = w.size();
    w.u32(0);
    w.u32(0);
    if (!contexts.empty()) {
        w.align(8);
        size_t start = w.size();
        w.patch_u32(ctx_pos, uint32_t(w.offset_from_base()));
        contexts.serialize(w);
        w.patch_u32(ctx_pos + 4, uint32_t(w.size() - start));
    }
}

}  // namespace daxsmbd::protocol
