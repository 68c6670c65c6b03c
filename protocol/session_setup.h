// SMB2 SESSION_SETUP request and response (MS-SMB2 2.2.5, 2.2.6).
#pragma once

#include <cstdint>

#include "protocol/bytes.h"
#include "protocol/header.h"
#include "protocol/negotiate.h"  // security_mode:: bits (shared with NEGOTIATE)

namespace daxsmbd::protocol {

// Request Flags (MS-SMB2 2.2.5).
namespace session_setup_flags {
constexpr uint8_t kBinding = 0x01;
}
// Response SessionFlags (MS-SMB2 2.2.6).
namespace session_flags {
constexpr uint16_t kIsGuest = 0x0001;
constexpr uint16_t kIsNull = 0x0002;
constexpr uint16_t kEncryptData = 0x0004;
}  // namespace session_flags

// MS-SMB2 2.2.5
struct SessionSetupRequest {
    static constexpr uint16_t kStructureSize = 25;
    static constexpr uint16_t kSecurityBufferOffset = 0x58;  // header 64 + fixed part 24

    uint8_t flags = 0;
    uint8_t security_mode = 0;  // security_mode::kSigningEnabled / kSigningRequired (1 byte here)
    uint32_t capabilities = 0;
    uint32_t channel = 0;  // reserved
    uint64_t previous_session_id = 0;
    Bytes security_buffer;  // view into the parsed msg (or the caller's token when serializing)

    bool is_binding() const { return flags & session_setup_flags::kBinding; }

    // A non-empty security buffer must lie inside msg and after the fixed part.
    static Result<SessionSetupRequest> parse(Bytes msg);
    // With the body right after the header: SecurityBufferOffset is always 0x58.
    void serialize(ByteWriter& w) const;
};

// MS-SMB2 2.2.6
struct SessionSetupResponse {
    static constexpr uint16_t kStructureSize = 9;
    static constexpr uint16_t kSecurityBufferOffset = 0x48;  // header 64 + fixed part 8

    uint16_t session_flags = 0;
    ByteVector security_buffer;

    static Result<SessionSetupResponse> parse(Bytes msg);
    // With the body right after the header: SecurityBufferOffset is always 0x48 (also with an
    // empty buffer, as Samba does).
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
