// Security descriptor of a new file or directory (MS-DTYP 2.5.3.4), as auth/sd_inherit.h
// reduces it.
#include <gtest/gtest.h>

#include "auth/access_check.h"
#include "auth/sd_inherit.h"
#include "protocol/access_mask.h"
#include "tests/unit/auth/test_tokens.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::auth;
namespace am = protocol::access_mask;
namespace af = protocol::ace_flags;
namespace sc = protocol::sd_control;
namespace wk = auth::well_known_sid;

namespace {

constexpr bool kFile = false;
constexpr bool kDir = true;
constexpr uint8_t kOI = af::kObjectInherit;
constexpr uint8_t kCI = af::kContainerInherit;
constexpr uint8_t kNP = af::kNoPropagateInherit;
constexpr uint8_t kIO = af::kInheritOnly;
constexpr uint8_t kI = af::kInherited;
constexpr uint32_t kRead = am::kFileGenericRead;  // 0x120089

AccessToken alice() {
    return test::alice_token();
}

SecurityDescriptor parent_with(std::vector<Ace> aces, uint16_t extra_control = 0) {
    SecurityDescriptor sd;
    sd.owner = wk::unix_user(0);
    sd.group = wk::unix_group(0);
    sd.control |= extra_control;
    sd.set_dacl(Acl{Acl::kRevision, std::move(aces)});
    return sd;
}

// A parent whose DACL is auto-inherited, as NTFS volumes' are: its children's inherited ACEs
// carry INHERITED_ACE.
SecurityDescriptor auto_parent_with(std::vector<Ace> aces) {
    return parent_with(std::move(aces), sc::kDaclAutoInherited);
}

NewObjectSecurity create(const SecurityDescriptor& parent, bool is_container) {
    return inherit_security_descriptor(&parent, nullptr, alice(), is_container);
}

std::vector<Ace> aces_of(const NewObjectSecurity& r) {
    EXPECT_TRUE(r.dacl_from_parent_or_creator);
    EXPECT_TRUE(r.sd.dacl_present());
    if (!r.sd.dacl) {
        ADD_FAILURE() << "NULL DACL";
        return {};
    }
    return r.sd.dacl->aces;
}

}  // namespace

TEST(SdInherit, OwnerAndGroupComeFromTheCreatorElseTheToken) {
    auto r = inherit_security_descriptor(nullptr, nullptr, alice(), kFile);
    EXPECT_EQ(r.sd.owner, wk::unix_user(1001));
    EXPECT_EQ(r.sd.group, wk::unix_group(1001));

    SecurityDescriptor creator;
    creator.owner = wk::unix_user(7);
    r = inherit_security_descriptor(nullptr, &creator, alice(), kFile);
    EXPECT_EQ(r.sd.owner, wk::unix_user(7));
    EXPECT_EQ(r.sd.group, wk::unix_group(1001));

    creator.owner.reset();
    creator.group = wk::unix_group(8);
    r = inherit_security_descriptor(nullptr, &creator, alice(), kDir);
    EXPECT_EQ(r.sd.owner, wk::unix_user(1001));
    EXPECT_EQ(r.sd.group, wk::unix_group(8));
}

TEST(SdInherit, ObjectInheritGoesToFilesAndPassesThroughDirectories) {
    auto parent = auto_parent_with({Ace::allowed(wk::everyone(), kRead, kOI)});
    EXPECT_EQ(aces_of(create(parent, kFile)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), kRead, kI)}));
    // A directory only passes it on to its files: inherit-only there.
    EXPECT_EQ(aces_of(create(parent, kDir)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), kRead, kOI | kIO | kI)}));
    // Alice owns both (implicit READ_CONTROL | WRITE_DAC); only the file grants her the read.
    const uint32_t implicit = am::kReadControl | am::kWriteDac;
    EXPECT_EQ(granted_access(create(parent, kDir).sd, alice()), implicit);
    EXPECT_EQ(granted_access(create(parent, kFile).sd, alice()), kRead | implicit);
}

