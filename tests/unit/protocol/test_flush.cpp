// SMB2 FLUSH codec (protocol/flush.h), against MS-SMB2 2.2.17 / 2.2.18.
#include <gtest/gtest.h>

#include "protocol/flush.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {
template <class T>
ByteVector serialize(const T& x) {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::Flush;
    h.serialize(w);
    x.serialize(w);
    return v;
}
}  // namespace

TEST(FlushTest, RequestLayoutAndRoundTrip) {
    FlushRequest req;
    req.file_id = {0x0102030405060708, 0x1112131415161718};
    auto msg = serialize(req);
    ASSERT_EQ(msg.size(), kHeaderSize + 24);
    EXPECT_EQ(load_le16(msg.data() + 64), 24);  // StructureSize
    EXPECT_EQ(load_le64(msg.data() + 64 + 8), 0x0102030405060708u);
    EXPECT_EQ(load_le64(msg.data() + 64 + 16), 0x1112131415161718u);
    auto r = FlushRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->file_id, req.file_id);
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(FlushRequest::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter);
}

TEST(FlushTest, Response) {
    auto msg = serialize(FlushResponse{});
    ASSERT_EQ(msg.size(), kHeaderSize + 4);
    EXPECT_EQ(load_le16(msg.data() + 64), 4);
    EXPECT_TRUE(FlushResponse::parse(msg).ok());
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(FlushResponse::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter);
    msg[64] = std::byte{5};
    EXPECT_EQ(FlushResponse::parse(msg).status(), NtStatus::InvalidParameter);
}
