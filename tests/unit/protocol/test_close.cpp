// SMB2 CLOSE codec (protocol/close.h), against MS-SMB2 2.2.15 / 2.2.16 layouts.
#include <gtest/gtest.h>

#include <string>

#include "protocol/close.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector message(const ByteVector& body) {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::Close;
    h.serialize(w);
    v.insert(v.end(), body.begin(), body.end());
    return v;
}

template <class T>
ByteVector serialize(const T& x) {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::Close;
    h.serialize(w);
    x.serialize(w);
    return v;
}

template <class T>
void expect_prefixes_rejected(const ByteVector& msg) {
    ASSERT_TRUE(T::parse(msg).ok());
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(T::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter) << n;
}

const ByteVector kRequest = hex("1800 0100 00000000 0800000000000000 0900000000000000");
const ByteVector kResponse =
    hex("3c00 0100 00000000"
        "0100000000000000 0200000000000000 0300000000000000 0400000000000000"
        "0010000000000000 0500000000000000 20000000");

}  // namespace

TEST(CloseTest, RequestGolden) {
    auto r = CloseRequest::parse(message(kRequest));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->flags, close_flags::kPostqueryAttrib);
    EXPECT_EQ(r->file_id, (FileId{8, 9}));
    EXPECT_EQ(serialize(*r), message(kRequest));
    expect_prefixes_rejected<CloseRequest>(message(kRequest));
}

TEST(CloseTest, ResponseGolden) {
    CloseResponse rsp;
    rsp.flags = close_flags::kPostqueryAttrib;
    rsp.creation_time = 1;
    rsp.last_access_time = 2;
    rsp.last_write_time = 3;
    rsp.change_time = 4;
    rsp.allocation_size = 4096;
    rsp.end_of_file = 5;
    rsp.file_attributes = 0x20;
    EXPECT_EQ(serialize(rsp), message(kResponse));
    auto r = CloseResponse::parse(message(kResponse));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->end_of_file, 5);
    EXPECT_EQ(r->change_time, 4);
    EXPECT_EQ(r->file_attributes, 0x20u);
    expect_prefixes_rejected<CloseResponse>(message(kResponse));
}

TEST(CloseTest, RejectsWrongStructureSize) {
    auto body = kRequest;
    body[0] = std::byte{0x19};
    EXPECT_EQ(CloseRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
}
