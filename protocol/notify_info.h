// FILE_NOTIFY_INFORMATION lists (MS-FSCC 2.7.1): the CHANGE_NOTIFY response buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

namespace file_action {  // FILE_NOTIFY_INFORMATION.Action
constexpr uint32_t kAdded = 0x00000001;
constexpr uint32_t kRemoved = 0x00000002;
constexpr uint32_t kModified = 0x00000003;
constexpr uint32_t kRenamedOldName = 0x00000004;
constexpr uint32_t kRenamedNewName = 0x00000005;
constexpr uint32_t kAddedStream = 0x00000006;
constexpr uint32_t kRemovedStream = 0x00000007;
constexpr uint32_t kModifiedStream = 0x00000008;
constexpr uint32_t kRemovedByDelete = 0x00000009;
constexpr uint32_t kIdNotTunnelled = 0x0000000A;
constexpr uint32_t kTunnelledIdCollision = 0x0000000B;
}  // namespace file_action

struct FileNotifyInformation {
    static constexpr size_t kFixedSize = 12;
    uint32_t action = 0;
    std::string file_name;  // UTF-8, relative to the watched directory
    bool operator==(const FileNotifyInformation&) const = default;
};

// Bytes the list takes on the wire: each entry's FileName padded to 4 bytes (MS-FSCC 2.7.1 pads
// every entry, the last one included). More than OutputBufferLength means the handler answers
// STATUS_NOTIFY_ENUM_DIR instead.
size_t notify_information_size(std::span<const FileNotifyInformation> changes);
// Writes the list: NextEntryOffset a multiple of 4 pointing at the next entry, 0 on the last.
void encode_notify_information(ByteWriter& w, std::span<const FileNotifyInformation> changes);
// Parses a list (client side). Bad chaining or a FileNameLength past its entry:
// STATUS_INVALID_PARAMETER.
Result<std::vector<FileNotifyInformation>> decode_notify_information(Bytes data);

}  // namespace daxsmbd::protocol
