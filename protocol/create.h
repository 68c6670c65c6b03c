// SMB2 CREATE request and response (MS-SMB2 2.2.13, 2.2.14) and the constants of their fields.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/access_mask.h"
#include "protocol/bytes.h"
#include "protocol/create_contexts.h"
#include "protocol/file_info.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace oplock_level {  // RequestedOplockLevel / OplockLevel (MS-SMB2 2.2.13, 2.2.14)
constexpr uint8_t kNone = 0x00;
constexpr uint8_t kII = 0x01;
constexpr uint8_t kExclusive = 0x08;
constexpr uint8_t kBatch = 0x09;
constexpr uint8_t kLease = 0xFF;
}  // namespace oplock_level

namespace impersonation_level {
constexpr uint32_t kAnonymous = 0;
constexpr uint32_t kIdentification = 1;
constexpr uint32_t kImpersonation = 2;
constexpr uint32_t kDelegate = 3;
}  // namespace impersonation_level

namespace share_access {
constexpr uint32_t kRead = 0x00000001;
constexpr uint32_t kWrite = 0x00000002;
constexpr uint32_t kDelete = 0x00000004;
constexpr uint32_t kAll = kRead | kWrite | kDelete;
}  // namespace share_access

namespace create_disposition {
constexpr uint32_t kSupersede = 0;
constexpr uint32_t kOpen = 1;
constexpr uint32_t kCreate = 2;
constexpr uint32_t kOpenIf = 3;
constexpr uint32_t kOverwrite = 4;
constexpr uint32_t kOverwriteIf = 5;
constexpr uint32_t kMax = kOverwriteIf;
}  // namespace create_disposition

namespace create_options {
constexpr uint32_t kDirectoryFile = 0x00000001;
constexpr uint32_t kWriteThrough = 0x00000002;
constexpr uint32_t kSequentialOnly = 0x00000004;
constexpr uint32_t kNoIntermediateBuffering = 0x00000008;
constexpr uint32_t kSynchronousIoAlert = 0x00000010;
constexpr uint32_t kSynchronousIoNonalert = 0x00000020;
constexpr uint32_t kNonDirectoryFile = 0x00000040;
constexpr uint32_t kCompleteIfOplocked = 0x00000100;
constexpr uint32_t kNoEaKnowledge = 0x00000200;
constexpr uint32_t kOpenRemoteInstance = 0x00000400;
constexpr uint32_t kRandomAccess = 0x00000800;
constexpr uint32_t kDeleteOnClose = 0x00001000;
constexpr uint32_t kOpenByFileId = 0x00002000;  // server MUST fail: STATUS_NOT_SUPPORTED
constexpr uint32_t kOpenForBackupIntent = 0x00004000;
constexpr uint32_t kNoCompression = 0x00008000;
constexpr uint32_t kOpenRequiringOplock = 0x00010000;
constexpr uint32_t kDisallowExclusive = 0x00020000;
constexpr uint32_t kReserveOpfilter = 0x00100000;  // server MUST fail: STATUS_NOT_SUPPORTED
constexpr uint32_t kOpenReparsePoint = 0x00200000;
constexpr uint32_t kOpenNoRecall = 0x00400000;
constexpr uint32_t kOpenForFreeSpaceQuery = 0x00800000;
}  // namespace create_options

namespace create_action {
constexpr uint32_t kSuperseded = 0;
constexpr uint32_t kOpened = 1;
constexpr uint32_t kCreated = 2;
constexpr uint32_t kOverwritten = 3;
}  // namespace create_action

namespace create_response_flags {
constexpr uint8_t kReparsePoint = 0x01;  // SMB2_CREATE_FLAG_REPARSEPOINT (3.x)
}

struct CreateRequest {
    static constexpr uint16_t kStructureSize = 57;
    static constexpr size_t kBufferOffset = kHeaderSize + 56;  // 0x78

    uint8_t security_flags = 0;
    uint8_t requested_oplock_level = oplock_level::kNone;
    uint32_t impersonation_level = impersonation_level::kImpersonation;
    uint64_t smb_create_flags = 0;
    uint32_t desired_access = 0;
    uint32_t file_attributes = 0;
    uint32_t share_access = 0;
    uint32_t create_disposition = create_disposition::kOpen;
    uint32_t create_options = 0;
    std::string name;  // UTF-8, as sent (no normalisation); empty = the share root
    CreateContextList contexts;

    // NameLength odd, NameOffset/Length or CreateContextsOffset/Length outside the message or
    // inside the fixed part, a malformed context chain: STATUS_INVALID_PARAMETER. Bad UTF-16:
    // STATUS_OBJECT_NAME_INVALID.
    static Result<CreateRequest> parse(Bytes msg);
    // Name at 0x78, contexts 8-aligned after it; one zero byte when both are empty (the request
    // Buffer is at least one byte, MS-SMB2 2.2.13).
    void serialize(ByteWriter& w) const;
};

struct CreateResponse {
    static constexpr uint16_t kStructureSize = 89;
    static constexpr size_t kBufferOffset = kHeaderSize + 88;  // 0x98

    uint8_t oplock_level = oplock_level::kNone;
    uint8_t flags = 0;
    uint32_t create_action = create_action::kOpened;
    int64_t creation_time = 0;
    int64_t last_access_time = 0;
    int64_t last_write_time = 0;
    int64_t change_time = 0;
    int64_t allocation_size = 0;
    int64_t end_of_file = 0;
    uint32_t file_attributes = 0;
    FileId file_id;
    CreateContextList contexts;

    static Result<CreateResponse> parse(Bytes msg);
    // Contexts at 0x98 (CreateContextsOffset 0 when there are none).
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
