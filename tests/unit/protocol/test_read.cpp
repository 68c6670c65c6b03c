// SMB2 READ codec (protocol/read.h): MS-SMB2 2.2.19 / 2.2.20 and the offsets of digest 6.8
// (channel info at msg 0x70, response data at msg 0x50).
#include <gtest/gtest.h>

#include <string>

#include "protocol/read.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header() {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::Read;
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

// An RDMA read of 1 MiB at offset 2 MiB: one SMB_DIRECT_BUFFER_DESCRIPTOR_V1 (Offset 8, Token 4,
// Length 4) at msg 0x70.
const ByteVector kRdmaReadBody =
    hex("3100"                                  // StructureSize 49
        "50"                                    // Padding 0x50
        "01"                                    // Flags READ_UNBUFFERED
        "00001000"                              // Length 1 MiB
        "0000200000000000"                      // Offset 2 MiB
        "0100000000000000 0200000000000000"     // FileId
        "00000000"                              // MinimumCount
        "02000000"                              // Channel RDMA_V1_INVALIDATE
        "00001000"                              // RemainingBytes
        "7000"                                  // ReadChannelInfoOffset 0x70
        "1000"                                  // ReadChannelInfoLength 16
        "0000a0f1ffff0000 78563412 00001000");  // descriptor

}  // namespace

TEST(ReadTest, ParsesRdmaRequest) {
    const auto msg = message(kRdmaReadBody);  // channel_info is a view into it
    auto r = ReadRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->padding, 0x50);
    EXPECT_EQ(r->flags, read_flags::kReadUnbuffered);
    EXPECT_EQ(r->length, 1u << 20);
    EXPECT_EQ(r->offset, 2u << 20);
    EXPECT_EQ(r->file_id, (FileId{1, 2}));
    EXPECT_EQ(r->channel, channel::kRdmaV1Invalidate);
    EXPECT_EQ(r->remaining_bytes, 1u << 20);
    ASSERT_EQ(r->channel_info.size(), 16u);
    EXPECT_EQ(load_le32(r->channel_info.data() + 8), 0x12345678u);
    EXPECT_EQ(serialize(*r), message(kRdmaReadBody));
    expect_prefixes_rejected<ReadRequest>(message(kRdmaReadBody));
}

TEST(ReadTest, PlainRequestHasOneBufferByteThatParseDoesNotNeed) {
    ReadRequest req;
    req.length = 65536;
    req.offset = 4096;
    req.file_id = {3, 4};
    req.minimum_count = 1;
    auto msg = serialize(req);
    ASSERT_EQ(msg.size(), kHeaderSize + 49);
    EXPECT_EQ(load_le16(msg.data() + 64 + 44), 0);  // ReadChannelInfoOffset
    auto r = ReadRequest::parse(Bytes(msg).first(kHeaderSize + 48));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->length, 65536u);
    EXPECT_EQ(r->minimum_count, 1u);
    EXPECT_TRUE(r->channel_info.empty());
}

TEST(ReadTest, RejectsChannelInfoInFixedPartOrPastEnd) {
    auto body = kRdmaReadBody;
    body[44] = std::byte{0x68};  // ReadChannelInfoOffset 0x68 < 0x70
    EXPECT_EQ(ReadRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
    body = kRdmaReadBody;
    body[46] = std::byte{0x11};  // 17 bytes: one past the end
    EXPECT_EQ(ReadRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
}

TEST(ReadTest, ResponseDataAt0x50) {
    ByteVector data = hex("0102030405");
    ReadResponse rsp;
    rsp.data = data;
    auto msg = serialize(rsp);
    EXPECT_EQ(msg, message(hex("1100 50 00 05000000 00000000 00000000 0102030405")));
    EXPECT_EQ(ByteVector(msg.begin() + 0x50, msg.end()), data);
    auto r = ReadResponse::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->data_offset, 0x50);
    EXPECT_EQ(ByteVector(r->data.begin(), r->data.end()), data);
    expect_prefixes_rejected<ReadResponse>(msg);
}

TEST(ReadTest, SerializeWithoutDataWritesOnlyTheFixedPart) {
    ReadResponse rsp;
    rsp.data_remaining = 0;
    ByteVector v = header();
    ByteWriter w(v);
    rsp.serialize_without_data(w, 1u << 20);
    ASSERT_EQ(v.size(), kHeaderSize + 16);
    EXPECT_EQ(v, message(hex("1100 50 00 00001000 00000000 00000000")));
    // Once the data fragment follows, the whole message parses.
    v.resize(v.size() + (1u << 20), std::byte{0x5A});
    auto r = ReadResponse::parse(v);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->data.size(), 1u << 20);
    EXPECT_EQ(r->data.data(), v.data() + 0x50);
}

TEST(ReadTest, RdmaResponseHasNoInlineData) {
    ReadResponse rsp;
    rsp.data_remaining = 1u << 20;
    auto msg = serialize(rsp);
    EXPECT_EQ(msg, message(hex("1100 50 00 00000000 00001000 00000000")));
    auto r = ReadResponse::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->data.empty());
    EXPECT_EQ(r->data_remaining, 1u << 20);
}

TEST(ReadTest, ResponseRejectsDataOffsetInsideFixedPart) {
    auto msg = message(hex("1100 48 00 01000000 00000000 00000000 aa"));
    EXPECT_EQ(ReadResponse::parse(msg).status(), NtStatus::InvalidParameter);
}
