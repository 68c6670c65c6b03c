// Self-relative SECURITY_DESCRIPTOR (MS-DTYP 2.4.6) with its ACLs (2.4.5) and ACEs (2.4.4), as
// QUERY_INFO / SET_INFO of SMB2_0_INFO_SECURITY and the "SecD" create context carry them, and
// as daxsmbd stores them per file (server/vfs/security_store.h).
//
// What is parsed and what is kept opaque:
//   - Header, owner and group SIDs, SACL and DACL: typed.
//   - ACEs whose body is Mask + SID (+ optional trailing data): ACCESS_ALLOWED/DENIED,
//     SYSTEM_AUDIT/ALARM, their CALLBACK forms (the conditional expression stays opaque in
//     `trailer`), SYSTEM_MANDATORY_LABEL, SYSTEM_RESOURCE_ATTRIBUTE, SYSTEM_SCOPED_POLICY_ID:
//     type, flags, mask and SID typed.
//   - Every other ACE type (the OBJECT forms, ACCESS_ALLOWED_COMPOUND, unknown types): type,
//     flags and mask typed, the rest of the body kept byte for byte in `trailer`. They round-trip
//     unchanged; an access check must treat them conservatively.
//
// NULL DACL versus empty DACL (MS-DTYP 2.4.6: "a NULL DACL grants full access", an empty one
// none): `dacl_present()` (SE_DACL_PRESENT) with `dacl == std::nullopt` is a NULL DACL;
// SE_DACL_PRESENT with an `Acl` of zero ACEs is an empty DACL; without SE_DACL_PRESENT there is
// no DACL at all (the object's default applies). The same holds for the SACL.
//
// Wire order written by serialize(): header, owner, group, SACL, DACL (the order of MS-DTYP's
// field list; any order is valid, readers follow the offsets). ACL slack beyond the last ACE is
// not preserved: AclSize is written as exactly what the ACEs need.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/result.h"
#include "protocol/sid.h"

namespace daxsmbd::protocol {

namespace sd_control {  // SECURITY_DESCRIPTOR Control (MS-DTYP 2.4.6)
constexpr uint16_t kOwnerDefaulted = 0x0001;
constexpr uint16_t kGroupDefaulted = 0x0002;
constexpr uint16_t kDaclPresent = 0x0004;
constexpr uint16_t kDaclDefaulted = 0x0008;
constexpr uint16_t kSaclPresent = 0x0010;
constexpr uint16_t kSaclDefaulted = 0x0020;
constexpr uint16_t kDaclTrusted = 0x0040;
constexpr uint16_t kServerSecurity = 0x0080;
constexpr uint16_t kDaclComputedInheritanceRequired = 0x0100;
constexpr uint16_t kSaclComputedInheritanceRequired = 0x0200;
constexpr uint16_t kDaclAutoInherited = 0x0400;
constexpr uint16_t kSaclAutoInherited = 0x0800;
constexpr uint16_t kDaclProtected = 0x1000;
constexpr uint16_t kSaclProtected = 0x2000;
constexpr uint16_t kRmControlValid = 0x4000;
constexpr uint16_t kSelfRelative = 0x8000;
// The bits that describe the DACL / the SACL (dropped together with it when a query leaves it out).
constexpr uint16_t kDaclBits = kDaclPresent | kDaclDefaulted | kDaclTrusted |
                               kDaclComputedInheritanceRequired | kDaclAutoInherited |
                               kDaclProtected;
constexpr uint16_t kSaclBits = kSaclPresent | kSaclDefaulted | kSaclComputedInheritanceRequired |
                               kSaclAutoInherited | kSaclProtected;
}  // namespace sd_control

namespace ace_type {  // AceType (MS-DTYP 2.4.4.1)
constexpr uint8_t kAccessAllowed = 0x00;
constexpr uint8_t kAccessDenied = 0x01;
constexpr uint8_t kSystemAudit = 0x02;
constexpr uint8_t kSystemAlarm = 0x03;
constexpr uint8_t kAccessAllowedCompound = 0x04;
constexpr uint8_t kAccessAllowedObject = 0x05;
constexpr uint8_t kAccessDeniedObject = 0x06;
constexpr uint8_t kSystemAuditObject = 0x07;
constexpr uint8_t kSystemAlarmObject = 0x08;
constexpr uint8_t kAccessAllowedCallback = 0x09;
constexpr uint8_t kAccessDeniedCallback = 0x0A;
constexpr uint8_t kAccessAllowedCallbackObject = 0x0B;
constexpr uint8_t kAccessDeniedCallbackObject = 0x0C;
constexpr uint8_t kSystemAuditCallback = 0x0D;
constexpr uint8_t kSystemAlarmCallback = 0x0E;
constexpr uint8_t kSystemAuditCallbackObject = 0x0F;
constexpr uint8_t kSystemAlarmCallbackObject = 0x10;
constexpr uint8_t kSystemMandatoryLabel = 0x11;
constexpr uint8_t kSystemResourceAttribute = 0x12;
constexpr uint8_t kSystemScopedPolicyId = 0x13;

// True for the types whose body is Mask, SID, then optional data (see the top of this file).
bool has_plain_sid(uint8_t type);
}  // namespace ace_type

namespace ace_flags {  // AceFlags (MS-DTYP 2.4.4.1)
constexpr uint8_t kObjectInherit = 0x01;
constexpr uint8_t kContainerInherit = 0x02;
constexpr uint8_t kNoPropagateInherit = 0x04;
constexpr uint8_t kInheritOnly = 0x08;
constexpr uint8_t kInherited = 0x10;
constexpr uint8_t kSuccessfulAccess = 0x40;
constexpr uint8_t kFailedAccess = 0x80;
}  // namespace ace_flags

struct Ace {
    uint8_t type = ace_type::kAccessAllowed;
    uint8_t flags = 0;
    uint32_t mask = 0;
    // The trustee of has_plain_sid() types; nullopt for the opaque ones.
    std::optional<Sid> sid;
    // Bytes after the SID (plain types: callback application data, padding), or after the mask
    // (opaque types: object flags, GUIDs, SID, data), exactly as received.
    ByteVector trailer;

