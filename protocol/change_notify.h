// SMB2 CHANGE_NOTIFY request and response (MS-SMB2 2.2.35, 2.2.36). The response buffer is a
// FILE_NOTIFY_INFORMATION list (protocol/notify_info.h).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace change_notify_flags {
constexpr uint16_t kWatchTree = 0x0001;  // SMB2_WATCH_TREE
}

namespace completion_filter {  // FILE_NOTIFY_CHANGE_* (MS-SMB2 2.2.35)
constexpr uint32_t kFileName = 0x00000001;
constexpr uint32_t kDirName = 0x00000002;
constexpr uint32_t kAttributes = 0x00000004;
constexpr uint32_t kSize = 0x00000008;
constexpr uint32_t kLastWrite = 0x00000010;
constexpr uint32_t kLastAccess = 0x00000020;
constexpr uint32_t kCreation = 0x00000040;
constexpr uint32_t kEa = 0x00000080;
constexpr uint32_t kSecurity = 0x00000100;
constexpr uint32_t kStreamName = 0x00000200;
constexpr uint32_t kStreamSize = 0x00000400;
constexpr uint32_t kStreamWrite = 0x00000800;
constexpr uint32_t kAll = 0x00000FFF;
}  // namespace completion_filter

struct ChangeNotifyRequest {
    static constexpr uint16_t kStructureSize = 32;
    uint16_t flags = 0;
    uint32_t output_buffer_length = 0;
    FileId file_id;
    uint32_t completion_filter = 0;
    static Result<ChangeNotifyRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

struct ChangeNotifyResponse {
    static constexpr uint16_t kStructureSize = 9;
    static constexpr size_t kBufferOffset = kHeaderSize + 8;  // 0x48
    Bytes buffer;  // FILE_NOTIFY_INFORMATION list; a view
    static Result<ChangeNotifyResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;  // OutputBufferOffset 0x48
};

}  // namespace daxsmbd::protocol
