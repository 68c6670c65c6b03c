// libFuzzer target: SMB1 multi-protocol NEGOTIATE detection and parsing.
#include <cstdlib>

#include "protocol/smb1_negotiate.h"

using namespace daxsmbd::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes in(reinterpret_cast<const std::byte*>(data), size);
    bool detected = is_smb1_negotiate(in);
    if (auto r = Smb1NegotiateRequest::parse(in)) {
        if (!detected) std::abort();
        (void)r->lists_smb2_wildcard();
        (void)r->lists_smb2_002();
        ByteVector out;
        ByteWriter w(out);
        r->serialize(w);
        auto again = Smb1NegotiateRequest::parse(out);
        if (!again || again->dialects != r->dialects) std::abort();
    }
    return 0;
}
