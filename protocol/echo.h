// SMB2 ECHO request and response (MS-SMB2 2.2.28, 2.2.29): a body of StructureSize(2) = 4 and
// Reserved(2).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

// MS-SMB2 2.2.28
struct EchoRequest {
    static constexpr uint16_t kStructureSize = 4;
    // StructureSize must be 4 (STATUS_INVALID_PARAMETER otherwise); Reserved is ignored.
    static Result<EchoRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

// MS-SMB2 2.2.29
struct EchoResponse {
    static constexpr uint16_t kStructureSize = 4;
    static Result<EchoResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