TEST(SdInherit, ContainerInheritGoesToDirectoriesOnly) {
    auto parent = auto_parent_with({Ace::allowed(wk::everyone(), kRead, kCI)});
    EXPECT_FALSE(has_inheritable_aces(parent, kFile));
    EXPECT_TRUE(has_inheritable_aces(parent, kDir));
    auto file = create(parent, kFile);
    EXPECT_FALSE(file.dacl_from_parent_or_creator);
    EXPECT_FALSE(file.sd.dacl_present());
    // The directory's ACE is effective and stays inheritable to its subdirectories.
    EXPECT_EQ(aces_of(create(parent, kDir)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), kRead, kCI | kI)}));

    auto both = auto_parent_with({Ace::denied(wk::unix_user(5), am::kDelete, kOI | kCI)});
    EXPECT_EQ(aces_of(create(both, kDir)),
              (std::vector<Ace>{Ace::denied(wk::unix_user(5), am::kDelete, kOI | kCI | kI)}));
    EXPECT_EQ(aces_of(create(both, kFile)),
              (std::vector<Ace>{Ace::denied(wk::unix_user(5), am::kDelete, kI)}));
}

TEST(SdInherit, NoPropagateStopsAfterOneGeneration) {
    auto parent = auto_parent_with({Ace::allowed(wk::everyone(), kRead, kOI | kCI | kNP)});
    EXPECT_EQ(aces_of(create(parent, kDir)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), kRead, kI)}));
    EXPECT_EQ(aces_of(create(parent, kFile)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), kRead, kI)}));
    // OBJECT_INHERIT | NO_PROPAGATE: files get it, a directory (which would only pass it on)
    // gets nothing.
    auto oi_np = auto_parent_with({Ace::allowed(wk::everyone(), kRead, kOI | kNP)});
    EXPECT_TRUE(has_inheritable_aces(oi_np, kFile));
    EXPECT_FALSE(has_inheritable_aces(oi_np, kDir));
    EXPECT_FALSE(create(oi_np, kDir).sd.dacl_present());
    EXPECT_EQ(aces_of(create(oi_np, kFile)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), kRead, kI)}));
}

TEST(SdInherit, InheritOnlyParentAceBecomesEffectiveOnTheChild) {
    auto parent = auto_parent_with({Ace::allowed(wk::unix_group(100), kRead, kOI | kCI | kIO)});
    EXPECT_EQ(aces_of(create(parent, kFile)),
              (std::vector<Ace>{Ace::allowed(wk::unix_group(100), kRead, kI)}));
    EXPECT_EQ(aces_of(create(parent, kDir)),
              (std::vector<Ace>{Ace::allowed(wk::unix_group(100), kRead, kOI | kCI | kI)}));
    // INHERIT_ONLY ACEs that do not reach this kind of child, or reach none, are not inherited.
    auto not_for_files = auto_parent_with({Ace::allowed(wk::everyone(), kRead, kCI | kIO),
                                           Ace::allowed(wk::unix_user(3), kRead, kIO)});
    EXPECT_FALSE(create(not_for_files, kFile).sd.dacl_present());
    EXPECT_EQ(aces_of(create(not_for_files, kDir)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), kRead, kCI | kI)}));
}

TEST(SdInherit, CreatorOwnerIsSplitOnADirectory) {
    const uint32_t all = am::kFileAllAccess;
    auto parent = auto_parent_with({Ace::allowed(wk::creator_owner(), all, kOI | kCI | kIO),
                                    Ace::allowed(wk::creator_group(), kRead, kCI)});
    EXPECT_EQ(aces_of(create(parent, kDir)),
              (std::vector<Ace>{
                  Ace::allowed(wk::unix_user(1001), all, kI),
                  Ace::allowed(wk::creator_owner(), all, kOI | kCI | kIO | kI),
                  Ace::allowed(wk::unix_group(1001), kRead, kI),
                  Ace::allowed(wk::creator_group(), kRead, kCI | kIO | kI),
              }));
    // With NO_PROPAGATE nothing is left to pass on: substitution only, no copy.
    auto np = auto_parent_with({Ace::allowed(wk::creator_owner(), all, kCI | kNP)});
    EXPECT_EQ(aces_of(create(np, kDir)),
              (std::vector<Ace>{Ace::allowed(wk::unix_user(1001), all, kI)}));
}

