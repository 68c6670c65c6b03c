#include "protocol/oplock_break.h"

namespace daxsmbd::protocol {

namespace {

Result<uint16_t> structure_size(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    return r.u16();
}

Result<ByteReader> body_reader(Bytes msg, uint16_t expected) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    if (size != expected) return Error(NtStatus::InvalidParameter);
    return r;
}

}  // namespace

Result<OplockBreakBody> OplockBreakBody::parse(Bytes msg) {
    DAX_TRY(auto r, body_reader(msg, kStructureSize));
    OplockBreakBody b;
    DAX_TRY(b.oplock_level, r.u8());
    DAX_CHECK(r.skip(1 + 4));  // Reserved, Reserved2
    DAX_TRY(b.file_id, read_file_id(r));
    return b;
}

void OplockBreakBody::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(oplock_level);
    w.u8(0);
    w.u32(0);
    write_file_id(w, file_id);
}

Result<LeaseBreakNotification> LeaseBreakNotification::parse(Bytes msg) {
    DAX_TRY(auto r, body_reader(msg, kStructureSize));
    LeaseBreakNotification n;
    DAX_TRY(n.new_epoch, r.u16());
    DAX_TRY(n.flags, r.u32());
    DAX_TRY(n.lease_key, r.array<16>());
    DAX_TRY(n.current_lease_state, r.u32());
    DAX_TRY(n.new_lease_state, r.u32());
    DAX_TRY(n.break_reason, r.u32());
    DAX_TRY(n.access_mask_hint, r.u32());
    DAX_TRY(n.share_mask_hint, r.u32());
    return n;
}

void LeaseBreakNotification::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(new_epoch);
    w.u32(flags);
    w.bytes(lease_key);
    w.u32(current_lease_state);
    w.u32(new_lease_state);
    w.u32(break_reason);
    w.u32(access_mask_hint);
    w.u32(share_mask_hint);
}

Result<LeaseBreakAckBody> LeaseBreakAckBody::parse(Bytes msg) {
    DAX_TRY(auto r, body_reader(msg, kStructureSize));
    LeaseBreakAckBody a;
    DAX_CHECK(r.skip(2));  // Reserved
    DAX_TRY(a.flags, r.u32());
    DAX_TRY(a.lease_key, r.array<16>());
    DAX_TRY(a.lease_state, r.u32());
    DAX_TRY(a.lease_duration, r.u64());
    return a;
}

void LeaseBreakAckBody::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u16(0);
    w.u32(flags);
    w.bytes(lease_key);
    w.u32(lease_state);
    w.u64(lease_duration);
}

Result<BreakAcknowledgment> parse_break_acknowledgment(Bytes msg) {
    DAX_TRY(auto size, structure_size(msg));
    if (size == OplockBreakBody::kStructureSize) {
        DAX_TRY(auto b, OplockBreakBody::parse(msg));
        return BreakAcknowledgment(b);
    }
    if (size == LeaseBreakAckBody::kStructureSize) {
        DAX_TRY(auto b, LeaseBreakAckBody::parse(msg));
        return BreakAcknowledgment(b);
    }
    return Error(NtStatus::InvalidParameter);
}

Result<BreakNotification> parse_break_notification(Bytes msg) {
    DAX_TRY(auto size, structure_size(msg));
    if (size == OplockBreakBody::kStructureSize) {
        DAX_TRY(auto b, OplockBreakBody::parse(msg));
        return BreakNotification(b);
    }
    if (size == LeaseBreakNotification::kStructureSize) {
        DAX_TRY(auto b, LeaseBreakNotification::parse(msg));
        return BreakNotification(b);
    }
    return Error(NtStatus::InvalidParameter);
}

}  // namespace daxsmbd::protocol
