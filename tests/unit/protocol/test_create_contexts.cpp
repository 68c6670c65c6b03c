// SMB2_CREATE_CONTEXT list codec and typed contexts (protocol/create_contexts.h). Expected bytes
// are written by hand from MS-SMB2 2.2.13.2.x / 2.2.14.2.x.
#include <gtest/gtest.h>

#include <string>

#include "protocol/create_contexts.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

template <class T>
ByteVector encode(const T& x) {
    ByteVector v;
    ByteWriter w(v);
    x.encode(w);
    return v;
}

ByteVector serialize(const CreateContextList& l) {
    ByteVector v;
    ByteWriter w(v);
    l.serialize(w);
    return v;
}

// DHnQ request (16 reserved bytes) then an unknown 16-byte-GUID context (the SMB3 POSIX one)
// with 4 bytes of data.
const ByteVector kTwoContexts =
    hex("28000000 1000 0400 0000 1800 10000000 44486e51 00000000"
        "00000000000000000000000000000000"
        "00000000 1000 1000 0000 2000 04000000"
        "93ad25509cb411e7b42383de968bcd7c"
        "01020304");

}  // namespace

TEST(CreateContextListTest, ParsesChainAndKeepsUnknownContexts) {
    auto r = CreateContextList::parse(kTwoContexts);
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    ASSERT_EQ(r->items.size(), 2u);
    EXPECT_TRUE(r->items[0].name_is(create_context_name::kDurableHandleRequest));
    EXPECT_EQ(r->items[0].data.size(), 16u);
    EXPECT_TRUE(r->items[1].name_is(create_context_name::kReserved));
    EXPECT_EQ(r->items[1].data, hex("01020304"));
    EXPECT_EQ(r->count(create_context_name::kDurableHandleRequest), 1u);
    EXPECT_EQ(r->find(create_context_name::kDurableHandleReconnect), nullptr);
    EXPECT_EQ(serialize(*r), kTwoContexts);
}

TEST(CreateContextListTest, EmptyRegionIsEmptyList) {
    auto r = CreateContextList::parse({});
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->empty());
}

TEST(CreateContextListTest, RejectsMalformedChains) {
    auto bad = [](size_t at, std::initializer_list<uint8_t> bytes) {
        ByteVector v = kTwoContexts;
        size_t i = at;
        for (auto b : bytes)
            v[i++] = std::byte(b);
        return CreateContextList::parse(v).status();
    };
    EXPECT_EQ(bad(0, {0x2c}), NtStatus::InvalidParameter);       // Next not a multiple of 8
    EXPECT_EQ(bad(0, {0x58}), NtStatus::InvalidParameter);       // Next past the region
    EXPECT_EQ(bad(0, {0x10}), NtStatus::InvalidParameter);       // Next cuts the context short
    EXPECT_EQ(bad(4, {0x0c}), NtStatus::InvalidParameter);       // NameOffset inside the header
    EXPECT_EQ(bad(4, {0x14}), NtStatus::InvalidParameter);       // NameOffset not 8-aligned
    EXPECT_EQ(bad(6, {0x03}), NtStatus::InvalidParameter);       // NameLength < 4
    EXPECT_EQ(bad(10, {0x12}), NtStatus::InvalidParameter);      // DataOffset not 8-aligned
    EXPECT_EQ(bad(10, {0x10}), NtStatus::InvalidParameter);      // data overlaps the name
    EXPECT_EQ(bad(12, {0x11}), NtStatus::InvalidParameter);      // data past the context
    EXPECT_EQ(bad(40 + 6, {0x20}), NtStatus::InvalidParameter);  // name past the last context
    // A trailing context cut short.
    ByteVector cut(kTwoContexts.begin(), kTwoContexts.end() - 1);
    EXPECT_EQ(CreateContextList::parse(cut).status(), NtStatus::InvalidParameter);
    // Next pointing exactly at the end of the region (a context of zero bytes).
    ByteVector one(kTwoContexts.begin(), kTwoContexts.begin() + 40);
    EXPECT_EQ(CreateContextList::parse(one).status(), NtStatus::InvalidParameter);
}

TEST(CreateContextListTest, IgnoresDataOffsetWhenDataLengthIsZero) {
    // MS-SMB2 2.2.13.2: DataOffset MUST be ignored when DataLength is 0.
    auto v = hex("00000000 1000 0400 0000 ffff 00000000 51466964");
    auto r = CreateContextList::parse(v);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->items.size(), 1u);
    EXPECT_TRUE(r->items[0].data.empty());
}

