// libFuzzer target: SESSION_SETUP, LOGOFF, TREE_DISCONNECT, ECHO and CANCEL bodies.
#include <algorithm>
#include <cstdlib>

#include "protocol/cancel.h"
#include "protocol/echo.h"
#include "protocol/logoff.h"
#include "protocol/session_setup.h"
#include "protocol/tree_disconnect.h"

using namespace daxsmbd::protocol;

namespace {

template <class T>
ByteVector reserialize(const T& x, Bytes input) {
    ByteVector out(input.begin(), input.begin() + kHeaderSize);
    ByteWriter w(out, 0);
    x.serialize(w);
    return out;
}

template <class T>
void simple(Bytes in) {
    if (auto r = T::parse(in)) {
        if (!T::parse(reserialize(*r, in))) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes in(reinterpret_cast<const std::byte*>(data), size);
    if (auto r = SessionSetupRequest::parse(in)) {
        ByteVector token(r->security_buffer.begin(), r->security_buffer.end());
        r->security_buffer = token;
        auto out = reserialize(*r, in);  // `again` views into it
        auto again = SessionSetupRequest::parse(out);
        if (!again || !std::equal(again->security_buffer.begin(), again->security_buffer.end(),
                                  token.begin(), token.end()))
            std::abort();
    }
    if (auto r = SessionSetupResponse::parse(in)) {
        auto again = SessionSetupResponse::parse(reserialize(*r, in));
        if (!again || again->security_buffer != r->security_buffer) std::abort();
    }
    simple<LogoffRequest>(in);
    simple<LogoffResponse>(in);
    simple<TreeDisconnectRequest>(in);
    simple<TreeDisconnectResponse>(in);
    simple<EchoRequest>(in);
    simple<EchoResponse>(in);
    simple<CancelRequest>(in);
    return 0;
}
