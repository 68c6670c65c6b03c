// Test data helpers: a deterministic byte pattern and a file's bytes read straight from disk.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::test_support {

// `n` pseudo-random bytes (xorshift32), the same for the same seed.
inline protocol::ByteVector pattern(size_t n, uint32_t seed) {
    protocol::ByteVector v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = std::byte(x);
    }
    return v;
}

// The whole file at `path` (empty when it cannot be read).
inline protocol::ByteVector file_contents(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> v((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    protocol::ByteVector out(v.size());
    if (!v.empty()) std::memcpy(out.data(), v.data(), v.size());
    return out;
}

}  // namespace daxsmbd::test_support