TEST(CreateContextListTest, RejectsEveryTruncation) {
    for (size_t n = 1; n < kTwoContexts.size(); ++n)
        EXPECT_EQ(CreateContextList::parse(Bytes(kTwoContexts).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
}

TEST(CreateContextListTest, SerializeAlignsDataAndNext) {
    CreateContextList l;
    l.add(AllocationSizeContext{0x100000});
    l.add(TimewarpToken{0x01d9000000000000});
    auto v = serialize(l);
    // AlSi: header 16 + name 4 + pad 4 -> data at 24, 8 bytes -> 32, next context at 32.
    EXPECT_EQ(v, hex("20000000 1000 0400 0000 1800 08000000 416c5369 00000000 0000100000000000"
                     "00000000 1000 0400 0000 1800 08000000 54577270 00000000 000000000000d901"));
}

TEST(TypedCreateContextTest, GoldenEncodings) {
    DurableHandleRequestV2 dh2q;
    dh2q.timeout = 0x2710;
    dh2q.flags = durable_flags::kPersistent;
    for (int i = 0; i < 16; ++i)
        dh2q.create_guid[i] = std::byte(i);
    EXPECT_EQ(encode(dh2q),
              hex("10270000 02000000 0000000000000000 000102030405060708090a0b0c0d0e0f"));
    EXPECT_EQ(encode(DurableHandleResponseV2{120000, 0}), hex("c0d40100 00000000"));
    EXPECT_EQ(encode(DurableHandleResponse{}), hex("0000000000000000"));
    DurableHandleReconnectV2 dh2c;
    dh2c.file_id = {1, 2};
    dh2c.create_guid = dh2q.create_guid;
    dh2c.flags = durable_flags::kPersistent;
    EXPECT_EQ(encode(dh2c), hex("0100000000000000 0200000000000000"
                                "000102030405060708090a0b0c0d0e0f 02000000"));
    AppInstanceIdContext app;
    app.app_instance_id[0] = std::byte{0xEE};
    EXPECT_EQ(encode(app), hex("1400 0000 ee000000000000000000000000000000"));
    EXPECT_EQ(encode(AppInstanceVersionContext{5, 6}),
              hex("1800 0000 00000000 0500000000000000 0600000000000000"));
    EXPECT_EQ(encode(MaximalAccessRequest{0x1122334455667788}), hex("8877665544332211"));
    EXPECT_EQ(encode(MaximalAccessRequest{}), ByteVector{});
    EXPECT_EQ(encode(MaximalAccessResponse{NtStatus::NoneMapped, 0}), hex("730000c0 00000000"));

    LeaseContext v1;
    v1.lease_key[0] = std::byte{0x01};
    v1.lease_state = lease_state::kReadCaching | lease_state::kWriteCaching;
    v1.flags = lease_flags::kBreakInProgress;
    EXPECT_EQ(encode(v1),
              hex("01000000000000000000000000000000 05000000 02000000 0000000000000000"));
    LeaseContext v2 = v1;
    v2.version = 2;
    v2.flags = lease_flags::kParentLeaseKeySet;
    v2.parent_lease_key[15] = std::byte{0xFF};
    v2.epoch = 0x0102;
    EXPECT_EQ(encode(v2), hex("01000000000000000000000000000000 05000000 04000000 0000000000000000"
                              "000000000000000000000000000000ff 0201 0000"));
}

TEST(TypedCreateContextTest, DecodeChecksDataLength) {
    EXPECT_TRUE(DurableHandleRequest::decode(ByteVector(16)).ok());
    EXPECT_EQ(DurableHandleRequest::decode(ByteVector(15)).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(DurableHandleReconnect::decode(ByteVector(17)).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(AllocationSizeContext::decode(ByteVector(4)).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(TimewarpToken::decode(ByteVector(9)).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(MaximalAccessRequest::decode(ByteVector(4)).status(), NtStatus::InvalidParameter);
    EXPECT_FALSE(MaximalAccessRequest::decode({})->timestamp.has_value());
    EXPECT_EQ(*MaximalAccessRequest::decode(hex("0100000000000000"))->timestamp, 1);
    EXPECT_EQ(DurableHandleRequestV2::decode(ByteVector(31)).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(DurableHandleReconnectV2::decode(ByteVector(32)).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(LeaseContext::decode(ByteVector(40)).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(LeaseContext::decode(ByteVector(32))->version, 1);
    EXPECT_EQ(LeaseContext::decode(ByteVector(52))->version, 2);
    // APP_INSTANCE_ID: StructureSize must say 20.
    EXPECT_TRUE(AppInstanceIdContext::decode(hex("1400 0000" + std::string(32, '0'))).ok());
    EXPECT_EQ(AppInstanceIdContext::decode(hex("1500 0000" + std::string(32, '0'))).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(AppInstanceVersionContext::decode(hex("1400 0000" + std::string(40, '0'))).status(),
              NtStatus::InvalidParameter);
}

TEST(TypedCreateContextTest, EaBufferRoundTrip) {
    EaBufferContext ea;
    ea.entries.push_back({0, "user.a", hex("616263")});
    ea.entries.push_back({kFileNeedEa, "B", {}});
    auto data = encode(ea);
    // First entry: 8 + 6 + 1 + 3 = 18 bytes, next at 20 (4-aligned).
    EXPECT_EQ(load_le32(data.data()), 20u);
    auto back = EaBufferContext::decode(data);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->entries, ea.entries);
}

TEST(TypedCreateContextTest, GetReportsMalformedTypedContext) {
    CreateContextList l;
    l.add(Bytes(create_context_name::kAllocationSize), ByteVector(3));
    EXPECT_EQ(l.get<AllocationSizeContext>().status(), NtStatus::InvalidParameter);
    auto absent = l.get<TimewarpToken>();
    ASSERT_TRUE(absent.ok());
    EXPECT_FALSE(absent->has_value());
}

TEST(TypedCreateContextTest, GuidNamesMatchSpecBytes) {
    // MS-SMB2 2.2.13.2: SMB2_CREATE_APP_INSTANCE_ID 0x45BCA66AEFA7F74A9008FA462E144D74.
    EXPECT_EQ(ByteVector(create_context_name::kAppInstanceId.begin(),
                         create_context_name::kAppInstanceId.end()),
              hex("45BCA66AEFA7F74A9008FA462E144D74"));
    EXPECT_EQ(ByteVector(create_context_name::kAppInstanceVersion.begin(),
                         create_context_name::kAppInstanceVersion.end()),
              hex("B982D0B73B56074FA07B524A8116A010"));
    EXPECT_EQ(ByteVector(create_context_name::kRequestLease.begin(),
                         create_context_name::kRequestLease.end()),
              hex("52714c73"));
}
