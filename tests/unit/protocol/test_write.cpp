// SMB2 WRITE codec (protocol/write.h): MS-SMB2 2.2.21 / 2.2.22 with data at msg 0x70 (digest 6.8).
#include <gtest/gtest.h>

#include <string>

#include "protocol/write.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header() {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::Write;
    h.serialize(w);
    return v;
}

ByteVector message(const ByteVector& body) {
    ByteVector v = header();
    v.insert(v.end(), body.begin(), body.end());
    return v;
}

template <class T>
ByteVector serialize(const T& x) {
    ByteVector v = header();
    ByteWriter w(v);
    x.serialize(w);
    return v;
}

template <class T>
void expect_prefixes_rejected(const ByteVector& msg) {
    ASSERT_TRUE(T::parse(msg).ok());
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(T::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter) << n;
}

const ByteVector kWriteBody =
    hex("3100"                               // StructureSize 49
        "7000"                               // DataOffset 0x70
        "06000000"                           // Length 6
        "0010000000000000"                   // Offset 4096
        "0500000000000000 0600000000000000"  // FileId
        "00000000"                           // Channel NONE
        "00000000"                           // RemainingBytes
        "0000 0000"                          // WriteChannelInfoOffset/Length
        "01000000"                           // Flags WRITE_THROUGH
        "68656c6c6f0a");                     // "hello\n" at 0x70

}  // namespace

TEST(WriteTest, ParsesGoldenRequestWithDataAt0x70) {
    auto msg = message(kWriteBody);
    auto r = WriteRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->data_offset, 0x70);
    EXPECT_EQ(r->length, 6u);
    EXPECT_EQ(r->offset, 4096u);
    EXPECT_EQ(r->file_id, (FileId{5, 6}));
    EXPECT_EQ(r->flags, write_flags::kWriteThrough);
    ASSERT_EQ(r->data.size(), 6u);
    EXPECT_EQ(r->data.data(), msg.data() + 0x70);  // a view, no copy
    EXPECT_EQ(serialize(*r), msg);
    expect_prefixes_rejected<WriteRequest>(msg);
}

TEST(WriteTest, RejectsBadDataRange) {
    auto body = kWriteBody;
    body[2] = std::byte{0x60};  // DataOffset inside the fixed part
    EXPECT_EQ(WriteRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
    body = kWriteBody;
    body[4] = std::byte{0x07};  // Length one past the end
    EXPECT_EQ(WriteRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
    body = kWriteBody;
    body[4] = body[5] = body[6] = body[7] = std::byte{0xFF};  // Length overflowing the offset
    EXPECT_EQ(WriteRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
}

TEST(WriteTest, RdmaWriteHasZeroDataOffsetAndChannelInfo) {
    ByteVector desc = hex("0000a0f1ffff0000 78563412 00001000");
    WriteRequest req;
    req.offset = 0;
    req.file_id = {1, 1};
    req.channel = channel::kRdmaV1;
    req.remaining_bytes = 1u << 20;
    req.channel_info = desc;
    auto msg = serialize(req);
    EXPECT_EQ(load_le16(msg.data() + 64 + 2), 0);      // DataOffset 0 for RDMA (digest 6.8)
    EXPECT_EQ(load_le32(msg.data() + 64 + 4), 0u);     // Length 0
    EXPECT_EQ(load_le16(msg.data() + 64 + 40), 0x70);  // WriteChannelInfoOffset
    EXPECT_EQ(load_le16(msg.data() + 64 + 42), 16);
    auto r = WriteRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->data_offset, 0);
    EXPECT_TRUE(r->data.empty());
    EXPECT_EQ(r->remaining_bytes, 1u << 20);
    EXPECT_EQ(ByteVector(r->channel_info.begin(), r->channel_info.end()), desc);
    expect_prefixes_rejected<WriteRequest>(msg);
}

TEST(WriteTest, ZeroLengthWriteIgnoresDataOffset) {
    auto body = kWriteBody;
    body.resize(48);
    body[4] = std::byte{0};  // Length 0
    body[2] = std::byte{0xF0};
    body[3] = std::byte{0xFF};  // DataOffset far away: ignored when Length is 0
    auto r = WriteRequest::parse(message(body));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->data.empty());
}

TEST(WriteTest, ResponseGolden) {
    WriteResponse rsp;
    rsp.count = 6;
    auto msg = serialize(rsp);
    EXPECT_EQ(msg, message(hex("1100 0000 06000000 00000000 0000 0000")));
    auto r = WriteResponse::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->count, 6u);
    expect_prefixes_rejected<WriteResponse>(msg);
}
