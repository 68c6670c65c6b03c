// Principal -> local user mapping for Kerberos logons (auth/kerberos_user_map.h).
#include "auth/kerberos_user_map.h"

#include <gtest/gtest.h>

namespace daxsmbd::auth {
namespace {

KerberosUserMap parse_ok(std::string_view text, std::string realm = "EXAMPLE.COM") {
    auto r = KerberosUserMap::parse(text, "map", std::move(realm));
    if (auto* e = std::get_if<KerberosUserMap::ParseError>(&r)) {
        ADD_FAILURE() << e->message;
        return KerberosUserMap{};
    }
    return std::get<KerberosUserMap>(std::move(r));
}

std::string parse_err(std::string_view text) {
    auto r = KerberosUserMap::parse(text, "map", "EXAMPLE.COM");
    if (auto* e = std::get_if<KerberosUserMap::ParseError>(&r)) return e->message;
    ADD_FAILURE() << "no error for: " << text;
    return {};
}

TEST(KerberosUserMap, OwnRealmMapsToTheSameName) {
    KerberosUserMap m("EXAMPLE.COM");
    EXPECT_EQ(m.map("alice@EXAMPLE.COM"), "alice");
    EXPECT_EQ(m.map("Bob.Smith@EXAMPLE.COM"), "Bob.Smith");
}

TEST(KerberosUserMap, OtherRealmsAndMalformedNamesMapToNoOne) {
    KerberosUserMap m("EXAMPLE.COM");
    EXPECT_EQ(m.map("alice@OTHER.COM"), std::nullopt);
    EXPECT_EQ(m.map("alice@example.com"), std::nullopt);  // realms are case-sensitive
    EXPECT_EQ(m.map("alice@EXAMPLE.COM.EVIL"), std::nullopt);
    EXPECT_EQ(m.map("alice"), std::nullopt);
    EXPECT_EQ(m.map("@EXAMPLE.COM"), std::nullopt);
    EXPECT_EQ(m.map(""), std::nullopt);
}

TEST(KerberosUserMap, ServicePrincipalsAreNotUsers) {
    KerberosUserMap m("EXAMPLE.COM");
    EXPECT_EQ(m.map("host/files.example.com@EXAMPLE.COM"), std::nullopt);
    EXPECT_EQ(m.map("alice/admin@EXAMPLE.COM"), std::nullopt);
    // An escaped '@' inside the name is not the realm separator, and not a plain user name.
    EXPECT_EQ(m.map("a\\@b@EXAMPLE.COM"), std::nullopt);
}

TEST(KerberosUserMap, WithoutRealmOnlyExplicitEntriesMap) {
    KerberosUserMap m;
    EXPECT_EQ(m.map("alice@EXAMPLE.COM"), std::nullopt);
    m.add("alice@EXAMPLE.COM", "al");
    EXPECT_EQ(m.map("alice@EXAMPLE.COM"), "al");
}

TEST(KerberosUserMap, FileEntriesWinOverTheRealmRule) {
    KerberosUserMap m = parse_ok(
        "# comment\n"
        "; another\n"
        "\n"
        "root = admin/ops@EXAMPLE.COM\n"
        "  carol = carol@PARTNER.ORG, c.smith@PARTNER.ORG   \n"
        "ali = alice@EXAMPLE.COM\n");
    EXPECT_EQ(m.size(), 4u);
    EXPECT_EQ(m.map("admin/ops@EXAMPLE.COM"), "root");
    EXPECT_EQ(m.map("carol@PARTNER.ORG"), "carol");
    EXPECT_EQ(m.map("c.smith@PARTNER.ORG"), "carol");
    EXPECT_EQ(m.map("alice@EXAMPLE.COM"), "ali");  // explicit beats the default rule
    EXPECT_EQ(m.map("bob@EXAMPLE.COM"), "bob");    // the default rule still applies
    EXPECT_EQ(m.map("dave@PARTNER.ORG"), std::nullopt);
}

TEST(KerberosUserMap, LaterLinesReplaceEarlierOnes) {
    KerberosUserMap m = parse_ok("a = x@R\nb = x@R\n");
    EXPECT_EQ(m.map("x@R"), "b");
}

TEST(KerberosUserMap, ErrorsNameFileAndLine) {
    EXPECT_EQ(parse_err("\nalice alice@EXAMPLE.COM\n"),
              "map:2: expected 'localuser = principal ...'");
    EXPECT_EQ(parse_err("= alice@EXAMPLE.COM\n"), "map:1: missing local user name before '='");
    EXPECT_EQ(parse_err("alice =\n"), "map:1: no principal after '='");
    EXPECT_EQ(parse_err("alice = alice\n"), "map:1: 'alice' is not a principal name@REALM");
    EXPECT_EQ(parse_err("alice = alice@\n"), "map:1: 'alice@' is not a principal name@REALM");
    EXPECT_EQ(parse_err("a@b = alice@R\n"), "map:1: 'a@b' is not a local user name");
}

}  // namespace
}  // namespace daxsmbd::auth
