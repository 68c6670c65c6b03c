// Hex helpers shared by the auth unit tests.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "protocol/bytes.h"
#include "tests/unit/hex.h"

namespace daxsmbd::auth::test {

// Accepts upper/lower case and ignores spaces, so vectors can be pasted as printed.
inline protocol::ByteVector unhex(std::string_view s) {
    return daxsmbd::test::hex(s);
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
