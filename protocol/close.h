// SMB2 CLOSE request and response (MS-SMB2 2.2.15, 2.2.16).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace close_flags {
constexpr uint16_t kPostqueryAttrib = 0x0001;  // SMB2_CLOSE_FLAG_POSTQUERY_ATTRIB
}

struct CloseRequest {
    static constexpr uint16_t kStructureSize = 24;
    uint16_t flags = 0;
    FileId file_id;
    static Result<CloseRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

struct CloseResponse {
    static constexpr uint16_t kStructureSize = 60;
    // Echo kPostqueryAttrib when the attributes below are valid; all zero otherwise (2.2.16).
    uint16_t flags = 0;
    int64_t creation_time = 0;
    int64_t last_access_time = 0;
    int64_t last_write_time = 0;
    int64_t change_time = 0;
    int64_t allocation_size = 0;
    int64_t end_of_file = 0;
    uint32_t file_attributes = 0;
    static Result<CloseResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
