// SMB 3.x key derivation (MS-SMB2 3.1.4.2, digest 3.3) and the 3.1.1 preauthentication integrity
// hash (MS-SMB2 3.3.5.4, 3.3.5.5.1; digest 2.5).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "auth/crypto.h"
#include "protocol/header.h"

namespace daxsmbd::auth {

// SMB2_ENCRYPTION_CAPABILITIES cipher ids (MS-SMB2 2.2.3.1.2).
namespace cipher_id {
constexpr uint16_t kNone = 0x0000;
constexpr uint16_t kAes128Ccm = 0x0001;
constexpr uint16_t kAes128Gcm = 0x0002;
constexpr uint16_t kAes256Ccm = 0x0003;
constexpr uint16_t kAes256Gcm = 0x0004;
}  // namespace cipher_id

constexpr bool is_aes256(uint16_t cipher) {
    return cipher == cipher_id::kAes256Ccm || cipher == cipher_id::kAes256Gcm;
}

// NIST SP800-108 KDF in counter mode with HMAC-SHA256, r = 32, a single iteration (so
// `length_bits` is at most 256): HMAC(key, [1]be32 || label || 0x00 || context || [L]be32).
// `label` and `context` are passed exactly as MS-SMB2 lists them, i.e. including their
// terminating NUL; the SP800-108 0x00 separator is added here.
ByteVector sp800_108_hmac_sha256(Bytes key, Bytes label, Bytes context, uint32_t length_bits);

struct SessionKeys {
    std::array<std::byte, 16> signing_key{};
    ByteVector encryption_key_s2c;  // Session.EncryptionKey (server -> client), 16 or 32 bytes
    ByteVector decryption_key_c2s;  // Session.DecryptionKey (client -> server), 16 or 32 bytes
    std::array<std::byte, 16> application_key{};
};

// Derives Session.SigningKey, EncryptionKey, DecryptionKey and ApplicationKey (server view).
// `session_key_16` is Session.SessionKey (the first 16 bytes of the GSS key, zero padded);
// `full_session_key` is Session.FullSessionKey (the whole GSS key; empty = same as
// session_key_16), used only as Ki of 3.1.1 AES-256 cipher keys; `preauth_hash_64` is
// Session.PreauthIntegrityHashValue (3.1.1 only, ignored otherwise). `cipher` selects L=256 for
// the cipher keys when it is AES-256 (3.1.1 only); signing/application keys are always 128 bits
// (as Samba and ksmbd do). 2.0.2/2.1 have no KDF: signing and application key = session key and
// the cipher keys are empty.
SessionKeys derive_session_keys(protocol::Dialect dialect, uint16_t cipher, Bytes session_key_16,
                                Bytes full_session_key, Bytes preauth_hash_64);

// Channel.SigningKey of a bound channel (MS-SMB2 3.3.5.5.3): same label as the session signing
// key, keyed with the binding authentication's session key; for 3.1.1 the context is that
// channel's PreauthSession.PreauthIntegrityHashValue.
std::array<std::byte, 16> derive_channel_signing_key(protocol::Dialect dialect,
                                                     Bytes session_key_16, Bytes preauth_hash_64);

// Session.SessionKey from a GSS key: the first 16 bytes, right-padded with zeros when shorter
// (MS-SMB2 3.3.1.8).
std::array<std::byte, 16> smb_session_key(Bytes gss_key);

// The 3.1.1 preauthentication integrity hash: H' = SHA-512(H || message), starting from 64
// zero bytes. A message may be given in several fragments (they are hashed as one message).
class PreauthHash {
  public:
    PreauthHash() = default;
    explicit PreauthHash(const std::array<uint8_t, 64>& initial) : value_(initial) {}

    void update(std::span<const Bytes> message_fragments);
    void update(Bytes message) { update(std::span<const Bytes>(&message, 1)); }
    const std::array<uint8_t, 64>& value() const { return value_; }
    Bytes bytes() const { return bytes_of(value_); }
    void reset() { value_.fill(0); }

  private:
    std::array<uint8_t, 64> value_{};
};

}  // namespace daxsmbd::auth
