#include "auth/kdf.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <vector>

namespace daxsmbd::auth {

using protocol::Dialect;

ByteVector sp800_108_hmac_sha256(Bytes key, Bytes label, Bytes context, uint32_t length_bits) {
    assert(length_bits > 0 && length_bits <= 256 && length_bits % 8 == 0);
    const uint8_t counter[4] = {0, 0, 0, 1};  // i = 1, big-endian (r = 32)
    const uint8_t separator = 0;
    const uint8_t len_be[4] = {uint8_t(length_bits >> 24), uint8_t(length_bits >> 16),
                               uint8_t(length_bits >> 8), uint8_t(length_bits)};
    Digest32 k =
        hmac_sha256(key, {protocol::as_bytes(counter, 4), label, protocol::as_bytes(&separator, 1),
                          context, protocol::as_bytes(len_be, 4)});
    return ByteVector(k.begin(), k.begin() + length_bits / 8);
}

namespace {

// A C string literal as bytes, terminating NUL included (MS-SMB2 3.1.4.2 lists the lengths
// with the NUL, e.g. "SMB2AESCMAC" is 12 bytes).
template <size_t N>
Bytes cstr(const char (&s)[N]) {
    return protocol::as_bytes(s, N);
}

std::array<std::byte, 16> first16(const ByteVector& v) {
    std::array<std::byte, 16> a{};
    std::copy_n(v.begin(), 16, a.begin());
    return a;
}

}  // namespace

std::array<std::byte, 16> smb_session_key(Bytes gss_key) {
    std::array<std::byte, 16> k{};
    std::copy_n(gss_key.begin(), std::min<size_t>(16, gss_key.size()), k.begin());
    return k;
}

SessionKeys derive_session_keys(Dialect dialect, uint16_t cipher, Bytes session_key_16,
                                Bytes full_session_key, Bytes preauth_hash_64) {
    SessionKeys keys;
    if (!protocol::is_smb3(dialect)) {
        // 2.0.2 / 2.1: HMAC-SHA256 signing keyed directly by Session.SessionKey.
        keys.signing_key = smb_session_key(session_key_16);
        keys.application_key = keys.signing_key;
        return keys;
    }
    if (dialect == Dialect::Smb311) {
        const bool wide = is_aes256(cipher);
        Bytes cipher_ki = (wide && !full_session_key.empty()) ? full_session_key : session_key_16;
        const uint32_t cipher_bits = wide ? 256 : 128;
        keys.signing_key = first16(
            sp800_108_hmac_sha256(session_key_16, cstr("SMBSigningKey"), preauth_hash_64, 128));
        keys.encryption_key_s2c =
            sp800_108_hmac_sha256(cipher_ki, cstr("SMBS2CCipherKey"), preauth_hash_64, cipher_bits);
        keys.decryption_key_c2s =
            sp800_108_hmac_sha256(cipher_ki, cstr("SMBC2SCipherKey"), preauth_hash_64, cipher_bits);
        keys.application_key =
            first16(sp800_108_hmac_sha256(session_key_16, cstr("SMBAppKey"), preauth_hash_64, 128));
        return keys;
    }
    // 3.0 / 3.0.2: fixed contexts, AES-128-CCM only.
    keys.signing_key =
        first16(sp800_108_hmac_sha256(session_key_16, cstr("SMB2AESCMAC"), cstr("SmbSign"), 128));
    keys.encryption_key_s2c =
        sp800_108_hmac_sha256(session_key_16, cstr("SMB2AESCCM"), cstr("ServerOut"), 128);
    keys.decryption_key_c2s =
        sp800_108_hmac_sha256(session_key_16, cstr("SMB2AESCCM"), cstr("ServerIn "), 128);
    keys.application_key =
        first16(sp800_108_hmac_sha256(session_key_16, cstr("SMB2APP"), cstr("SmbRpc"), 128));
    return keys;
}

std::array<std::byte, 16> derive_channel_signing_key(Dialect dialect, Bytes session_key_16,
                                                     Bytes preauth_hash_64) {
    if (!protocol::is_smb3(dialect)) return smb_session_key(session_key_16);
    if (dialect == Dialect::Smb311)
        return first16(
            sp800_108_hmac_sha256(session_key_16, cstr("SMBSigningKey"), preauth_hash_64, 128));
    return first16(
        sp800_108_hmac_sha256(session_key_16, cstr("SMB2AESCMAC"), cstr("SmbSign"), 128));
}

void PreauthHash::update(std::span<const Bytes> message_fragments) {
    std::vector<Bytes> parts;
    parts.reserve(message_fragments.size() + 1);
    parts.push_back(bytes_of(value_));
    parts.insert(parts.end(), message_fragments.begin(), message_fragments.end());
    Digest64 h = sha512(parts);
    std::memcpy(value_.data(), h.data(), 64);
}

}  // namespace daxsmbd::auth
