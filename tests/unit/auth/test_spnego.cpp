#include <gtest/gtest.h>

#include <cstring>

#include "auth/spnego.h"
#include "auth/userdb.h"
#include "tests/unit/auth/hex_util.h"

namespace daxsmbd::auth {
namespace {

using test::hex;
using test::unhex;
using test::view;

// ---- DER -----------------------------------------------------------------------------------

TEST(Der, LengthForms) {
    auto short_form = unhex("0403aabbcc");
    auto t = der::read_tlv(view(short_form));
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->tag, 0x04);
    EXPECT_EQ(hex(t->value), "aabbcc");
    EXPECT_EQ(t->encoding.size(), 5u);

    ByteVector long_form = unhex("04820100");
    long_form.resize(4 + 256, std::byte{7});
    t = der::read_tlv(view(long_form));
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->value.size(), 256u);

    ByteVector enc;
    der::append_tlv(enc, 0x04, t->value);
    EXPECT_EQ(enc, long_form);
    ByteVector small;
    der::append_length(small, 0x7f);
    der::append_length(small, 0x80);
    der::append_length(small, 0x10000);
    EXPECT_EQ(hex(small),
              "7f8180830100"
              "00");
}

TEST(Der, MalformedRefused) {
    const char* bad[] = {
        "",                    // empty
        "04",                  // no length
        "0480",                // indefinite length
        "048500000000010000",  // 5 length bytes
        "0403aabb",            // truncated contents
        "048201",              // truncated length
        "1f0100",              // multi-byte tag
    };
    for (const char* b : bad) {
        auto v = unhex(b);
        EXPECT_EQ(der::read_tlv(view(v)).status(), NtStatus::InvalidParameter) << b;
    }
}

TEST(Oid, DottedForm) {
    EXPECT_EQ(oid::spnego().to_string(), "1.3.6.1.5.5.2");
    EXPECT_EQ(oid::krb5().to_string(), "1.2.840.113554.1.2.2");
    EXPECT_EQ(oid::ms_krb5().to_string(), "1.2.840.48018.1.2.2");
    EXPECT_EQ(oid::ntlmssp().to_string(), "1.3.6.1.4.1.311.2.2.10");
    EXPECT_EQ(oid::negoex().to_string(), "1.3.6.1.4.1.311.2.2.30");
    EXPECT_EQ(hex(oid::krb5_user_to_user().encode()), "060a2a864886f71201020203");
}

// ---- tokens from a Windows exchange --------------------------------------------------------
// The SESSION_SETUP security buffers of the 3.1.1 example in Microsoft's "anatomy of signing
// and cryptographic keys" blog (Windows 10 client and server, NTLM).

constexpr const char* kWinInit =
    "604806062B0601050502A03E303CA00E300C060A2B06010401823702020AA22A04284E544C4D535350000100"
    "0000978208E200000000000000000000000000000000060380250000000F";
constexpr const char* kWinChallengeResp =
    "A181B03081ADA0030A0101A10C060A2B06010401823702020AA281970481944E544C4D53535000020000000C"
    "000C003800000015828AE20D1D8BA31179D008000000000000000050005000440000000A0092270000000F53"
    "005500540033003100310002000C0053005500540033003100310001000C0053005500540033003100310004"
    "000C0053005500540033003100310003000C0053005500540033003100310007000800A1A1F5ADCBAED00100"
    "000000";
constexpr const char* kWinFinalResp = "A11B3019A0030A0100A3120410010000003B453CDC3524164200000000";

TEST(SpnegoTokens, ParsesWindowsNegTokenInit) {
    auto tok = unhex(kWinInit);
    auto init = parse_neg_token_init(view(tok));
    ASSERT_TRUE(init.ok());
    ASSERT_EQ(init->mech_types.size(), 1u);
    EXPECT_EQ(init->mech_types[0], oid::ntlmssp());
    EXPECT_EQ(hex(init->mech_types_der), "300c060a2b06010401823702020a");
    ASSERT_TRUE(init->mech_token);
    EXPECT_EQ(init->mech_token->size(), 40u);
    EXPECT_EQ(std::memcmp(init->mech_token->data(), "NTLMSSP", 8), 0);
    EXPECT_FALSE(init->mech_list_mic);
    // Our encoder produces the same bytes.
    EXPECT_EQ(hex(encode_neg_token_init({oid::ntlmssp()}, *init->mech_token)), hex(tok));
}

