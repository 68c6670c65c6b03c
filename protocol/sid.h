// Security identifier in its packet form (MS-DTYP 2.4.2.2), shared by the remoted-identity
// tree-connect context, security descriptors and tokens.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

struct Sid {
    // MS-DTYP 2.4.2: Revision MUST be 1 and SubAuthorityCount at most 15.
    static constexpr uint8_t kRevision = 1;
    static constexpr size_t kMaxSubAuthorities = 15;

    uint8_t revision = kRevision;
    std::array<uint8_t, 6> identifier_authority{};  // big-endian 48-bit value, as on the wire
    std::vector<uint32_t> sub_authorities;

    bool operator==(const Sid&) const = default;
    auto operator<=>(const Sid&) const = default;

    // Wire size: 8 + 4 * SubAuthorityCount.
    size_t size() const { return 8 + 4 * sub_authorities.size(); }
    uint64_t authority_value() const;

    // Reads one SID at the reader position (revision != 1 or more than 15 sub-authorities:
    // STATUS_INVALID_PARAMETER).
    static Result<Sid> read(ByteReader& r);
    // Parses a SID that starts at b[0]; trailing bytes are ignored.
    static Result<Sid> parse(Bytes b);
    void serialize(ByteWriter& w) const;
    ByteVector to_bytes() const;

    // "S-1-5-21-1-2-3-500" (MS-DTYP 2.4.2.1: authority in decimal below 2^32, else 0x + 12 hex).
    std::string to_string() const;
    // Inverse of to_string(); STATUS_INVALID_PARAMETER for anything malformed.
    static Result<Sid> from_string(std::string_view s);

    // Builds S-1-<authority>-<subs...>.
    static Sid make(uint64_t authority, std::initializer_list<uint32_t> subs);
};

}  // namespace daxsmbd::protocol
