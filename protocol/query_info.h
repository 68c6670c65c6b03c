// SMB2 QUERY_INFO request and response (MS-SMB2 2.2.37, 2.2.38) and the InfoType /
// AdditionalInformation constants SET_INFO shares.
#pragma once

#include <cstdint>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace info_type {
constexpr uint8_t kFile = 0x01;
constexpr uint8_t kFileSystem = 0x02;
constexpr uint8_t kSecurity = 0x03;
constexpr uint8_t kQuota = 0x04;
}  // namespace info_type

namespace security_information {  // AdditionalInformation for kSecurity
constexpr uint32_t kOwner = 0x00000001;
constexpr uint32_t kGroup = 0x00000002;
constexpr uint32_t kDacl = 0x00000004;
constexpr uint32_t kSacl = 0x00000008;
constexpr uint32_t kLabel = 0x00000010;
constexpr uint32_t kAttribute = 0x00000020;
constexpr uint32_t kScope = 0x00000040;
constexpr uint32_t kBackup = 0x00010000;
}  // namespace security_information

namespace query_info_flags {  // Flags of a FileFullEaInformation query
constexpr uint32_t kRestartScan = 0x00000001;
constexpr uint32_t kReturnSingleEntry = 0x00000002;
constexpr uint32_t kIndexSpecified = 0x00000004;
}  // namespace query_info_flags

struct QueryInfoRequest {
    static constexpr uint16_t kStructureSize = 41;
    static constexpr size_t kBufferOffset = kHeaderSize + 40;  // 0x68

    uint8_t info_type = info_type::kFile;
    uint8_t file_info_class = 0;
    uint32_t output_buffer_length = 0;
    Bytes input;  // SMB2_QUERY_QUOTA_INFO or FILE_GET_EA_INFORMATION list; view into msg
    uint32_t additional_information = 0;
    uint32_t flags = 0;
    FileId file_id;

    // InputBufferOffset/Length outside the message or inside the fixed part:
    // STATUS_INVALID_PARAMETER.
    static Result<QueryInfoRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

struct QueryInfoResponse {
    static constexpr uint16_t kStructureSize = 9;
    static constexpr size_t kBufferOffset = kHeaderSize + 8;  // 0x48
    Bytes buffer;                                             // a view
    static Result<QueryInfoResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;  // OutputBufferOffset 0x48
};

}  // namespace daxsmbd::protocol