TEST(SpnegoTokens, NegTokenRespRoundTripsWindowsBytes) {
    for (const char* h : {kWinChallengeResp, kWinFinalResp}) {
        auto tok = unhex(h);
        auto resp = parse_neg_token_resp(view(tok));
        ASSERT_TRUE(resp.ok()) << h;
        EXPECT_EQ(hex(encode_neg_token_resp(*resp)), hex(tok));
    }
    auto tok = unhex(kWinChallengeResp);
    auto resp = *parse_neg_token_resp(view(tok));
    EXPECT_EQ(resp.neg_state, NegState::AcceptIncomplete);
    EXPECT_EQ(resp.supported_mech, oid::ntlmssp());
    EXPECT_EQ(resp.response_token->size(), 0x94u);
    EXPECT_FALSE(resp.mech_list_mic);
    auto fin = unhex(kWinFinalResp);
    auto fresp = *parse_neg_token_resp(view(fin));
    EXPECT_EQ(fresp.neg_state, NegState::AcceptCompleted);
    EXPECT_FALSE(fresp.supported_mech);
    EXPECT_FALSE(fresp.response_token);
    EXPECT_EQ(hex(*fresp.mech_list_mic), "010000003b453cdc3524164200000000");
}

// MS-SPNG section 4: a NegTokenInit2 with NEGOEX + NTLM, a NEGOEX mechToken and negHints.
TEST(SpnegoTokens, ParsesMsSpngExampleNegTokenInit2) {
    auto tok = unhex(
        "6082015d06062b0601050502a08201513082014da01a3018060a2b06010401823702021e060a2b060104"
        "01823702020aa28201010481fe4e45474f4558545301000000000000006000000070000000cffa11765e"
        "12599a347d766852bfce7097458710bb8242b4c7dfbad2da897aa311a7d868463430952562dc13c554f2"
        "010000000000000000600000000100000000000000000000005c33530deaf90d4db2ec4ae3786ec3084e"
        "45474f455854530300000001000000400000008e000000cffa11765e12599a347d766852bfce705c3353"
        "0deaf90d4db2ec4ae3786ec308400000004e000000304ca04a3048302a80283026312430220603550403"
        "131b584d4c50726f766964657220496e7465726d656469617465204341301a8018301631143012060355"
        "0403130b584d4c50726f7669646572a32a3028a0261b246e6f745f646566696e65645f696e5f52464334"
        "31373840706c656173655f69676e6f7265");
    auto init = parse_neg_token_init(view(tok));
    ASSERT_TRUE(init.ok());
    ASSERT_EQ(init->mech_types.size(), 2u);
    EXPECT_EQ(init->mech_types[0], oid::negoex());
    EXPECT_EQ(init->mech_types[1], oid::ntlmssp());
    ASSERT_TRUE(init->mech_token);
    EXPECT_EQ(init->mech_token->size(), 0xfeu);
    EXPECT_FALSE(init->mech_list_mic);  // [3] is negHints here
}

TEST(SpnegoTokens, EncodesNegTokenInit2) {
    auto tok = encode_neg_token_init2({oid::ntlmssp()});
    EXPECT_EQ(hex(tok),
              "6048"
              "06062b0601050502"
              "a03e303c"
              "a00e300c060a2b06010401823702020a"
              "a32a3028a0261b24"
              "6e6f745f646566696e65645f696e5f5246433431373840706c656173655f69676e6f7265");
}

TEST(SpnegoTokens, MalformedTokensRefused) {
    const char* bad_init[] = {
        "6006060504030201",          // wrong GSS mech OID, no body
        "a0023000",                  // no mechTypes
        "a0053003a00130",            // truncated
        "a00a3008a1020500a0023000",  // fields out of order
        "a0083006a0043002 0400",     // mechTypes holds a non-OID
    };
    for (const char* b : bad_init) {
        auto v = unhex(b);
        EXPECT_FALSE(parse_neg_token_init(view(v)).ok()) << b;
    }
    const char* bad_resp[] = {
        "a1053003a0010a",        // truncated enum
        "a1083006a0040a020001",  // 2-byte negState
        "a1073005a0030a0109",    // negState out of range
        "a0023000",              // NegTokenInit where a response is expected
    };
    for (const char* b : bad_resp) {
        auto v = unhex(b);
        EXPECT_EQ(parse_neg_token_resp(view(v)).status(), NtStatus::InvalidParameter) << b;
    }
}

