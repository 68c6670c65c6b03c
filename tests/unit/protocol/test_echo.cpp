// ECHO (MS-SMB2): the 4-byte StructureSize/Reserved body.
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/echo.h"
#include "protocol/header.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

// 64-byte sync header for `cmd` (MS-SMB2 2.2.1.2), all other fields zero.
ByteVector header(Command cmd, uint32_t flags = 0) {
    Header h;
    h.command = cmd;
    h.flags = flags;
    ByteVector v;
    ByteWriter w(v);
    h.serialize(w);
    return v;
}

ByteVector concat(std::initializer_list<ByteVector> parts) {
    ByteVector v;
    for (const auto& p : parts)
        v.insert(v.end(), p.begin(), p.end());
    return v;
}

}  // namespace

TEST(Echo, RequestGolden) {
    auto msg = concat({header(Command::Echo), hex("0400 0000")});
    EXPECT_TRUE(EchoRequest::parse(msg).ok());
    ByteVector out = header(Command::Echo);
    ByteWriter w(out, 0);
    EchoRequest{}.serialize(w);
    EXPECT_EQ(out, msg);
    // Reserved is ignored on receipt.
    auto reserved = concat({header(Command::Echo), hex("0400 FFFF")});
    EXPECT_TRUE(EchoRequest::parse(reserved).ok());
}

TEST(Echo, RequestBadStructureSize) {
    for (uint16_t size : {0, 2, 5, 8, 9}) {
        auto msg = header(Command::Echo);
        ByteWriter w(msg, 0);
        w.u16(size);
        w.u16(0);
        EXPECT_EQ(EchoRequest::parse(msg).status(), NtStatus::InvalidParameter) << size;
    }
}

TEST(Echo, RequestEveryTruncationIsInvalid) {
    auto msg = concat({header(Command::Echo), hex("0400 0000")});
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(EchoRequest::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter)
            << n;
}

TEST(Echo, ResponseGolden) {
    auto msg = concat({header(Command::Echo, flags::kServerToRedir), hex("0400 0000")});
    ByteVector out = header(Command::Echo, flags::kServerToRedir);
    ByteWriter w(out, 0);
    EchoResponse{}.serialize(w);
    EXPECT_EQ(out, msg);
    EXPECT_TRUE(EchoResponse::parse(msg).ok());
    auto bad = msg;
    bad[64] = std::byte{9};
    EXPECT_EQ(EchoResponse::parse(bad).status(), NtStatus::InvalidParameter);
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(EchoResponse::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter);
}