TEST(SdInherit, CreatorOwnerIsSubstitutedOnAFile) {
    auto parent =
        auto_parent_with({Ace::denied(wk::creator_group(), am::kFileWriteData, kOI),
                          Ace::allowed(wk::creator_owner(), am::kFileAllAccess, kOI | kIO)});
    EXPECT_EQ(aces_of(create(parent, kFile)),
              (std::vector<Ace>{Ace::denied(wk::unix_group(1001), am::kFileWriteData, kI),
                                Ace::allowed(wk::unix_user(1001), am::kFileAllAccess, kI)}));
    // The owner is the creator's when it names one.
    SecurityDescriptor creator;
    creator.owner = wk::unix_user(42);
    auto r = inherit_security_descriptor(&parent, &creator, alice(), kFile);
    EXPECT_EQ(aces_of(r).at(1), Ace::allowed(wk::unix_user(42), am::kFileAllAccess, kI));
    // The token's user and primary group now match the ACEs (CREATOR OWNER itself matches nobody).
    EXPECT_EQ(granted_access(create(parent, kFile).sd, alice()),
              am::kFileAllAccess & ~am::kFileWriteData);
}

TEST(SdInherit, GenericRightsAreMappedAndSplitOnADirectory) {
    const uint32_t generic = am::kGenericRead | am::kGenericExecute;
    const uint32_t mapped = am::kFileGenericRead | am::kFileGenericExecute;  // 0x1200A9
    auto parent = auto_parent_with({Ace::allowed(wk::authenticated_users(), generic, kOI | kCI)});
    EXPECT_EQ(aces_of(create(parent, kDir)),
              (std::vector<Ace>{
                  Ace::allowed(wk::authenticated_users(), mapped, kI),
                  Ace::allowed(wk::authenticated_users(), generic, kOI | kCI | kIO | kI),
              }));
    EXPECT_EQ(aces_of(create(parent, kFile)),
              (std::vector<Ace>{Ace::allowed(wk::authenticated_users(), mapped, kI)}));

    auto gw_ga = auto_parent_with({Ace::allowed(wk::everyone(), am::kGenericWrite, kOI),
                                   Ace::allowed(wk::unix_user(9), am::kGenericAll, kOI)});
    EXPECT_EQ(aces_of(create(gw_ga, kFile)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), 0x00120116, kI),
                                Ace::allowed(wk::unix_user(9), 0x001F01FF, kI)}));
    // Inherit-only on the directory: stays generic, no effective copy.
    EXPECT_EQ(aces_of(create(gw_ga, kDir)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), am::kGenericWrite, kOI | kIO | kI),
                                Ace::allowed(wk::unix_user(9), am::kGenericAll, kOI | kIO | kI)}));
}

TEST(SdInherit, ExplicitCreatorDaclWins) {
    auto parent =
        parent_with({Ace::allowed(wk::everyone(), kRead, kOI | kCI)}, sc::kDaclAutoInherited);
    SecurityDescriptor creator;
    creator.set_dacl(Acl{Acl::kRevision,
                         {Ace::allowed(wk::unix_user(1001), am::kFileAllAccess),
                          Ace::allowed(wk::unix_user(2), kRead, kI)}});
    auto r = inherit_security_descriptor(&parent, &creator, alice(), kFile);
    // Used as given (the ACE marked inherited included); nothing from the parent.
    EXPECT_EQ(aces_of(r), creator.dacl->aces);
    EXPECT_FALSE(r.sd.control & sc::kDaclAutoInherited);

    // A protected DACL is not merged even when auto-inheritance is requested; P is kept.
    creator.control |= sc::kDaclProtected | sc::kDaclComputedInheritanceRequired;
    r = inherit_security_descriptor(&parent, &creator, alice(), kFile);
    EXPECT_EQ(aces_of(r), creator.dacl->aces);
    EXPECT_TRUE(r.sd.control & sc::kDaclProtected);
    EXPECT_FALSE(r.sd.control & sc::kDaclComputedInheritanceRequired);

    // An explicit empty DACL stays empty; a NULL DACL stays NULL.
    SecurityDescriptor empty;
    empty.set_dacl(Acl{});
    r = inherit_security_descriptor(&parent, &empty, alice(), kDir);
    EXPECT_TRUE(aces_of(r).empty());
    SecurityDescriptor null_dacl;
    null_dacl.set_dacl(std::nullopt);
    null_dacl.control |= sc::kDaclComputedInheritanceRequired;
    r = inherit_security_descriptor(&parent, &null_dacl, alice(), kDir);
    EXPECT_TRUE(r.dacl_from_parent_or_creator);
    EXPECT_TRUE(r.sd.null_dacl());

    // A creator descriptor without a DACL (only an owner) leaves the DACL to the parent.
    SecurityDescriptor owner_only;
    owner_only.owner = wk::unix_user(1001);
    r = inherit_security_descriptor(&parent, &owner_only, alice(), kFile);
    EXPECT_EQ(aces_of(r), (std::vector<Ace>{Ace::allowed(wk::everyone(), kRead, kI)}));
}

