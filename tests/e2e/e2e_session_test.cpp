// End-to-end: daxsmbd's own client (tests/client) against the real server in-process: dialect
// negotiation, NTLMv2 session setup, signing with every algorithm, credits and the sequence
// window (MS-SMB2 3.3.5.2.3, 3.3.5.3, 3.3.5.4, 3.3.5.5, 3.1.4.1).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "protocol/access_mask.h"
#include "protocol/session_setup.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
using namespace std::chrono_literals;

NegotiateOptions only(uint16_t d) {
    NegotiateOptions n;
    n.dialects = {d};
    return n;
}

constexpr uint32_t kRw =
    access_mask::kFileGenericRead | access_mask::kFileGenericWrite | access_mask::kDelete;

// One server per suite: starting it is cheap, but there is no reason to do it per test.
class E2eSession : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { server_ = new TestServer(); }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->error(); }

    static std::unique_ptr<Smb2Client> connect(ClientOptions o = {}) {
        auto c = std::make_unique<Smb2Client>(o);
        auto st = c->connect("127.0.0.1", server_->port());
        EXPECT_TRUE(st) << status_name(st.status());
        return c;
    }

    static TestServer* server_;
};
TestServer* E2eSession::server_ = nullptr;

// ---- negotiate ---------------------------------------------------------------------------------

class E2eDialect : public E2eSession, public ::testing::WithParamInterface<uint16_t> {};

TEST_P(E2eDialect, NegotiatesTheOfferedDialect) {
    auto c = connect();
    auto r = c->negotiate(only(GetParam()));
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_EQ(r.body.dialect_revision, GetParam());
    EXPECT_EQ(uint16_t(c->dialect()), GetParam());
    EXPECT_TRUE(r.body.security_mode & security_mode::kSigningEnabled);
    EXPECT_GE(r.body.max_read_size, 65536u);
    // MS-SMB2 3.3.5.4: LARGE_MTU (multi-credit) only from 2.1 on.
    bool large_mtu = r.body.capabilities & global_caps::kLargeMtu;
    EXPECT_EQ(large_mtu, GetParam() != dialect::k202);
    if (GetParam() == dialect::k311) {
        // MS-SMB2 2.2.4: a 3.1.1 response carries exactly one PREAUTH context, SHA-512.
        auto* pre = find_negotiate_context<PreauthIntegrityCapabilities>(r.body.contexts);
        ASSERT_NE(pre, nullptr);
        ASSERT_EQ(pre->hash_algorithms.size(), 1u);
        EXPECT_EQ(pre->hash_algorithms[0], hash_algorithm::kSha512);
    } else {
        EXPECT_TRUE(r.body.contexts.empty());
    }
}

TEST_P(E2eDialect, SessionSetupAndTreeConnect) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(only(GetParam())), NtStatus::Success);
    auto s = c->session_setup("alice", "pw");
    ASSERT_STATUS(s, NtStatus::Success);
    EXPECT_NE(c->session_id(), 0u);
    EXPECT_FALSE(s.body.session_flags & (session_flags::kIsGuest | session_flags::kIsNull));
    // MS-SMB2 3.3.5.5.3: the final SESSION_SETUP response of 3.1.1 MUST be signed (the client
    // refuses an unsigned one), and our client verified it with the derived key.
    if (GetParam() == dialect::k311) {
        EXPECT_TRUE(s.signature_verified);
    }
    auto t = c->tree_connect("data");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_NE(c->tree_id(), 0u);
    EXPECT_EQ(t.body.share_type, share_type::kDisk);
    EXPECT_STATUS(c->tree_disconnect(), NtStatus::Success);
    EXPECT_STATUS(c->logoff(), NtStatus::Success);
}

INSTANTIATE_TEST_SUITE_P(AllDialects, E2eDialect,
                         ::testing::Values(dialect::k202, dialect::k210, dialect::k300,
                                           dialect::k302, dialect::k311),
                         [](const ::testing::TestParamInfo<uint16_t>& i) {
                             char buf[16];
                             std::snprintf(buf, sizeof buf, "d%04x", unsigned(i.param));
                             return std::string(buf);
                         });

