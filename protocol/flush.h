// SMB2 FLUSH request and response (MS-SMB2 2.2.17, 2.2.18).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

struct FlushRequest {
    static constexpr uint16_t kStructureSize = 24;
    FileId file_id;
    static Result<FlushRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

struct FlushResponse {
    static constexpr uint16_t kStructureSize = 4;
    static Result<FlushResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
