// SMB1 multi-protocol NEGOTIATE detection and dialect parsing (MS-SMB2 3.3.5.3,
// MS-CIFS 2.2.4.52.1).
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/smb1_negotiate.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

void append(ByteVector& v, std::string_view s) {
    for (char c : s)
        v.push_back(std::byte(c));
}

// The request a Windows client opens with: NT LM 0.12, SMB 2.002, SMB 2.???.
ByteVector windows_style() {
    ByteVector v =
        hex("FF534D42"          // Protocol
            "72"                // Command SMB_COM_NEGOTIATE
            "00000000"          // Status
            "18"                // Flags
            "53C8"              // Flags2
            "0000"              // PIDHigh
            "0000000000000000"  // SecurityFeatures
            "0000"              // Reserved
            "FFFF"              // TID
            "FEFF"              // PIDLow
            "0000"              // UID
            "0000"              // MID
            "00"                // WordCount
            "2200");            // ByteCount 34 = 12 + 11 + 11
    v.push_back(std::byte{0x02});
    append(v, std::string_view("NT LM 0.12\0", 11));
    v.push_back(std::byte{0x02});
    append(v, std::string_view("SMB 2.002\0", 10));
    v.push_back(std::byte{0x02});
    append(v, std::string_view("SMB 2.???\0", 10));
    return v;
}

}  // namespace

TEST(Smb1Negotiate, Detects) {
    auto msg = windows_style();
    EXPECT_TRUE(is_smb1_negotiate(msg));
    auto other = msg;
    other[4] = std::byte{0x73};  // SESSION_SETUP_ANDX
    EXPECT_FALSE(is_smb1_negotiate(other));
    other = msg;
    other[0] = std::byte{0xFE};
    EXPECT_FALSE(is_smb1_negotiate(other));
    EXPECT_FALSE(is_smb1_negotiate(Bytes(msg).first(4)));
}

TEST(Smb1Negotiate, ParsesDialects) {
    auto msg = windows_style();
    ASSERT_EQ(msg.size(), 32u + 3 + 34);
    auto r = Smb1NegotiateRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->dialects, (std::vector<std::string>{"NT LM 0.12", "SMB 2.002", "SMB 2.???"}));
    EXPECT_TRUE(r->lists_smb2_wildcard());
    EXPECT_TRUE(r->lists_smb2_002());
    EXPECT_FALSE(r->lists("SMB 3.000"));
}

TEST(Smb1Negotiate, OnlySmb2002) {
    Smb1NegotiateRequest req;
    req.dialects = {"NT LM 0.12", "SMB 2.002"};
    ByteVector out;
    ByteWriter w(out);
    req.serialize(w);
    auto r = Smb1NegotiateRequest::parse(out);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->dialects, req.dialects);
    EXPECT_TRUE(r->lists_smb2_002());
    EXPECT_FALSE(r->lists_smb2_wildcard());
}

TEST(Smb1Negotiate, SerializeMatchesWireLayout) {
    Smb1NegotiateRequest req;
    req.dialects = {"SMB 2.???"};
    ByteVector out;
    ByteWriter w(out);
    req.serialize(w);
    ASSERT_EQ(out.size(), 32u + 3 + 11);
    EXPECT_EQ(load_le32(out.data()), 0x424D53FFu);
    EXPECT_EQ(out[4], std::byte{0x72});
    EXPECT_EQ(out[32], std::byte{0});            // WordCount
    EXPECT_EQ(load_le16(out.data() + 33), 11u);  // ByteCount
    EXPECT_EQ(out[35], std::byte{0x02});         // BufferFormat
    EXPECT_EQ(out.back(), std::byte{0});         // NUL
}

TEST(Smb1Negotiate, Malformed) {
    auto msg = windows_style();
    auto bad = msg;
    bad[32] = std::byte{1};  // WordCount must be 0
    EXPECT_EQ(Smb1NegotiateRequest::parse(bad).status(), NtStatus::InvalidParameter);
    bad = msg;
    bad[35] = std::byte{0x04};  // BufferFormat must be 0x02
    EXPECT_EQ(Smb1NegotiateRequest::parse(bad).status(), NtStatus::InvalidParameter);
    bad = msg;
    bad.back() = std::byte{'x'};  // last dialect not terminated within ByteCount
    EXPECT_EQ(Smb1NegotiateRequest::parse(bad).status(), NtStatus::InvalidParameter);
    bad = msg;
    store_le16(bad.data() + 33, 200);  // ByteCount past the end
    EXPECT_EQ(Smb1NegotiateRequest::parse(bad).status(), NtStatus::InvalidParameter);
    bad = msg;
    bad[4] = std::byte{0x73};
    EXPECT_EQ(Smb1NegotiateRequest::parse(bad).status(), NtStatus::InvalidParameter);
}

TEST(Smb1Negotiate, EveryTruncationIsInvalid) {
    auto msg = windows_style();
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(Smb1NegotiateRequest::parse(Bytes(msg).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
}
