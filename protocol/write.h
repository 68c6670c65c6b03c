// SMB2 WRITE request and response (MS-SMB2 2.2.21, 2.2.22; spec digest 6.8).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"
#include "protocol/header.h"
#include "protocol/read.h"  // channel::

namespace daxsmbd::protocol {

namespace write_flags {
constexpr uint32_t kWriteThrough = 0x00000001;     // not 2.0.2
constexpr uint32_t kWriteUnbuffered = 0x00000002;  // 3.0.2+
}  // namespace write_flags

struct WriteRequest {
    static constexpr uint16_t kStructureSize = 49;
    static constexpr size_t kBufferOffset = kHeaderSize + 48;  // 0x70

    uint16_t data_offset = kBufferOffset;  // as sent; RDMA writes must send 0 (digest 6.8)
    uint32_t length = 0;                   // as sent; serialize writes data.size()
    uint64_t offset = 0;
    FileId file_id;
    uint32_t channel = channel::kNone;
    uint32_t remaining_bytes = 0;  // RDMA: bytes to pull from the client's buffers
    Bytes channel_info;            // view into msg
    uint32_t flags = 0;
    Bytes data;  // view into msg: Length bytes at DataOffset (empty when Length is 0)

    // Length > 0 with DataOffset inside the fixed part or DataOffset + Length past the message,
    // or a channel info range outside the message: STATUS_INVALID_PARAMETER (MS-SMB2 3.3.5.13).
    static Result<WriteRequest> parse(Bytes msg);
    // Data at 0x70 followed by channel info (8-aligned); DataOffset 0x70 even for Length 0 unless
    // it is an RDMA write (channel != NONE and no data), which sends 0.
    void serialize(ByteWriter& w) const;
};

struct WriteResponse {
    static constexpr uint16_t kStructureSize = 17;
    uint32_t count = 0;
    uint32_t remaining = 0;  // reserved, 0
    static Result<WriteResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;  // 16 bytes
};

}  // namespace daxsmbd::protocol
