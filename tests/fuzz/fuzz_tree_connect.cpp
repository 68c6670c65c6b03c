// libFuzzer target: TREE_CONNECT request/response, tree-connect contexts, remoted identity,
// SIDs and share path splitting.
#include <cstdlib>

#include "protocol/header.h"
#include "protocol/tree_connect.h"

using namespace daxsmbd::protocol;

namespace {

ByteVector header_of(Bytes input) {
    return ByteVector(input.begin(), input.begin() + kHeaderSize);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes in(reinterpret_cast<const std::byte*>(data), size);
    for (bool ext : {true, false}) {
        if (auto r = TreeConnectRequest::parse(in, ext)) {
            (void)r->share_path();
            ByteVector out = header_of(in);
            ByteWriter w(out, 0);
            if (r->serialize(w)) {
                auto again = TreeConnectRequest::parse(out, true);
                if (!again || again->path != r->path ||
                    again->contexts.size() != r->contexts.size())
                    std::abort();
            }
        }
    }
    if (auto r = TreeConnectResponse::parse(in)) {
        ByteVector out = header_of(in);
        ByteWriter w(out, 0);
        r->serialize(w);
        if (!TreeConnectResponse::parse(out)) std::abort();
    }
    if (auto c = RemotedIdentityTreeConnectContext::decode(in)) {
        ByteVector out;
        ByteWriter w(out);
        if (c->encode(w)) {
            auto again = RemotedIdentityTreeConnectContext::decode(out);
            if (!again || !(*again == *c)) std::abort();
        }
    }
    if (size >= 2) {
        if (auto l = parse_tree_connect_contexts(in, data[0], data[1] % 8)) {
            ByteVector out;
            ByteWriter w(out);
            (void)serialize_tree_connect_contexts(*l, w);
        }
    }
    if (auto s = Sid::parse(in)) {
        auto again = Sid::from_string(s->to_string());
        if (!again || !(*again == *s)) std::abort();
    }
    std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)SharePath::split(text);
    if (auto s = Sid::from_string(text)) {
        if (s->to_string().empty()) std::abort();
    }
    return 0;
}
