#include <gtest/gtest.h>

#include <cstring>

#include "auth/ntlm.h"
#include "auth/userdb.h"
#include "tests/unit/auth/hex_util.h"

namespace daxsmbd::auth {
namespace {

using test::hex;
using test::unhex;
using test::view;

NtHashLookup lookup_one(std::string user, std::string password) {
    NtHash h = nt_hash_of_password(password);
    return [user, h](std::string_view u) -> std::optional<NtHash> {
        if (u == user) return h;
        return std::nullopt;
    };
}

ServerIdentity identity() {
    return {"DAXSRV", "DAXDOM", "daxsrv.example.com", "example.com"};
}

// MS-NLMP 4.2.4 NTLMv2 values (digest 8.2).
TEST(Ntlm, Nlmp424Ntowfv2) {
    EXPECT_EQ(hex(ntowfv2(nt_hash_of_password("Password"), "User", "Domain")),
              "0c868a403bfd7a93a3001ef22ef02e3f");
}

// Builds an AUTHENTICATE_MESSAGE by hand (no MIC, no Version) so tests can feed the server
// exact responses: Unicode strings, fields in MS-NLMP 2.2.1.3 order.
ByteVector build_authenticate(uint32_t flags, Bytes lm, Bytes nt, std::string_view domain,
                              std::string_view user, std::string_view ws, Bytes ersk) {
    ByteVector d = protocol::utf8_to_utf16le(domain), u = protocol::utf8_to_utf16le(user),
               w = protocol::utf8_to_utf16le(ws);
    Bytes payload[6] = {lm, nt, view(d), view(u), view(w), ersk};
    ByteVector out;
    protocol::ByteWriter wr(out);
    wr.bytes(protocol::as_bytes("NTLMSSP\0", 8));
    wr.u32(3);
    uint32_t offset = 64;
    for (Bytes p : payload) {
        wr.u16(uint16_t(p.size()));
        wr.u16(uint16_t(p.size()));
        wr.u32(offset);
        offset += uint32_t(p.size());
    }
    wr.u32(flags);
    for (Bytes p : payload)
        wr.bytes(p);
    return out;
}

ByteVector negotiate_with_flags(uint32_t flags) {
    ByteVector out;
    protocol::ByteWriter w(out);
    w.bytes(protocol::as_bytes("NTLMSSP\0", 8));
    w.u32(1);
    w.u32(flags);
    w.zeros(16);
    return out;
}

// MS-NLMP 4.2.4: the server verifies the NTProofStr of the example NTLMv2 response and
// recovers the RandomSessionKey 55*16 from EncryptedRandomSessionKey c5dad254....
TEST(Ntlm, ServerAcceptsNlmp424Response) {
    NtlmServer server({"Server", "Domain", "", ""}, lookup_one("User", "Password"));
    server.set_fixed_challenge({std::byte{0x01}, std::byte{0x23}, std::byte{0x45}, std::byte{0x67},
                                std::byte{0x89}, std::byte{0xab}, std::byte{0xcd},
                                std::byte{0xef}});
    const uint32_t flags = 0xe28a8233;  // MS-NLMP 4.2.4 NegotiateFlags
    ASSERT_TRUE(server.challenge(view(negotiate_with_flags(flags))).ok());
    auto temp = unhex(
        "0101000000000000 0000000000000000 aaaaaaaaaaaaaaaa 00000000"
        "02000c0044006f006d00610069006e00 01000c00530065007200760065007200 00000000 00000000");
    auto nt = unhex("68cd0ab851e51c96aabc927bebef6a1c");
    nt.insert(nt.end(), temp.begin(), temp.end());
    auto lm = unhex("86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa");
    auto ersk = unhex("c5dad2544fc9799094ce1ce90bc9d03e");
    auto msg =
        build_authenticate(flags, view(lm), view(nt), "Domain", "User", "COMPUTER", view(ersk));
    auto r = server.authenticate(view(msg));
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    EXPECT_EQ(r->user, "User");
    EXPECT_EQ(r->domain, "Domain");
    EXPECT_EQ(r->workstation, "COMPUTER");
    EXPECT_EQ(hex(r->session_key), "55555555555555555555555555555555");
    EXPECT_FALSE(r->is_anonymous);
    EXPECT_FALSE(r->mic_present);
}

TEST(Ntlm, ServerRetriesWithEmptyDomain) {
    // The client computed NTOWFv2 with an empty domain but sends "Domain" on the wire.
    NtlmServer server({"Server", "Domain", "", ""}, lookup_one("User", "Password"));
    std::array<std::byte, 8> sc{};
    server.set_fixed_challenge(sc);
    ASSERT_TRUE(server.challenge(view(negotiate_with_flags(0x00088201))).ok());
    auto temp =
        unhex("0101000000000000 0000000000000000 aaaaaaaaaaaaaaaa 00000000 0000 0000 00000000");
    Digest16 key = ntowfv2(nt_hash_of_password("Password"), "User", "");
    Digest16 proof = hmac_md5(bytes_of(key), {bytes_of(sc), view(temp)});
    ByteVector nt(proof.begin(), proof.end());
    nt.insert(nt.end(), temp.begin(), temp.end());
    while (nt.size() < 48)
        nt.push_back(std::byte{0});  // padding beyond the EOL is allowed
    auto msg = build_authenticate(0x00088201, {}, view(nt), "Domain", "User", "", {});
    auto r = server.authenticate(view(msg));
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    // Without KEY_EXCH the exported key is the SessionBaseKey.
    EXPECT_EQ(hex(r->session_key), hex(hmac_md5(bytes_of(key), {bytes_of(proof)})));
}

// NTLMSSP session security against a real Windows exchange: the mechListMICs of the 3.1.1
// example in Microsoft's "anatomy of signing and cryptographic keys" blog, where the GSS
// session key (the NTLM ExportedSessionKey) is 270E1BA8..., the AUTHENTICATE flags are
// 0xE2888215 and the client offered only NTLMSSP (mechTypes DER 300C060A2B06010401823702020A).
TEST(Ntlm, SessionSecurityMatchesWindowsMechListMic) {
    auto esk = unhex("270E1BA896585EEB7AF3472D3B4C75A7");
    auto sec = NtlmSessionSecurity::derive(view(esk), 0xE2888215);
    ASSERT_TRUE(sec.valid);
    auto mech_types = unhex("300C060A2B06010401823702020A");
    EXPECT_EQ(hex(sec.mac(true, view(mech_types))), "0100000063775a9a5fd97f0600000000");
    EXPECT_EQ(hex(sec.mac(false, view(mech_types))), "010000003b453cdc3524164200000000");
}

struct Exchange {
    NtlmServer server{identity(), lookup_one("alice", "Secret123!")};
    ByteVector challenge;
};

Result<NtlmAuthResult> run_client(Exchange& ex, NtlmClient& client) {
    auto neg = client.negotiate();
    auto c = ex.server.challenge(view(neg));
    if (!c) return Error(c.status());
    ex.challenge = *c;
    auto auth = client.authenticate(view(*c));
    if (!auth) return Error(auth.status());
    return ex.server.authenticate(view(*auth));
}

TEST(Ntlm, ClientServerRoundTrip) {
    Exchange ex;
    NtlmClient client(NtlmCredentials::with_password("alice", "Secret123!", "DAXDOM", "WS1"));
    auto r = run_client(ex, client);
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    EXPECT_EQ(r->user, "alice");
    EXPECT_EQ(r->domain, "DAXDOM");
    EXPECT_EQ(r->workstation, "WS1");
    EXPECT_TRUE(r->mic_present);
    EXPECT_EQ(r->session_key, client.session_key());
    EXPECT_NE(hex(r->session_key), "00000000000000000000000000000000");
    EXPECT_TRUE(r->negotiate_flags & ntlm_flags::kKeyExch);
    // The MICs cross-verify: client keys on one side, server keys on the other.
    auto types = unhex("300C060A2B06010401823702020A");
    auto cmic = client.mech_list_mic_sign(view(types));
    EXPECT_TRUE(ex.server.mech_list_mic_verify(view(types), view(cmic)));
    auto smic = ex.server.mech_list_mic_sign(view(types));
    EXPECT_TRUE(client.mech_list_mic_verify(view(types), view(smic)));
    EXPECT_NE(cmic, smic);
    EXPECT_FALSE(ex.server.mech_list_mic_verify(view(types), view(smic)));
}

TEST(Ntlm, ChallengeEchoesClientFlagsAndCarriesTargetInfo) {
    NtlmServer server(identity(), lookup_one("alice", "x"));
    server.set_fixed_time(0x01d9a1b2c3d4e5f6ull);
    using namespace ntlm_flags;
    const uint32_t cf = kUnicode | kOem | kRequestTarget | kSign | kSeal | kLmKey | kNtlm |
                        kAlwaysSign | kExtendedSessionSecurity | kVersion | k128 | kKeyExch | k56;
    auto c = server.challenge(view(negotiate_with_flags(cf)));
    ASSERT_TRUE(c.ok());
    Bytes m = view(*c);
    ASSERT_GE(m.size(), 56u);
    const uint32_t f = protocol::load_le32(m.data() + 20);
    EXPECT_EQ(f, kUnicode | kRequestTarget | kSign | kSeal | kNtlm | kAlwaysSign |
                     kTargetTypeServer | kExtendedSessionSecurity | kTargetInfo | kVersion | k128 |
                     kKeyExch | k56);
    // Target info: NbDomain, NbComputer, DnsDomain, DnsComputer, Timestamp, EOL.
    const uint16_t len = protocol::load_le16(m.data() + 40);
    const uint32_t off = protocol::load_le32(m.data() + 44);
    ASSERT_LE(off + len, m.size());
    protocol::ByteReader r(m.subspan(off, len));
    std::vector<uint16_t> ids;
    for (;;) {
        uint16_t id = *r.u16();
        uint16_t l = *r.u16();
        auto v = *r.bytes(l);
        ids.push_back(id);
        if (id == ntlm_av::kNbComputerName) {
            EXPECT_EQ(*protocol::utf16le_to_utf8(v), "DAXSRV");
        }
        if (id == ntlm_av::kDnsDomainName) {
            EXPECT_EQ(*protocol::utf16le_to_utf8(v), "example.com");
        }
        if (id == ntlm_av::kTimestamp) {
            EXPECT_EQ(protocol::load_le64(v.data()), 0x01d9a1b2c3d4e5f6ull);
        }
        if (id == ntlm_av::kEol) break;
    }
    EXPECT_EQ(ids, (std::vector<uint16_t>{2, 1, 4, 3, 7, 0}));
    // A client without SIGN/KEY_EXCH gets neither back.
    NtlmServer s2(identity(), lookup_one("alice", "x"));
    auto c2 = s2.challenge(view(negotiate_with_flags(kUnicode | kNtlm)));
    ASSERT_TRUE(c2.ok());
    EXPECT_EQ(protocol::load_le32(c2->data() + 20),
              kUnicode | kNtlm | kRequestTarget | kTargetTypeServer | kTargetInfo);
}

TEST(Ntlm, WrongPasswordAndUnknownUserAreLogonFailure) {
    {
        Exchange ex;
        NtlmClient client(NtlmCredentials::with_password("alice", "wrong", "DAXDOM", "WS1"));
        EXPECT_EQ(run_client(ex, client).status(), NtStatus::LogonFailure);
    }
    {
        Exchange ex;
        NtlmClient client(NtlmCredentials::with_password("mallory", "Secret123!", "DAXDOM", "WS1"));
        EXPECT_EQ(run_client(ex, client).status(), NtStatus::LogonFailure);
    }
}

TEST(Ntlm, UserNameIsCaseInsensitiveInTheProof) {
    // NTOWFv2 uppercases the user: "ALICE" proves the same key as "alice" as long as the
    // lookup finds the account.
    NtHash h = nt_hash_of_password("Secret123!");
    NtlmServer server(identity(), [h](std::string_view) -> std::optional<NtHash> { return h; });
    NtlmClient client(NtlmCredentials::with_password("ALICE", "Secret123!", "DAXDOM", "WS1"));
    auto neg = client.negotiate();
    auto c = server.challenge(view(neg));
    ASSERT_TRUE(c.ok());
    auto a = client.authenticate(view(*c));
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(server.authenticate(view(*a)).ok());
}

TEST(Ntlm, NtlmV1AndShortResponsesRefused) {
    for (size_t len : {24u, 40u, 47u}) {
        NtlmServer server(identity(), lookup_one("alice", "Secret123!"));
        ASSERT_TRUE(server.challenge(view(negotiate_with_flags(0xe2088297))).ok());
        ByteVector nt(len, std::byte{0x11}), lm(24, std::byte{0x22});
        auto msg = build_authenticate(0xe2088215, view(lm), view(nt), "DAXDOM", "alice", "WS", {});
        EXPECT_EQ(server.authenticate(view(msg)).status(), NtStatus::LogonFailure) << len;
        // The refusal says why and who, for the server's log line.
        EXPECT_EQ(server.attempted_user(), "DAXDOM\\alice");
        if (len == 24)
            EXPECT_EQ(server.failure_reason(), "NTLMv1 response refused (only NTLMv2 is accepted)");
        else
            EXPECT_NE(server.failure_reason().find("too short for NTLMv2"), std::string::npos)
                << server.failure_reason();
    }
}

// Samba bug 14932 (smbtorture smb2.session.ntlmssp_bug14932): an NTLMv2 response whose
// NTLMv2_CLIENT_CHALLENGE does not parse (the "net diag" tool's AV pairs run past the end) is
// malformed input, STATUS_INVALID_PARAMETER, whatever the proof: Samba parses the response
// before it checks the password.
TEST(Ntlm, UnparsableNtlmV2ClientChallengeIsInvalidParameter) {
    NtlmServer server(identity(), lookup_one("alice", "Secret123!"));
    ASSERT_TRUE(server.challenge(view(negotiate_with_flags(0xe2088297))).ok());
    ByteVector nt(16, std::byte{0xab});  // NTProofStr: wrong anyway
    const uint8_t blob[] = {0x01, 0x01, 0,    0,    0,    0,    0,    0,           // versions
                            0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f,        // time
                            0xb8, 0x82, 0x3a, 0xf1, 0xb3, 0xdd, 0x08, 0x15,        // challenge
                            0,    0,    0,    0,                                   // reserved
                            0x11, 0xa2, 0x08, 0x81, 0x50, 0x38, 0x22, 0x78, 0x2b,  // "AV pairs"
                            0x94, 0x47, 0xfe, 0x54, 0x94, 0x7b, 0xff, 0x17, 0x27};
    for (uint8_t b : blob)
        nt.push_back(std::byte(b));
    ByteVector lm(24, std::byte{0});
    auto msg = build_authenticate(0xe2088215, view(lm), view(nt), "DAXDOM", "alice", "WS", {});
    EXPECT_EQ(server.authenticate(view(msg)).status(), NtStatus::InvalidParameter);
    EXPECT_NE(server.failure_reason().find("AV pair"), std::string::npos)
        << server.failure_reason();
}

TEST(Ntlm, LmOnlyResponseRefusedWithReason) {
    NtlmServer server(identity(), lookup_one("alice", "Secret123!"));
    ASSERT_TRUE(server.challenge(view(negotiate_with_flags(0xe2088297))).ok());
    ByteVector lm(24, std::byte{0x22});
    auto msg = build_authenticate(0xe2088215, view(lm), {}, "DAXDOM", "alice", "WS", {});
    EXPECT_EQ(server.authenticate(view(msg)).status(), NtStatus::LogonFailure);
    EXPECT_EQ(server.failure_reason(), "LM-only response refused (only NTLMv2 is accepted)");
}

TEST(Ntlm, FailureReasonsForWrongPasswordAndUnknownUser) {
    {
        Exchange ex;
        NtlmClient client(NtlmCredentials::with_password("alice", "wrong", "DAXDOM", "WS1"));
        EXPECT_EQ(run_client(ex, client).status(), NtStatus::LogonFailure);
        EXPECT_EQ(ex.server.failure_reason(), "wrong password");
        EXPECT_EQ(ex.server.attempted_user(), "DAXDOM\\alice");
    }
    {
        Exchange ex;
        NtlmClient client(NtlmCredentials::with_password("mallory", "x", "", "WS1"));
        EXPECT_EQ(run_client(ex, client).status(), NtStatus::LogonFailure);
        EXPECT_EQ(ex.server.failure_reason(), "unknown user or user without NTLM password");
        EXPECT_EQ(ex.server.attempted_user(), "mallory");
    }
}

TEST(Ntlm, MicTamperingRefused) {
    Exchange ex;
    NtlmClient client(NtlmCredentials::with_password("alice", "Secret123!", "DAXDOM", "WS1"));
    auto neg = client.negotiate();
    auto c = ex.server.challenge(view(neg));
    ASSERT_TRUE(c.ok());
    auto auth = client.authenticate(view(*c));
    ASSERT_TRUE(auth.ok());
    (*auth)[72 + 5] ^= std::byte{0x40};  // MIC field
    EXPECT_EQ(ex.server.authenticate(view(*auth)).status(), NtStatus::LogonFailure);
}

TEST(Ntlm, MicCoversTheWholeExchange) {
    // Flipping a bit in the workstation name (not covered by NTProofStr) is caught by the MIC.
    Exchange ex;
    NtlmClient client(NtlmCredentials::with_password("alice", "Secret123!", "DAXDOM", "WS1"));
    auto neg = client.negotiate();
    auto c = ex.server.challenge(view(neg));
    ASSERT_TRUE(c.ok());
    auto auth = client.authenticate(view(*c));
    ASSERT_TRUE(auth.ok());
    const uint32_t ws_off = protocol::load_le32(auth->data() + 48);
    (*auth)[ws_off] ^= std::byte{0x01};
    EXPECT_EQ(ex.server.authenticate(view(*auth)).status(), NtStatus::LogonFailure);
}

TEST(Ntlm, AnonymousIsReportedNotRefused) {
    Exchange ex;
    NtlmClient client(NtlmCredentials::anonymous());
    auto r = run_client(ex, client);
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    EXPECT_TRUE(r->is_anonymous);
    EXPECT_EQ(hex(r->session_key), "00000000000000000000000000000000");
    EXPECT_TRUE(r->user.empty());
}

TEST(Ntlm, MalformedMessagesAreInvalidParameter) {
    NtlmServer server(identity(), lookup_one("alice", "x"));
    auto bad_sig = negotiate_with_flags(1);
    bad_sig[0] = std::byte{'X'};
    EXPECT_EQ(server.challenge(view(bad_sig)).status(), NtStatus::InvalidParameter);
    auto wrong_type = negotiate_with_flags(1);
    wrong_type[8] = std::byte{3};
    EXPECT_EQ(server.challenge(view(wrong_type)).status(), NtStatus::InvalidParameter);
    ASSERT_TRUE(server.challenge(view(negotiate_with_flags(1))).ok());
    ByteVector nt(60, std::byte{1});
    auto msg = build_authenticate(1, {}, view(nt), "D", "alice", "W", {});
    protocol::store_le32(msg.data() + 24, 0xFFFFFF00);  // NT response offset past the end
    EXPECT_EQ(server.authenticate(view(msg)).status(), NtStatus::InvalidParameter);
    // One AUTHENTICATE per CHALLENGE.
    EXPECT_EQ(server.authenticate(view(msg)).status(), NtStatus::InvalidParameter);
}

// An AUTHENTICATE generated independently by impacket 0.10 (python3-impacket, ntlm module,
// offline): getNTLMSSPType1('WS1', 'DAXDOM', signingRequired=True, use_ntlmv2=True) and
// getNTLMSSPType3(type1, <our CHALLENGE below>, 'alice', 'Secret123!', 'DAXDOM', use_ntlmv2=True).
// impacket sends no MIC and no VERSION, and uses KEY_EXCH; it returned the exported key below.
TEST(Ntlm, ServerAcceptsImpacketAuthenticate) {
    NtlmServer server(identity(), lookup_one("alice", "Secret123!"));
    server.set_fixed_challenge({std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                                std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}});
    server.set_fixed_time(0x01d9a1b2c3d4e5f6ull);
    auto neg = unhex("4e544c4d5353500001000000358288e000000000000000000000000000000000");
    auto c = server.challenge(view(neg));
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(hex(*c),
              "4e544c4d53535000020000000c000c003800000035828ae00102030405060708000000000000000072"
              "007200440000000000000000000000440041005800530052005600020"
              "00c0044004100580044004f004d0001000c00440041005800530052005600040016006500780061006d"
              "0070006c0065002e0063006f006d00030024006400610078007300720076002e006500780061006d0070"
              "006c0065002e0063006f006d0007000800f6e5d4c3b2a1d90100000000");
    auto auth = unhex(
        "4e544c4d5353500003000000180018005c000000bc00bc00740000000c000c00400000000a000a004c00"
        "000006000600560000001000100030010000358288e044004100580044004f004d0061006c0069006300"
        "6500570053003100be8d242734fce454bc1755340f4d3b3076586d613136596a8cd2898dd66a90fcebb4"
        "7ec7a79d44d60101000000000000f6e5d4c3b2a1d90176586d613136596a0000000002000c0044004100"
        "580044004f004d0001000c00440041005800530052005600040016006500780061006d0070006c006500"
        "2e0063006f006d00030024006400610078007300720076002e006500780061006d0070006c0065002e00"
        "63006f006d0007000800f6e5d4c3b2a1d9010900160063006900660073002f0044004100580053005200"
        "56000000000000000000bda47afc7fa5cd857b1845426087199a");
    auto r = server.authenticate(view(auth));
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    EXPECT_EQ(r->user, "alice");
    EXPECT_EQ(r->workstation, "WS1");
    EXPECT_FALSE(r->mic_present);
    EXPECT_EQ(hex(r->session_key), "55476c65633247734376696956376d74");
}

}  // namespace
}  // namespace daxsmbd::auth
