// SMB2 packet header, sync and async forms (MS-SMB2 2.2.1.1, 2.2.1.2), and the constants every
// other codec file shares.
#pragma once

#include <array>
#include <cstdint>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

constexpr size_t kHeaderSize = 64;
constexpr uint32_t kSmb2ProtocolId = 0x424D53FE;         // FE 'S' 'M' 'B'
constexpr uint32_t kTransformProtocolId = 0x424D53FD;    // FD 'S' 'M' 'B'
constexpr uint32_t kCompressionProtocolId = 0x424D53FC;  // FC 'S' 'M' 'B'
constexpr uint32_t kSmb1ProtocolId = 0x424D53FF;         // FF 'S' 'M' 'B'

enum class Command : uint16_t {
    Negotiate = 0x0000,
    SessionSetup = 0x0001,
    Logoff = 0x0002,
    TreeConnect = 0x0003,
    TreeDisconnect = 0x0004,
    Create = 0x0005,
    Close = 0x0006,
    Flush = 0x0007,
    Read = 0x0008,
    Write = 0x0009,
    Lock = 0x000A,
    Ioctl = 0x000B,
    Cancel = 0x000C,
    Echo = 0x000D,
    QueryDirectory = 0x000E,
    ChangeNotify = 0x000F,
    QueryInfo = 0x0010,
    SetInfo = 0x0011,
    OplockBreak = 0x0012,
    ServerToClientNotification = 0x0013,
};
constexpr size_t kCommandCount = 0x14;
const char* command_name(Command c);

enum class Dialect : uint16_t {
    None = 0,
    Smb202 = 0x0202,
    Smb210 = 0x0210,
    Smb300 = 0x0300,
    Smb302 = 0x0302,
    Smb311 = 0x0311,
    Wildcard = 0x02FF,
};
constexpr bool is_smb3(Dialect d) {
    return uint16_t(d) >= 0x0300 && d != Dialect::Wildcard;
}

namespace flags {
constexpr uint32_t kServerToRedir = 0x00000001;
constexpr uint32_t kAsyncCommand = 0x00000002;
constexpr uint32_t kRelatedOperations = 0x00000004;
constexpr uint32_t kSigned = 0x00000008;
constexpr uint32_t kPriorityMask = 0x00000070;
constexpr uint32_t kDfsOperations = 0x10000000;
constexpr uint32_t kReplayOperation = 0x20000000;
}  // namespace flags

constexpr uint32_t kInvalidTreeId = 0xFFFFFFFF;
constexpr uint64_t kInvalidSessionId = 0xFFFFFFFFFFFFFFFFull;
constexpr uint64_t kUnsolicitedMessageId = 0xFFFFFFFFFFFFFFFFull;

struct FileId {
    uint64_t persistent = 0;
    uint64_t volatile_ = 0;
    bool operator==(const FileId&) const = default;
    // {all-ones, all-ones}: "the file the previous compound element opened" (MS-SMB2 3.3.5.2.7.2)
    bool is_related_placeholder() const { return persistent == ~0ull && volatile_ == ~0ull; }
};
constexpr FileId kPlaceholderFileId{~0ull, ~0ull};

Result<FileId> read_file_id(ByteReader& r);
void write_file_id(ByteWriter& w, const FileId& id);

using Guid = std::array<std::byte, 16>;

struct Header {
    uint16_t credit_charge = 0;
    uint32_t status = 0;  // NTSTATUS in responses; ChannelSequence(2)+Reserved(2) in 3.x requests
    Command command = Command::Negotiate;
    uint16_t credits = 0;  // CreditRequest / CreditResponse
    uint32_t flags = 0;
    uint32_t next_command = 0;
    uint64_t message_id = 0;
    uint64_t async_id = 0;    // valid when flags has kAsyncCommand
    uint32_t process_id = 0;  // sync form only
    uint32_t tree_id = 0;     // sync form only
    uint64_t session_id = 0;
    std::array<std::byte, 16> signature{};

    bool is_async() const { return flags & flags::kAsyncCommand; }
    bool is_response() const { return flags & flags::kServerToRedir; }
    bool is_related() const { return flags & flags::kRelatedOperations; }
    bool is_signed() const { return flags & flags::kSigned; }
    uint16_t channel_sequence() const { return uint16_t(status); }

    // Parses the first 64 bytes; checks ProtocolId and StructureSize.
    static Result<Header> parse(Bytes msg);
    // Appends 64 bytes.
    void serialize(ByteWriter& w) const;
};

// Byte offset of the signature inside a header, for in-place signing.
constexpr size_t kSignatureOffset = 48;
constexpr size_t kFlagsOffset = 16;
constexpr size_t kNextCommandOffset = 20;

// Positions `r` at the body of an SMB2 message (after the header) and checks StructureSize
// (MS-SMB2 2.2: a wrong value is STATUS_INVALID_PARAMETER).
inline Status enter_body(ByteReader& r, uint16_t structure_size) {
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    if (size != structure_size) return Error(NtStatus::InvalidParameter);
    return {};
}

}  // namespace daxsmbd::protocol