TEST_F(E2eSession, FixtureServesShareData) {
    // The in-process server has the share the fixture configured (lookup is case-insensitive).
    auto share = server_->server().find_share("DATA");
    ASSERT_NE(share, nullptr);
    EXPECT_EQ(share->config.path, server_->share_dir());
    EXPECT_NE(server_->port(), 0);
}

TEST_F(E2eSession, HighestCommonDialectIsChosen) {
    auto c = connect();
    auto r = c->negotiate();
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_EQ(r.body.dialect_revision, dialect::k311);
    auto c2 = connect();
    NegotiateOptions n;
    n.dialects = {dialect::k202, dialect::k300, dialect::k210};
    auto r2 = c2->negotiate(n);
    ASSERT_STATUS(r2, NtStatus::Success);
    EXPECT_EQ(r2.body.dialect_revision, dialect::k300);
}

TEST_F(E2eSession, NoCommonDialectIsNotSupported) {
    auto c = connect();
    auto r = c->negotiate(only(0x0222));  // a pre-release dialect nobody speaks
    EXPECT_STATUS(r, NtStatus::NotSupported);
}

TEST_F(E2eSession, DialectCountZeroIsInvalidParameter) {
    auto c = connect();
    auto r = c->call(Command::Negotiate, NegotiateRequest{});
    EXPECT_STATUS(r, NtStatus::InvalidParameter);
}

TEST_F(E2eSession, SecondNegotiateDisconnects) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    NegotiateRequest again;
    again.dialects = {dialect::k210};
    ASSERT_TRUE(c->send_frame(c->build(Command::Negotiate, again)));
    EXPECT_EQ(c->wait_closed(5s), Smb2Client::PeerState::Closed);
}

// MS-SMB2 3.3.5.4: the 3.1.1 context rules.
TEST_F(E2eSession, Negotiate311WithoutPreauthContextIsInvalidParameter) {
    auto c = connect();
    NegotiateRequest req;
    req.dialects = {dialect::k311};
    req.contexts.push_back(SigningCapabilities{{signing_algorithm::kAesCmac}});
    EXPECT_STATUS(c->call(Command::Negotiate, req), NtStatus::InvalidParameter);
}

TEST_F(E2eSession, Negotiate311WithTwoSigningContextsIsInvalidParameter) {
    auto c = connect();
    NegotiateOptions n = only(dialect::k311);
    n.extra_contexts.push_back(SigningCapabilities{{signing_algorithm::kAesCmac}});
    EXPECT_STATUS(c->negotiate(n), NtStatus::InvalidParameter);
}

TEST_F(E2eSession, Negotiate311WithUnknownHashIsNoOverlap) {
    auto c = connect();
    NegotiateRequest req;
    req.dialects = {dialect::k311};
    PreauthIntegrityCapabilities pre;
    pre.hash_algorithms = {0x0002};  // not SHA-512
    pre.salt.assign(32, std::byte{1});
    req.contexts.push_back(pre);
    EXPECT_STATUS(c->call(Command::Negotiate, req), NtStatus::NoPreauthIntegrityHashOverlap);
}

TEST_F(E2eSession, Negotiate311AnswersTheEncryptionContext) {
    auto c = connect();
    NegotiateOptions n = only(dialect::k311);
    n.ciphers = {cipher::kAes128Gcm, cipher::kAes128Ccm};
    auto r = c->negotiate(n);
    ASSERT_STATUS(r, NtStatus::Success);
    // MS-SMB2 3.3.5.4: an ENCRYPTION_CAPABILITIES request context is always answered, with one
    // cipher (0 when there is no common one).
    auto* ec = find_negotiate_context<EncryptionCapabilities>(r.body.contexts);
    ASSERT_NE(ec, nullptr);
    EXPECT_EQ(ec->ciphers.size(), 1u);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
}

