// SMB2 NEGOTIATE request and response (MS-SMB2 2.2.3, 2.2.4).
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/header.h"
#include "protocol/negotiate_contexts.h"

namespace daxsmbd::protocol {

// Wire values of DialectRevision / Dialects[] (MS-SMB2 2.2.3, 2.2.4); same numbers as the
// Dialect enum of header.h, as plain integers for the arrays.
namespace dialect {
constexpr uint16_t k202 = 0x0202;
constexpr uint16_t k210 = 0x0210;
constexpr uint16_t k300 = 0x0300;
constexpr uint16_t k302 = 0x0302;
constexpr uint16_t k311 = 0x0311;
constexpr uint16_t kWildcard = 0x02FF;  // only in answer to an SMB1 "SMB 2.???" negotiate
}  // namespace dialect

// SecurityMode bits of NEGOTIATE (2 bytes) and SESSION_SETUP (1 byte), MS-SMB2 2.2.3, 2.2.5.
namespace security_mode {
constexpr uint16_t kSigningEnabled = 0x0001;
constexpr uint16_t kSigningRequired = 0x0002;
}  // namespace security_mode

// SMB2_GLOBAL_CAP_* (MS-SMB2 2.2.3, 2.2.4).
namespace global_caps {
constexpr uint32_t kDfs = 0x00000001;
constexpr uint32_t kLeasing = 0x00000002;
constexpr uint32_t kLargeMtu = 0x00000004;
constexpr uint32_t kMultiChannel = 0x00000008;
constexpr uint32_t kPersistentHandles = 0x00000010;
constexpr uint32_t kDirectoryLeasing = 0x00000020;
constexpr uint32_t kEncryption = 0x00000040;
constexpr uint32_t kNotifications = 0x00000080;
}  // namespace global_caps

// MS-SMB2 2.2.3
struct NegotiateRequest {
    static constexpr uint16_t kStructureSize = 36;

    uint16_t security_mode = 0;
    uint32_t capabilities = 0;
    Guid client_guid{};
    std::vector<uint16_t> dialects;
    // Only on the wire when dialects lists 0x0311 (the field is ClientStartTime otherwise).
    NegotiateContextList contexts;

    bool offers(uint16_t d) const;

    // DialectCount 0 -> STATUS_INVALID_PARAMETER (MS-SMB2 3.3.5.4). When 0x0311 is listed the
    // context list is parsed (and must be well formed) but not validated: the server calls
    // validate_negotiate_contexts() once it has selected 3.1.1.
    static Result<NegotiateRequest> parse(Bytes msg);
    // Dialects at body offset 36; when 0x0311 is listed, the contexts follow 8-aligned.
    void serialize(ByteWriter& w) const;
};

// MS-SMB2 2.2.4
struct NegotiateResponse {
    static constexpr uint16_t kStructureSize = 65;
    // The fixed part is 64 bytes, so the security buffer starts at msg offset 64 + 64.
    static constexpr uint16_t kSecurityBufferOffset = 0x80;

    uint16_t security_mode = security_mode::kSigningEnabled;
    uint16_t dialect_revision = 0;
    Guid server_guid{};
    uint32_t capabilities = 0;
    uint32_t max_transact_size = 0;
    uint32_t max_read_size = 0;
    uint32_t max_write_size = 0;
    uint64_t system_time = 0;        // FILETIME
    uint64_t server_start_time = 0;  // SHOULD be 0 (MS-SMB2 3.3.5.4)
    ByteVector security_buffer;      // SPNEGO NegTokenInit2, may be empty
    NegotiateContextList contexts;   // only for dialect 0x0311

    static Result<NegotiateResponse> parse(Bytes msg);
    // Call with the body right after the header (w.offset_from_base() == 64): the security
    // buffer is written at msg offset 0x80; for 0x0311 the context list follows 8-aligned and
    // NegotiateContextOffset/Count are filled; for other dialects both stay 0.
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
