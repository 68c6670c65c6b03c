// Self-relative SECURITY_DESCRIPTOR, ACL and ACE codec (MS-DTYP 2.4.4, 2.4.5, 2.4.6), and the
// part selection / merge of QUERY_INFO / SET_INFO (MS-FSA 2.1.5.14, 2.1.5.16).
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/query_info.h"
#include "protocol/security_descriptor.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

namespace si = security_information;

const Sid kEveryone = Sid::make(1, {0});
const Sid kAuthUsers = Sid::make(5, {11});
const Sid kAdmins = Sid::make(5, {32, 544});
const Sid kSystem = Sid::make(5, {18});

// Owner BUILTIN\Administrators, group SYSTEM, SACL: audit DELETE by Everyone (success and
// failure), DACL: Everyone full control inherited by files and directories, then Authenticated
// Users denied WRITE_DATA. Laid out as Windows writes self-relative descriptors: SACL, DACL,
// owner, group.
const char* const kWindowsOrder =
    "01 00 14 80 60000000 70000000 14000000 30000000"  // header (MS-DTYP 2.4.6)
    "02 00 1c00 0100 0000"                             // SACL: 28 bytes, 1 ACE
    "02 c0 1400 00000100 01 01 000000000001 00000000"  // SYSTEM_AUDIT, Everyone
    "02 00 3000 0200 0000"                             // DACL: 48 bytes, 2 ACEs
    "00 03 1400 ff011f00 01 01 000000000001 00000000"  // ALLOWED OI|CI, Everyone
    "01 00 1400 02000000 01 01 000000000005 0b000000"  // DENIED, S-1-5-11
    "01 02 000000000005 20000000 20020000"             // S-1-5-32-544
    "01 01 000000000005 12000000";                     // S-1-5-18

}  // namespace

TEST(SecurityDescriptor, ParsesWindowsLayoutGolden) {
    auto sd = SecurityDescriptor::parse(hex(kWindowsOrder));
    ASSERT_TRUE(sd.ok()) << int(sd.status());
    EXPECT_EQ(sd->revision, 1);
    EXPECT_EQ(sd->control, 0x8014);
    ASSERT_TRUE(sd->owner && sd->group);
    EXPECT_EQ(*sd->owner, kAdmins);
    EXPECT_EQ(*sd->group, kSystem);
    ASSERT_TRUE(sd->sacl_present() && sd->sacl);
    ASSERT_EQ(sd->sacl->aces.size(), 1u);
    EXPECT_EQ(sd->sacl->aces[0].type, ace_type::kSystemAudit);
    EXPECT_EQ(sd->sacl->aces[0].flags, ace_flags::kSuccessfulAccess | ace_flags::kFailedAccess);
    EXPECT_EQ(sd->sacl->aces[0].mask, 0x00010000u);
    ASSERT_TRUE(sd->dacl_present() && sd->dacl);
    ASSERT_EQ(sd->dacl->aces.size(), 2u);
    EXPECT_EQ(sd->dacl->aces[0],
              Ace::allowed(kEveryone, 0x001F01FF,
                           ace_flags::kObjectInherit | ace_flags::kContainerInherit));
    EXPECT_EQ(sd->dacl->aces[1], Ace::denied(kAuthUsers, 0x2));
}

TEST(SecurityDescriptor, SerializesOwnerGroupSaclDaclGolden) {
    auto sd = SecurityDescriptor::parse(hex(kWindowsOrder));
    ASSERT_TRUE(sd.ok());
    auto out = sd->serialize();
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, hex("01 00 14 80 14000000 24000000 30000000 4c000000"
                        "01 02 000000000005 20000000 20020000"
                        "01 01 000000000005 12000000"
                        "02 00 1c00 0100 0000"
                        "02 c0 1400 00000100 01 01 000000000001 00000000"
                        "02 00 3000 0200 0000"
                        "00 03 1400 ff011f00 01 01 000000000001 00000000"
                        "01 00 1400 02000000 01 01 000000000005 0b000000"));
    auto again = SecurityDescriptor::parse(*out);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *sd);
}

TEST(SecurityDescriptor, NullEmptyAndAbsentDaclAreDistinct) {
    const ByteVector null_dacl = hex("01 00 04 80 00000000 00000000 00000000 00000000");
    const ByteVector empty_dacl =
        hex("01 00 04 80 00000000 00000000 00000000 14000000 02 00 0800 0000 0000");
    const ByteVector no_dacl = hex("01 00 00 80 00000000 00000000 00000000 00000000");

    auto n = SecurityDescriptor::parse(null_dacl);
    auto e = SecurityDescriptor::parse(empty_dacl);
    auto a = SecurityDescriptor::parse(no_dacl);
    ASSERT_TRUE(n.ok() && e.ok() && a.ok());
    EXPECT_TRUE(n->dacl_present());
    EXPECT_TRUE(n->null_dacl());
    EXPECT_TRUE(e->dacl_present());
    EXPECT_FALSE(e->null_dacl());
    ASSERT_TRUE(e->dacl);
    EXPECT_TRUE(e->dacl->aces.empty());
    EXPECT_FALSE(a->dacl_present());
    EXPECT_NE(*n, *e);
    EXPECT_EQ(*n->serialize(), null_dacl);
    EXPECT_EQ(*e->serialize(), empty_dacl);
    EXPECT_EQ(*a->serialize(), no_dacl);
}

