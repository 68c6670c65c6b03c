// Small cryptographic primitives shared by the auth code: MD4 and RC4 (own implementations,
// because Debian 12's OpenSSL 3.0 only has them in the legacy provider, which is not loaded by
// default), and thin wrappers over OpenSSL EVP for MD5, HMAC-MD5, HMAC-SHA256, SHA-512 and
// random bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "protocol/bytes.h"

namespace daxsmbd::auth {

using protocol::Bytes;
using protocol::ByteVector;
using protocol::MutableBytes;

using Digest16 = std::array<std::byte, 16>;
using Digest32 = std::array<std::byte, 32>;
using Digest64 = std::array<std::byte, 64>;

// MD4 (RFC 1320) over the concatenation of `parts`.
Digest16 md4(std::initializer_list<Bytes> parts);
// MD5 over the concatenation of `parts` (OpenSSL default provider).
Digest16 md5(std::initializer_list<Bytes> parts);
// HMAC-MD5 (RFC 2104) keyed with `key` over the concatenation of `parts`.
Digest16 hmac_md5(Bytes key, std::initializer_list<Bytes> parts);
// HMAC-SHA256 over the concatenation of `parts`.
Digest32 hmac_sha256(Bytes key, std::initializer_list<Bytes> parts);
// SHA-512 over the concatenation of `parts`.
Digest64 sha512(std::span<const Bytes> parts);

// RC4 stream cipher. The keystream state persists across process() calls, as NTLM's sealing
// "handles" require (MS-NLMP 3.4.4.2).
class Rc4 {
  public:
    explicit Rc4(Bytes key);
    // XORs the keystream into `data` in place.
    void process(MutableBytes data);
    // Returns RC4(data) from the current state.
    ByteVector process_copy(Bytes data);

  private:
    std::array<uint8_t, 256> s_{};
    uint8_t i_ = 0;
    uint8_t j_ = 0;
};

// Cryptographically strong random bytes (OpenSSL RAND_bytes); aborts if the RNG fails, since
// every caller (challenges, session keys, nonces) is unsafe without it.
void random_bytes(MutableBytes out);

// Constant-time comparison (CRYPTO_memcmp); false when the sizes differ.
bool constant_time_equal(Bytes a, Bytes b);

// Convenience views.
inline Bytes bytes_of(const ByteVector& v) {
    return {v.data(), v.size()};
}
template <size_t N>
inline Bytes bytes_of(const std::array<std::byte, N>& a) {
    return {a.data(), N};
}
template <size_t N>
inline Bytes bytes_of(const std::array<uint8_t, N>& a) {
    return {reinterpret_cast<const std::byte*>(a.data()), N};
}

}  // namespace daxsmbd::auth
