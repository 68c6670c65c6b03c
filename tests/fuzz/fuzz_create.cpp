// Fuzz target: CREATE request/response and create contexts (protocol/create.h,
// protocol/create_contexts.h). The input is an SMB2 body; a 64-byte header is put in front so
// that header-relative offsets mean what they do on the wire. Whatever parses is serialised
// again and must parse back to the same values.
#include <cstddef>
#include <cstdint>

#include "protocol/create.h"

using namespace daxsmbd::protocol;

namespace {

ByteVector with_header(const uint8_t* data, size_t size) {
    ByteVector msg(kHeaderSize);
    msg.insert(msg.end(), reinterpret_cast<const std::byte*>(data),
               reinterpret_cast<const std::byte*>(data) + size);
    return msg;
}

template <class T>
ByteVector reserialize(const T& x) {
    ByteVector out(kHeaderSize);
    ByteWriter w(out);
    x.serialize(w);
    return out;
}

void decode_all_typed(const CreateContextList& l) {
    for (const auto& c : l.items) {
        Bytes d = c.data;
        (void)EaBufferContext::decode(d);
        (void)SdBufferContext::decode(d);
        (void)DurableHandleRequest::decode(d);
        (void)DurableHandleResponse::decode(d);
        (void)DurableHandleReconnect::decode(d);
        (void)AllocationSizeContext::decode(d);
        (void)MaximalAccessRequest::decode(d);
        (void)MaximalAccessResponse::decode(d);
        (void)TimewarpToken::decode(d);
        (void)QueryOnDiskIdResponse::decode(d);
        if (auto lease = LeaseContext::decode(d); lease.ok()) {
            ByteVector again;
            ByteWriter w(again);
            lease->encode(w);
            auto back = LeaseContext::decode(again);
            if (!back.ok() || !(*back == *lease)) __builtin_trap();
        }
        (void)DurableHandleRequestV2::decode(d);
        (void)DurableHandleResponseV2::decode(d);
        (void)DurableHandleReconnectV2::decode(d);
        (void)AppInstanceIdContext::decode(d);
        (void)AppInstanceVersionContext::decode(d);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ByteVector msg = with_header(data, size);

    if (auto req = CreateRequest::parse(msg); req.ok()) {
        decode_all_typed(req->contexts);
        auto again = CreateRequest::parse(reserialize(*req));
        if (!again.ok() || again->name != req->name || again->contexts != req->contexts ||
            again->desired_access != req->desired_access ||
            again->create_options != req->create_options)
            __builtin_trap();
    }
    if (auto rsp = CreateResponse::parse(msg); rsp.ok()) {
        auto again = CreateResponse::parse(reserialize(*rsp));
        if (!again.ok() || again->contexts != rsp->contexts || again->file_id != rsp->file_id ||
            again->end_of_file != rsp->end_of_file)
            __builtin_trap();
    }
    // The raw input as a context list on its own.
    if (auto list = CreateContextList::parse(as_bytes(data, size)); list.ok()) {
        decode_all_typed(*list);
        ByteVector out;
        ByteWriter w(out);
        list->serialize(w);
        auto back = CreateContextList::parse(out);
        if (!back.ok() || *back != *list) __builtin_trap();
    }
    return 0;
}