TEST(SecurityDescriptor, AclRevisionThreeIsAcceptedAndKept) {
    // smbcacls 4.17 writes its DACLs with AclRevision 3.
    const ByteVector bytes =
        hex("01 00 04 80 00000000 00000000 00000000 14000000 03 00 0800 0000 0000");
    auto sd = SecurityDescriptor::parse(bytes);
    ASSERT_TRUE(sd.ok());
    EXPECT_EQ(sd->dacl->revision, 3);
    EXPECT_EQ(*sd->serialize(), bytes);
}

TEST(SecurityDescriptor, AclWithoutPresentBitIsIgnored) {
    // OffsetDacl points at an ACL but SE_DACL_PRESENT is clear: there is no DACL.
    auto sd = SecurityDescriptor::parse(
        hex("01 00 00 80 00000000 00000000 00000000 14000000 02 00 0800 0000 0000"));
    ASSERT_TRUE(sd.ok());
    EXPECT_FALSE(sd->dacl_present());
    EXPECT_FALSE(sd->dacl);
}

TEST(SecurityDescriptor, ObjectAndCallbackAcesArePreservedByteForByte) {
    const ByteVector bytes = hex(
        "01 00 04 80 00000000 00000000 00000000 14000000"
        "04 00 4800 0200 0000"  // ACL_REVISION_DS, 72 bytes, 2 ACEs
        // ACCESS_ALLOWED_OBJECT: mask, Flags (object type present), GUID, SID Everyone
        "05 00 2800 00010000 01000000 00112233445566778899aabbccddeeff 01 01 000000000001 00000000"
        // ACCESS_ALLOWED_CALLBACK: mask, SID Everyone, application data "artx"
        "09 00 1800 01000000 01 01 000000000001 00000000 61727478");
    auto sd = SecurityDescriptor::parse(bytes);
    ASSERT_TRUE(sd.ok()) << int(sd.status());
    ASSERT_TRUE(sd->dacl);
    EXPECT_EQ(sd->dacl->revision, Acl::kRevisionDs);
    const Ace& obj = sd->dacl->aces[0];
    EXPECT_EQ(obj.type, ace_type::kAccessAllowedObject);
    EXPECT_EQ(obj.mask, 0x100u);
    EXPECT_FALSE(obj.sid);  // opaque
    EXPECT_EQ(obj.trailer.size(), 32u);
    const Ace& cb = sd->dacl->aces[1];
    EXPECT_EQ(cb.type, ace_type::kAccessAllowedCallback);
    ASSERT_TRUE(cb.sid);
    EXPECT_EQ(*cb.sid, kEveryone);
    EXPECT_EQ(cb.trailer, hex("61727478"));
    EXPECT_EQ(*sd->serialize(), bytes);
}

TEST(SecurityDescriptor, MalformedInputIsRefused) {
    const char* const bad[] = {
        "01 00 04 80 00000000 00000000 00000000",           // short header
        "02 00 00 80 00000000 00000000 00000000 00000000",  // Revision 2
        "01 00 00 80 10000000 00000000 00000000 00000000",  // owner inside header
        "01 00 00 80 14000000 00000000 00000000 00000000",  // owner past the end
        "01 00 00 80 14000000 00000000 00000000 00000000 01 02 000000000005 20000000",  // short
        "01 00 00 80 14000000 00000000 00000000 00000000 02 01 000000000001 00000000",  // SID rev
        "01 00 00 80 14000000 00000000 00000000 00000000"
        "01 10 000000000005 " /* 16 sub-authorities */ "00000000",
        "01 00 04 80 00000000 00000000 00000000 14000000 01 00 0800 0000 0000",  // ACL rev 1
        "01 00 04 80 00000000 00000000 00000000 14000000 05 00 0800 0000 0000",  // ACL rev 5
        "01 00 04 80 00000000 00000000 00000000 14000000 02 00 0400 0000 0000",  // AclSize < 8
        "01 00 04 80 00000000 00000000 00000000 14000000 02 00 1000 0000 0000",  // past end
        "01 00 04 80 00000000 00000000 00000000 14000000 02 00 0800 0100 0000",  // ACE missing
        "01 00 04 80 00000000 00000000 00000000 14000000 02 00 1000 0100 0000"
        "00 00 0400 00000000",  // AceSize < 8
        "01 00 04 80 00000000 00000000 00000000 14000000 02 00 1000 0100 0000"
        "00 00 1400 00000000",  // AceSize past AclSize
        "01 00 04 80 00000000 00000000 00000000 14000000 02 00 1000 0100 0000"
        "00 00 0800 00000000",  // ALLOWED without room for its SID
        "01 00 04 80 00000000 00000000 00000000 14000000 02 00 0800 ffff 0000",  // count
        "01 00 04 80 00000000 00000000 00000000 ffffffff",                       // offset overflow
    };
    for (const char* h : bad) {
        auto sd = SecurityDescriptor::parse(hex(h));
        EXPECT_EQ(sd.status(), NtStatus::InvalidSecurityDescr) << h;
    }
}

