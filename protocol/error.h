// SMB2 ERROR response (MS-SMB2 2.2.2), SMB 3.1.1 error contexts (2.2.2.1) and the ErrorData
// formats of 2.2.2.2: symbolic link error, share redirect context, BUFFER_TOO_SMALL size and
// the SMB_BAD_CLUSTER_DIALECT body of 3.3.5.7.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

// MS-SMB2 2.2.2.1 ErrorId.
namespace error_id {
constexpr uint32_t kDefault = 0x00000000;
constexpr uint32_t kShareRedirect = 0x72645253;  // bytes 53 52 64 72, "SRdr"
}  // namespace error_id

// MS-SMB2 2.2.2
struct ErrorResponse {
    static constexpr uint16_t kStructureSize = 9;

    uint8_t error_context_count = 0;  // non-zero only on 3.1.1
    ByteVector error_data;

    // StructureSize must be 9; ByteCount bytes must follow the 8-byte fixed part. The one
    // trailing byte servers send with ByteCount 0 is not required.
    static Result<ErrorResponse> parse(Bytes msg);
    // With ByteCount 0 one zero byte is still appended (9-byte body), as Windows and ksmbd do
    // (MS-SMB2 2.2.2 product note <5>).
    void serialize(ByteWriter& w) const;
};

// MS-SMB2 2.2.2.1
struct ErrorContext {
    uint32_t error_id = error_id::kDefault;
    ByteVector data;  // ErrorContextData (ErrorDataLength bytes)
    bool operator==(const ErrorContext&) const = default;
};

// Parses `count` contexts from ErrorData: each is ErrorDataLength(4) ErrorId(4) data, and the
// next one starts 8-aligned from the start of ErrorData (which is 8-aligned in the ERROR body).
Result<std::vector<ErrorContext>> parse_error_contexts(Bytes error_data, uint8_t count);
// Appends the contexts with padding between them (none after the last).
void serialize_error_contexts(const std::vector<ErrorContext>& contexts, ByteWriter& w);

// ERROR body whose ErrorData is `contexts`.
ErrorResponse make_error_response(const std::vector<ErrorContext>& contexts);
// ERROR body carrying `data`: raw for dialects before 3.1.1; wrapped in one
// SMB2_ERROR_ID_DEFAULT context when `dialect_311` (MS-SMB2 2.2.2.1, 3.3.4.4). Empty data gives
// an empty ERROR body either way.
ErrorResponse make_error_response(ByteVector data, bool dialect_311);

// MS-SMB2 2.2.2.2: STATUS_BUFFER_TOO_SMALL carries the 4-byte minimum buffer size.
ErrorResponse make_buffer_too_small_error(uint32_t required_size, bool dialect_311);
// MS-SMB2 3.3.5.7: STATUS_SMB_BAD_CLUSTER_DIALECT carries the u16 MaxClusterDialect; on 3.1.1
// in one default context (ErrorContextCount 1, ByteCount 10), before that raw (ByteCount 2).
ErrorResponse make_bad_cluster_dialect_error(uint16_t max_cluster_dialect, bool dialect_311);

// MS-SMB2 2.2.2.2.2.1 MOVE_DST_IPADDR.
struct MoveDstIpAddr {
    static constexpr uint32_t kTypeV4 = 0x00000001;
    static constexpr uint32_t kTypeV6 = 0x00000002;

    uint32_t type = kTypeV4;
    // Network byte order. V4: the 4 address bytes, then 12 zero bytes (Reserved2).
    std::array<uint8_t, 16> address{};

    static MoveDstIpAddr v4(std::array<uint8_t, 4> a);
    static MoveDstIpAddr v6(std::array<uint8_t, 16> a);
    bool operator==(const MoveDstIpAddr&) const = default;
};

// MS-SMB2 2.2.2.2.2 SHARE_REDIRECT_ERROR_CONTEXT_RESPONSE: the ErrorContextData of an
// SMB2_ERROR_ID_SHARE_REDIRECT context (status STATUS_BAD_NETWORK_NAME).
struct ShareRedirectErrorContext {
    static constexpr uint32_t kStructureSize = 48;         // fixed, whatever the address count
    static constexpr uint32_t kShareMoveNotification = 3;  // MS-SWN 2.2.2.4
    static constexpr size_t kFixedSize = 24;
    static constexpr size_t kIpAddrSize = 24;

    uint32_t notification_type = kShareMoveNotification;
    uint16_t target_type = 0;  // 0 = IP address
    std::vector<MoveDstIpAddr> ip_addresses;
    std::string resource_name;  // UTF-8 share name

    // StructureSize must be 48, the address list and the name must fit, each address Type must
    // be V4 or V6; else STATUS_INVALID_PARAMETER. V4 entries come back with Reserved2 zeroed.
    static Result<ShareRedirectErrorContext> decode(Bytes data);
    // Fixed part, IPAddrMoveList, then ResourceName (ResourceNameOffset = 24 + 24 * count).
    ByteVector encode() const;
    bool operator==(const ShareRedirectErrorContext&) const = default;
};

// STATUS_BAD_NETWORK_NAME body with one SHARE_REDIRECT context (3.1.1 only).
ErrorResponse make_share_redirect_error(const ShareRedirectErrorContext& ctx);

// MS-SMB2 2.2.2.2.1 Symbolic Link Error Response (ErrorData for STATUS_STOPPED_ON_SYMLINK).
// PathBuffer holds the substitute name, then the print name (UTF-16, no terminators).
struct SymlinkErrorResponse {
    static constexpr uint32_t kSymLinkErrorTag = 0x4C4D5953;  // "SYML"
    static constexpr uint32_t kReparseTagSymlink = 0xA000000C;
    static constexpr uint32_t kFlagRelative = 0x00000001;  // SYMLINK_FLAG_RELATIVE
    static constexpr size_t kFixedSize = 28;

    uint16_t unparsed_path_length = 0;  // bytes of the request path after the link
    std::string substitute_name;        // UTF-8
    std::string print_name;             // UTF-8
    uint32_t flags = 0;

    ByteVector encode() const;
    static Result<SymlinkErrorResponse> decode(Bytes data);
    bool operator==(const SymlinkErrorResponse&) const = default;
};

}  // namespace daxsmbd::protocol