TEST_F(E2eSession, SignedNegotiateIsInvalidParameter) {
    auto c = connect();
    NegotiateRequest req;
    req.dialects = {dialect::k210};
    CallOptions co;
    co.extra_flags = flags::kSigned;  // MS-SMB2 3.3.5.3.1
    EXPECT_STATUS(c->call(Command::Negotiate, req, co), NtStatus::InvalidParameter);
}

// ---- session setup -----------------------------------------------------------------------------

TEST_F(E2eSession, WrongPasswordThenRetrySucceeds) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    auto bad = c->session_setup("alice", "not-the-password");
    EXPECT_STATUS(bad, NtStatus::LogonFailure);
    EXPECT_FALSE(c->session_valid());
    auto good = c->session_setup("alice", "pw");
    ASSERT_STATUS(good, NtStatus::Success);
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
}

TEST_F(E2eSession, UnknownUserIsLogonFailure) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    EXPECT_STATUS(c->session_setup("mallory", "pw"), NtStatus::LogonFailure);
}

TEST_F(E2eSession, UserNameIsCaseInsensitive) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    EXPECT_STATUS(c->session_setup("ALICE", "pw"), NtStatus::Success);
}

TEST_F(E2eSession, UnknownShareIsBadNetworkName) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    EXPECT_STATUS(c->tree_connect("nosuchshare"), NtStatus::BadNetworkName);
    // The session stays usable.
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
}

TEST_F(E2eSession, IpcShareIsAPipeShare) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    auto t = c->tree_connect("IPC$");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_EQ(t.body.share_type, share_type::kPipe);
}

TEST_F(E2eSession, RequestWithoutSessionIsRefused) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    // MS-SMB2 3.3.5.2.9: an unknown SessionId is STATUS_USER_SESSION_DELETED.
    c->set_session_id(0x1234567);
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::UserSessionDeleted);
}

TEST_F(E2eSession, Unsigned311TreeConnectDisconnects) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(only(dialect::k311)), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    TreeConnectRequest req;
    req.path = "\\\\127.0.0.1\\data";
    CallOptions co;
    co.sign = false;
    ASSERT_TRUE(c->send_frame(c->build(Command::TreeConnect, req, co)));
    // MS-SMB2 3.3.5.7: neither signed nor encrypted on 3.1.1 -> disconnect.
    EXPECT_EQ(c->wait_closed(5s), Smb2Client::PeerState::Closed);
}

TEST_F(E2eSession, EchoWorksBeforeAndAfterLogin) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
}

TEST_F(E2eSession, LogoffEndsTheSession) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    uint64_t sid = c->session_id();
    ASSERT_STATUS(c->logoff(), NtStatus::Success);
    c->set_session_id(sid);
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::UserSessionDeleted);
}

// ---- signing -----------------------------------------------------------------------------------

struct SigningCase {
    const char* name;
    uint16_t dialect;
    std::vector<uint16_t> algorithms;  // SIGNING_CAPABILITIES (3.1.1 only)
    auth::SigningAlgorithm expect;
};

void PrintTo(const SigningCase& c, std::ostream* os) {
    *os << c.name;
}

class E2eSigning : public E2eSession, public ::testing::WithParamInterface<SigningCase> {};

