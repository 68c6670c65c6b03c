// libFuzzer target: TRANSFORM_HEADER and COMPRESSION_TRANSFORM_HEADER, and the receive checks
// of a TRANSFORM message (auth::SessionEncryption::open: header checks, then the AEAD) with every
// cipher: arbitrary input is refused, never a crash.
#include <cstdlib>
#include <cstring>

#include "auth/encryption.h"
#include "auth/kdf.h"
#include "protocol/transform.h"

using namespace daxsmbd::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes in(reinterpret_cast<const std::byte*>(data), size);
    if (auto h = TransformHeader::parse(in)) {
        ByteVector out;
        ByteWriter w(out);
        h->serialize(w);
        auto aad = h->aad();
        auto view = transform_aad(in);
        // The AAD of the parsed header equals the input's bytes 20..51 (Reserved aside).
        if (!view || out.size() != TransformHeader::kSize) std::abort();
        std::array<std::byte, TransformHeader::kSize> fixed{};
        h->serialize_to(fixed);
        if (std::memcmp(fixed.data(), out.data(), TransformHeader::kSize) != 0) std::abort();
        static const ByteVector key(32, std::byte{0x5a});
        for (uint16_t c = 1; c <= 4; ++c) {
            Bytes k = Bytes(key).first(daxsmbd::auth::is_aes256(c) ? 32 : 16);
            auto enc = daxsmbd::auth::SessionEncryption::create(c, k, k);
            if (!enc) std::abort();
            ByteVector msg(in.begin(), in.end());
            // A random tag verifies with negligible probability; either way no crash.
            (void)enc->open(msg);
        }
        if (std::memcmp(aad.data(), view->data(), 20) != 0 ||
            std::memcmp(aad.data() + 24, view->data() + 24, 8) != 0)
            std::abort();
    }
    if (auto h = CompressionTransformHeader::parse(in)) {
        ByteVector out;
        ByteWriter w(out);
        h->serialize(w);
        if (std::memcmp(out.data(), in.data(), CompressionTransformHeader::kSize) != 0)
            std::abort();
    }
    return 0;
}
