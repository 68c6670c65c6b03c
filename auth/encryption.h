// SMB 3.x message encryption of one session (MS-SMB2 3.1.4.3, 3.3.4.1.4, 3.3.5.2.1.1; digest
// 3.5): sealing a message into a TRANSFORM_HEADER and opening a received one, with nonces that
// never repeat under a key. Used by the server's connection edge and by the test client (which
// passes the keys the other way round).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "auth/signing.h"
#include "protocol/transform.h"

namespace daxsmbd::auth {

// "AES-128-GCM" etc. for logs (Samba's names, as in "server smb3 encryption algorithms");
// "none" for 0.
const char* cipher_name(uint16_t cipher);

// The nonces of one sealing key: a random prefix fixed for the key's life and a counter. Every
// SessionEncryption that seals with the key shares one sequence (a multichannel session has one
// per channel, each with cipher contexts of its own), so no nonce repeats under the key whichever
// channel sends (MS-SMB2 3.1.4.3). Thread-safe.
class NonceSequence {
  public:
    NonceSequence();
    const std::array<std::byte, 4>& prefix() const { return prefix_; }
    // The next counter value; UINT64_MAX once exhausted (the key can no longer seal).
    uint64_t next() { return counter_.fetch_add(1, std::memory_order_relaxed); }

  private:
    std::array<std::byte, 4> prefix_{};
    std::atomic<uint64_t> counter_{0};
};

class SessionEncryption {
  public:
    // `cipher` is the connection's cipher id (3.0/3.0.2: AES-128-CCM); `seal_key` encrypts what
    // this side sends, `open_key` decrypts what it receives (the server: EncryptionKey (S2C) /
    // DecryptionKey (C2S)). `nonces`: the sequence of `seal_key` when another SessionEncryption
    // already seals with it (another channel of the session); a new one when null.
    static Result<SessionEncryption> create(uint16_t cipher, Bytes seal_key, Bytes open_key,
                                            std::shared_ptr<NonceSequence> nonces = nullptr);

    SessionEncryption(SessionEncryption&&) noexcept;
    SessionEncryption& operator=(SessionEncryption&&) noexcept;

    uint16_t cipher_id() const { return seal_.cipher_id(); }
    // The nonce sequence of the sealing key, for the SessionEncryption of another channel.
    const std::shared_ptr<NonceSequence>& nonces() const { return nonces_; }

    // Encrypts the concatenation of `fragments` in place (an SMB2 message or compound) and
    // writes the 52-byte TRANSFORM_HEADER for it into `header`. The nonce is the key's counter
    // (bytes 0..7) behind its random prefix (the rest of the 11/12 bytes), as Samba does: it
    // never repeats under this key. Fails (the caller drops the connection)
    // when the counter is exhausted or the message is empty or above 4 GiB.
    Status seal(uint64_t session_id, std::span<const MutableBytes> fragments,
                std::span<std::byte, protocol::TransformHeader::kSize> header);

    // Decrypts a received TRANSFORM message in place: `msg` is the whole message, header
    // included; on success the plaintext is msg[52..]. STATUS_ACCESS_DENIED when the tag does
    // not verify, STATUS_INVALID_PARAMETER when the header is inconsistent (Flags/
    // EncryptionAlgorithm not 1, OriginalMessageSize not the ciphertext size, MS-SMB2
    // 3.3.5.2.1.1). The caller has already matched SessionId to this session.
    Status open(MutableBytes msg);

  private:
    SessionEncryption(Cipher seal, Cipher open, std::shared_ptr<NonceSequence> nonces);
    Cipher seal_;
    Cipher open_;
    std::shared_ptr<NonceSequence> nonces_;  // never null
};

}  // namespace daxsmbd::auth
