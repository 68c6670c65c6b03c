#include "protocol/flush.h"

namespace daxsmbd::protocol {

Result<FlushRequest> FlushRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_CHECK(r.skip(2 + 4));  // Reserved1, Reserved2
    FlushRequest v;
    DAX_TRY(v.file_id, read_file_id(r));
    return v;
}

void FlushRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(0);
    w.u32(0);
    write_file_id(w, file_id);
}

Result<FlushResponse> FlushResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_CHECK(r.skip(2));  // Reserved
    return FlushResponse{};
}

void FlushResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(0);
}

}  // namespace daxsmbd::protocol
