// The GSS Kerberos mechanism's parts that need no KDC: token recognition, both OIDs, and the
// keytab check at start. Logons against a real KDC are in tests/interop/kerberos_test.sh.
#include "auth/gss_kerberos.h"

#include <gtest/gtest.h>

#include "tests/unit/auth/hex_util.h"

using daxsmbd::auth::test::unhex;

namespace daxsmbd::auth {
namespace {

// A GSS initial context token (RFC 2743 3.1) for `mech` around a few bytes of "AP-REQ".
ByteVector initial_token(const Oid& mech) {
    ByteVector body = mech.encode();
    const ByteVector inner = {std::byte{0x01}, std::byte{0x00}, std::byte{0x6e}, std::byte{0x00}};
    body.insert(body.end(), inner.begin(), inner.end());
    return der::tlv(der::kApplication0, bytes_of(body));
}

TEST(GssKerberos, AcceptsBothKerberosOids) {
    GssKerberosMechanism m(nullptr, nullptr);
    EXPECT_TRUE(m.accepts(oid::krb5()));
    EXPECT_TRUE(m.accepts(oid::ms_krb5()));
    EXPECT_FALSE(m.accepts(oid::ntlmssp()));
    EXPECT_FALSE(m.accepts(oid::krb5_user_to_user()));
    EXPECT_EQ(m.oid(), oid::krb5());
}

TEST(GssKerberos, RecognisesRawKerberosTokensOnly) {
    GssKerberosMechanism m(nullptr, nullptr);
    EXPECT_TRUE(m.accepts_raw(bytes_of(initial_token(oid::krb5()))));
    EXPECT_TRUE(m.accepts_raw(bytes_of(initial_token(oid::ms_krb5()))));
    // A SPNEGO initial token is for the acceptor, not for the mechanism.
    EXPECT_FALSE(m.accepts_raw(bytes_of(initial_token(oid::spnego()))));
    ByteVector ntlm = unhex("4e544c4d5353500001000000");
    EXPECT_FALSE(m.accepts_raw(bytes_of(ntlm)));
    EXPECT_FALSE(m.accepts_raw({}));
    ByteVector truncated = initial_token(oid::krb5());
    truncated.resize(5);
    EXPECT_FALSE(m.accepts_raw(bytes_of(truncated)));
}

TEST(GssKerberos, WithoutCredentialsEveryTokenFails) {
    GssKerberosMechanism m(nullptr, nullptr);
    auto r = m.step(bytes_of(initial_token(oid::krb5())));
    EXPECT_EQ(r.status(), NtStatus::InvalidParameter);
    EXPECT_FALSE(m.failure_reason().empty());
    EXPECT_TRUE(m.session_key().empty());
    EXPECT_TRUE(m.user_name().empty());
    EXPECT_TRUE(m.get_mic({}).empty());
}

TEST(GssKerberos, MissingKeytabIsRefusedAtStartWithItsName) {
    std::string why;
    auto c = KerberosCredentials::acquire("/nonexistent/daxsmbd-test.keytab", &why);
    EXPECT_EQ(c, nullptr);
    EXPECT_NE(why.find("/nonexistent/daxsmbd-test.keytab"), std::string::npos) << why;
}

}  // namespace
}  // namespace daxsmbd::auth
