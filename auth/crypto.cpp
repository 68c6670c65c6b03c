#include "auth/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>

namespace daxsmbd::auth {

namespace {

// ---- MD4, RFC 1320 -------------------------------------------------------------------------

inline uint32_t rotl(uint32_t x, int s) {
    return (x << s) | (x >> (32 - s));
}

class Md4 {
  public:
    void update(Bytes data) {
        for (std::byte b : data) {
            block_[fill_++] = uint8_t(b);
            if (fill_ == 64) {
                compress();
                fill_ = 0;
            }
        }
        total_ += data.size();
    }

    Digest16 finish() {
        uint64_t bits = total_ * 8;
        // Padding: a single 1 bit, zeros up to 56 mod 64, then the 64-bit length (RFC
        // 1320 3.1-3.2).
        uint8_t one = 0x80;
        update(protocol::as_bytes(&one, 1));
        uint8_t zero = 0;
        while (fill_ != 56)
            update(protocol::as_bytes(&zero, 1));
        uint8_t len[8];
        for (int i = 0; i < 8; ++i)
            len[i] = uint8_t(bits >> (8 * i));
        update(protocol::as_bytes(len, 8));
        Digest16 out;
        for (int i = 0; i < 4; ++i)
            protocol::store_le32(out.data() + 4 * i, h_[i]);
        return out;
    }

  private:
    void compress() {
        uint32_t x[16];
        for (int i = 0; i < 16; ++i)
            x[i] = uint32_t(block_[4 * i]) | uint32_t(block_[4 * i + 1]) << 8 |
                   uint32_t(block_[4 * i + 2]) << 16 | uint32_t(block_[4 * i + 3]) << 24;
        uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3];
        auto f = [](uint32_t x, uint32_t y, uint32_t z) { return (x & y) | (~x & z); };
        auto g = [](uint32_t x, uint32_t y, uint32_t z) { return (x & y) | (x & z) | (y & z); };
        auto h = [](uint32_t x, uint32_t y, uint32_t z) { return x ^ y ^ z; };
        // Round 1 (RFC 1320 3.4).
        static constexpr int s1[4] = {3, 7, 11, 19};
        for (int i = 0; i < 16; ++i) {
            uint32_t t = rotl(a + f(b, c, d) + x[i], s1[i % 4]);
            a = d;
            d = c;
            c = b;
            b = t;
        }
        // Round 2.
        static constexpr int s2[4] = {3, 5, 9, 13};
        static constexpr int k2[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
        for (int i = 0; i < 16; ++i) {
            uint32_t t = rotl(a + g(b, c, d) + x[k2[i]] + 0x5A827999u, s2[i % 4]);
            a = d;
            d = c;
            c = b;
            b = t;
        }
        // Round 3.
        static constexpr int s3[4] = {3, 9, 11, 15};
        static constexpr int k3[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
        for (int i = 0; i < 16; ++i) {
            uint32_t t = rotl(a + h(b, c, d) + x[k3[i]] + 0x6ED9EBA1u, s3[i % 4]);
            a = d;
            d = c;
            c = b;
            b = t;
        }
        h_[0] += a;
        h_[1] += b;
        h_[2] += c;
        h_[3] += d;
    }

    uint32_t h_[4] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u};
    uint8_t block_[64] = {};
    size_t fill_ = 0;
    uint64_t total_ = 0;
};

// ---- EVP helpers ---------------------------------------------------------------------------

[[noreturn]] void crypto_failure() {
    std::abort();
}

// Fetched once; EVP_MD/EVP_MAC objects are immutable and thread-safe to share.
const EVP_MD* md_md5() {
    static EVP_MD* md = EVP_MD_fetch(nullptr, "MD5", nullptr);
    if (!md) crypto_failure();
    return md;
}
const EVP_MD* md_sha512() {
    static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA512", nullptr);
    if (!md) crypto_failure();
    return md;
}
EVP_MAC* mac_hmac() {
    static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (!mac) crypto_failure();
    return mac;
}

template <size_t N, class Parts>
std::array<std::byte, N> digest(const EVP_MD* md, const Parts& parts) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, md, nullptr) != 1) crypto_failure();
    for (Bytes p : parts)
        if (EVP_DigestUpdate(ctx, p.data(), p.size()) != 1) crypto_failure();
    std::array<std::byte, N> out;
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx, reinterpret_cast<unsigned char*>(out.data()), &len) != 1 ||
        len != N)
        crypto_failure();
    EVP_MD_CTX_free(ctx);
    return out;
}

template <size_t N>
std::array<std::byte, N> hmac(const char* digest_name, Bytes key,
                              std::initializer_list<Bytes> parts) {
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac_hmac());
    if (!ctx) crypto_failure();
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>(digest_name), 0),
        OSSL_PARAM_construct_end()};
    // A zero-length key is legal for HMAC but OpenSSL wants a non-null pointer.
    static const unsigned char empty = 0;
    const unsigned char* k =
        key.empty() ? &empty : reinterpret_cast<const unsigned char*>(key.data());
    if (EVP_MAC_init(ctx, k, key.size(), params) != 1) crypto_failure();
    for (Bytes p : parts)
        if (EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(p.data()), p.size()) != 1)
            crypto_failure();
    std::array<std::byte, N> out;
    size_t len = 0;
    if (EVP_MAC_final(ctx, reinterpret_cast<unsigned char*>(out.data()), &len, N) != 1 || len != N)
        crypto_failure();
    EVP_MAC_CTX_free(ctx);
    return out;
}

}  // namespace

Digest16 md4(std::initializer_list<Bytes> parts) {
    Md4 m;
    for (Bytes p : parts)
        m.update(p);
    return m.finish();
}

Digest16 md5(std::initializer_list<Bytes> parts) {
    return digest<16>(md_md5(), parts);
}

Digest64 sha512(std::span<const Bytes> parts) {
    return digest<64>(md_sha512(), parts);
}

Digest16 hmac_md5(Bytes key, std::initializer_list<Bytes> parts) {
    return hmac<16>("MD5", key, parts);
}

Digest32 hmac_sha256(Bytes key, std::initializer_list<Bytes> parts) {
    return hmac<32>("SHA256", key, parts);
}

Rc4::Rc4(Bytes key) {
    for (int i = 0; i < 256; ++i)
        s_[i] = uint8_t(i);
    if (key.empty()) return;
    uint8_t j = 0;
    for (int i = 0; i < 256; ++i) {
        j = uint8_t(j + s_[i] + uint8_t(key[i % key.size()]));
        std::swap(s_[i], s_[j]);
    }
}

void Rc4::process(MutableBytes data) {
    for (std::byte& b : data) {
        i_ = uint8_t(i_ + 1);
        j_ = uint8_t(j_ + s_[i_]);
        std::swap(s_[i_], s_[j_]);
        b ^= std::byte(s_[uint8_t(s_[i_] + s_[j_])]);
    }
}

ByteVector Rc4::process_copy(Bytes data) {
    ByteVector out(data.begin(), data.end());
    process(out);
    return out;
}

void random_bytes(MutableBytes out) {
    if (out.empty()) return;
    if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), int(out.size())) != 1)
        crypto_failure();
}

bool constant_time_equal(Bytes a, Bytes b) {
    if (a.size() != b.size()) return false;
    if (a.empty()) return true;
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace daxsmbd::auth
