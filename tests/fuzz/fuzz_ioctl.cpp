// Fuzz target: IOCTL request/response and the FSCTL payload decoders (protocol/ioctl.h). The
// input is an SMB2 body behind a 64-byte header; the payload decoders also get the raw input.
#include <cstddef>
#include <cstdint>

#include "protocol/ioctl.h"

using namespace daxsmbd::protocol;

namespace {

template <class T>
ByteVector reserialize(const T& x) {
    ByteVector out(kHeaderSize);
    ByteWriter w(out);
    x.serialize(w);
    return out;
}

template <class T>
ByteVector encode(const T& x) {
    ByteVector out;
    ByteWriter w(out);
    x.encode(w);
    return out;
}

void payloads(Bytes d) {
    if (auto v = ValidateNegotiateInfoRequest::decode(d); v.ok()) {
        auto back = ValidateNegotiateInfoRequest::decode(encode(*v));
        if (!back.ok() || back->dialects != v->dialects) __builtin_trap();
    }
    if (auto v = ValidateNegotiateInfoResponse::decode(d); v.ok()) {
        if (!(*ValidateNegotiateInfoResponse::decode(encode(*v)) == *v)) __builtin_trap();
    }
    if (auto v = NetworkInterfaceInfo::decode_list(d); v.ok() && !v->empty()) {
        ByteVector out;
        ByteWriter w(out);
        NetworkInterfaceInfo::encode_list(w, *v);
        auto back = NetworkInterfaceInfo::decode_list(out);
        if (!back.ok() || back->size() != v->size()) __builtin_trap();
    }
    if (auto v = SrvCopychunkCopy::decode(d); v.ok()) {
        auto back = SrvCopychunkCopy::decode(encode(*v));
        if (!back.ok() || back->chunks != v->chunks) __builtin_trap();
    }
    (void)SrvCopychunkResponse::decode(d);
    (void)SrvRequestResumeKeyResponse::decode(d);
    (void)FileAllocatedRangeBuffer::decode(d);
    (void)FileZeroDataInformation::decode(d);
    (void)NetworkResiliencyRequest::decode(d);
    if (auto v = DuplicateExtentsData::decode(d); v.ok()) {
        if (!(*DuplicateExtentsData::decode(encode(*v)) == *v)) __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ByteVector msg(kHeaderSize);
    msg.insert(msg.end(), reinterpret_cast<const std::byte*>(data),
               reinterpret_cast<const std::byte*>(data) + size);

    if (auto req = IoctlRequest::parse(msg); req.ok()) {
        payloads(req->input);
        auto out = reserialize(*req);  // the views of `again` point into it
        auto again = IoctlRequest::parse(out);
        if (!again.ok() || again->ctl_code != req->ctl_code ||
            !std::equal(again->input.begin(), again->input.end(), req->input.begin(),
                        req->input.end()))
            __builtin_trap();
    }
    if (auto rsp = IoctlResponse::parse(msg); rsp.ok()) {
        payloads(rsp->output);
        auto out = reserialize(*rsp);
        auto again = IoctlResponse::parse(out);
        if (!again.ok() || !std::equal(again->output.begin(), again->output.end(),
                                       rsp->output.begin(), rsp->output.end()))
            __builtin_trap();
    }
    payloads(as_bytes(data, size));
    return 0;
}
