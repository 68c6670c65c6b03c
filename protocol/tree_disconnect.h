// SMB2 TREE_DISCONNECT request and response (MS-SMB2 2.2.11, 2.2.12): a body of StructureSize(2) =
// 4 and Reserved(2).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

// MS-SMB2 2.2.11
struct TreeDisconnectRequest {
    static constexpr uint16_t kStructureSize = 4;
    // StructureSize must be 4 (STATUS_INVALID_PARAMETER otherwise); Reserved is ignored.
    static Result<TreeDisconnectRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

// MS-SMB2 2.2.12
struct TreeDisconnectResponse {
    static constexpr uint16_t kStructureSize = 4;
    static Result<TreeDisconnectResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
