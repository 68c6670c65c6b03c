// SMB2 CHANGE_NOTIFY codec (protocol/change_notify.h), against MS-SMB2 2.2.35 / 2.2.36.
#include <gtest/gtest.h>

#include <string>

#include "protocol/change_notify.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header() {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::ChangeNotify;
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

}  // namespace

TEST(ChangeNotifyTest, RequestGolden) {
    auto msg =
        message(hex("2000 0100 00080000 0300000000000000 0400000000000000 17000000 00000000"));
    auto r = ChangeNotifyRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->flags, change_notify_flags::kWatchTree);
    EXPECT_EQ(r->output_buffer_length, 2048u);
    EXPECT_EQ(r->file_id, (FileId{3, 4}));
    EXPECT_EQ(r->completion_filter, completion_filter::kFileName | completion_filter::kDirName |
                                        completion_filter::kAttributes |
                                        completion_filter::kLastWrite);
    EXPECT_EQ(serialize(*r), msg);
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(ChangeNotifyRequest::parse(Bytes(msg).first(n)).status(),
                  NtStatus::InvalidParameter);
}

TEST(ChangeNotifyTest, ResponseGolden) {
    ByteVector buf = hex("00000000 01000000 02000000 6100 0000");
    auto msg = serialize(ChangeNotifyResponse{buf});
    EXPECT_EQ(msg, message(hex("0900 4800 10000000 00000000 01000000 02000000 6100 0000")));
    auto r = ChangeNotifyResponse::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(ByteVector(r->buffer.begin(), r->buffer.end()), buf);
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(ChangeNotifyResponse::parse(Bytes(msg).first(n)).status(),
                  NtStatus::InvalidParameter);
}
