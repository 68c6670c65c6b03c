#include "auth/signing.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "auth/kdf.h"

namespace daxsmbd::auth {

namespace {

[[noreturn]] void crypto_failure() {
    std::abort();
}

EVP_MAC* fetch_mac(const char* name) {
    EVP_MAC* m = EVP_MAC_fetch(nullptr, name, nullptr);
    if (!m) crypto_failure();
    return m;
}
EVP_MAC* mac_hmac() {
    static EVP_MAC* m = fetch_mac("HMAC");
    return m;
}
EVP_MAC* mac_cmac() {
    static EVP_MAC* m = fetch_mac("CMAC");
    return m;
}
const EVP_CIPHER* fetch_cipher(const char* name) {
    EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, name, nullptr);
    if (!c) crypto_failure();
    return c;
}
const EVP_CIPHER* cipher_for(uint16_t id) {
    static const EVP_CIPHER* ccm128 = fetch_cipher("AES-128-CCM");
    static const EVP_CIPHER* gcm128 = fetch_cipher("AES-128-GCM");
    static const EVP_CIPHER* ccm256 = fetch_cipher("AES-256-CCM");
    static const EVP_CIPHER* gcm256 = fetch_cipher("AES-256-GCM");
    switch (id) {
        case cipher_id::kAes128Ccm:
            return ccm128;
        case cipher_id::kAes128Gcm:
            return gcm128;
        case cipher_id::kAes256Ccm:
            return ccm256;
        case cipher_id::kAes256Gcm:
            return gcm256;
        default:
            return nullptr;
    }
}

const unsigned char* uc(const std::byte* p) {
    return reinterpret_cast<const unsigned char*>(p);
}
unsigned char* uc(std::byte* p) {
    return reinterpret_cast<unsigned char*>(p);
}

// MS-SMB2 3.1.4.1: the AES-GMAC nonce.
std::array<std::byte, 12> gmac_nonce(uint64_t message_id, bool from_server, bool is_cancel) {
    std::array<std::byte, 12> n{};
    protocol::store_le64(n.data(), message_id);
    protocol::store_le32(n.data() + 8, (from_server ? 1u : 0u) | (is_cancel ? 2u : 0u));
    return n;
}

}  // namespace

// ---- Signer --------------------------------------------------------------------------------

