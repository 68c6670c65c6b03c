// SMB2_TREE_CONNECT_CONTEXT list and SMB2_REMOTED_IDENTITY_TREE_CONNECT (MS-SMB2 2.2.9.2,
// 2.2.9.2.1.x).
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/tree_connect_contexts.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector encode(const RemotedIdentityTreeConnectContext& c) {
    ByteVector v;
    ByteWriter w(v);
    EXPECT_TRUE(c.encode(w).ok());
    return v;
}

// User, UserName, Domain, Groups, Privileges and Owner present; the rest absent (0), as
// Microsoft's test client sends it.
RemotedIdentityTreeConnectContext sample() {
    RemotedIdentityTreeConnectContext c;
    c.user = SidAttr{Sid::make(5, {21, 1, 2, 3, 1001}),
                     se_group::kMandatory | se_group::kEnabledByDefault | se_group::kEnabled};
    c.user_name = "bob";
    c.domain = "DOM";
    c.groups = std::vector<SidAttr>{{Sid::make(5, {32, 545}), 7}};
    c.privileges =
        std::vector<LuidAttr>{{0x17, se_privilege::kEnabledByDefault | se_privilege::kEnabled}};
    c.owner = Sid::make(5, {21, 1, 2, 3, 1001});
    return c;
}

// sample() laid out by hand from MS-SMB2 2.2.9.2.1: offsets from the structure start.
ByteVector sample_bytes() {
    return hex(
        "0100"                 // TicketType 1
        "9400"                 // TicketSize 148
        "1C00"                 // User at 28
        "3E00"                 // UserName at 62
        "4600"                 // Domain at 70
        "4E00"                 // Groups at 78
        "0000"                 // RestrictedGroups absent
        "6600"                 // Privileges at 102
        "0000"                 // PrimaryGroup absent
        "7600"                 // Owner at 118
        "0000 0000 0000 0000"  // DefaultDacl, DeviceGroups, UserClaims, DeviceClaims absent
        // 28: SID_ATTR_DATA = BlobSize 28, SID S-1-5-21-1-2-3-1001, Attr 7
        "1C00 0105000000000005 15000000 01000000 02000000 03000000 E9030000 07000000"
        // 62: "bob\0"
        "6200 6F00 6200 0000"
        // 70: "DOM\0"
        "4400 4F00 4D00 0000"
        // 78: SID_ARRAY_DATA: count 1, {BlobSize 16, S-1-5-32-545, Attr 7}
        "0100 1000 0102000000000005 20000000 21020000 07000000"
        // 102: PRIVILEGE_ARRAY_DATA: count 1, PRIVILEGE_DATA {BlobSize 12, Luid 0x17, Attr 3}
        "0100 0C00 1700000000000000 03000000"
        // 118: Owner BLOB_DATA {BlobSize 28, SID}
        "1C00 0105000000000005 15000000 01000000 02000000 03000000 E9030000");
}

}  // namespace

TEST(RemotedIdentity, GoldenEncode) {
    auto bytes = encode(sample());
    EXPECT_EQ(bytes.size(), 148u);
    EXPECT_EQ(bytes, sample_bytes());
}

TEST(RemotedIdentity, GoldenDecode) {
    auto c = RemotedIdentityTreeConnectContext::decode(sample_bytes());
    ASSERT_TRUE(c.ok()) << status_name(c.status());
    EXPECT_EQ(c->ticket_type, 1);
    EXPECT_EQ(c->ticket_size, 148);
    EXPECT_EQ(*c, sample());
    EXPECT_EQ(c->user->sid.to_string(), "S-1-5-21-1-2-3-1001");
    EXPECT_EQ(*c->user_name, "bob");
    EXPECT_EQ(*c->domain, "DOM");
    EXPECT_FALSE(c->restricted_groups.has_value());
    EXPECT_FALSE(c->default_dacl.has_value());
    EXPECT_FALSE(c->length_prefixed_names);
}

TEST(RemotedIdentity, RoundTripAllFields) {
    auto c = sample();
    c.restricted_groups = std::vector<SidAttr>{{Sid::make(5, {2}), se_group::kUseForDenyOnly}};
    c.primary_group = std::vector<SidAttr>{{Sid::make(5, {21, 1, 2, 3, 513}), 7}};
    c.default_dacl = hex("02001C00010000000000140000000010010100000000000512000000");
    c.device_groups = std::vector<SidAttr>{};
    c.user_claims = hex("01");  // odd sizes are fine: BLOB_DATA carries its length
    c.device_claims = ByteVector{};
    c.privileges->push_back({0x1122334455667788ull, 0});
    c.groups->push_back({Sid::make(1, {0}), se_group::kLogonId});
    auto bytes = encode(c);
    auto back = RemotedIdentityTreeConnectContext::decode(bytes);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, c);
    EXPECT_EQ(back->ticket_size, bytes.size());
}

