// SMB2/3 message signing (MS-SMB2 3.1.4.1, digest 3.4) and the AEAD ciphers of SMB 3.x
// encryption (MS-SMB2 3.1.4.3, digest 3.5), over OpenSSL EVP with contexts prepared once per key,
// because both run on every request.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "auth/crypto.h"
#include "protocol/result.h"

// OpenSSL types, kept out of the header's users.
struct evp_mac_ctx_st;
struct evp_cipher_ctx_st;

namespace daxsmbd::auth {

// SMB2_SIGNING_CAPABILITIES ids (MS-SMB2 2.2.3.1.7) map to these in order: 0 HMAC-SHA256,
// 1 AES-CMAC, 2 AES-GMAC.
enum class SigningAlgorithm : uint16_t { HmacSha256 = 0, AesCmac = 1, AesGmac = 2 };

using Signature = std::array<std::byte, 16>;

// Signs one message given as fragments (e.g. header+body in one buffer, READ data in another);
// the caller has already zeroed the 16-byte Signature field in the header. `message_id`,
// `from_server` (SMB2_FLAGS_SERVER_TO_REDIR set) and `is_cancel` only matter for AES-GMAC, whose
// 12-byte nonce is MessageId (LE64) || LE32(bit0 = from_server, bit1 = is_cancel).
// `key`: the session key (2.x HMAC) or a derived 16-byte signing key.
Signature compute_signature(SigningAlgorithm alg, Bytes key, std::span<const Bytes> fragments,
                            uint64_t message_id, bool from_server, bool is_cancel);

// A signing key with its OpenSSL context prepared once. Not thread-safe: one per channel (a
// connection lives on one event loop); move-only.
class Signer {
  public:
    // Fails with STATUS_INVALID_PARAMETER when the key length does not fit the algorithm (CMAC
    // and GMAC need 16 bytes; HMAC accepts any length).
    static Result<Signer> create(SigningAlgorithm alg, Bytes key);

    Signer(Signer&&) noexcept;
    Signer& operator=(Signer&&) noexcept;
    ~Signer();

    SigningAlgorithm algorithm() const { return alg_; }
    Signature sign(std::span<const Bytes> fragments, uint64_t message_id, bool from_server,
                   bool is_cancel);
    // Recomputes and compares in constant time. `signature` is the value that was in the
    // header before the caller zeroed it.
    bool verify(std::span<const Bytes> fragments, uint64_t message_id, bool from_server,
                bool is_cancel, Bytes signature);

  private:
    Signer() = default;
    SigningAlgorithm alg_ = SigningAlgorithm::HmacSha256;
    evp_mac_ctx_st* mac_ = nullptr;     // HMAC-SHA256 / CMAC, key already set
    evp_cipher_ctx_st* gcm_ = nullptr;  // AES-128-GCM for GMAC, key already set
};

// One SMB 3.x encryption key (MS-SMB2 3.1.4.3): AES-128/256 in CCM (11-byte nonce) or GCM
// (12-byte nonce) mode, 16-byte tag, AAD = the 32 bytes of the TRANSFORM_HEADER from Nonce to
// SessionId. Data is transformed in place. Not thread-safe; move-only.
class Cipher {
  public:
    // `cipher` is a cipher_id (auth/kdf.h); the key must be 16 or 32 bytes to match.
    static Result<Cipher> create(uint16_t cipher, Bytes key);

    Cipher(Cipher&&) noexcept;
    Cipher& operator=(Cipher&&) noexcept;
    ~Cipher();

    uint16_t cipher_id() const { return cipher_; }
    bool is_gcm() const { return gcm_mode_; }
    // 11 for CCM, 12 for GCM: how many bytes of the 16-byte TRANSFORM_HEADER Nonce are used.
    size_t nonce_size() const { return gcm_mode_ ? 12 : 11; }

    // Encrypts the concatenation of `fragments` in place and writes the tag. `nonce` must be
    // nonce_size() bytes (a longer 16-byte header field is accepted; the rest is ignored).
    Status encrypt(Bytes nonce, Bytes aad, std::span<const MutableBytes> fragments,
                   std::span<std::byte, 16> tag);
    Status encrypt(Bytes nonce, Bytes aad, MutableBytes data, std::span<std::byte, 16> tag) {
        return encrypt(nonce, aad, std::span<const MutableBytes>(&data, 1), tag);
    }
    // Decrypts in place; STATUS_ACCESS_DENIED when the tag does not verify (the caller
    // disconnects, MS-SMB2 3.3.5.2.1.1). On failure the data content is unspecified.
    Status decrypt(Bytes nonce, Bytes aad, std::span<const MutableBytes> fragments, Bytes tag);
    Status decrypt(Bytes nonce, Bytes aad, MutableBytes data, Bytes tag) {
        return decrypt(nonce, aad, std::span<const MutableBytes>(&data, 1), tag);
    }

  private:
    Cipher() = default;
    Status run(bool enc, Bytes nonce, Bytes aad, std::span<const MutableBytes> fragments,
               std::byte* tag);
    // CCM over several fragments without joining them (READ data stays in its pool buffer).
    Status run_ccm_gathered(bool enc, Bytes nonce, Bytes aad,
                            std::span<const MutableBytes> fragments, size_t total, std::byte* tag);
    uint16_t cipher_ = 0;
    bool gcm_mode_ = false;
    evp_cipher_ctx_st* ctx_ = nullptr;
    bool last_encrypt_ = true;  // direction the context was last initialised for
    ByteVector key_;
    // OpenSSL's CCM takes the payload in one call, so gathered CCM is built from AES-CBC (the
    // CBC-MAC) and AES-CTR contexts, keyed once; `mac_out_` receives the CBC output that only
    // the last block of matters.
    evp_cipher_ctx_st* cbc_mac_ = nullptr;
    evp_cipher_ctx_st* ctr_ = nullptr;
    ByteVector mac_out_;
};

}  // namespace daxsmbd::auth