// ---- acceptor ------------------------------------------------------------------------------

ServerIdentity identity() {
    return {"DAXSRV", "DAXDOM", "daxsrv.example.com", "example.com"};
}

std::unique_ptr<NtlmMechanism> ntlm_mech() {
    NtHash h = nt_hash_of_password("Secret123!");
    return std::make_unique<NtlmMechanism>(identity(),
                                           [h](std::string_view u) -> std::optional<NtHash> {
                                               if (u == "alice") return h;
                                               return std::nullopt;
                                           });
}

SpnegoAcceptor ntlm_acceptor() {
    std::vector<std::unique_ptr<AcceptorMechanism>> m;
    m.push_back(ntlm_mech());
    return SpnegoAcceptor(std::move(m));
}

TEST(SpnegoAcceptor, FullNtlmExchange) {
    SpnegoAcceptor acc = ntlm_acceptor();
    SpnegoClient client(NtlmCredentials::with_password("alice", "Secret123!", "DAXDOM", "WS1"));

    auto s1 = acc.step(view(client.initial_token()));
    ASSERT_TRUE(s1.ok()) << status_name(s1.status());
    EXPECT_FALSE(s1->done);
    auto r1 = *parse_neg_token_resp(view(s1->output_token));
    EXPECT_EQ(r1.neg_state, NegState::AcceptIncomplete);
    EXPECT_EQ(r1.supported_mech, oid::ntlmssp());  // on the first reply only
    ASSERT_TRUE(r1.response_token);

    auto c2 = client.step(view(s1->output_token));
    ASSERT_TRUE(c2.ok());
    auto c2p = *parse_neg_token_resp(view(*c2));
    EXPECT_TRUE(c2p.mech_list_mic);

    auto s2 = acc.step(view(*c2));
    ASSERT_TRUE(s2.ok()) << status_name(s2.status());
    EXPECT_TRUE(s2->done);
    EXPECT_TRUE(acc.done());
    EXPECT_EQ(s2->user, "alice");
    EXPECT_EQ(s2->domain, "DAXDOM");
    EXPECT_FALSE(s2->is_anonymous);
    EXPECT_EQ(s2->mech, oid::ntlmssp());
    ASSERT_EQ(s2->session_key.size(), 16u);
    EXPECT_EQ(hex(s2->session_key), hex(client.session_key()));
    auto r2 = *parse_neg_token_resp(view(s2->output_token));
    EXPECT_EQ(r2.neg_state, NegState::AcceptCompleted);
    EXPECT_FALSE(r2.supported_mech);
    EXPECT_FALSE(r2.response_token);
    ASSERT_TRUE(r2.mech_list_mic);  // the client sent one, so the server answers with its own

    auto c3 = client.step(view(s2->output_token));  // verifies the server's mechListMIC
    ASSERT_TRUE(c3.ok()) << status_name(c3.status());
    EXPECT_TRUE(c3->empty());
    EXPECT_TRUE(client.done());
    // A finished acceptor takes no more tokens.
    EXPECT_EQ(acc.step(view(*c2)).status(), NtStatus::InvalidParameter);
}

Result<AcceptorStep> run_to_auth(SpnegoAcceptor& acc, SpnegoClient& client, ByteVector* auth_tok) {
    auto s1 = acc.step(view(client.initial_token()));
    if (!s1) return s1;
    auto c2 = client.step(view(s1->output_token));
    if (!c2) return Error(c2.status());
    *auth_tok = *c2;
    return acc.step(view(*auth_tok));
}

TEST(SpnegoAcceptor, WrongPasswordIsLogonFailure) {
    SpnegoAcceptor acc = ntlm_acceptor();
    SpnegoClient client(NtlmCredentials::with_password("alice", "nope", "DAXDOM", "WS1"));
    ByteVector auth;
    EXPECT_EQ(run_to_auth(acc, client, &auth).status(), NtStatus::LogonFailure);
    EXPECT_FALSE(acc.done());
}