TEST(RemotedIdentity, LengthPrefixedNames) {
    // Microsoft's test client prefixes UserName/Domain with a u16 byte count (spec-digest
    // 10.1); both that and the spec form decode to the same names.
    auto c = sample();
    c.length_prefixed_names = true;
    auto bytes = encode(c);
    EXPECT_EQ(bytes.size(), 152u);
    // UserName at 62: count 8 (including the NUL), then "bob\0".
    EXPECT_EQ(ByteVector(bytes.begin() + 62, bytes.begin() + 72), hex("0800 6200 6F00 6200 0000"));
    auto back = RemotedIdentityTreeConnectContext::decode(bytes);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back->user_name, "bob");
    EXPECT_EQ(*back->domain, "DOM");
    EXPECT_TRUE(back->length_prefixed_names);
    EXPECT_EQ(*back, sample());
}

TEST(RemotedIdentity, LengthPrefixWithoutNulCounted) {
    // A count that excludes the terminating NUL is accepted too.
    auto bytes =
        hex("0100 2600 0000 1C00 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000"
            "0600 4100 4C00 4900 0000");
    auto c = RemotedIdentityTreeConnectContext::decode(bytes);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(*c->user_name, "ALI");
}

TEST(RemotedIdentity, OtherTicketTypeIsNotDecoded) {
    // MS-SMB2 3.3.5.7: TicketType != 1 -> the server ignores the context.
    auto c = RemotedIdentityTreeConnectContext::decode(hex("0200 0400"));
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->ticket_type, 2);
    EXPECT_FALSE(c->user.has_value());
    EXPECT_FALSE(c->user_name.has_value());
}

TEST(RemotedIdentity, MalformedIsInvalid) {
    auto bytes = sample_bytes();
    auto bad = bytes;
    store_le16(bad.data() + 4, 10);  // User offset inside the fixed part
    EXPECT_EQ(RemotedIdentityTreeConnectContext::decode(bad).status(), NtStatus::InvalidParameter);
    bad = bytes;
    store_le16(bad.data() + 4, 400);  // beyond the data
    EXPECT_EQ(RemotedIdentityTreeConnectContext::decode(bad).status(), NtStatus::InvalidParameter);
    bad = bytes;
    store_le16(bad.data() + 78, 5);  // Groups count larger than present
    EXPECT_EQ(RemotedIdentityTreeConnectContext::decode(bad).status(), NtStatus::InvalidParameter);
    bad = bytes;
    store_le16(bad.data() + 104, 8);  // PRIVILEGE_DATA blob shorter than LUID_ATTR_DATA
    EXPECT_EQ(RemotedIdentityTreeConnectContext::decode(bad).status(), NtStatus::InvalidParameter);
    bad = bytes;
    bad[30] = std::byte{2};  // SID revision 2
    EXPECT_EQ(RemotedIdentityTreeConnectContext::decode(bad).status(), NtStatus::InvalidParameter);
    bad = bytes;
    store_le16(bad.data() + 28, 200);  // SID blob running past the end
    EXPECT_EQ(RemotedIdentityTreeConnectContext::decode(bad).status(), NtStatus::InvalidParameter);
    // UserName without a terminator.
    auto noterm =
        hex("0100 2400 0000 1C00 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000"
            "4100 4200 4300 4400");
    EXPECT_EQ(RemotedIdentityTreeConnectContext::decode(noterm).status(),
              NtStatus::InvalidParameter);
    // UserName with an unpaired surrogate: a malformed context, not a bad object name.
    auto surrogate =
        hex("0100 2200 0000 1C00 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000"
            "4100 00D8 0000");
    EXPECT_EQ(RemotedIdentityTreeConnectContext::decode(surrogate).status(),
              NtStatus::InvalidParameter);
}

TEST(RemotedIdentity, EveryTruncationIsInvalid) {
    auto bytes = sample_bytes();
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_EQ(RemotedIdentityTreeConnectContext::decode(Bytes(bytes).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
}

TEST(RemotedIdentity, TooLargeToEncode) {
    RemotedIdentityTreeConnectContext c;
    c.user_claims = ByteVector(70000);
    ByteVector v;
    ByteWriter w(v);
    EXPECT_EQ(c.encode(w).status(), NtStatus::InvalidParameter);
    EXPECT_TRUE(v.empty());
}

TEST(TreeConnectContexts, ListRoundTrip) {
    TreeConnectContextList list{sample(), UnknownTreeConnectContext{0, hex("AABBCC")}};
    ByteVector out(90);  // stands in for header + body + path
    ByteWriter w(out, 0);
    auto off = serialize_tree_connect_contexts(list, w);
    ASSERT_TRUE(off.ok());
    EXPECT_EQ(*off, 96u);
    // First context header: type 1, DataLength 148, Reserved.
    EXPECT_EQ(ByteVector(out.begin() + 96, out.begin() + 104), hex("0100 9400 00000000"));
    // Second context 8-aligned after the first: 96 + 8 + 148 = 252 -> 256.
    EXPECT_EQ(ByteVector(out.begin() + 256, out.end()), hex("0000 0300 00000000 AABBCC"));
    auto back = parse_tree_connect_contexts(out, *off, 2);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, list);
    EXPECT_EQ(parse_tree_connect_contexts(out, *off, 3).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(parse_tree_connect_contexts(out, out.size() - 4, 1).status(),
              NtStatus::InvalidParameter);
}
