// SMB2 ERROR response, 3.1.1 error contexts, share redirect, BUFFER_TOO_SMALL, cluster dialect
// fence and the symbolic link error (MS-SMB2 2.2.2, 2.2.2.1, 2.2.2.2.x, 3.3.4.4, 3.3.5.7).
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/error.h"
#include "protocol/header.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector error_message(const ErrorResponse& e, NtStatus status) {
    Header h;
    h.command = Command::TreeConnect;
    h.flags = flags::kServerToRedir;
    h.status = to_u32(status);
    ByteVector v;
    ByteWriter w(v);
    h.serialize(w);
    e.serialize(w);
    return v;
}

ByteVector body(const ByteVector& msg) {
    return ByteVector(msg.begin() + 64, msg.end());
}

ShareRedirectErrorContext redirect_sample() {
    ShareRedirectErrorContext c;
    c.ip_addresses = {MoveDstIpAddr::v4({10, 0, 0, 5}),
                      MoveDstIpAddr::v6({0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})};
    c.resource_name = "share";
    return c;
}

}  // namespace

TEST(Error, EmptyBodyHasOneZeroByte) {
    // MS-SMB2 2.2.2: StructureSize 9 even when ByteCount is 0; one (zero) byte follows.
    auto msg = error_message(ErrorResponse{}, NtStatus::AccessDenied);
    EXPECT_EQ(body(msg), hex("0900 00 00 00000000 00"));
    auto e = ErrorResponse::parse(msg);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->error_context_count, 0);
    EXPECT_TRUE(e->error_data.empty());
    // Also accepted without the trailing byte (8-byte body).
    msg.pop_back();
    EXPECT_TRUE(ErrorResponse::parse(msg).ok());
}

TEST(Error, ParseRejectsMalformed) {
    auto msg = error_message(make_buffer_too_small_error(0x1234, false), NtStatus::BufferTooSmall);
    EXPECT_EQ(body(msg), hex("0900 00 00 04000000 34120000"));
    auto bad = msg;
    bad[64] = std::byte{8};
    EXPECT_EQ(ErrorResponse::parse(bad).status(), NtStatus::InvalidParameter);
    bad = msg;
    store_le32(bad.data() + 68, 5);  // ByteCount past the end
    EXPECT_EQ(ErrorResponse::parse(bad).status(), NtStatus::InvalidParameter);
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(ErrorResponse::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter)
            << n;
}

TEST(Error, BufferTooSmallOn311IsWrappedInDefaultContext) {
    auto e = make_buffer_too_small_error(0x1234, true);
    EXPECT_EQ(e.error_context_count, 1);
    EXPECT_EQ(e.error_data, hex("04000000 00000000 34120000"));
}

TEST(Error, BadClusterDialect) {
    // MS-SMB2 3.3.5.7: 3.1.1 -> ErrorContextCount 1, ByteCount 10, {ErrorDataLength 2,
    // ErrorId 0, MaxClusterDialect}; before 3.1.1 -> ByteCount 2 and the dialect.
    auto msg =
        error_message(make_bad_cluster_dialect_error(0x0302, true), NtStatus::SmbBadClusterDialect);
    EXPECT_EQ(body(msg), hex("0900 01 00 0A000000 02000000 00000000 0203"));
    msg = error_message(make_bad_cluster_dialect_error(0x0300, false),
                        NtStatus::SmbBadClusterDialect);
    EXPECT_EQ(body(msg), hex("0900 00 00 02000000 0003"));
}

