// SMB2 READ request and response (MS-SMB2 2.2.19, 2.2.20; spec digest 6.8), and the Channel
// values READ and WRITE share.
#pragma once

#include <cstdint>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace channel {  // MS-SMB2 2.2.19 / 2.2.21 Channel
constexpr uint32_t kNone = 0x00000000;
constexpr uint32_t kRdmaV1 = 0x00000001;
constexpr uint32_t kRdmaV1Invalidate = 0x00000002;  // not for 3.0
constexpr uint32_t kRdmaTransform = 0x00000003;     // 3.1.1 WRITE only
}  // namespace channel

namespace read_flags {                        // request Flags
constexpr uint8_t kReadUnbuffered = 0x01;     // 3.0.2+
constexpr uint8_t kRequestCompressed = 0x02;  // 3.1.1
}  // namespace read_flags

namespace read_response_flags {  // response Reserved2/Flags (3.1.1)
constexpr uint32_t kRdmaTransform = 0x00000001;
}

struct ReadRequest {
    static constexpr uint16_t kStructureSize = 49;
    static constexpr size_t kBufferOffset = kHeaderSize + 48;  // 0x70

    uint8_t padding = 0x50;  // where the client would like the data (not binding)
    uint8_t flags = 0;
    uint32_t length = 0;
    uint64_t offset = 0;
    FileId file_id;
    uint32_t minimum_count = 0;
    uint32_t channel = channel::kNone;
    uint32_t remaining_bytes = 0;
    Bytes
        channel_info;  // SMB_DIRECT_BUFFER_DESCRIPTOR_V1 array when channel is RDMA; view into msg

    // ReadChannelInfoOffset/Length outside the message or inside the fixed part:
    // STATUS_INVALID_PARAMETER. The one-byte Buffer clients add is not required.
    static Result<ReadRequest> parse(Bytes msg);
    // Channel info at 0x70 when present, else one zero Buffer byte (MS-SMB2 2.2.19).
    void serialize(ByteWriter& w) const;
};

struct ReadResponse {
    static constexpr uint16_t kStructureSize = 17;
    static constexpr uint8_t kDataOffset = kHeaderSize + 16;  // 0x50

    // Filled by parse; serialize always writes DataOffset 0x50 and DataLength = data.size().
    uint8_t data_offset = kDataOffset;
    uint32_t data_length = 0;
    // Bytes sent on the RDMA channel instead of inline (MS-SMB2 3.3.5.12), else 0.
    uint32_t data_remaining = 0;
    uint32_t flags = 0;
    Bytes data;  // view: into msg after parse, into the caller's buffer for serialize

    static Result<ReadResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
    // Writes only the 16 fixed bytes (DataOffset 0x50, DataLength = `data_length`) so that the
    // data follows as a separate gather fragment straight from the pool buffer or DAX mapping.
    void serialize_without_data(ByteWriter& w, uint32_t data_length) const;
};

}  // namespace daxsmbd::protocol