// Runs the exchange with a hook that edits the AUTHENTICATE leg before the server sees it.
template <class Edit>
NtStatus run_with_edit(Edit edit, bool send_mic = true) {
    SpnegoAcceptor acc = ntlm_acceptor();
    SpnegoClient client(NtlmCredentials::with_password("alice", "Secret123!", "DAXDOM", "WS1"));
    client.set_send_mech_list_mic(send_mic);
    auto s1 = acc.step(view(client.initial_token()));
    if (!s1) return s1.status();
    auto c2 = client.step(view(s1->output_token));
    if (!c2) return c2.status();
    ByteVector tok = *c2;
    auto parsed = *parse_neg_token_resp(view(tok));
    edit(tok, parsed);
    return acc.step(view(tok)).status();
}

size_t offset_in(const ByteVector& tok, Bytes part) {
    return size_t(part.data() - tok.data());
}

TEST(SpnegoAcceptor, MechListMicTamperingRefused) {
    EXPECT_EQ(run_with_edit([](ByteVector& tok, const NegTokenResp& p) {
                  tok[offset_in(tok, *p.mech_list_mic) + 6] ^= std::byte{1};
              }),
              NtStatus::LogonFailure);
}

TEST(SpnegoAcceptor, NtlmMicTamperingRefused) {
    EXPECT_EQ(run_with_edit([](ByteVector& tok, const NegTokenResp& p) {
                  tok[offset_in(tok, *p.response_token) + 72] ^= std::byte{1};
              }),
              NtStatus::LogonFailure);
}

TEST(SpnegoAcceptor, UntouchedExchangeSucceedsThroughEditPath) {
    EXPECT_EQ(run_with_edit([](ByteVector&, const NegTokenResp&) {}), NtStatus::Success);
}

TEST(SpnegoAcceptor, MissingMechListMicAfterNtlmMicRefused) {
    // The AUTHENTICATE carried a MIC, so (like Samba) the mechListMIC is mandatory.
    EXPECT_EQ(run_with_edit([](ByteVector&, const NegTokenResp&) {}, /*send_mic=*/false),
              NtStatus::LogonFailure);
}

TEST(SpnegoAcceptor, RawNtlmsspWithoutSpnego) {
    SpnegoAcceptor acc = ntlm_acceptor();
    NtlmClient client(NtlmCredentials::with_password("alice", "Secret123!", "DAXDOM", "WS1"));
    auto s1 = acc.step(view(client.negotiate()));
    ASSERT_TRUE(s1.ok());
    EXPECT_FALSE(s1->done);
    ASSERT_GE(s1->output_token.size(), 8u);
    EXPECT_EQ(std::memcmp(s1->output_token.data(), "NTLMSSP", 8), 0);  // raw CHALLENGE back
    auto auth = client.authenticate(view(s1->output_token));
    ASSERT_TRUE(auth.ok());
    auto s2 = acc.step(view(*auth));
    ASSERT_TRUE(s2.ok()) << status_name(s2.status());
    EXPECT_TRUE(s2->done);
    EXPECT_TRUE(s2->output_token.empty());
    EXPECT_EQ(s2->user, "alice");
    EXPECT_EQ(hex(s2->session_key), hex(client.session_key()));
}

TEST(SpnegoAcceptor, RawNtlmV1Refused) {
    SpnegoAcceptor acc = ntlm_acceptor();
    NtlmClient client(NtlmCredentials::with_password("alice", "Secret123!", "DAXDOM", "WS1"));
    auto s1 = acc.step(view(client.negotiate()));
    ASSERT_TRUE(s1.ok());
    // AUTHENTICATE with 24-byte LM and NT responses (NTLMv1).
    ByteVector msg;
    protocol::ByteWriter w(msg);
    w.bytes(protocol::as_bytes("NTLMSSP\0", 8));
    w.u32(3);
    ByteVector user = protocol::utf8_to_utf16le("alice");
    const uint32_t sizes[6] = {24, 24, 0, uint32_t(user.size()), 0, 0};
    uint32_t off = 64;
    for (uint32_t s : sizes) {
        w.u16(uint16_t(s));
        w.u16(uint16_t(s));
        w.u32(off);
        off += s;
    }
    w.u32(0x00008201);
    w.zeros(48);
    w.bytes(view(user));
    EXPECT_EQ(acc.step(view(msg)).status(), NtStatus::LogonFailure);
}

