#include "protocol/security_descriptor.h"

#include "protocol/query_info.h"

namespace daxsmbd::protocol {

namespace {

// STATUS_INVALID_SECURITY_DESCR: what Windows answers for a descriptor that does not parse.
Error bad_sd() {
    return Error(NtStatus::InvalidSecurityDescr);
}

// A SID at `offset` of the descriptor (MS-DTYP 2.4.6: offsets are from the start of the
// descriptor; 0 means absent).
Result<std::optional<Sid>> read_sid_at(Bytes sd, uint32_t offset) {
    if (offset == 0) return std::optional<Sid>();
    if (offset < SecurityDescriptor::kHeaderSize || offset >= sd.size()) return bad_sd();
    auto sid = Sid::parse(sd.subspan(offset));
    if (!sid) return bad_sd();
    return std::optional<Sid>(std::move(*sid));
}

Result<Ace> read_ace(ByteReader& r) {
    const size_t start = r.position();
    DAX_TRY(auto type, r.u8());
    DAX_TRY(auto flags, r.u8());
    DAX_TRY(auto size, r.u16());
    // Every ACE type has at least the header and a 32-bit mask (MS-DTYP 2.4.4.x).
    if (size < 8 || size > r.size() - start) return bad_sd();
    Ace ace;
    ace.type = type;
    ace.flags = flags;
    DAX_TRY(ace.mask, r.u32());
    ByteReader body(r.data().subspan(r.position(), size - 8));
    if (ace_type::has_plain_sid(type)) {
        auto sid = Sid::read(body);
        if (!sid) return bad_sd();
        ace.sid = std::move(*sid);
    }
    Bytes rest = body.rest();
    ace.trailer.assign(rest.begin(), rest.end());
    DAX_CHECK(r.seek(start + size));
    return ace;
}

Result<std::optional<Acl>> read_acl_at(Bytes sd, uint32_t offset) {
    // Present with offset 0: a NULL ACL (MS-DTYP 2.4.6).
    if (offset == 0) return std::optional<Acl>();
    if (offset < SecurityDescriptor::kHeaderSize || offset > sd.size() ||
        sd.size() - offset < Acl::kHeaderSize)
        return bad_sd();
    ByteReader h(sd.subspan(offset));
    Acl acl;
    DAX_TRY(acl.revision, h.u8());
    DAX_TRY(auto sbz1, h.u8());
    DAX_TRY(auto acl_size, h.u16());
    DAX_TRY(auto count, h.u16());
    DAX_TRY(auto sbz2, h.u16());
    (void)sbz1;
    (void)sbz2;
    // MS-DTYP 2.4.5 names revisions 2 and 4; Windows accepts 2 through 4 (MIN_ACL_REVISION ..
    // MAX_ACL_REVISION), and smbcacls sends 3.
    if (acl.revision < Acl::kRevision || acl.revision > Acl::kRevisionDs) return bad_sd();
    if (acl_size < Acl::kHeaderSize || acl_size > sd.size() - offset) return bad_sd();
    // The ACEs must lie within AclSize.
    ByteReader r(sd.subspan(offset, acl_size));
    DAX_CHECK(r.seek(Acl::kHeaderSize));
    // Each ACE is at least 8 bytes: a count that cannot fit is refused before any allocation.
    if (size_t(count) * 8 > r.remaining()) return bad_sd();
    acl.aces.reserve(count);
    for (uint16_t i = 0; i < count; ++i) {
        DAX_TRY(auto ace, read_ace(r));
        acl.aces.push_back(std::move(ace));
    }
    return std::optional<Acl>(std::move(acl));
}

Status write_acl(ByteWriter& w, const Acl& acl) {
    const size_t size = acl.size();
    if (size > 0xFFFF || acl.aces.size() > 0xFFFF) return bad_sd();
    w.u8(acl.revision);
    w.u8(0);
    w.u16(uint16_t(size));
    w.u16(uint16_t(acl.aces.size()));
    w.u16(0);
    for (const Ace& a : acl.aces) {
        if (a.size() > 0xFFFF) return bad_sd();
        w.u8(a.type);
        w.u8(a.flags);
        w.u16(uint16_t(a.size()));
        w.u32(a.mask);
        if (a.sid) a.sid->serialize(w);
        w.bytes(a.trailer);
    }
    return {};
}

// The SYSTEM_MANDATORY_LABEL ACEs of a SACL (MS-DTYP 2.4.4.13); nullopt when there are none.
std::optional<Acl> label_aces(const std::optional<Acl>& sacl) {
    if (!sacl) return std::nullopt;
    Acl out;
    out.revision = sacl->revision;
    for (const Ace& a : sacl->aces)
        if (a.type == ace_type::kSystemMandatoryLabel) out.aces.push_back(a);
    if (out.aces.empty()) return std::nullopt;
    return out;
}

}  // namespace

bool ace_type::has_plain_sid(uint8_t type) {
    switch (type) {
        case kAccessAllowed:
        case kAccessDenied:
        case kSystemAudit:
        case kSystemAlarm:
        case kAccessAllowedCallback:
        case kAccessDeniedCallback:
        case kSystemAuditCallback:
        case kSystemAlarmCallback:
        case kSystemMandatoryLabel:
        case kSystemResourceAttribute:
        case kSystemScopedPolicyId:
            return true;
        default:
            return false;
    }
}

Ace Ace::allowed(const Sid& sid, uint32_t mask, uint8_t flags) {
    Ace a;
    a.type = ace_type::kAccessAllowed;
    a.flags = flags;
    a.mask = mask;
    a.sid = sid;
    return a;
}

Ace Ace::denied(const Sid& sid, uint32_t mask, uint8_t flags) {
    Ace a = allowed(sid, mask, flags);
    a.type = ace_type::kAccessDenied;
    return a;
}

size_t Acl::size() const {
    size_t n = kHeaderSize;
    for (const Ace& a : aces)
        n += a.size();
    return n;
}

void SecurityDescriptor::set_dacl(std::optional<Acl> acl) {
    control |= sd_control::kDaclPresent;
    dacl = std::move(acl);
}

void SecurityDescriptor::set_sacl(std::optional<Acl> acl) {
    control |= sd_control::kSaclPresent;
    sacl = std::move(acl);
}

void SecurityDescriptor::clear_dacl() {
    control &= uint16_t(~sd_control::kDaclBits);
    dacl.reset();
}

void SecurityDescriptor::clear_sacl() {
    control &= uint16_t(~sd_control::kSaclBits);
    sacl.reset();
}

Result<SecurityDescriptor> SecurityDescriptor::parse(Bytes b) {
    if (b.size() < kHeaderSize) return bad_sd();
    ByteReader r(b);
    SecurityDescriptor sd;
    DAX_TRY(sd.revision, r.u8());
    DAX_TRY(sd.sbz1, r.u8());
    DAX_TRY(sd.control, r.u16());
    DAX_TRY(auto off_owner, r.u32());
    DAX_TRY(auto off_group, r.u32());
    DAX_TRY(auto off_sacl, r.u32());
    DAX_TRY(auto off_dacl, r.u32());
    if (sd.revision != kRevision) return bad_sd();
    DAX_TRY(sd.owner, read_sid_at(b, off_owner));
    DAX_TRY(sd.group, read_sid_at(b, off_group));
    // An ACL without its PRESENT bit is ignored, whatever its offset says (MS-DTYP 2.4.6).
    if (sd.sacl_present()) {
        DAX_TRY(sd.sacl, read_acl_at(b, off_sacl));
    }
    if (sd.dacl_present()) {
        DAX_TRY(sd.dacl, read_acl_at(b, off_dacl));
    }
    return sd;
}

Result<ByteVector> SecurityDescriptor::serialize() const {
    ByteVector out;
    ByteWriter w(out);
    const bool write_sacl = sacl_present() && sacl;
    const bool write_dacl = dacl_present() && dacl;
    w.u8(revision);
    w.u8(sbz1);
    w.u16(control | sd_control::kSelfRelative);
    w.u32(0);  // OffsetOwner
    w.u32(0);  // OffsetGroup
    w.u32(0);  // OffsetSacl
    w.u32(0);  // OffsetDacl
    // SIDs are 8 + 4n bytes; an ACL's size is what its ACEs make, which is 4-aligned for every
    // ACE built here and for received ones that were (Windows requires it).
    if (owner) {
        w.patch_u32(4, uint32_t(w.size()));
        owner->serialize(w);
    }
    if (group) {
        w.patch_u32(8, uint32_t(w.size()));
        group->serialize(w);
    }
    if (write_sacl) {
        w.patch_u32(12, uint32_t(w.size()));
        DAX_CHECK(write_acl(w, *sacl));
    }
    if (write_dacl) {
        w.patch_u32(16, uint32_t(w.size()));
        DAX_CHECK(write_acl(w, *dacl));
    }
    return out;
}

SecurityDescriptor select_security_parts(const SecurityDescriptor& sd, uint32_t secinfo) {
    namespace si = security_information;
    SecurityDescriptor out = sd;
    if (!(secinfo & si::kOwner)) {
        out.owner.reset();
        out.control &= uint16_t(~sd_control::kOwnerDefaulted);
    }
    if (!(secinfo & si::kGroup)) {
        out.group.reset();
        out.control &= uint16_t(~sd_control::kGroupDefaulted);
    }
    if (!(secinfo & si::kDacl)) out.clear_dacl();
    if (!(secinfo & si::kSacl)) {
        out.clear_sacl();
        if ((secinfo & si::kLabel) && sd.sacl_present()) {
            if (auto labels = label_aces(sd.sacl)) out.set_sacl(std::move(labels));
        }
    }
    return out;
}

Result<SecurityDescriptor> merge_security_parts(const SecurityDescriptor& current,
                                                const SecurityDescriptor& given, uint32_t secinfo) {
    namespace si = security_information;
    SecurityDescriptor out = current;
    if (secinfo & si::kOwner) {
        if (!given.owner) return Error(NtStatus::InvalidOwner);
        out.owner = given.owner;
        out.control = uint16_t((out.control & ~sd_control::kOwnerDefaulted) |
                               (given.control & sd_control::kOwnerDefaulted));
    }
    if (secinfo & si::kGroup) {
        if (!given.group) return Error(NtStatus::InvalidPrimaryGroup);
        out.group = given.group;
        out.control = uint16_t((out.control & ~sd_control::kGroupDefaulted) |
                               (given.control & sd_control::kGroupDefaulted));
    }
    if (secinfo & si::kDacl) {
        out.clear_dacl();
        out.control |= given.control & sd_control::kDaclBits;
        // Without SE_DACL_PRESENT the caller asked for "no DACL": a NULL DACL.
        out.set_dacl(given.dacl_present() ? given.dacl : std::nullopt);
    }
    if (secinfo & si::kSacl) {
        out.clear_sacl();
        out.control |= given.control & sd_control::kSaclBits;
        out.set_sacl(given.sacl_present() ? given.sacl : std::nullopt);
    } else if (secinfo & si::kLabel) {
        // Only the label ACEs change; the rest of the SACL stays.
        Acl sacl;
        if (current.sacl_present() && current.sacl) sacl = *current.sacl;
        std::erase_if(sacl.aces,
                      [](const Ace& a) { return a.type == ace_type::kSystemMandatoryLabel; });
        if (given.sacl_present() && given.sacl)
            for (const Ace& a : given.sacl->aces)
                if (a.type == ace_type::kSystemMandatoryLabel) sacl.aces.push_back(a);
        if (sacl.aces.empty() && !current.sacl_present())
            out.clear_sacl();
        else
            out.set_sacl(std::move(sacl));
    }
    return out;
}

}  // namespace daxsmbd::protocol