// The client asks for signing (SecurityMode REQUIRED), so every request is signed and every
// response must come back signed with the negotiated algorithm and verify.
TEST_P(E2eSigning, SignedSessionRoundTrip) {
    const auto& p = GetParam();
    auto c = connect();
    NegotiateOptions n = only(p.dialect);
    n.signing_required = true;
    n.signing_algorithms = p.algorithms;
    ASSERT_STATUS(c->negotiate(n), NtStatus::Success);
    ASSERT_TRUE(c->signing_algorithm().has_value());
    EXPECT_EQ(*c->signing_algorithm(), p.expect);
    auto s = c->session_setup("alice", "pw");
    ASSERT_STATUS(s, NtStatus::Success);
    EXPECT_TRUE(c->signing_required());
    EXPECT_TRUE(s.signature_verified) << "the final SESSION_SETUP response was not signed";

    auto t = c->tree_connect("data");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.signature_verified);
    std::string name = std::string("signed-") + p.name + ".txt";
    auto cr = c->open(name, kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    EXPECT_TRUE(cr.signature_verified);
    const std::string text = "signed data for " + name;
    auto w = c->write(cr.body.file_id, 0, as_bytes(text));
    ASSERT_STATUS(w, NtStatus::Success);
    EXPECT_TRUE(w.signature_verified);
    auto r = c->read(cr.body.file_id, 0, 4096);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_TRUE(r.signature_verified);  // covers the READ data fragment too
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.body.data.data()), r.body.data.size()),
              text);
    // An error response is signed as well (MS-SMB2 3.3.4.1.1).
    auto missing = c->open("no-such-file", kRw, create_disposition::kOpen);
    EXPECT_STATUS(missing, NtStatus::ObjectNameNotFound);
    EXPECT_TRUE(missing.signature_verified);
    auto cl = c->close(cr.body.file_id);
    EXPECT_STATUS(cl, NtStatus::Success);
    EXPECT_TRUE(cl.signature_verified);
    auto e = c->echo();
    EXPECT_STATUS(e, NtStatus::Success);
}

// A signed request whose bytes were changed after signing: STATUS_ACCESS_DENIED (MS-SMB2
// 3.3.5.2.4), and the connection stays usable.
TEST_P(E2eSigning, TamperedRequestIsAccessDenied) {
    const auto& p = GetParam();
    auto c = connect();
    NegotiateOptions n = only(p.dialect);
    n.signing_required = true;
    n.signing_algorithms = p.algorithms;
    ASSERT_STATUS(c->negotiate(n), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);
    CreateRequest req;
    req.name = "tampered.txt";
    req.desired_access = kRw;
    req.share_access = share_access::kAll;
    req.create_disposition = create_disposition::kOverwriteIf;
    uint64_t mid = 0;
    auto msg = c->build(Command::Create, req, {}, &mid);
    ASSERT_TRUE(load_le32(msg.data() + kFlagsOffset) & flags::kSigned);
    msg.back() ^= std::byte{0x01};  // one bit of the name
    ASSERT_TRUE(c->send_frame(msg));
    auto r = c->wait_reply(mid);
    EXPECT_STATUS(r, NtStatus::AccessDenied);
    EXPECT_STATUS(c->echo(), NtStatus::Success);
    // A request that was signed with a zeroed-out signature fails the same way.
    auto msg2 = c->build(Command::Create, req, {}, &mid);
    std::memset(msg2.data() + kSignatureOffset, 0, 16);
    ASSERT_TRUE(c->send_frame(msg2));
    EXPECT_STATUS(c->wait_reply(mid), NtStatus::AccessDenied);
    // An unsigned request on a session that requires signing (MS-SMB2 3.3.5.2.4).
    CallOptions unsigned_call;
    unsigned_call.sign = false;
    EXPECT_STATUS(c->create(req, unsigned_call), NtStatus::AccessDenied);
    // And the session still works when signed properly.
    auto ok = c->create(req);
    ASSERT_STATUS(ok, NtStatus::Success);
    EXPECT_STATUS(c->close(ok.body.file_id), NtStatus::Success);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, E2eSigning,
    ::testing::Values(
        SigningCase{"HmacSha256_2_1", dialect::k210, {}, auth::SigningAlgorithm::HmacSha256},
        SigningCase{"HmacSha256_2_0_2", dialect::k202, {}, auth::SigningAlgorithm::HmacSha256},
        SigningCase{"Cmac_3_0", dialect::k300, {}, auth::SigningAlgorithm::AesCmac},
        SigningCase{"Cmac_3_0_2", dialect::k302, {}, auth::SigningAlgorithm::AesCmac},
        SigningCase{"Gmac_3_1_1",
                    dialect::k311,
                    {signing_algorithm::kAesGmac},
                    auth::SigningAlgorithm::AesGmac},
        SigningCase{"Cmac_3_1_1",
                    dialect::k311,
                    {signing_algorithm::kAesCmac},
                    auth::SigningAlgorithm::AesCmac},
        SigningCase{"Hmac_3_1_1",
                    dialect::k311,
                    {signing_algorithm::kHmacSha256},
                    auth::SigningAlgorithm::HmacSha256},
        SigningCase{"NoContext_3_1_1", dialect::k311, {}, auth::SigningAlgorithm::AesCmac}),
    [](const ::testing::TestParamInfo<SigningCase>& i) { return std::string(i.param.name); });