TEST(SpnegoAcceptor, AnonymousNtlm) {
    SpnegoAcceptor acc = ntlm_acceptor();
    SpnegoClient client(NtlmCredentials::anonymous());
    ByteVector auth;
    auto s = run_to_auth(acc, client, &auth);
    ASSERT_TRUE(s.ok()) << status_name(s.status());
    EXPECT_TRUE(s->done);
    EXPECT_TRUE(s->is_anonymous);
    EXPECT_TRUE(s->session_key.empty());
    auto r = *parse_neg_token_resp(view(s->output_token));
    EXPECT_EQ(r.neg_state, NegState::AcceptCompleted);
    EXPECT_FALSE(r.mech_list_mic);
}

TEST(SpnegoAcceptor, GarbageRefused) {
    for (const char* b : {"", "00", "a1023000", "6003060100"}) {
        SpnegoAcceptor acc = ntlm_acceptor();
        auto v = unhex(b);
        EXPECT_EQ(acc.step(view(v)).status(), NtStatus::InvalidParameter) << b;
    }
}

TEST(SpnegoAcceptor, NoCommonMechanism) {
    SpnegoAcceptor acc = ntlm_acceptor();
    auto tok = encode_neg_token_init({oid::krb5()}, {});
    EXPECT_EQ(acc.step(view(tok)).status(), NtStatus::LogonFailure);
}

// A Windows domain client lists Kerberos first with an optimistic AP-REQ; a server with only
// NTLM must pick NTLM, ignore the token, answer without a responseToken, and then require the
// mechListMIC over the client's full mechTypes (RFC 4178 5: the choice was not the client's
// first preference).
TEST(SpnegoAcceptor, FallbackFromKerberosRequiresMic) {
    for (bool with_mic : {true, false}) {
        SCOPED_TRACE(with_mic);
        SpnegoAcceptor acc = ntlm_acceptor();
        NtlmClient ntlm(NtlmCredentials::with_password("alice", "Secret123!", "DAXDOM", "WS1"));
        std::vector<Oid> types{oid::ms_krb5(), oid::krb5(), oid::ntlmssp()};
        auto fake_ap_req = unhex("6e0a0102030405060708090a");
        auto s1 = acc.step(view(encode_neg_token_init(types, view(fake_ap_req))));
        ASSERT_TRUE(s1.ok()) << status_name(s1.status());
        auto r1 = *parse_neg_token_resp(view(s1->output_token));
        EXPECT_EQ(r1.neg_state, NegState::AcceptIncomplete);
        EXPECT_EQ(r1.supported_mech, oid::ntlmssp());
        EXPECT_FALSE(r1.response_token);

        ByteVector neg = ntlm.negotiate();
        NegTokenResp c2;
        c2.response_token = view(neg);
        auto s2 = acc.step(view(encode_neg_token_resp(c2)));
        ASSERT_TRUE(s2.ok()) << status_name(s2.status());
        auto r2 = *parse_neg_token_resp(view(s2->output_token));
        EXPECT_FALSE(r2.supported_mech);  // only in the first reply
        auto auth = ntlm.authenticate(*r2.response_token);
        ASSERT_TRUE(auth.ok());
        ByteVector types_der = encode_mech_type_list(types);
        ByteVector mic = ntlm.mech_list_mic_sign(view(types_der));
        NegTokenResp c3;
        c3.response_token = view(*auth);
        if (with_mic) c3.mech_list_mic = view(mic);
        auto s3 = acc.step(view(encode_neg_token_resp(c3)));
        if (!with_mic) {
            EXPECT_EQ(s3.status(), NtStatus::LogonFailure);
            continue;
        }
        ASSERT_TRUE(s3.ok()) << status_name(s3.status());
        EXPECT_TRUE(s3->done);
        auto r3 = *parse_neg_token_resp(view(s3->output_token));
        ASSERT_TRUE(r3.mech_list_mic);
        EXPECT_TRUE(ntlm.mech_list_mic_verify(view(types_der), *r3.mech_list_mic));
    }
}

