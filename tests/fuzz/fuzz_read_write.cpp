// Fuzz target: READ and WRITE messages (protocol/read.h, protocol/write.h). The input is an SMB2
// body behind a 64-byte header. Views returned by parse must lie inside the message.
#include <cstddef>
#include <cstdint>

#include "protocol/read.h"
#include "protocol/write.h"

using namespace daxsmbd::protocol;

namespace {

template <class T>
ByteVector reserialize(const T& x) {
    ByteVector out(kHeaderSize);
    ByteWriter w(out);
    x.serialize(w);
    return out;
}

void check_inside(Bytes view, const ByteVector& msg) {
    if (view.empty()) return;
    if (view.data() < msg.data() || view.data() + view.size() > msg.data() + msg.size())
        __builtin_trap();
}

bool same(Bytes a, Bytes b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ByteVector msg(kHeaderSize);
    msg.insert(msg.end(), reinterpret_cast<const std::byte*>(data),
               reinterpret_cast<const std::byte*>(data) + size);

    if (auto req = ReadRequest::parse(msg); req.ok()) {
        check_inside(req->channel_info, msg);
        auto out = reserialize(*req);
        auto again = ReadRequest::parse(out);
        if (!again.ok() || again->length != req->length || again->offset != req->offset ||
            !same(again->channel_info, req->channel_info))
            __builtin_trap();
    }
    if (auto rsp = ReadResponse::parse(msg); rsp.ok()) {
        check_inside(rsp->data, msg);
        auto out = reserialize(*rsp);
        auto again = ReadResponse::parse(out);
        if (!again.ok() || !same(again->data, rsp->data)) __builtin_trap();
    }
    if (auto req = WriteRequest::parse(msg); req.ok()) {
        check_inside(req->data, msg);
        check_inside(req->channel_info, msg);
        auto out = reserialize(*req);
        auto again = WriteRequest::parse(out);
        if (!again.ok() || !same(again->data, req->data) ||
            !same(again->channel_info, req->channel_info) || again->offset != req->offset)
            __builtin_trap();
    }
    (void)WriteResponse::parse(msg);
    return 0;
}
