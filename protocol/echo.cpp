#include "protocol/echo.h"

#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace {

Status check_body(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    DAX_CHECK(r.skip(2));  // Reserved
    if (size != 4) return Error(NtStatus::InvalidParameter);
    return {};
}

void write_body(ByteWriter& w) {
    w.u16(4);
    w.u16(0);
}

}  // namespace

Result<EchoRequest> EchoRequest::parse(Bytes msg) {
    DAX_CHECK(check_body(msg));
    return EchoRequest{};
}

void EchoRequest::serialize(ByteWriter& w) const {
    write_body(w);
}

Result<EchoResponse> EchoResponse::parse(Bytes msg) {
    DAX_CHECK(check_body(msg));
    return EchoResponse{};
}

void EchoResponse::serialize(ByteWriter& w) const {
    write_body(w);
}

}  // namespace daxsmbd::protocol
