// The token of a remoted identity and who may send one (server/handlers/remoted_identity.h).
#include "server/handlers/remoted_identity.h"

#include <gtest/gtest.h>

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::server::handlers;

namespace {

Sid domain_sid(uint32_t rid) {
    return Sid::make(5, {21, 11, 22, 33, rid});
}

RemotedIdentityTreeConnectContext full_context() {
    RemotedIdentityTreeConnectContext c;
    c.user = SidAttr{domain_sid(1105), 0};
    c.groups = std::vector<SidAttr>{{domain_sid(513), se_group::kEnabled},
                                    {domain_sid(514), se_group::kMandatory},
                                    {domain_sid(515), se_group::kUseForDenyOnly},
                                    {domain_sid(516), 0}};  // disabled
    c.restricted_groups = std::vector<SidAttr>{{domain_sid(600), se_group::kEnabled}};
    c.primary_group = std::vector<SidAttr>{{domain_sid(513), 0}};
    c.owner = domain_sid(700);
    return c;
}

}  // namespace

TEST(RemotedIdentityToken, BuiltFromTheContext) {
    auto t = remoted_token(full_context());
    ASSERT_TRUE(t);
    EXPECT_EQ(t->user, domain_sid(1105));
    EXPECT_EQ(t->primary_group, domain_sid(513));
    EXPECT_EQ(t->groups, (std::vector<Sid>{domain_sid(513), domain_sid(514)}));
    EXPECT_EQ(t->deny_only_groups, std::vector<Sid>{domain_sid(515)});
    EXPECT_EQ(t->restricted_sids, std::vector<Sid>{domain_sid(600)});
    EXPECT_EQ(t->new_object_owner(), domain_sid(700));
    EXPECT_FALSE(t->contains(domain_sid(516)));
}

TEST(RemotedIdentityToken, DefaultsAndMissingUser) {
    RemotedIdentityTreeConnectContext c;
    c.user = SidAttr{domain_sid(1105), 0};
    auto t = remoted_token(c);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->primary_group, domain_sid(1105));  // no PrimaryGroup: the user
    EXPECT_EQ(t->new_object_owner(), domain_sid(1105));
    EXPECT_TRUE(t->groups.empty());
    c.user.reset();
    EXPECT_EQ(remoted_token(c).status(), NtStatus::InvalidParameter);
}

TEST(RemotedIdentityContexts, FoundOnceIgnoredOrRefused) {
    TreeConnectContextList none = {UnknownTreeConnectContext{7, ByteVector(2, std::byte{1})}};
    auto r = find_remoted_identity(none);
    ASSERT_TRUE(r);
    EXPECT_FALSE(*r);
    TreeConnectContextList one = {UnknownTreeConnectContext{7, {}}, full_context()};
    r = find_remoted_identity(one);
    ASSERT_TRUE(r);
    ASSERT_TRUE(*r);
    EXPECT_EQ((*r)->user->sid, domain_sid(1105));
    TreeConnectContextList two = {full_context(), full_context()};
    EXPECT_EQ(find_remoted_identity(two).status(), NtStatus::InvalidParameter);
    RemotedIdentityTreeConnectContext other;
    other.ticket_type = 2;  // MS-SMB2 3.3.5.7: ignored
    r = find_remoted_identity({other});
    ASSERT_TRUE(r);
    EXPECT_FALSE(*r);
}

TEST(RemotedIdentityPrincipals, CaseInsensitiveExactNames) {
    const std::vector<std::string> list = {"svc-web", "SVC-sql"};
    EXPECT_TRUE(listed_user(list, "SVC-WEB"));
    EXPECT_TRUE(listed_user(list, "svc-sql"));
    EXPECT_FALSE(listed_user(list, "svc"));
    EXPECT_FALSE(listed_user(list, "svc-web2"));
    EXPECT_FALSE(listed_user({}, "svc-web"));
}
