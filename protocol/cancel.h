// SMB2 CANCEL request; it never gets a response (MS-SMB2 2.2.30): a body of StructureSize(2) = 4
// and Reserved(2).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

// MS-SMB2 2.2.30
struct CancelRequest {
    static constexpr uint16_t kStructureSize = 4;
    // StructureSize must be 4 (STATUS_INVALID_PARAMETER otherwise); Reserved is ignored.
    static Result<CancelRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
