// SMB2 LOGOFF request and response (MS-SMB2 2.2.7, 2.2.8): a body of StructureSize(2) = 4 and
// Reserved(2).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

// MS-SMB2 2.2.7
struct LogoffRequest {
    static constexpr uint16_t kStructureSize = 4;
    // StructureSize must be 4 (STATUS_INVALID_PARAMETER otherwise); Reserved is ignored.
    static Result<LogoffRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

// MS-SMB2 2.2.8
struct LogoffResponse {
    static constexpr uint16_t kStructureSize = 4;
    static Result<LogoffResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