// A transcript of Samba 4.17's own client (python3-samba gensec "GSS-SPNEGO" with NTLMSSP,
// the code smbclient runs; Kerberos off, user alice / Secret123!, domain DAXDOM, workstation
// WS1) against this acceptor with the challenge fixed to 0102030405060708 and the timestamp to
// 0x01d9a1b2c3d4e5f6. Samba sends an NTLM MIC and a mechListMIC; it accepted our final reply
// (its mechListMIC check passed) and derived the same session key.
TEST(SpnegoAcceptor, ReplaysSambaClientExchange) {
    auto mech = ntlm_mech();
    mech->server().set_fixed_challenge({std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                                        std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}});
    mech->server().set_fixed_time(0x01d9a1b2c3d4e5f6ull);
    std::vector<std::unique_ptr<AcceptorMechanism>> m;
    m.push_back(std::move(mech));
    SpnegoAcceptor acc(std::move(m));
    auto c1 = unhex(
        "604806062b0601050502a03e303ca00e300c060a2b06010401823702020aa22a04284e544c4d53535000"
        "010000001582086200000000280000000000000028000000060100000000000f");
    auto s1 = acc.step(view(c1));
    ASSERT_TRUE(s1.ok()) << status_name(s1.status());
    EXPECT_EQ(
        hex(s1->output_token),
        hex(unhex(
            "a181d23081cfa0030a0101a10c060a2b06010401823702020aa281b90481b64e544c4d53535000020000"
            "000c000c003800000015828a620102030405060708000000000000000072007200440000000a007c4f00"
            "00000f44004100580053005200560002000c0044004100580044004f004d0001000c0044004100580053"
            "0052005600040016006500780061006d0070006c0065002e0063006f006d000300240064006100780073"
            "00720076002e006500780061006d0070006c0065002e0063006f006d0007000800f6e5d4c3b2a1d90100"
            "000000")));
    auto c2 = unhex(
        "a18201c4308201c0a28201a8048201a44e544c4d53535000030000001800180058000000080108017000"
        "00000c000c00780100000a000a0084010000060006008e01000010001000940100001582086206010000"
        "0000000fd24e6f6a89afdfa40906468b18960e0300000000000000000000000000000000000000000000"
        "00002ec371290eb242d7464076318018c4be0101000000000000f6e5d4c3b2a1d9015a72d0c58ff1cfcc"
        "0000000002000c0044004100580044004f004d0001000c00440041005800530052005600040016006500"
        "780061006d0070006c0065002e0063006f006d00030024006400610078007300720076002e0065007800"
        "61006d0070006c0065002e0063006f006d0007000800f6e5d4c3b2a1d901060004000200000008003000"
        "300000000000000000000000000000002686c603e0a9438df4b92e10992e3ffdbd969db97cb8615c6184"
        "f42d73ab8a040a001000000000000000000000000000000000000900160068006f00730074002f006400"
        "610078007300720076000000000044004100580044004f004d0061006c00690063006500570053003100"
        "be594885a1fe649ddc6e1ae1e607511ba3120410010000009f8e7323fff2ca7c00000000");
    auto s2 = acc.step(view(c2));
    ASSERT_TRUE(s2.ok()) << status_name(s2.status());
    EXPECT_TRUE(s2->done);
    EXPECT_EQ(s2->user, "alice");
    EXPECT_EQ(hex(s2->session_key), "ff9efe3841a50f91b56dd376bae2f989");
    EXPECT_EQ(hex(s2->output_token), "a11b3019a0030a0100a31204100100000018639c60cbc01cfd00000000");
}

// A Kerberos-shaped fake mechanism: completes on its first token with an output token (the
// AP-REP), MIC = HMAC-MD5(key, message). Exercises the MS-KRB5 echo and the RFC 4178 flow where
// the client's mechListMIC arrives after the mechanism finished.
class FakeKrb final : public AcceptorMechanism {
  public:
    Oid oid() const override { return oid::krb5(); }
    bool accepts(const Oid& o) const override { return o == oid::krb5() || o == oid::ms_krb5(); }
    bool accepts_raw(Bytes) const override { return false; }
    Result<MechStep> step(Bytes token) override {
        if (token.empty() || token[0] != std::byte{0x6e}) return Error(NtStatus::LogonFailure);
        return MechStep{unhex("6f03020100"), true};
    }
    ByteVector session_key() const override { return ByteVector(32, std::byte{0x5a}); }
    std::string user_name() const override { return "bob@EXAMPLE.COM"; }
    ByteVector get_mic(Bytes m) override {
        auto d = hmac_md5(view(key_), {protocol::as_bytes("srv", 3), m});
        return ByteVector(d.begin(), d.end());
    }
    bool verify_mic(Bytes m, Bytes mic) override {
        auto d = hmac_md5(view(key_), {protocol::as_bytes("cli", 3), m});
        return constant_time_equal(bytes_of(d), mic);
    }
    static ByteVector client_mic(Bytes m) {
        ByteVector k(32, std::byte{0x5a});
        auto d = hmac_md5(view(k), {protocol::as_bytes("cli", 3), m});
        return ByteVector(d.begin(), d.end());
    }

