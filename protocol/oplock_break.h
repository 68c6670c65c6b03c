// SMB2 OPLOCK_BREAK: oplock and lease break notifications, acknowledgments and responses
// (MS-SMB2 2.2.23, 2.2.24, 2.2.25). The oplock form has a 24-byte body, the lease forms 44
// (notification) and 36 (acknowledgment/response); StructureSize tells them apart.
#pragma once

#include <array>
#include <cstdint>
#include <variant>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

// Oplock levels carried in the 24-byte form (MS-SMB2 2.2.23.1).
namespace oplock_break_level {
constexpr uint8_t kNone = 0x00;
constexpr uint8_t kLevelII = 0x01;
constexpr uint8_t kExclusive = 0x08;
}  // namespace oplock_break_level

// Lease Break Notification Flags and lease state bits (MS-SMB2 2.2.23.2).
namespace lease_break {
constexpr uint32_t kFlagAckRequired = 0x00000001;  // SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED
constexpr uint32_t kStateNone = 0x00;
constexpr uint32_t kStateReadCaching = 0x01;
constexpr uint32_t kStateHandleCaching = 0x02;
constexpr uint32_t kStateWriteCaching = 0x04;
}  // namespace lease_break

// MS-SMB2 2.2.23.1 / 2.2.24.1 / 2.2.25.1: StructureSize(2)=24 OplockLevel(1) Reserved(1)
// Reserved2(4) FileId(16).
struct OplockBreakBody {
    static constexpr uint16_t kStructureSize = 24;
    uint8_t oplock_level = oplock_break_level::kNone;
    FileId file_id;

    static Result<OplockBreakBody> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
    bool operator==(const OplockBreakBody&) const = default;
};
using OplockBreakNotification = OplockBreakBody;
using OplockBreakAcknowledgment = OplockBreakBody;
using OplockBreakResponse = OplockBreakBody;

// MS-SMB2 2.2.23.2: StructureSize(2)=44 NewEpoch(2) Flags(4) LeaseKey(16) CurrentLeaseState(4)
// NewLeaseState(4) BreakReason(4) AccessMaskHint(4) ShareMaskHint(4).
struct LeaseBreakNotification {
    static constexpr uint16_t kStructureSize = 44;
    uint16_t new_epoch = 0;
    uint32_t flags = 0;
    std::array<std::byte, 16> lease_key{};
    uint32_t current_lease_state = 0;
    uint32_t new_lease_state = 0;
    uint32_t break_reason = 0;
    uint32_t access_mask_hint = 0;
    uint32_t share_mask_hint = 0;

    static Result<LeaseBreakNotification> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
    bool operator==(const LeaseBreakNotification&) const = default;
};

// MS-SMB2 2.2.24.2 / 2.2.25.2: StructureSize(2)=36 Reserved(2) Flags(4) LeaseKey(16)
// LeaseState(4) LeaseDuration(8).
struct LeaseBreakAckBody {
    static constexpr uint16_t kStructureSize = 36;
    uint32_t flags = 0;
    std::array<std::byte, 16> lease_key{};
    uint32_t lease_state = 0;
    uint64_t lease_duration = 0;

    static Result<LeaseBreakAckBody> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
    bool operator==(const LeaseBreakAckBody&) const = default;
};
using LeaseBreakAcknowledgment = LeaseBreakAckBody;
using LeaseBreakResponse = LeaseBreakAckBody;

// What a client sends with Command OPLOCK_BREAK: dispatched on StructureSize (24 or 36);
// anything else is STATUS_INVALID_PARAMETER.
using BreakAcknowledgment = std::variant<OplockBreakAcknowledgment, LeaseBreakAcknowledgment>;
Result<BreakAcknowledgment> parse_break_acknowledgment(Bytes msg);

// What a server sends unsolicited with Command OPLOCK_BREAK (24 or 44), for the test client.
using BreakNotification = std::variant<OplockBreakNotification, LeaseBreakNotification>;
Result<BreakNotification> parse_break_notification(Bytes msg);

}  // namespace daxsmbd::protocol
