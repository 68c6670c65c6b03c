// libFuzzer target: ERROR response, error contexts, share redirect and symlink error data.
#include <cstdlib>

#include "protocol/error.h"
#include "protocol/header.h"

using namespace daxsmbd::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes in(reinterpret_cast<const std::byte*>(data), size);
    if (auto e = ErrorResponse::parse(in)) {
        ByteVector out(in.begin(), in.begin() + kHeaderSize);
        ByteWriter w(out, 0);
        e->serialize(w);
        auto again = ErrorResponse::parse(out);
        if (!again || again->error_data != e->error_data) std::abort();
        if (auto ctxs = parse_error_contexts(e->error_data, e->error_context_count)) {
            auto rebuilt = make_error_response(*ctxs);
            auto back = parse_error_contexts(rebuilt.error_data, rebuilt.error_context_count);
            if (!back || *back != *ctxs) std::abort();
            // What a client does with a STATUS_BAD_NETWORK_NAME reply: the Share Redirect
            // contexts decoded, each one re-encoded to the same value.
            for (const auto& c : *ctxs) {
                if (c.error_id != error_id::kShareRedirect) continue;
                if (auto s = ShareRedirectErrorContext::decode(c.data)) {
                    auto again = ShareRedirectErrorContext::decode(s->encode());
                    if (!again || !(*again == *s)) std::abort();
                }
            }
        }
    }
    if (size >= 1) {
        if (auto ctxs = parse_error_contexts(in.subspan(1), data[0]))
            (void)make_error_response(*ctxs);
    }
    if (auto s = ShareRedirectErrorContext::decode(in)) {
        auto again = ShareRedirectErrorContext::decode(s->encode());
        if (!again || !(*again == *s)) std::abort();
    }
    if (auto s = SymlinkErrorResponse::decode(in)) {
        auto again = SymlinkErrorResponse::decode(s->encode());
        if (!again || !(*again == *s)) std::abort();
    }
    return 0;
}
