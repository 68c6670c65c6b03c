// SESSION_SETUP request/response (MS-SMB2 2.2.5, 2.2.6).
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/header.h"
#include "protocol/session_setup.h"
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

// A binding request with a 5-byte token and PreviousSessionId.
ByteVector golden_request() {
    return concat({header(Command::SessionSetup),
                   hex("1900"              // StructureSize 25
                       "01"                // Flags BINDING
                       "02"                // SecurityMode SIGNING_REQUIRED
                       "01000000"          // Capabilities DFS
                       "00000000"          // Channel
                       "5800"              // SecurityBufferOffset 0x58 = 64 + 24
                       "0500"              // SecurityBufferLength
                       "8877665544332211"  // PreviousSessionId
                       "6003060102")});    // Buffer
}

ByteVector golden_response() {
    return concat({header(Command::SessionSetup, flags::kServerToRedir),
                   hex("0900"  // StructureSize 9
                       "0100"  // SessionFlags IS_GUEST
                       "4800"  // SecurityBufferOffset 0x48 = 64 + 8
                       "0300"  // SecurityBufferLength
                       "A10730")});
}

}  // namespace

TEST(SessionSetup, ConstantsMatchSpec) {
    EXPECT_EQ(session_setup_flags::kBinding, 0x01);
    EXPECT_EQ(session_flags::kIsGuest, 0x0001);
    EXPECT_EQ(session_flags::kIsNull, 0x0002);
    EXPECT_EQ(session_flags::kEncryptData, 0x0004);
}

TEST(SessionSetup, RequestGolden) {
    auto msg = golden_request();
    auto r = SessionSetupRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->is_binding());
    EXPECT_EQ(r->security_mode, security_mode::kSigningRequired);
    EXPECT_EQ(r->capabilities, 1u);
    EXPECT_EQ(r->channel, 0u);
    EXPECT_EQ(r->previous_session_id, 0x1122334455667788ull);
    EXPECT_EQ(ByteVector(r->security_buffer.begin(), r->security_buffer.end()), hex("6003060102"));
    // The view points into msg.
    EXPECT_EQ(r->security_buffer.data(), msg.data() + 0x58);

    ByteVector out = header(Command::SessionSetup);
    ByteWriter w(out, 0);
    r->serialize(w);
    EXPECT_EQ(out, msg);
}

TEST(SessionSetup, RequestEmptyBufferIgnoresOffset) {
    auto msg = golden_request();
    msg.resize(msg.size() - 5);
    store_le16(msg.data() + 64 + 12, 0xFFFF);
    store_le16(msg.data() + 64 + 14, 0);
    auto r = SessionSetupRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->security_buffer.empty());
}

TEST(SessionSetup, RequestBufferOutsideMessage) {
    auto msg = golden_request();
    store_le16(msg.data() + 64 + 14, 6);  // one byte too long
    EXPECT_EQ(SessionSetupRequest::parse(msg).status(), NtStatus::InvalidParameter);
    msg = golden_request();
    store_le16(msg.data() + 64 + 12, 0x40);  // overlaps the fixed part
    EXPECT_EQ(SessionSetupRequest::parse(msg).status(), NtStatus::InvalidParameter);
    msg = golden_request();
    msg[64] = std::byte{24};
    EXPECT_EQ(SessionSetupRequest::parse(msg).status(), NtStatus::InvalidParameter);
}

TEST(SessionSetup, RequestEveryTruncationIsInvalid) {
    auto msg = golden_request();
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(SessionSetupRequest::parse(Bytes(msg).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
}

TEST(SessionSetup, ResponseGolden) {
    SessionSetupResponse rsp;
    rsp.session_flags = session_flags::kIsGuest;
    rsp.security_buffer = hex("A10730");
    ByteVector out = header(Command::SessionSetup, flags::kServerToRedir);
    ByteWriter w(out, 0);
    rsp.serialize(w);
    EXPECT_EQ(out, golden_response());

    auto back = SessionSetupResponse::parse(out);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->session_flags, rsp.session_flags);
    EXPECT_EQ(back->security_buffer, rsp.security_buffer);
}

TEST(SessionSetup, ResponseEmptyBuffer) {
    SessionSetupResponse rsp;
    rsp.session_flags = session_flags::kEncryptData;
    ByteVector out = header(Command::SessionSetup, flags::kServerToRedir);
    ByteWriter w(out, 0);
    rsp.serialize(w);
    EXPECT_EQ(ByteVector(out.begin() + 64, out.end()), hex("0900 0400 4800 0000"));
    auto back = SessionSetupResponse::parse(out);
    ASSERT_TRUE(back.ok());
    EXPECT_TRUE(back->security_buffer.empty());
}

TEST(SessionSetup, ResponseEveryTruncationIsInvalid) {
    auto msg = golden_response();
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(SessionSetupResponse::parse(Bytes(msg).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
}