TEST_F(E2eSession, ServerPrefersGmacWhenOffered) {
    auto c = connect();
    NegotiateOptions n = only(dialect::k311);
    n.signing_algorithms = {signing_algorithm::kAesCmac, signing_algorithm::kAesGmac};
    auto r = c->negotiate(n);
    ASSERT_STATUS(r, NtStatus::Success);
    auto* sc = find_negotiate_context<SigningCapabilities>(r.body.contexts);
    ASSERT_NE(sc, nullptr);
    ASSERT_EQ(sc->algorithms.size(), 1u);  // MS-SMB2 2.2.4.1.7: exactly one in the response
    EXPECT_EQ(sc->algorithms[0], signing_algorithm::kAesGmac);
}

// Signing not required by anyone: a 3.1.1 session still signs TREE_CONNECT, and a response to a
// signed request is signed (MS-SMB2 3.3.4.1.1).
TEST_F(E2eSession, SignedRequestGetsSignedResponseWithoutRequirement) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    EXPECT_FALSE(c->signing_required());
    auto t = c->tree_connect("data");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.signature_verified);
    c->options().force_sign = true;
    auto e = c->echo();
    EXPECT_STATUS(e, NtStatus::Success);
    EXPECT_TRUE(e.signature_verified);
}

class E2eMandatorySigning : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        TestServer::Options o;
        o.configure = [](server::Config& c) {
            c.global.signing = server::SigningPolicy::Mandatory;
        };
        server_ = new TestServer(o);
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    static TestServer* server_;
};
TestServer* E2eMandatorySigning::server_ = nullptr;

TEST_F(E2eMandatorySigning, ServerRequiresSigning) {
    ASSERT_TRUE(server_->ok()) << server_->error();
    Smb2Client c;
    ASSERT_TRUE(c.connect("127.0.0.1", server_->port()));
    auto n = c.negotiate(only(dialect::k300));
    ASSERT_STATUS(n, NtStatus::Success);
    EXPECT_TRUE(n.body.security_mode & security_mode::kSigningRequired);
    ASSERT_STATUS(c.session_setup("alice", "pw"), NtStatus::Success);
    EXPECT_TRUE(c.signing_required());
    auto t = c.tree_connect("data");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.signature_verified);
    TreeConnectRequest req;
    req.path = "\\\\127.0.0.1\\data";
    CallOptions co;
    co.sign = false;
    c.options().verify_signatures = false;  // look at the status whatever the signature
    EXPECT_STATUS(c.call(Command::TreeConnect, req, co), NtStatus::AccessDenied);
}

