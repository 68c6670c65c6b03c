// Hex strings to bytes for the unit tests' golden vectors.
#pragma once

#include <cstdint>
#include <string_view>

#include "protocol/bytes.h"

namespace daxsmbd::test {

// Two hex digits per byte, either case; every other character (spaces, separators) is skipped,
// so vectors can be pasted as printed by the specifications.
inline protocol::ByteVector hex(std::string_view s) {
    protocol::ByteVector out;
    int hi = -1;
    for (char c : s) {
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            continue;
        if (hi < 0) {
            hi = d;
        } else {
            out.push_back(std::byte(hi << 4 | d));
            hi = -1;
        }
    }
    return out;
}

}  // namespace daxsmbd::test
