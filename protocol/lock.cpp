#include "protocol/lock.h"

namespace daxsmbd::protocol {

Result<LockRequest> LockRequest::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_TRY(auto count, r.u16());
    // MS-SMB2 2.2.26: LockCount MUST be >= 1; 3.3.5.14 fails 0 with STATUS_INVALID_PARAMETER.
    if (count == 0) return Error(NtStatus::InvalidParameter);
    LockRequest v;
    DAX_TRY(v.lock_sequence, r.u32());
    DAX_TRY(v.file_id, read_file_id(r));
    // Check the whole array is there before allocating for it.
    if (r.remaining() < size_t(count) * LockElement::kSize)
        return Error(NtStatus::InvalidParameter);
    v.locks.reserve(count);
    for (uint16_t i = 0; i < count; ++i) {
        LockElement e;
        DAX_TRY(e.offset, r.u64());
        DAX_TRY(e.length, r.u64());
        DAX_TRY(e.flags, r.u32());
        DAX_CHECK(r.skip(4));  // Reserved
        v.locks.push_back(e);
    }
    return v;
}

void LockRequest::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(uint16_t(locks.size()));
    w.u32(lock_sequence);
    write_file_id(w, file_id);
    for (const auto& e : locks) {
        w.u64(e.offset);
        w.u64(e.length);
        w.u32(e.flags);
        w.u32(0);
    }
}

Result<LockResponse> LockResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(enter_body(r, kStructureSize));
    DAX_CHECK(r.skip(2));
    return LockResponse{};
}

void LockResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(0);
}

}  // namespace daxsmbd::protocol
