// Hex helpers shared by the auth unit tests.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "protocol/bytes.h"

namespace daxsmbd::auth::test {

// Accepts upper/lower case and ignores spaces, so vectors can be pasted as printed.
inline protocol::ByteVector unhex(std::string_view s) {
    protocol::ByteVector out;
    int hi = -1;
    for (char c : s) {
        int v;
        if (c >= '0' && c <= '9')
            v = c - '0';
        else if (c >= 'a' && c <= 'f')
            v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v = c - 'A' + 10;
        else
            continue;
        if (hi < 0) {
            hi = v;
        } else {
            out.push_back(std::byte(hi << 4 | v));
            hi = -1;
        }
    }
    return out;
}

inline std::string hex(protocol::Bytes b) {
    std::string s;
    char buf[3];
    for (std::byte x : b) {
        std::snprintf(buf, sizeof(buf), "%02x", unsigned(x));
        s += buf;
    }
    return s;
}
template <class C>
inline std::string hex(const C& c) {
    return hex(protocol::Bytes(reinterpret_cast<const std::byte*>(c.data()), c.size()));
}

inline protocol::Bytes view(const protocol::ByteVector& v) {
    return {v.data(), v.size()};
}

}  // namespace daxsmbd::auth::test