// MS-SMB2 3.3.5.2.4 on 3.1.1: with "server signing = mandatory" an unsigned request after the
// session setup (here a CREATE on a connected tree) is refused with STATUS_ACCESS_DENIED.
TEST_F(E2eMandatorySigning, UnsignedRequestAfterSessionSetupIsAccessDenied) {
    ASSERT_TRUE(server_->ok()) << server_->error();
    Smb2Client c;
    ASSERT_TRUE(c.connect("127.0.0.1", server_->port()));
    ASSERT_STATUS(c.negotiate(only(dialect::k311)), NtStatus::Success);
    ASSERT_STATUS(c.session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(c.tree_connect("data"), NtStatus::Success);
    CreateRequest req;
    req.name = "unsigned.txt";
    req.desired_access = access_mask::kFileGenericRead;
    req.share_access = share_access::kAll;
    req.create_disposition = create_disposition::kOpenIf;
    CallOptions co;
    co.sign = false;
    c.options().verify_signatures = false;
    EXPECT_STATUS(c.create(req, co), NtStatus::AccessDenied);
    // Signed, the same request works.
    c.options().verify_signatures = true;
    auto ok = c.create(req);
    ASSERT_STATUS(ok, NtStatus::Success);
    EXPECT_TRUE(ok.signature_verified);
}

// ---- credits and the sequence window -----------------------------------------------------------

TEST_F(E2eSession, CreditsGrantedGrow) {
    ClientOptions o;
    o.credit_target = 4;
    auto c = connect(o);
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    uint64_t before = c->credits();
    EXPECT_GE(before, 1u);
    EXPECT_LE(before, 8u);
    c->options().credit_target = 300;
    uint64_t granted_before = c->total_granted();
    for (int i = 0; i < 4; ++i)
        ASSERT_STATUS(c->echo(), NtStatus::Success);
    // MS-SMB2 3.3.1.2: the server SHOULD grant what is asked (up to its limit, 8192 here).
    EXPECT_GE(c->credits(), 250u);
    EXPECT_GT(c->total_granted(), granted_before + 250);
    EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
}

TEST_F(E2eSession, MessageIdOutsideWindowDisconnects) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    CallOptions co;
    co.message_id = c->next_message_id() + c->credits() + 100;
    ASSERT_TRUE(c->send_frame(c->build(Command::Echo, EchoRequest{}, co)));
    EXPECT_EQ(c->wait_closed(5s), Smb2Client::PeerState::Closed);
}

TEST_F(E2eSession, ReusedMessageIdDisconnects) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_STATUS(c->echo(), NtStatus::Success);
    CallOptions co;
    co.message_id = c->next_message_id() - 1;  // the ECHO's id, used already
    ASSERT_TRUE(c->send_frame(c->build(Command::Echo, EchoRequest{}, co)));
    EXPECT_EQ(c->wait_closed(5s), Smb2Client::PeerState::Closed);
}

TEST_F(E2eSession, MessageIdsMayArriveOutOfOrder) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_GE(c->credits(), 3u);
    uint64_t first = c->next_message_id();
    // Build two ECHOs, send the second id first (MS-SMB2 3.3.1.1: any order within the window).
    uint64_t m1 = 0, m2 = 0;
    auto a = c->build(Command::Echo, EchoRequest{}, {}, &m1);
    auto b = c->build(Command::Echo, EchoRequest{}, {}, &m2);
    EXPECT_EQ(m1, first);
    ASSERT_TRUE(c->send_frame(b));
    ASSERT_TRUE(c->send_frame(a));
    EXPECT_STATUS(c->wait_reply(m1), NtStatus::Success);
    EXPECT_STATUS(c->wait_reply(m2), NtStatus::Success);
}

TEST_F(E2eSession, LargeReadWithChargeZeroIsInvalidParameter) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(only(dialect::k300)), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);
    auto cr = c->open("charge0.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ReadRequest rd;
    rd.file_id = cr.body.file_id;
    rd.length = 128 * 1024;
    CallOptions co;
    co.credit_charge = 0;  // MS-SMB2 3.3.5.2.5: 0 with a payload above 64 KiB
    EXPECT_STATUS(c->call(Command::Read, rd, co), NtStatus::InvalidParameter);
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
}

