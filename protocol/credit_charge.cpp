#include "protocol/credit_charge.h"

#include <algorithm>

namespace daxsmbd::protocol {

namespace {
// A 32-bit field at `body_offset` of the request body (after the 64-byte header).
uint64_t body_u32(Bytes elem, size_t body_offset) {
    return elem.size() >= kHeaderSize + body_offset + 4
               ? load_le32(elem.data() + kHeaderSize + body_offset)
               : 0;
}
}  // namespace

// Offsets are those of the request structures in MS-SMB2 2.2.19 (READ), 2.2.21 (WRITE), 2.2.31
// (IOCTL), 2.2.33 (QUERY_DIRECTORY), 2.2.35 (CHANGE_NOTIFY), 2.2.37 (QUERY_INFO), 2.2.39
// (SET_INFO).
uint64_t read_payload_size(Bytes elem) {
    return body_u32(elem, 4);
}
uint64_t write_payload_size(Bytes elem) {
    return std::max(body_u32(elem, 4), body_u32(elem, 36));
}
uint64_t ioctl_payload_size(Bytes elem) {
    return std::max(body_u32(elem, 28), body_u32(elem, 44));
}
uint64_t query_directory_payload_size(Bytes elem) {
    return body_u32(elem, 28);
}
uint64_t change_notify_payload_size(Bytes elem) {
    return body_u32(elem, 4);
}
uint64_t query_info_payload_size(Bytes elem) {
    return body_u32(elem, 4);
}
uint64_t set_info_payload_size(Bytes elem) {
    return body_u32(elem, 4);
}

}  // namespace daxsmbd::protocol