  private:
    ByteVector key_ = ByteVector(32, std::byte{0x5a});
};

SpnegoAcceptor krb_ntlm_acceptor() {
    std::vector<std::unique_ptr<AcceptorMechanism>> m;
    m.push_back(std::make_unique<FakeKrb>());
    m.push_back(ntlm_mech());
    return SpnegoAcceptor(std::move(m));
}

TEST(SpnegoAcceptor, OptimisticKerberosEchoesMsOid) {
    SpnegoAcceptor acc = krb_ntlm_acceptor();
    auto ap_req = unhex("6e0a0102030405060708090a");
    auto s = acc.step(view(encode_neg_token_init({oid::ms_krb5(), oid::ntlmssp()}, view(ap_req))));
    ASSERT_TRUE(s.ok()) << status_name(s.status());
    EXPECT_TRUE(s->done);
    EXPECT_EQ(s->user, "bob@EXAMPLE.COM");
    EXPECT_EQ(s->session_key.size(), 32u);  // full key kept for AES-256
    EXPECT_EQ(s->mech, oid::ms_krb5());
    auto r = *parse_neg_token_resp(view(s->output_token));
    EXPECT_EQ(r.neg_state, NegState::AcceptCompleted);
    EXPECT_EQ(r.supported_mech, oid::ms_krb5());  // MS-SPNG 3.2.5
    EXPECT_EQ(hex(*r.response_token), "6f03020100");
    EXPECT_FALSE(r.mech_list_mic);  // first choice, no MIC sent: none needed
}

TEST(SpnegoAcceptor, MicAfterCompletionWhenNotFirstChoice) {
    SpnegoAcceptor acc = krb_ntlm_acceptor();
    // The client prefers NEGOEX (which we lack) and lists Kerberos second.
    std::vector<Oid> types{oid::negoex(), oid::krb5()};
    auto s1 = acc.step(view(encode_neg_token_init(types, {})));
    ASSERT_TRUE(s1.ok());
    auto r1 = *parse_neg_token_resp(view(s1->output_token));
    EXPECT_EQ(r1.supported_mech, oid::krb5());
    auto ap_req = unhex("6e0a0102030405060708090a");
    NegTokenResp c2;
    c2.response_token = view(ap_req);
    auto s2 = acc.step(view(encode_neg_token_resp(c2)));
    ASSERT_TRUE(s2.ok()) << status_name(s2.status());
    EXPECT_FALSE(s2->done);  // the mechanism is done but the MICs are not exchanged yet
    auto r2 = *parse_neg_token_resp(view(s2->output_token));
    EXPECT_EQ(r2.neg_state, NegState::AcceptIncomplete);
    EXPECT_TRUE(r2.response_token);
    ASSERT_TRUE(r2.mech_list_mic);
    ByteVector types_der = encode_mech_type_list(types);
    // A wrong MIC fails, the right one completes.
    {
        SpnegoAcceptor acc2 = krb_ntlm_acceptor();
        ASSERT_TRUE(acc2.step(view(encode_neg_token_init(types, {}))).ok());
        ASSERT_TRUE(acc2.step(view(encode_neg_token_resp(c2))).ok());
        ByteVector bad(16, std::byte{0});
        NegTokenResp c3;
        c3.mech_list_mic = view(bad);
        EXPECT_EQ(acc2.step(view(encode_neg_token_resp(c3))).status(), NtStatus::LogonFailure);
    }
    ByteVector mic = FakeKrb::client_mic(view(types_der));
    NegTokenResp c3;
    c3.mech_list_mic = view(mic);
    auto s3 = acc.step(view(encode_neg_token_resp(c3)));
    ASSERT_TRUE(s3.ok()) << status_name(s3.status());
    EXPECT_TRUE(s3->done);
    EXPECT_EQ(s3->user, "bob@EXAMPLE.COM");
    EXPECT_EQ(parse_neg_token_resp(view(s3->output_token))->neg_state, NegState::AcceptCompleted);
}

}  // namespace
}  // namespace daxsmbd::auth