TEST(Error, ShareRedirectGoldenBytes) {
    auto msg =
        error_message(make_share_redirect_error(redirect_sample()), NtStatus::BadNetworkName);
    ASSERT_EQ(msg.size(), 64u + 8 + 90);
    EXPECT_EQ(load_le32(msg.data() + 8), 0xC00000CCu);  // STATUS_BAD_NETWORK_NAME
    auto b = body(msg);
    // ERROR body (MS-SMB2 2.2.2).
    EXPECT_EQ(load_le16(b.data() + 0), 9u);   // StructureSize
    EXPECT_EQ(uint8_t(b[2]), 1u);             // ErrorContextCount
    EXPECT_EQ(uint8_t(b[3]), 0u);             // Reserved
    EXPECT_EQ(load_le32(b.data() + 4), 90u);  // ByteCount = 8 + ErrorDataLength
    // SMB2_ERROR_CONTEXT (2.2.2.1) at body offset 8, 8-aligned.
    EXPECT_EQ(load_le32(b.data() + 8), 82u);                                 // ErrorDataLength
    EXPECT_EQ(ByteVector(b.begin() + 12, b.begin() + 16), hex("53526472"));  // "SRdr"
    EXPECT_EQ(load_le32(b.data() + 12), error_id::kShareRedirect);
    // SHARE_REDIRECT_ERROR_CONTEXT_RESPONSE (2.2.2.2.2), spec-digest 5 offsets from its start.
    const std::byte* c = b.data() + 16;
    EXPECT_EQ(load_le32(c + 0), 48u);   // StructureSize, fixed
    EXPECT_EQ(load_le32(c + 4), 3u);    // NotificationType SHARE_MOVE_NOTIFICATION
    EXPECT_EQ(load_le32(c + 8), 72u);   // ResourceNameOffset = 24 + 24 * 2
    EXPECT_EQ(load_le32(c + 12), 10u);  // ResourceNameLength
    EXPECT_EQ(load_le16(c + 16), 0u);   // Reserved
    EXPECT_EQ(load_le16(c + 18), 0u);   // TargetType = IP address
    EXPECT_EQ(load_le32(c + 20), 2u);   // IPAddrCount
    // MOVE_DST_IPADDR #1 at 24: V4, Reserved, 10.0.0.5 in network order, Reserved2 zero.
    EXPECT_EQ(ByteVector(c + 24, c + 48),
              hex("01000000 00000000 0A000005 000000000000000000000000"));
    // MOVE_DST_IPADDR #2 at 48: V6 fe80::1.
    EXPECT_EQ(ByteVector(c + 48, c + 72),
              hex("02000000 00000000 FE800000000000000000000000000001"));
    // ResourceName at 72: "share" UTF-16LE.
    EXPECT_EQ(ByteVector(c + 72, c + 82), hex("7300 6800 6100 7200 6500"));
}

TEST(Error, ShareRedirectRoundTrip) {
    auto msg =
        error_message(make_share_redirect_error(redirect_sample()), NtStatus::BadNetworkName);
    auto e = ErrorResponse::parse(msg);
    ASSERT_TRUE(e.ok());
    auto ctxs = parse_error_contexts(e->error_data, e->error_context_count);
    ASSERT_TRUE(ctxs.ok());
    ASSERT_EQ(ctxs->size(), 1u);
    EXPECT_EQ((*ctxs)[0].error_id, error_id::kShareRedirect);
    auto sr = ShareRedirectErrorContext::decode((*ctxs)[0].data);
    ASSERT_TRUE(sr.ok());
    EXPECT_EQ(*sr, redirect_sample());
}

