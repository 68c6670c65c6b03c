// libFuzzer target: TRANSFORM_HEADER and COMPRESSION_TRANSFORM_HEADER.
#include <cstdlib>
#include <cstring>

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
