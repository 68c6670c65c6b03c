// DACL evaluation against a token (MS-DTYP 2.5.3.2), as auth/access_check.h reduces it.
#include <gtest/gtest.h>

#include "auth/access_check.h"
#include "protocol/access_mask.h"
#include "tests/unit/auth/test_tokens.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::auth;
namespace am = protocol::access_mask;
namespace wk = auth::well_known_sid;

namespace {

AccessToken alice() {
    return test::alice_token();
}

SecurityDescriptor with_dacl(std::vector<Ace> aces, const Sid& owner = wk::unix_user(0)) {
    SecurityDescriptor sd;
    sd.owner = owner;
    sd.group = wk::unix_group(0);
    sd.set_dacl(Acl{Acl::kRevision, std::move(aces)});
    return sd;
}

}  // namespace

TEST(AccessCheck, NoDaclAndNullDaclGrantEverything) {
    SecurityDescriptor none;
    EXPECT_EQ(granted_access(none, alice()), am::kFileAllAccess);
    SecurityDescriptor null_dacl;
    null_dacl.set_dacl(std::nullopt);
    EXPECT_EQ(granted_access(null_dacl, alice()), am::kFileAllAccess);
}

TEST(AccessCheck, EmptyDaclGrantsOnlyTheOwnersImplicitRights) {
    EXPECT_EQ(granted_access(with_dacl({}), alice()), 0u);
    EXPECT_EQ(granted_access(with_dacl({}, wk::unix_user(1001)), alice()),
              am::kReadControl | am::kWriteDac);
}

TEST(AccessCheck, FirstAceThatDecidesABitWins) {
    const uint32_t rw = am::kFileReadData | am::kFileWriteData;
    // Deny before allow: write denied, read allowed.
    auto deny_first = with_dacl(
        {Ace::denied(wk::everyone(), am::kFileWriteData), Ace::allowed(wk::unix_user(1001), rw)});
    EXPECT_EQ(granted_access(deny_first, alice()), am::kFileReadData);
    // Allow before deny: both allowed.
    auto allow_first = with_dacl(
        {Ace::allowed(wk::unix_user(1001), rw), Ace::denied(wk::everyone(), am::kFileWriteData)});
    EXPECT_EQ(granted_access(allow_first, alice()), rw);
    // ACEs for others do nothing.
    EXPECT_EQ(granted_access(with_dacl({Ace::allowed(wk::unix_user(7), rw)}), alice()), 0u);
    // Group membership counts.
    EXPECT_EQ(granted_access(with_dacl({Ace::allowed(wk::unix_group(1001), rw)}), alice()), rw);
}

TEST(AccessCheck, GenericBitsAreMappedAndInheritOnlyAcesSkipped) {
    auto sd = with_dacl({Ace::allowed(wk::everyone(), am::kFileAllAccess,
                                      ace_flags::kInheritOnly | ace_flags::kObjectInherit),
                         Ace::allowed(wk::authenticated_users(), am::kGenericRead)});
    EXPECT_EQ(granted_access(sd, alice()), am::kFileGenericRead);
}

TEST(AccessCheck, CreatorOwnerMatchesNobodyOnTheObject) {
    // smbtorture smb2.compound.related4: an ACE for CREATOR OWNER grants the owner nothing.
    auto sd = with_dacl({Ace::allowed(wk::creator_owner(), am::kFileGenericRead | 0x001F0000)},
                        wk::unix_user(1001));
    EXPECT_EQ(granted_access(sd, alice()), am::kReadControl | am::kWriteDac);
}

TEST(AccessCheck, OwnerRightsAceReplacesImplicitRights) {
    auto sd = with_dacl({Ace::allowed(wk::owner_rights(), am::kFileReadData)}, wk::unix_user(1001));
    EXPECT_EQ(granted_access(sd, alice()), am::kFileReadData);
    // Not the owner: the OWNER RIGHTS ACE does not apply.
    auto other = with_dacl({Ace::allowed(wk::owner_rights(), am::kFileReadData)});
    EXPECT_EQ(granted_access(other, alice()), 0u);
}

TEST(AccessCheck, CallbackAcesFailClosed) {
    Ace allow_cb = Ace::allowed(wk::everyone(), am::kFileAllAccess);
    allow_cb.type = ace_type::kAccessAllowedCallback;
    Ace deny_cb = Ace::denied(wk::everyone(), am::kFileWriteData);
    deny_cb.type = ace_type::kAccessDeniedCallback;
    EXPECT_EQ(granted_access(with_dacl({allow_cb}), alice()), 0u);
    EXPECT_EQ(
        granted_access(with_dacl({deny_cb, Ace::allowed(wk::everyone(), am::kFileGenericWrite)}),
                       alice()),
        am::kFileGenericWrite & ~am::kFileWriteData);
}

// SE_GROUP_USE_FOR_DENY_ONLY (MS-DTYP 2.5.3.2): the group matches deny ACEs only.
TEST(AccessCheck, DenyOnlyGroupsMatchDenyAcesOnly) {
    const uint32_t rw = am::kFileReadData | am::kFileWriteData;
    AccessToken t = alice();
    t.deny_only_groups.push_back(wk::unix_group(4242));
    EXPECT_EQ(granted_access(with_dacl({Ace::allowed(wk::unix_group(4242), rw)}), t), 0u);
    EXPECT_EQ(granted_access(with_dacl({Ace::denied(wk::unix_group(4242), am::kFileWriteData),
                                        Ace::allowed(wk::everyone(), rw)}),
                             t),
              am::kFileReadData);
}

// A restricted token gets only what its restricting SIDs are granted as well.
TEST(AccessCheck, RestrictedTokensNeedBothPasses) {
    const uint32_t rw = am::kFileReadData | am::kFileWriteData;
    AccessToken t = alice();
    t.restricted_sids.push_back(wk::unix_group(4343));
    auto sd = with_dacl(
        {Ace::allowed(wk::everyone(), rw), Ace::allowed(wk::unix_group(4343), am::kFileReadData)});
    EXPECT_EQ(granted_access(sd, t), am::kFileReadData);
    EXPECT_EQ(granted_access(with_dacl({Ace::allowed(wk::everyone(), rw)}), t), 0u);
    t.restricted_sids.clear();
    EXPECT_EQ(granted_access(with_dacl({Ace::allowed(wk::everyone(), rw)}), t), rw);
}
