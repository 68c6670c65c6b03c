// SMB2 SET_INFO request and response (MS-SMB2 2.2.39, 2.2.40). InfoType and
// AdditionalInformation constants are in protocol/query_info.h; the buffer decoders per class in
// protocol/file_info.h and protocol/fs_info.h.
#pragma once

#include <cstdint>

#include "protocol/bytes.h"
#include "protocol/header.h"
#include "protocol/query_info.h"

namespace daxsmbd::protocol {

struct SetInfoRequest {
    static constexpr uint16_t kStructureSize = 33;
    static constexpr size_t kBufferOffset = kHeaderSize + 32;  // 0x60

    uint8_t info_type = info_type::kFile;
    uint8_t file_info_class = 0;
    Bytes buffer;  // view into msg
    uint32_t additional_information = 0;
    FileId file_id;

    // BufferOffset/Length outside the message or inside the fixed part: STATUS_INVALID_PARAMETER.
    static Result<SetInfoRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

struct SetInfoResponse {
    static constexpr uint16_t kStructureSize = 2;
    static Result<SetInfoResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
