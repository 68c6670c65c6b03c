// SMB2_TREE_CONNECT_CONTEXT list (MS-SMB2 2.2.9.2) and the remoted identity context
// (MS-SMB2 2.2.9.2.1 and its sub-structures 2.2.9.2.1.1-6).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/sid.h"

namespace daxsmbd::protocol {

namespace tree_connect_context_type {
constexpr uint16_t kReserved = 0x0000;
constexpr uint16_t kRemotedIdentity = 0x0001;
}  // namespace tree_connect_context_type

// SID_ATTR_DATA Attr bits (MS-SMB2 2.2.9.2.1.2).
namespace se_group {
constexpr uint32_t kMandatory = 0x00000001;
constexpr uint32_t kEnabledByDefault = 0x00000002;
constexpr uint32_t kEnabled = 0x00000004;
constexpr uint32_t kOwner = 0x00000008;
constexpr uint32_t kUseForDenyOnly = 0x00000010;
constexpr uint32_t kIntegrity = 0x00000020;
constexpr uint32_t kIntegrityEnabled = 0x00000040;
constexpr uint32_t kResource = 0x20000000;
constexpr uint32_t kLogonId = 0xC0000000;
}  // namespace se_group

// LUID_ATTR_DATA Attr bits (MS-LSAD 2.2.5.4).
namespace se_privilege {
constexpr uint32_t kEnabledByDefault = 0x00000001;
constexpr uint32_t kEnabled = 0x00000002;
}  // namespace se_privilege

// SID_ATTR_DATA: BLOB_DATA holding a SID, then Attr(4).
struct SidAttr {
    Sid sid;
    uint32_t attributes = 0;
    bool operator==(const SidAttr&) const = default;
};

// LUID_ATTR_DATA (carried in a 12-byte PRIVILEGE_DATA blob).
struct LuidAttr {
    uint64_t luid = 0;
    uint32_t attributes = 0;
    bool operator==(const LuidAttr&) const = default;
};

// MS-SMB2 2.2.9.2.1. Every field other than TicketType/TicketSize is an offset from the start
// of this structure into TicketInfo; an offset of 0 means "absent" (Microsoft's test client
// leaves the optional ones at 0), which is what std::nullopt stands for.
struct RemotedIdentityTreeConnectContext {
    static constexpr uint16_t kType = tree_connect_context_type::kRemotedIdentity;
    static constexpr uint16_t kTicketTypeRemoted = 0x0001;
    static constexpr size_t kFixedSize = 28;  // 14 u16 fields

    // MS-SMB2 3.3.5.7: a TicketType other than 1 makes the server ignore the context; decode
    // then returns only ticket_type/ticket_size and leaves every other field empty.
    uint16_t ticket_type = kTicketTypeRemoted;
    uint16_t ticket_size = 0;  // as received; encode() writes the real size
    std::optional<SidAttr> user;
    std::optional<std::string> user_name;  // UTF-8
    std::optional<std::string> domain;     // UTF-8
    std::optional<std::vector<SidAttr>> groups;
    std::optional<std::vector<SidAttr>> restricted_groups;
    std::optional<std::vector<LuidAttr>> privileges;
    std::optional<std::vector<SidAttr>> primary_group;
    std::optional<Sid> owner;
    std::optional<ByteVector> default_dacl;  // raw ACL (MS-DTYP 2.4.5), decoded by auth/
    std::optional<std::vector<SidAttr>> device_groups;
    std::optional<ByteVector> user_claims;    // raw CLAIM_SECURITY_ATTRIBUTE_RELATIVE_V1 array
    std::optional<ByteVector> device_claims;  // same format

    // When encoding: write UserName/Domain as a u16 byte count (including the NUL) followed by
    // the NUL-terminated string, the form Microsoft's test client sends, instead of the spec's
    // bare NUL-terminated string. decode() accepts both forms (spec-digest 10.1).
    bool length_prefixed_names = false;

    bool operator==(const RemotedIdentityTreeConnectContext& o) const;

    // `data` is the context's Data (DataLength bytes). Every offset must land inside data and
    // every sub-structure must fit; else STATUS_INVALID_PARAMETER.
    static Result<RemotedIdentityTreeConnectContext> decode(Bytes data);
    // Appends the structure: the 28-byte fixed part, then the present items in field order.
    // STATUS_INVALID_PARAMETER when the result would not fit the u16 offsets/sizes.
    Status encode(ByteWriter& w) const;
};

// Any other ContextType, kept raw (including the reserved type 0; see spec-digest 10.2).
struct UnknownTreeConnectContext {
    uint16_t type = 0;
    ByteVector data;
    bool operator==(const UnknownTreeConnectContext&) const = default;
};

using TreeConnectContext =
    std::variant<RemotedIdentityTreeConnectContext, UnknownTreeConnectContext>;
using TreeConnectContextList = std::vector<TreeConnectContext>;

// Parses `count` SMB2_TREE_CONNECT_CONTEXTs (ContextType(2) DataLength(2) Reserved(4) Data),
// the first at msg offset `offset`, the following ones 8-aligned (relative to msg[0]).
Result<TreeConnectContextList> parse_tree_connect_contexts(Bytes msg, uint64_t offset,
                                                           uint16_t count);
// Appends the contexts, each 8-aligned relative to w.base(); returns the msg offset of the
// first one (0 for an empty list).
Result<uint32_t> serialize_tree_connect_contexts(const TreeConnectContextList& list, ByteWriter& w);

}  // namespace daxsmbd::protocol