TEST(SdInherit, ExplicitCreatorAcesGetCreatorSidsAndGenericRightsResolved) {
    SecurityDescriptor creator;
    creator.set_dacl(Acl{Acl::kRevision,
                         {Ace::allowed(wk::creator_owner(), am::kGenericAll, kOI | kCI),
                          Ace::allowed(wk::creator_group(), kRead, kIO | kOI),
                          Ace::allowed(wk::everyone(), am::kGenericRead)}});
    auto r = inherit_security_descriptor(nullptr, &creator, alice(), kDir);
    EXPECT_EQ(aces_of(r), (std::vector<Ace>{
                              Ace::allowed(wk::unix_user(1001), am::kFileAllAccess),
                              Ace::allowed(wk::creator_owner(), am::kGenericAll, kOI | kCI | kIO),
                              Ace::allowed(wk::creator_group(), kRead, kIO | kOI),
                              Ace::allowed(wk::everyone(), kRead),
                          }));
}

TEST(SdInherit, AutoInheritReqMergesParentAcesAfterTheExplicitOnes) {
    auto parent = parent_with({Ace::allowed(wk::everyone(), kRead, kOI | kCI),
                               Ace::allowed(wk::creator_owner(), am::kFileAllAccess, kOI | kIO)});
    SecurityDescriptor creator;
    creator.control |= sc::kDaclComputedInheritanceRequired;
    creator.set_dacl(Acl{Acl::kRevision,
                         {Ace::denied(wk::unix_user(5), am::kFileWriteData),
                          // Stale inherited ACE from wherever the client copied the file from.
                          Ace::allowed(wk::unix_user(6), am::kFileAllAccess, kI)}});
    auto r = inherit_security_descriptor(&parent, &creator, alice(), kFile);
    EXPECT_EQ(aces_of(r),
              (std::vector<Ace>{Ace::denied(wk::unix_user(5), am::kFileWriteData),
                                Ace::allowed(wk::everyone(), kRead, kI),
                                Ace::allowed(wk::unix_user(1001), am::kFileAllAccess, kI)}));
    EXPECT_TRUE(r.sd.control & sc::kDaclAutoInherited);
    EXPECT_FALSE(r.sd.control & sc::kDaclComputedInheritanceRequired);

    // The parent has nothing for this kind of child: the creator's DACL as given.
    auto dirs_only = parent_with({Ace::allowed(wk::everyone(), kRead, kCI)});
    r = inherit_security_descriptor(&dirs_only, &creator, alice(), kFile);
    EXPECT_EQ(aces_of(r), creator.dacl->aces);
    EXPECT_FALSE(r.sd.control & sc::kDaclAutoInherited);
}

TEST(SdInherit, NoInheritableAcesLeaveTheDaclToTheCaller) {
    for (bool kind : {kFile, kDir}) {
        SCOPED_TRACE(kind ? "directory" : "file");
        auto none = inherit_security_descriptor(nullptr, nullptr, alice(), kind);
        EXPECT_FALSE(none.dacl_from_parent_or_creator);
        EXPECT_FALSE(none.sd.dacl_present());
        EXPECT_FALSE(none.sd.dacl);
        EXPECT_EQ(none.sd.control, sc::kSelfRelative);

        // Explicit-only parent ACEs, an empty DACL, a NULL DACL, no DACL: nothing to inherit.
        auto explicit_only = parent_with({Ace::allowed(wk::everyone(), am::kFileAllAccess)});
        SecurityDescriptor null_dacl;
        null_dacl.set_dacl(std::nullopt);
        SecurityDescriptor no_dacl;
        for (const SecurityDescriptor* p : {&explicit_only, &null_dacl, &no_dacl}) {
            EXPECT_FALSE(has_inheritable_aces(*p, kind));
            auto r = inherit_security_descriptor(p, nullptr, alice(), kind);
            EXPECT_FALSE(r.dacl_from_parent_or_creator);
            EXPECT_FALSE(r.sd.dacl_present());
        }
        EXPECT_FALSE(has_inheritable_aces(parent_with({}), kind));
    }
}

