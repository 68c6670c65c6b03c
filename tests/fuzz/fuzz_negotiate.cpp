// libFuzzer target: NEGOTIATE request/response and the negotiate context list.
#include <cstdlib>

#include "protocol/negotiate.h"

using namespace daxsmbd::protocol;

namespace {

// Re-serializes behind the input's own 64-byte header so that msg offsets stay valid.
template <class T>
ByteVector reserialize(const T& x, Bytes input) {
    ByteVector out(input.begin(), input.begin() + kHeaderSize);
    ByteWriter w(out, 0);
    x.serialize(w);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes in(reinterpret_cast<const std::byte*>(data), size);
    if (auto r = NegotiateRequest::parse(in)) {
        auto out = reserialize(*r, in);
        auto again = NegotiateRequest::parse(out);
        if (!again || again->dialects != r->dialects ||
            again->contexts.size() != r->contexts.size())
            std::abort();
        (void)validate_negotiate_contexts(r->contexts);
    }
    if (auto r = NegotiateResponse::parse(in)) {
        auto out = reserialize(*r, in);
        auto again = NegotiateResponse::parse(out);
        if (!again || again->security_buffer != r->security_buffer) std::abort();
    }
    // The context list on its own, at a few offsets/counts taken from the input.
    if (size >= 3) {
        uint16_t count = uint16_t(data[0] | (data[1] << 8)) % 32;
        uint64_t offset = data[2];
        if (auto l = parse_negotiate_contexts(in, offset, count)) {
            ByteVector out;
            ByteWriter w(out);
            serialize_negotiate_contexts(*l, w);
        }
    }
    return 0;
}
