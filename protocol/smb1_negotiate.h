// The SMB1 multi-protocol NEGOTIATE a client may open a connection with (MS-SMB2 3.3.5.3,
// MS-CIFS 2.2.4.52.1). The server only reads its dialect strings and answers with an SMB2
// NEGOTIATE response: dialect 0x02FF when "SMB 2.???" is listed (3.3.5.3.1), 0x0202 when only
// "SMB 2.002" is (3.3.5.3.2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

constexpr size_t kSmb1HeaderSize = 32;
constexpr uint8_t kSmb1CommandNegotiate = 0x72;

// True when `msg` starts with FF 'S' 'M' 'B' and Command is SMB_COM_NEGOTIATE (0x72).
bool is_smb1_negotiate(Bytes msg);

struct Smb1NegotiateRequest {
    static constexpr std::string_view kSmb2Wildcard = "SMB 2.???";
    static constexpr std::string_view kSmb2002 = "SMB 2.002";

    std::vector<std::string> dialects;  // in wire order, without BufferFormat and NUL

    bool lists(std::string_view dialect) const;
    bool lists_smb2_wildcard() const { return lists(kSmb2Wildcard); }
    bool lists_smb2_002() const { return lists(kSmb2002); }

    // `msg` starts at the SMB1 header. WordCount must be 0; ByteCount must fit; every dialect
    // is 0x02 followed by a NUL-terminated string inside ByteCount. Else
    // STATUS_INVALID_PARAMETER.
    static Result<Smb1NegotiateRequest> parse(Bytes msg);
    // Writes a whole SMB1 NEGOTIATE message (header + body), for the test client.
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
