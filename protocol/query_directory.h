// SMB2 QUERY_DIRECTORY request and response (MS-SMB2 2.2.33, 2.2.34). The entries in the
// response buffer are built with DirectoryInfoWriter (protocol/dir_info.h).
#pragma once

#include <cstdint>
#include <string>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace query_directory_flags {
constexpr uint8_t kRestartScans = 0x01;
constexpr uint8_t kReturnSingleEntry = 0x02;
constexpr uint8_t kIndexSpecified = 0x04;
constexpr uint8_t kReopen = 0x10;
}  // namespace query_directory_flags

struct QueryDirectoryRequest {
    static constexpr uint16_t kStructureSize = 33;
    static constexpr size_t kBufferOffset = kHeaderSize + 32;  // 0x60

    uint8_t file_information_class = 0;  // file_info_class::k...DirectoryInformation
    uint8_t flags = 0;
    uint32_t file_index = 0;
    FileId file_id;
    std::string pattern;  // UTF-8 search pattern; empty when FileNameLength is 0
    uint32_t output_buffer_length = 0;

    // FileNameOffset/Length outside the message or inside the fixed part:
    // STATUS_INVALID_PARAMETER; bad UTF-16: STATUS_OBJECT_NAME_INVALID.
    static Result<QueryDirectoryRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

struct QueryDirectoryResponse {
    static constexpr uint16_t kStructureSize = 9;
    static constexpr size_t kBufferOffset = kHeaderSize + 8;  // 0x48

    Bytes buffer;  // the entries; a view (into msg after parse, into the caller's buffer to send)

    static Result<QueryDirectoryResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;  // OutputBufferOffset 0x48
};

}  // namespace daxsmbd::protocol
