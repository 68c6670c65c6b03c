#include "protocol/close.h"

namespace daxsmbd::protocol {

Result<CloseRequest> CloseRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    CloseRequest v;
    DAX_TRY(v.flags, r.u16());
    DAX_CHECK(r.skip(4));  // Reserved
    DAX_TRY(v.file_id, read_file_id(r));
    return v;
}

void CloseRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(flags);
    w.u32(0);
    write_file_id(w, file_id);
}

Result<CloseResponse> CloseResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    CloseResponse v;
    DAX_TRY(v.flags, r.u16());
    DAX_CHECK(r.skip(4));  // Reserved
    int64_t* times[] = {&v.creation_time, &v.last_access_time, &v.last_write_time,
                        &v.change_time,   &v.allocation_size,  &v.end_of_file};
    for (int64_t* t : times) {
        DAX_TRY(auto x, r.u64());
        *t = int64_t(x);
    }
    DAX_TRY(v.file_attributes, r.u32());
    return v;
}

void CloseResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(flags);
    w.u32(0);
    w.u64(uint64_t(creation_time));
    w.u64(uint64_t(last_access_time));
    w.u64(uint64_t(last_write_time));
    w.u64(uint64_t(change_time));
    w.u64(uint64_t(allocation_size));
    w.u64(uint64_t(end_of_file));
    w.u32(file_attributes);
}

}  // namespace daxsmbd::protocol