    bool operator==(const Ace&) const = default;

    // AceSize: 4 (header) + 4 (mask) + SID + trailer.
    size_t size() const { return 8 + (sid ? sid->size() : 0) + trailer.size(); }
    bool inherit_only() const { return flags & ace_flags::kInheritOnly; }

    static Ace allowed(const Sid& sid, uint32_t mask, uint8_t flags = 0);
    static Ace denied(const Sid& sid, uint32_t mask, uint8_t flags = 0);
};

struct Acl {
    // MS-DTYP 2.4.5: ACL_REVISION (2), or ACL_REVISION_DS (4) when object ACEs are present;
    // 3 is accepted too (Windows does, smbcacls sends it) and kept as received.
    static constexpr uint8_t kRevision = 2;
    static constexpr uint8_t kRevisionDs = 4;
    static constexpr size_t kHeaderSize = 8;

    uint8_t revision = kRevision;
    std::vector<Ace> aces;

    bool operator==(const Acl&) const = default;
    size_t size() const;
};

struct SecurityDescriptor {
    static constexpr uint8_t kRevision = 1;
    static constexpr size_t kHeaderSize = 20;

    uint8_t revision = kRevision;
    uint8_t sbz1 = 0;  // resource-manager control bits when SE_RM_CONTROL_VALID
    uint16_t control = sd_control::kSelfRelative;
    std::optional<Sid> owner;
    std::optional<Sid> group;
    std::optional<Acl> sacl;  // meaningful only with SE_SACL_PRESENT (nullopt there: NULL SACL)
    std::optional<Acl> dacl;  // meaningful only with SE_DACL_PRESENT (nullopt there: NULL DACL)

    bool operator==(const SecurityDescriptor&) const = default;

    bool dacl_present() const { return control & sd_control::kDaclPresent; }
    bool sacl_present() const { return control & sd_control::kSaclPresent; }
    bool null_dacl() const { return dacl_present() && !dacl; }
    // Sets (or, with nullopt, makes NULL) the DACL and SE_DACL_PRESENT; likewise the SACL.
    void set_dacl(std::optional<Acl> acl);
    void set_sacl(std::optional<Acl> acl);
    // Drops the DACL and every DACL control bit (no DACL at all); likewise the SACL.
    void clear_dacl();
    void clear_sacl();

    // Parses a self-relative descriptor at b[0] (trailing bytes are ignored). Bounds of every
    // offset and size are checked; Revision != 1, a bad ACL revision, an ACE whose AceSize does
    // not cover its fixed part, a SID out of range or overlapping the end all fail with
    // STATUS_INVALID_SECURITY_DESCR. SE_SELF_RELATIVE is not required on input (the descriptor
    // is self-relative by where it came from); absolute-format pointers do not exist on the wire.
    static Result<SecurityDescriptor> parse(Bytes b);
    // Self-relative bytes (SE_SELF_RELATIVE always set). Fails with STATUS_INVALID_SECURITY_DESCR
    // when an ACE or ACL would exceed the 16-bit sizes the format has.
    Result<ByteVector> serialize() const;
};

// Exactly what a QUERY_INFO with AdditionalInformation `secinfo` returns of `sd` (MS-FSA
// 2.1.5.14): OWNER / GROUP / DACL / SACL select the parts, the control bits of a part left out
// are cleared; LABEL without SACL returns a SACL of only the SYSTEM_MANDATORY_LABEL ACEs (none:
// no SACL). Undefined bits are ignored.
SecurityDescriptor select_security_parts(const SecurityDescriptor& sd, uint32_t secinfo);

// Replaces in `current` the parts `secinfo` names with those of `given` (MS-FSA 2.1.5.16): OWNER,
// GROUP, DACL (with its control bits; a `given` without SE_DACL_PRESENT sets a NULL DACL, as
// Windows does), SACL (likewise), LABEL (the SYSTEM_MANDATORY_LABEL ACEs of the SACL). A part
// named but absent from `given` (OWNER / GROUP offset 0) fails with STATUS_INVALID_OWNER /
// STATUS_INVALID_PRIMARY_GROUP.
Result<SecurityDescriptor> merge_security_parts(const SecurityDescriptor& current,
                                                const SecurityDescriptor& given, uint32_t secinfo);

}  // namespace daxsmbd::protocol