TEST(SdInherit, ObjectAcesAreNotInherited) {
    Ace object_ace;
    object_ace.type = ace_type::kAccessAllowedObject;
    object_ace.flags = kOI | kCI;
    object_ace.mask = kRead;
    object_ace.trailer =
        ByteVector(4 + 16, std::byte{0x01});  // flags + an object type GUID, no SID parsed
    auto parent = auto_parent_with({object_ace, Ace::allowed(wk::everyone(), kRead, kOI)});
    EXPECT_EQ(aces_of(create(parent, kFile)),
              (std::vector<Ace>{Ace::allowed(wk::everyone(), kRead, kI)}));
    EXPECT_FALSE(has_inheritable_aces(auto_parent_with({object_ace}), kFile));
}

TEST(SdInherit, AutoInheritedFollowsTheParentAndTheResultSerializes) {
    auto plain = parent_with({Ace::allowed(wk::everyone(), kRead, kOI)});
    auto r = create(plain, kFile);
    EXPECT_EQ(r.sd.control, sc::kSelfRelative | sc::kDaclPresent);

    auto auto_inherited = parent_with({Ace::allowed(wk::everyone(), kRead, kOI)},
                                      sc::kDaclAutoInherited | sc::kDaclProtected);
    r = create(auto_inherited, kFile);
    // The parent's protection is its own, not the child's.
    EXPECT_EQ(r.sd.control, sc::kSelfRelative | sc::kDaclPresent | sc::kDaclAutoInherited);
    EXPECT_FALSE(r.sd.sacl_present());

    auto bytes = r.sd.serialize();
    ASSERT_TRUE(bytes.ok());
    auto back = SecurityDescriptor::parse(*bytes);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, r.sd);
}

TEST(SdInherit, InheritedAclOfGrandchildrenKeepsPropagating) {
    // Two generations: root -> dir -> file. CREATOR OWNER and generic rights reach the file
    // resolved to the file's owner, through the directory's inherit-only copies.
    auto root = parent_with({Ace::allowed(wk::creator_owner(), am::kGenericAll, kOI | kCI | kIO),
                             Ace::allowed(wk::everyone(), am::kGenericRead, kOI | kCI)});
    const Sid dir_owner = wk::unix_user(1001);
    const Sid file_owner = wk::unix_user(2002);
    Acl dir_acl = inherited_acl(*root.dacl, kDir, dir_owner, wk::unix_group(1));
    Acl file_acl = inherited_acl(dir_acl, kFile, file_owner, wk::unix_group(1));
    EXPECT_EQ(file_acl.aces, (std::vector<Ace>{Ace::allowed(file_owner, am::kFileAllAccess, kI),
                                               Ace::allowed(wk::everyone(), kRead, kI)}));
}

// MS-DTYP 2.5.3.4.4: INHERITED_ACE only under automatic inheritance (smbtorture
// smb2.acls.INHERITANCE sets a parent without SE_DACL_AUTO_INHERITED and expects plain flags).
TEST(SdInherit, InheritedAceFlagOnlyUnderAutomaticInheritance) {
    const Ace oi = Ace::allowed(wk::everyone(), kRead, kOI | kCI);
    auto plain = create(parent_with({oi}), false);
    ASSERT_EQ(aces_of(plain).size(), 1u);
    EXPECT_EQ(aces_of(plain)[0].flags, 0);
    auto automatic = create(auto_parent_with({oi}), false);
    ASSERT_EQ(aces_of(automatic).size(), 1u);
    EXPECT_EQ(aces_of(automatic)[0].flags, af::kInherited);
    auto dir = create(parent_with({oi}), true);
    ASSERT_EQ(aces_of(dir).size(), 1u);
    EXPECT_EQ(aces_of(dir)[0].flags, kOI | kCI);
}