TEST(SecurityDescriptor, SerializeRefusesOversizedAcl) {
    SecurityDescriptor sd;
    Ace big = Ace::allowed(kEveryone, 1);
    big.trailer.resize(70000);
    sd.set_dacl(Acl{Acl::kRevision, {big}});
    auto out = sd.serialize();
    EXPECT_FALSE(out.ok());
    EXPECT_EQ(out.status(), NtStatus::InvalidSecurityDescr);
}

TEST(SecurityParts, SelectClearsWhatIsLeftOut) {
    auto sd = SecurityDescriptor::parse(hex(kWindowsOrder));
    ASSERT_TRUE(sd.ok());
    sd->control |= sd_control::kDaclProtected | sd_control::kOwnerDefaulted;
    auto owner_only = select_security_parts(*sd, si::kOwner);
    EXPECT_TRUE(owner_only.owner);
    EXPECT_FALSE(owner_only.group);
    EXPECT_FALSE(owner_only.dacl_present());
    EXPECT_FALSE(owner_only.sacl_present());
    EXPECT_EQ(owner_only.control, sd_control::kSelfRelative | sd_control::kOwnerDefaulted);
    EXPECT_EQ(*owner_only.serialize(), hex("01 00 01 80 14000000 00000000 00000000 00000000"
                                           "01 02 000000000005 20000000 20020000"));
    auto dacl_only = select_security_parts(*sd, si::kDacl | 0x40000000 /* undefined: ignored */);
    EXPECT_FALSE(dacl_only.owner);
    EXPECT_EQ(dacl_only.control,
              sd_control::kSelfRelative | sd_control::kDaclPresent | sd_control::kDaclProtected);
    EXPECT_EQ(dacl_only.dacl, sd->dacl);
    EXPECT_EQ(select_security_parts(*sd, si::kOwner | si::kGroup | si::kDacl | si::kSacl), *sd);
}

TEST(SecurityParts, LabelSelectsOnlyMandatoryLabelAces) {
    auto sd = SecurityDescriptor::parse(hex(kWindowsOrder));
    ASSERT_TRUE(sd.ok());
    EXPECT_FALSE(select_security_parts(*sd, si::kLabel).sacl_present());  // audit ACE only
    Ace label;
    label.type = ace_type::kSystemMandatoryLabel;
    label.mask = 1;                       // SYSTEM_MANDATORY_LABEL_NO_WRITE_UP
    label.sid = Sid::make(16, {0x2000});  // medium integrity
    sd->sacl->aces.push_back(label);
    auto l = select_security_parts(*sd, si::kLabel);
    ASSERT_TRUE(l.sacl_present() && l.sacl);
    ASSERT_EQ(l.sacl->aces.size(), 1u);
    EXPECT_EQ(l.sacl->aces[0], label);
}

TEST(SecurityParts, MergeReplacesNamedPartsOnly) {
    auto current = SecurityDescriptor::parse(hex(kWindowsOrder));
    ASSERT_TRUE(current.ok());
    SecurityDescriptor given;
    given.owner = kEveryone;
    given.set_dacl(Acl{Acl::kRevision, {Ace::allowed(kSystem, 0x001F01FF)}});

    auto dacl = merge_security_parts(*current, given, si::kDacl);
    ASSERT_TRUE(dacl.ok());
    EXPECT_EQ(dacl->owner, current->owner);
    EXPECT_EQ(dacl->sacl, current->sacl);
    EXPECT_EQ(dacl->dacl, given.dacl);

    auto owner = merge_security_parts(*current, given, si::kOwner);
    ASSERT_TRUE(owner.ok());
    EXPECT_EQ(*owner->owner, kEveryone);
    EXPECT_EQ(owner->dacl, current->dacl);

    // A part named but missing from the given descriptor.
    EXPECT_EQ(merge_security_parts(*current, given, si::kGroup).status(),
              NtStatus::InvalidPrimaryGroup);
    SecurityDescriptor nothing;
    EXPECT_EQ(merge_security_parts(*current, nothing, si::kOwner).status(), NtStatus::InvalidOwner);
}

TEST(SecurityParts, MergeOfDaclWithoutPresentBitIsNullDacl) {
    auto current = SecurityDescriptor::parse(hex(kWindowsOrder));
    ASSERT_TRUE(current.ok());
    SecurityDescriptor given;  // SE_DACL_PRESENT clear
    auto m = merge_security_parts(*current, given, si::kDacl);
    ASSERT_TRUE(m.ok());
    EXPECT_TRUE(m->null_dacl());
    // And an explicitly empty one stays empty.
    given.set_dacl(Acl{});
    m = merge_security_parts(*current, given, si::kDacl);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE(m->dacl);
    EXPECT_TRUE(m->dacl->aces.empty());
}