TEST_F(E2eSession, ChargeBeyondTheWindowDisconnects) {
    ClientOptions o;
    o.credit_target = 8;
    auto c = connect(o);
    ASSERT_STATUS(c->negotiate(only(dialect::k300)), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_LT(c->credits(), 32u);
    // An ECHO charged 64 credits when the client holds fewer (MS-SMB2 3.3.5.2.3).
    CallOptions co;
    co.credit_charge = 64;
    co.message_id = c->next_message_id();
    ASSERT_TRUE(c->send_frame(c->build(Command::Echo, EchoRequest{}, co)));
    EXPECT_EQ(c->wait_closed(5s), Smb2Client::PeerState::Closed);
}

TEST_F(E2eSession, LargeReadWithoutEnoughChargeIsInvalidParameter) {
    auto c = connect();
    ASSERT_STATUS(c->negotiate(only(dialect::k311)), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);
    auto cr = c->open("charge.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ReadRequest rd;
    rd.file_id = cr.body.file_id;
    rd.length = 256 * 1024;
    CallOptions co;
    co.credit_charge = 1;  // needs 4 (MS-SMB2 3.3.5.2.5)
    EXPECT_STATUS(c->call(Command::Read, rd, co), NtStatus::InvalidParameter);
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
}

// ---- SESSION_SETUP naming another connection's session ---------------------------------------

// A SESSION_SETUP for session `sid`, built and signed (or not) by `owner` (which holds the
// session's key) with MessageId `mid` of the connection it will be sent on.
ByteVector foreign_session_setup(Smb2Client& owner, uint64_t sid, uint64_t mid, bool binding,
                                 bool sign) {
    SessionSetupRequest req;
    req.flags = binding ? session_setup_flags::kBinding : 0;
    req.security_mode = security_mode::kSigningEnabled;
    static const std::byte token[] = {std::byte{0x60}, std::byte{0x00}};  // never read
    req.security_buffer = Bytes(token);
    CallOptions co;
    co.message_id = mid;
    co.session_id = sid;
    co.sign = sign;
    return owner.build(Command::SessionSetup, req, co);
}

// Binding (MS-SMB2 3.3.5.5.2): the checks Windows makes before the authentication, every
// answer signed with the session's key so that the client can trust the status (smbtorture
// smb2.session.bind_negative_*). Successful bindings: e2e_multichannel_test.cpp.
TEST_F(E2eSession, BindingIsRefusedWithSignedStatuses) {
    auto owner = connect();
    ASSERT_STATUS(owner->negotiate(only(dialect::k311)), NtStatus::Success);
    ASSERT_STATUS(owner->session_setup("alice", "pw"), NtStatus::Success);
    const uint64_t sid = owner->session_id();

    auto second = connect();
    ASSERT_STATUS(second->negotiate(only(dialect::k311)), NtStatus::Success);
    ASSERT_TRUE(second->send_frame(foreign_session_setup(*owner, sid, 1, true, true)));
    auto r = second->wait_reply(1);
    // Every check passes: the authentication starts, and its token is malformed.
    EXPECT_STATUS(r, NtStatus::InvalidParameter);
    EXPECT_TRUE(r.header.flags & flags::kSigned);
    // Unsigned: INVALID_PARAMETER, and unsigned since the request proved nothing.
    ASSERT_TRUE(second->send_frame(foreign_session_setup(*owner, sid, 2, true, false)));
    r = second->wait_reply(2);
    EXPECT_STATUS(r, NtStatus::InvalidParameter);
    EXPECT_FALSE(r.header.flags & flags::kSigned);
    // Without the binding flag the session is not this connection's: USER_SESSION_DELETED,
    // signed.
    ASSERT_TRUE(second->send_frame(foreign_session_setup(*owner, sid, 3, false, true)));
    r = second->wait_reply(3);
    EXPECT_STATUS(r, NtStatus::UserSessionDeleted);
    EXPECT_TRUE(r.header.flags & flags::kSigned);

    // A 2.1 connection cannot bind at all; with a GMAC session the signing algorithm differs
    // first (REQUEST_OUT_OF_SEQUENCE), as on Windows.
    auto old = connect();
    ASSERT_STATUS(old->negotiate(only(dialect::k210)), NtStatus::Success);
    ASSERT_TRUE(old->send_frame(foreign_session_setup(*owner, sid, 1, true, true)));
    r = old->wait_reply(1);
    EXPECT_STATUS(r, owner->signing_algorithm() == auth::SigningAlgorithm::AesGmac
                         ? NtStatus::RequestOutOfSequence
                         : NtStatus::RequestNotAccepted);
    EXPECT_TRUE(r.header.flags & flags::kSigned);

    // The session goes on working on its own connection.
    EXPECT_STATUS(owner->tree_connect("data"), NtStatus::Success);
}

}  // namespace
}  // namespace daxsmbd::client