Result<Signer> Signer::create(SigningAlgorithm alg, Bytes key) {
    Signer s;
    s.alg_ = alg;
    switch (alg) {
        case SigningAlgorithm::HmacSha256: {
            if (key.empty()) return Error(NtStatus::InvalidParameter);
            s.mac_ = EVP_MAC_CTX_new(mac_hmac());
            if (!s.mac_) crypto_failure();
            OSSL_PARAM params[2] = {OSSL_PARAM_construct_utf8_string(
                                        OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
                                    OSSL_PARAM_construct_end()};
            if (EVP_MAC_init(s.mac_, uc(key.data()), key.size(), params) != 1) crypto_failure();
            break;
        }
        case SigningAlgorithm::AesCmac: {
            if (key.size() != 16) return Error(NtStatus::InvalidParameter);
            s.mac_ = EVP_MAC_CTX_new(mac_cmac());
            if (!s.mac_) crypto_failure();
            OSSL_PARAM params[2] = {OSSL_PARAM_construct_utf8_string(
                                        OSSL_MAC_PARAM_CIPHER, const_cast<char*>("AES-128-CBC"), 0),
                                    OSSL_PARAM_construct_end()};
            if (EVP_MAC_init(s.mac_, uc(key.data()), key.size(), params) != 1) crypto_failure();
            break;
        }
        case SigningAlgorithm::AesGmac: {
            if (key.size() != 16) return Error(NtStatus::InvalidParameter);
            s.gcm_ = EVP_CIPHER_CTX_new();
            if (!s.gcm_ || EVP_EncryptInit_ex(s.gcm_, cipher_for(cipher_id::kAes128Gcm), nullptr,
                                              uc(key.data()), nullptr) != 1)
                crypto_failure();
            break;
        }
        default:
            return Error(NtStatus::InvalidParameter);
    }
    return s;
}

Signer::Signer(Signer&& o) noexcept
    : alg_(o.alg_), mac_(std::exchange(o.mac_, nullptr)), gcm_(std::exchange(o.gcm_, nullptr)) {}

Signer& Signer::operator=(Signer&& o) noexcept {
    if (this != &o) {
        EVP_MAC_CTX_free(mac_);
        EVP_CIPHER_CTX_free(gcm_);
        alg_ = o.alg_;
        mac_ = std::exchange(o.mac_, nullptr);
        gcm_ = std::exchange(o.gcm_, nullptr);
    }
    return *this;
}

Signer::~Signer() {
    EVP_MAC_CTX_free(mac_);
    EVP_CIPHER_CTX_free(gcm_);
}

Signature Signer::sign(std::span<const Bytes> fragments, uint64_t message_id, bool from_server,
                       bool is_cancel) {
    Signature sig{};
    if (alg_ == SigningAlgorithm::AesGmac) {
        // GMAC = GCM with the whole message as AAD and no plaintext (MS-SMB2 3.1.4.1).
        auto nonce = gmac_nonce(message_id, from_server, is_cancel);
        int len = 0;
        if (EVP_EncryptInit_ex(gcm_, nullptr, nullptr, nullptr, uc(nonce.data())) != 1)
            crypto_failure();
        for (Bytes f : fragments)
            if (!f.empty() &&
                EVP_EncryptUpdate(gcm_, nullptr, &len, uc(f.data()), int(f.size())) != 1)
                crypto_failure();
        unsigned char dummy[16];
        if (EVP_EncryptFinal_ex(gcm_, dummy, &len) != 1 ||
            EVP_CIPHER_CTX_ctrl(gcm_, EVP_CTRL_AEAD_GET_TAG, 16, sig.data()) != 1)
            crypto_failure();
        return sig;
    }
    // Restart with the key set in create() (a null key keeps it).
    if (EVP_MAC_init(mac_, nullptr, 0, nullptr) != 1) crypto_failure();
    for (Bytes f : fragments)
        if (EVP_MAC_update(mac_, uc(f.data()), f.size()) != 1) crypto_failure();
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t len = 0;
    if (EVP_MAC_final(mac_, out, &len, sizeof(out)) != 1 || len < 16) crypto_failure();
    // HMAC-SHA256 is truncated to its first 16 bytes; CMAC is 16 bytes.
    std::memcpy(sig.data(), out, 16);
    return sig;
}

bool Signer::verify(std::span<const Bytes> fragments, uint64_t message_id, bool from_server,
                    bool is_cancel, Bytes signature) {
    Signature expect = sign(fragments, message_id, from_server, is_cancel);
    return constant_time_equal(bytes_of(expect), signature);
}

Signature compute_signature(SigningAlgorithm alg, Bytes key, std::span<const Bytes> fragments,
                            uint64_t message_id, bool from_server, bool is_cancel) {
    auto s = Signer::create(alg, key);
    if (!s) return Signature{};  // unusable key: an all-zero signature never verifies
    return s->sign(fragments, message_id, from_server, is_cancel);
}

// ---- Cipher --------------------------------------------------------------------------------

Result<Cipher> Cipher::create(uint16_t cipher, Bytes key) {
    const EVP_CIPHER* evp = cipher_for(cipher);
    if (!evp) return Error(NtStatus::InvalidParameter);
    if (key.size() != (is_aes256(cipher) ? 32u : 16u)) return Error(NtStatus::InvalidParameter);
    Cipher c;
    c.cipher_ = cipher;
    c.gcm_mode_ = cipher == cipher_id::kAes128Gcm || cipher == cipher_id::kAes256Gcm;
    c.key_.assign(key.begin(), key.end());
    c.ctx_ = EVP_CIPHER_CTX_new();
    if (!c.ctx_ || EVP_EncryptInit_ex(c.ctx_, evp, nullptr, nullptr, nullptr) != 1)
        crypto_failure();
    if (!c.gcm_mode_) {
        // CCM: 11-byte nonce (L = 4) and 16-byte tag must be fixed before the key.
        if (EVP_CIPHER_CTX_ctrl(c.ctx_, EVP_CTRL_AEAD_SET_IVLEN, 11, nullptr) != 1 ||
            EVP_CIPHER_CTX_ctrl(c.ctx_, EVP_CTRL_AEAD_SET_TAG, 16, nullptr) != 1)
            crypto_failure();
    }
    if (EVP_EncryptInit_ex(c.ctx_, nullptr, nullptr, uc(key.data()), nullptr) != 1)
        crypto_failure();
    return c;
}

Cipher::Cipher(Cipher&& o) noexcept
    : cipher_(o.cipher_),
      gcm_mode_(o.gcm_mode_),
      ctx_(std::exchange(o.ctx_, nullptr)),
      last_encrypt_(o.last_encrypt_),
      key_(std::move(o.key_)),
      cbc_mac_(std::exchange(o.cbc_mac_, nullptr)),
      ctr_(std::exchange(o.ctr_, nullptr)),
      mac_out_(std::move(o.mac_out_)) {}

Cipher& Cipher::operator=(Cipher&& o) noexcept {
    if (this != &o) {
        EVP_CIPHER_CTX_free(ctx_);
        EVP_CIPHER_CTX_free(cbc_mac_);
        EVP_CIPHER_CTX_free(ctr_);
        cipher_ = o.cipher_;
        gcm_mode_ = o.gcm_mode_;
        ctx_ = std::exchange(o.ctx_, nullptr);
        last_encrypt_ = o.last_encrypt_;
        key_ = std::move(o.key_);
        cbc_mac_ = std::exchange(o.cbc_mac_, nullptr);
        ctr_ = std::exchange(o.ctr_, nullptr);
        mac_out_ = std::move(o.mac_out_);
    }
    return *this;
}

Cipher::~Cipher() {
    EVP_CIPHER_CTX_free(ctx_);
    EVP_CIPHER_CTX_free(cbc_mac_);
    EVP_CIPHER_CTX_free(ctr_);
    OPENSSL_cleanse(key_.data(), key_.size());
}

Status Cipher::run(bool enc, Bytes nonce, Bytes aad, std::span<const MutableBytes> fragments,
                   std::byte* tag) {
    if (nonce.size() < nonce_size()) return Error(NtStatus::InvalidParameter);
    size_t total = 0;
    for (auto f : fragments)
        total += f.size();
    if (total == 0 || total > size_t(INT32_MAX) || aad.size() > size_t(INT32_MAX))
        return Error(NtStatus::InvalidParameter);
    int len = 0;
    // Switching direction needs the key set again: OpenSSL's accelerated CCM keeps a
    // direction-specific schedule (decrypt after encrypt on one context fails otherwise).
    const unsigned char* rekey = nullptr;
    if (enc != last_encrypt_) {
        rekey = uc(key_.data());
        last_encrypt_ = enc;
    }
    if (EVP_CipherInit_ex(ctx_, nullptr, nullptr, rekey, uc(nonce.data()), enc ? 1 : 0) != 1)
        crypto_failure();
    if (gcm_mode_) {
        if (EVP_CipherUpdate(ctx_, nullptr, &len, uc(aad.data()), int(aad.size())) != 1)
            crypto_failure();
        for (auto f : fragments)
            if (!f.empty() &&
                EVP_CipherUpdate(ctx_, uc(f.data()), &len, uc(f.data()), int(f.size())) != 1)
                crypto_failure();
        if (!enc && EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_TAG, 16, tag) != 1)
            crypto_failure();
        unsigned char fin[16];
        if (EVP_CipherFinal_ex(ctx_, fin, &len) != 1) {
            if (enc) crypto_failure();
            return Error(NtStatus::AccessDenied);
        }
        if (enc && EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1) crypto_failure();
        return {};
    }
    if (fragments.size() > 1) return run_ccm_gathered(enc, nonce, aad, fragments, total, tag);
    // CCM, one buffer: the total length is declared first, the payload goes in one call.
    std::byte* buf = fragments[0].data();
    if (!enc && EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_TAG, 16, tag) != 1) crypto_failure();
    if (EVP_CipherUpdate(ctx_, nullptr, &len, nullptr, int(total)) != 1 ||
        EVP_CipherUpdate(ctx_, nullptr, &len, uc(aad.data()), int(aad.size())) != 1)
        crypto_failure();
    if (EVP_CipherUpdate(ctx_, uc(buf), &len, uc(buf), int(total)) != 1) {
        if (enc) crypto_failure();
        return Error(NtStatus::AccessDenied);
    }
    if (enc) {
        unsigned char fin[16];
        if (EVP_CipherFinal_ex(ctx_, fin, &len) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1)
            crypto_failure();
    }
    return {};
}