TEST(Error, ShareRedirectDecodeRejectsMalformed) {
    auto data = redirect_sample().encode();
    auto bad = data;
    bad[0] = std::byte{47};  // StructureSize must be 48
    EXPECT_EQ(ShareRedirectErrorContext::decode(bad).status(), NtStatus::InvalidParameter);
    bad = data;
    bad[24] = std::byte{3};  // address Type neither V4 nor V6
    EXPECT_EQ(ShareRedirectErrorContext::decode(bad).status(), NtStatus::InvalidParameter);
    bad = data;
    store_le32(bad.data() + 20, 1000);  // IPAddrCount larger than present
    EXPECT_EQ(ShareRedirectErrorContext::decode(bad).status(), NtStatus::InvalidParameter);
    bad = data;
    store_le32(bad.data() + 8, 80);  // name runs past the end
    EXPECT_EQ(ShareRedirectErrorContext::decode(bad).status(), NtStatus::InvalidParameter);
    bad = data;
    store_le32(bad.data() + 12, 9);  // odd UTF-16 length
    EXPECT_EQ(ShareRedirectErrorContext::decode(bad).status(), NtStatus::InvalidParameter);
    for (size_t n = 0; n < data.size(); ++n)
        EXPECT_EQ(ShareRedirectErrorContext::decode(Bytes(data).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
}

TEST(Error, ShareRedirectV4IgnoresReserved2) {
    auto data = redirect_sample().encode();
    data[24 + 8 + 4] = std::byte{0xEE};  // junk in Reserved2
    auto sr = ShareRedirectErrorContext::decode(data);
    ASSERT_TRUE(sr.ok());
    EXPECT_EQ(sr->ip_addresses[0], MoveDstIpAddr::v4({10, 0, 0, 5}));
}

TEST(Error, ContextsAre8Aligned) {
    std::vector<ErrorContext> ctxs{{error_id::kDefault, hex("AABBCC")},
                                   {error_id::kShareRedirect, hex("01")},
                                   {0x12345678, {}}};
    auto e = make_error_response(ctxs);
    EXPECT_EQ(e.error_context_count, 3);
    EXPECT_EQ(e.error_data, hex("03000000 00000000 AABBCC 00000000 00"  // 11 -> pad to 16
                                "01000000 53526472 01 00000000000000"   // 9 -> pad to 32
                                "00000000 78563412"));                  // last: no padding
    auto back = parse_error_contexts(e.error_data, 3);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, ctxs);
    EXPECT_EQ(parse_error_contexts(e.error_data, 4).status(), NtStatus::InvalidParameter);
    for (size_t n = 0; n < e.error_data.size(); ++n)
        EXPECT_EQ(parse_error_contexts(Bytes(e.error_data).first(n), 3).status(),
                  NtStatus::InvalidParameter)
            << n;
}

TEST(Error, RawDataBefore311) {
    auto e = make_error_response(hex("0102"), false);
    EXPECT_EQ(e.error_context_count, 0);
    EXPECT_EQ(e.error_data, hex("0102"));
    auto empty = make_error_response(ByteVector{}, true);
    EXPECT_EQ(empty.error_context_count, 0);
    EXPECT_TRUE(empty.error_data.empty());
}

TEST(Error, SymlinkGoldenBytes) {
    // MS-SMB2 2.2.2.2.1.1's relative example: "..\DonHall\Documents\PDocs", UnparsedPathLength
    // 0x2E, substitute name at 0 with length 0x34, print name right after it.
    SymlinkErrorResponse s;
    s.unparsed_path_length = 0x2E;
    s.substitute_name = "..\\DonHall\\Documents\\PDocs";
    s.print_name = s.substitute_name;
    s.flags = SymlinkErrorResponse::kFlagRelative;
    auto v = s.encode();
    ASSERT_EQ(v.size(), 28u + 0x68);
    EXPECT_EQ(load_le32(v.data() + 0), 24u + 0x68);  // SymLinkLength: all but itself
    EXPECT_EQ(ByteVector(v.begin() + 4, v.begin() + 8), hex("53594D4C"));  // "SYML"
    EXPECT_EQ(load_le32(v.data() + 8), 0xA000000Cu);                       // ReparseTag
    EXPECT_EQ(load_le16(v.data() + 12), 0x68u + 12);                       // ReparseDataLength
    EXPECT_EQ(load_le16(v.data() + 14), 0x2Eu);                            // UnparsedPathLength
    EXPECT_EQ(load_le16(v.data() + 16), 0u);                               // SubstituteNameOffset
    EXPECT_EQ(load_le16(v.data() + 18), 0x34u);                            // SubstituteNameLength
    EXPECT_EQ(load_le16(v.data() + 20), 0x34u);                            // PrintNameOffset
    EXPECT_EQ(load_le16(v.data() + 22), 0x34u);                            // PrintNameLength
    EXPECT_EQ(load_le32(v.data() + 24), 1u);  // Flags SYMLINK_FLAG_RELATIVE
    EXPECT_EQ(ByteVector(v.begin() + 28, v.begin() + 34), hex("2E00 2E00 5C00"));

    auto back = SymlinkErrorResponse::decode(v);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
    for (size_t n = 0; n < v.size(); ++n)
        EXPECT_EQ(SymlinkErrorResponse::decode(Bytes(v).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
    auto bad = v;
    bad[4] = std::byte{0};
    EXPECT_EQ(SymlinkErrorResponse::decode(bad).status(), NtStatus::InvalidParameter);
}
