// libFuzzer target: compound splitting, then every element through the parser of its command
// among the session-level PDUs (and OPLOCK_BREAK), and the chain writer on what was split.
#include <cstdlib>

#include "protocol/cancel.h"
#include "protocol/compound.h"
#include "protocol/echo.h"
#include "protocol/error.h"
#include "protocol/logoff.h"
#include "protocol/negotiate.h"
#include "protocol/oplock_break.h"
#include "protocol/session_setup.h"
#include "protocol/tree_connect.h"
#include "protocol/tree_disconnect.h"

using namespace daxsmbd::protocol;

namespace {

void dispatch(Bytes msg) {
    auto h = Header::parse(msg);
    if (!h) return;
    if (h->is_response()) (void)ErrorResponse::parse(msg);
    switch (h->command) {
        case Command::Negotiate:
            (void)NegotiateRequest::parse(msg);
            (void)NegotiateResponse::parse(msg);
            break;
        case Command::SessionSetup:
            (void)SessionSetupRequest::parse(msg);
            (void)SessionSetupResponse::parse(msg);
            break;
        case Command::Logoff:
            (void)LogoffRequest::parse(msg);
            break;
        case Command::TreeConnect:
            (void)TreeConnectRequest::parse(msg);
            (void)TreeConnectResponse::parse(msg);
            break;
        case Command::TreeDisconnect:
            (void)TreeDisconnectRequest::parse(msg);
            break;
        case Command::Cancel:
            (void)CancelRequest::parse(msg);
            break;
        case Command::Echo:
            (void)EchoRequest::parse(msg);
            break;
        case Command::OplockBreak:
            if (auto a = parse_break_acknowledgment(msg)) {
                ByteVector out;
                ByteWriter w(out);
                std::visit([&](const auto& x) { x.serialize(w); }, *a);
            }
            (void)parse_break_notification(msg);
            break;
        default:
            break;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes in(reinterpret_cast<const std::byte*>(data), size);
    auto elements = split_compound(in, 16);
    if (!elements) return 0;
    size_t total = 0;
    for (auto e : *elements) {
        if (e.size() < kHeaderSize) std::abort();
        total += e.size();
        dispatch(e);
    }
    if (total != size) std::abort();
    // Rebuild the chain with the writer: same element count, and it splits again.
    ByteVector out;
    CompoundWriter cw(out, 16);
    for (auto e : *elements) {
        if (!cw.begin_element()) std::abort();
        cw.writer().bytes(e);
    }
    cw.finish();
    auto again = split_compound(out, 16);
    if (!again || again->size() != elements->size()) std::abort();
    return 0;
}