// CCM (NIST SP 800-38C, RFC 3610) with the SMB parameters of MS-SMB2 3.1.4.3: 11-byte nonce
// (L = 4), 16-byte tag (M = 16). The CBC-MAC runs over B0 || encoded AAD || payload (zero
// padded) with AES-CBC and a zero IV; the payload is encrypted with AES-CTR from counter block
// A1; the tag is the MAC xor E(K, A0). Each fragment is MACed and en/decrypted in place where
// it lies, so the READ data that goes out as its own gather fragment is never copied.
Status Cipher::run_ccm_gathered(bool enc, Bytes nonce, Bytes aad,
                                std::span<const MutableBytes> fragments, size_t total,
                                std::byte* tag) {
    constexpr size_t kChunk = 64 * 1024;
    const bool wide = is_aes256(cipher_);
    if (!cbc_mac_) {
        static const EVP_CIPHER* cbc128 = fetch_cipher("AES-128-CBC");
        static const EVP_CIPHER* cbc256 = fetch_cipher("AES-256-CBC");
        static const EVP_CIPHER* ctr128 = fetch_cipher("AES-128-CTR");
        static const EVP_CIPHER* ctr256 = fetch_cipher("AES-256-CTR");
        cbc_mac_ = EVP_CIPHER_CTX_new();
        ctr_ = EVP_CIPHER_CTX_new();
        if (!cbc_mac_ || !ctr_ ||
            EVP_EncryptInit_ex(cbc_mac_, wide ? cbc256 : cbc128, nullptr, uc(key_.data()),
                               nullptr) != 1 ||
            EVP_EncryptInit_ex(ctr_, wide ? ctr256 : ctr128, nullptr, uc(key_.data()), nullptr) !=
                1 ||
            EVP_CIPHER_CTX_set_padding(cbc_mac_, 0) != 1)
            crypto_failure();
        mac_out_.resize(kChunk + 16);
    }
    if (aad.size() >= 0xFF00 || total > UINT32_MAX) return Error(NtStatus::InvalidParameter);
    static const unsigned char zero_iv[16] = {};
    if (EVP_EncryptInit_ex(cbc_mac_, nullptr, nullptr, nullptr, zero_iv) != 1) crypto_failure();
    std::array<unsigned char, 16> mac{};
    int len = 0;
    auto mac_update = [&](const std::byte* p, size_t n) {
        while (n) {
            size_t k = std::min(n, kChunk);
            if (EVP_EncryptUpdate(cbc_mac_, uc(mac_out_.data()), &len, uc(p), int(k)) != 1)
                crypto_failure();
            if (len >= 16) std::memcpy(mac.data(), mac_out_.data() + len - 16, 16);
            p += k;
            n -= k;
        }
    };
    // B0: flags (Adata, M' = (16-2)/2, L' = 4-1), nonce, 4-byte big-endian message length.
    std::array<std::byte, 16> block{};
    block[0] = std::byte(0x40 | (7 << 3) | 3);
    std::memcpy(block.data() + 1, nonce.data(), 11);
    for (int i = 0; i < 4; ++i)
        block[12 + i] = std::byte(total >> (8 * (3 - i)));
    mac_update(block.data(), 16);
    // AAD: 2-byte big-endian length, the bytes, zero padding to a block boundary.
    std::array<std::byte, 2> alen{std::byte(aad.size() >> 8), std::byte(aad.size())};
    mac_update(alen.data(), 2);
    if (!aad.empty()) mac_update(aad.data(), aad.size());
    static const std::byte zeros[16] = {};
    if (size_t pad = (16 - (2 + aad.size()) % 16) % 16) mac_update(zeros, pad);

    // Counter blocks: flags L' = 3, nonce, 4-byte big-endian counter. A0 gives the tag mask.
    std::array<std::byte, 16> counter{};
    counter[0] = std::byte(3);
    std::memcpy(counter.data() + 1, nonce.data(), 11);
    std::array<unsigned char, 16> s0{};
    if (EVP_EncryptInit_ex(ctr_, nullptr, nullptr, nullptr, uc(counter.data())) != 1 ||
        EVP_EncryptUpdate(ctr_, s0.data(), &len, uc(zeros), 16) != 1)
        crypto_failure();
    counter[15] = std::byte(1);
    if (EVP_EncryptInit_ex(ctr_, nullptr, nullptr, nullptr, uc(counter.data())) != 1)
        crypto_failure();
    for (auto f : fragments) {
        if (f.empty()) continue;
        // Encrypting: MAC the plaintext, then encrypt it; decrypting: the other way round.
        if (enc) mac_update(f.data(), f.size());
        for (size_t at = 0; at < f.size();) {
            size_t k = std::min(f.size() - at, size_t(INT32_MAX & ~15));
            if (EVP_EncryptUpdate(ctr_, uc(f.data() + at), &len, uc(f.data() + at), int(k)) != 1)
                crypto_failure();
            at += k;
        }
        if (!enc) mac_update(f.data(), f.size());
    }
    if (size_t pad = (16 - total % 16) % 16) mac_update(zeros, pad);
    std::array<std::byte, 16> computed;
    for (int i = 0; i < 16; ++i)
        computed[i] = std::byte(mac[i] ^ s0[i]);
    if (enc) {
        std::memcpy(tag, computed.data(), 16);
        return {};
    }
    if (!constant_time_equal(bytes_of(computed), Bytes(tag, 16)))
        return Error(NtStatus::AccessDenied);
    return {};
}

Status Cipher::encrypt(Bytes nonce, Bytes aad, std::span<const MutableBytes> fragments,
                       std::span<std::byte, 16> tag) {
    return run(true, nonce, aad, fragments, tag.data());
}

Status Cipher::decrypt(Bytes nonce, Bytes aad, std::span<const MutableBytes> fragments, Bytes tag) {
    if (tag.size() != 16) return Error(NtStatus::InvalidParameter);
    std::array<std::byte, 16> t;
    std::memcpy(t.data(), tag.data(), 16);
    return run(false, nonce, aad, fragments, t.data());
}

}  // namespace daxsmbd::auth
