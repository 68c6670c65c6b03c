// OPLOCK_BREAK notification/acknowledgment/response, oplock and lease forms (MS-SMB2 2.2.23,
// 2.2.24, 2.2.25).
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/header.h"
#include "protocol/oplock_break.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector with_header(const ByteVector& body) {
    Header h;
    h.command = Command::OplockBreak;
    ByteVector v;
    ByteWriter w(v);
    h.serialize(w);
    v.insert(v.end(), body.begin(), body.end());
    return v;
}

template <class T>
ByteVector serialize(const T& x) {
    ByteVector v;
    ByteWriter w(v);
    x.serialize(w);
    return v;
}

std::array<std::byte, 16> key() {
    std::array<std::byte, 16> k;
    for (size_t i = 0; i < 16; ++i)
        k[i] = std::byte(0xC0 + i);
    return k;
}

const char* kKeyHex = "C0C1C2C3C4C5C6C7C8C9CACBCCCDCECF";

}  // namespace

TEST(OplockBreak, OplockGolden) {
    OplockBreakNotification n;
    n.oplock_level = oplock_break_level::kLevelII;
    n.file_id = FileId{0x1111, 0x2222};
    auto body =
        hex("1800"                                 // StructureSize 24
            "01"                                   // OplockLevel II
            "00"                                   // Reserved
            "00000000"                             // Reserved2
            "1111000000000000 2222000000000000");  // FileId persistent, volatile
    EXPECT_EQ(serialize(n), body);
    auto msg = with_header(body);
    auto back = OplockBreakBody::parse(msg);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, n);
    auto ack = parse_break_acknowledgment(msg);
    ASSERT_TRUE(ack.ok());
    ASSERT_TRUE(std::holds_alternative<OplockBreakAcknowledgment>(*ack));
    EXPECT_EQ(std::get<OplockBreakAcknowledgment>(*ack), n);
    auto note = parse_break_notification(msg);
    ASSERT_TRUE(note.ok());
    EXPECT_TRUE(std::holds_alternative<OplockBreakNotification>(*note));
    for (size_t k = 0; k < msg.size(); ++k) {
        EXPECT_EQ(OplockBreakBody::parse(Bytes(msg).first(k)).status(), NtStatus::InvalidParameter);
        EXPECT_EQ(parse_break_acknowledgment(Bytes(msg).first(k)).status(),
                  NtStatus::InvalidParameter);
    }
}

TEST(OplockBreak, LeaseNotificationGolden) {
    LeaseBreakNotification n;
    n.new_epoch = 3;
    n.flags = lease_break::kFlagAckRequired;
    n.lease_key = key();
    n.current_lease_state = lease_break::kStateReadCaching | lease_break::kStateHandleCaching |
                            lease_break::kStateWriteCaching;
    n.new_lease_state = lease_break::kStateReadCaching;
    auto body = hex(std::string("2C00"              // StructureSize 44
                                "0300"              // NewEpoch
                                "01000000") +       // Flags ACK_REQUIRED
                    kKeyHex +                       // LeaseKey
                    "07000000"                      // CurrentLeaseState RWH
                    "01000000"                      // NewLeaseState R
                    "00000000 00000000 00000000");  // BreakReason, AccessMaskHint, ShareMaskHint
    ASSERT_EQ(body.size(), 44u);
    EXPECT_EQ(serialize(n), body);
    auto msg = with_header(body);
    auto back = LeaseBreakNotification::parse(msg);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, n);
    auto note = parse_break_notification(msg);
    ASSERT_TRUE(note.ok());
    ASSERT_TRUE(std::holds_alternative<LeaseBreakNotification>(*note));
    // 44 is not an acknowledgment size.
    EXPECT_EQ(parse_break_acknowledgment(msg).status(), NtStatus::InvalidParameter);
    for (size_t k = 0; k < msg.size(); ++k)
        EXPECT_EQ(LeaseBreakNotification::parse(Bytes(msg).first(k)).status(),
                  NtStatus::InvalidParameter);
}

TEST(OplockBreak, LeaseAckGolden) {
    LeaseBreakAcknowledgment a;
    a.lease_key = key();
    a.lease_state = lease_break::kStateReadCaching | lease_break::kStateHandleCaching;
    auto body = hex(std::string("2400"         // StructureSize 36
                                "0000"         // Reserved
                                "00000000") +  // Flags
                    kKeyHex +
                    "03000000"            // LeaseState RH
                    "0000000000000000");  // LeaseDuration
    ASSERT_EQ(body.size(), 36u);
    EXPECT_EQ(serialize(a), body);
    auto msg = with_header(body);
    auto ack = parse_break_acknowledgment(msg);
    ASSERT_TRUE(ack.ok());
    ASSERT_TRUE(std::holds_alternative<LeaseBreakAcknowledgment>(*ack));
    EXPECT_EQ(std::get<LeaseBreakAcknowledgment>(*ack), a);
    EXPECT_EQ(parse_break_notification(msg).status(), NtStatus::InvalidParameter);
    for (size_t k = 0; k < msg.size(); ++k)
        EXPECT_EQ(parse_break_acknowledgment(Bytes(msg).first(k)).status(),
                  NtStatus::InvalidParameter);
}

TEST(OplockBreak, UnknownStructureSize) {
    for (uint16_t size : {0, 23, 25, 35, 37, 43, 45}) {
        auto body = hex("0000");
        store_le16(body.data(), size);
        body.resize(60);
        auto msg = with_header(body);
        EXPECT_EQ(parse_break_acknowledgment(msg).status(), NtStatus::InvalidParameter) << size;
        EXPECT_EQ(parse_break_notification(msg).status(), NtStatus::InvalidParameter) << size;
        EXPECT_EQ(OplockBreakBody::parse(msg).status(), NtStatus::InvalidParameter);
        EXPECT_EQ(LeaseBreakAckBody::parse(msg).status(), NtStatus::InvalidParameter);
        EXPECT_EQ(LeaseBreakNotification::parse(msg).status(), NtStatus::InvalidParameter);
    }
}
