// Fuzz target: LOCK, CLOSE and FLUSH messages (protocol/lock.h, protocol/close.h,
// protocol/flush.h). The input is an SMB2 body behind a 64-byte header.
#include <cstddef>
#include <cstdint>

#include "protocol/close.h"
#include "protocol/flush.h"
#include "protocol/lock.h"

using namespace daxsmbd::protocol;

namespace {
template <class T>
ByteVector reserialize(const T& x) {
    ByteVector out(kHeaderSize);
    ByteWriter w(out);
    x.serialize(w);
    return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ByteVector msg(kHeaderSize);
    msg.insert(msg.end(), reinterpret_cast<const std::byte*>(data),
               reinterpret_cast<const std::byte*>(data) + size);

    if (auto req = LockRequest::parse(msg); req.ok()) {
        if (req->locks.empty()) __builtin_trap();  // LockCount 0 must be refused
        for (const auto& l : req->locks)
            (void)is_valid_lock_flags(l.flags);
        auto again = LockRequest::parse(reserialize(*req));
        if (!again.ok() || again->locks != req->locks || again->lock_sequence != req->lock_sequence)
            __builtin_trap();
    }
    (void)LockResponse::parse(msg);
    if (auto req = CloseRequest::parse(msg); req.ok()) {
        auto again = CloseRequest::parse(reserialize(*req));
        if (!again.ok() || again->file_id != req->file_id) __builtin_trap();
    }
    if (auto rsp = CloseResponse::parse(msg); rsp.ok()) {
        auto again = CloseResponse::parse(reserialize(*rsp));
        if (!again.ok() || again->end_of_file != rsp->end_of_file) __builtin_trap();
    }
    (void)FlushRequest::parse(msg);
    (void)FlushResponse::parse(msg);
    return 0;
}
