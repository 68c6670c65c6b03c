// NTLMv2 authentication (MS-NLMP), server and client side, with the NTLM2 session security
// needed for SPNEGO's mechListMIC (MS-NLMP 3.4.4.2, MS-SPNG 3.2.5.1). NTLMv1 and LM are refused.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "auth/crypto.h"
#include "auth/userdb.h"
#include "protocol/result.h"

namespace daxsmbd::auth {

// NegotiateFlags (MS-NLMP 2.2.2.5).
namespace ntlm_flags {
constexpr uint32_t kUnicode = 0x00000001;
constexpr uint32_t kOem = 0x00000002;
constexpr uint32_t kRequestTarget = 0x00000004;
constexpr uint32_t kSign = 0x00000010;
constexpr uint32_t kSeal = 0x00000020;
constexpr uint32_t kDatagram = 0x00000040;
constexpr uint32_t kLmKey = 0x00000080;
constexpr uint32_t kNtlm = 0x00000200;
constexpr uint32_t kAnonymous = 0x00000800;
constexpr uint32_t kOemDomainSupplied = 0x00001000;
constexpr uint32_t kOemWorkstationSupplied = 0x00002000;
constexpr uint32_t kAlwaysSign = 0x00008000;
constexpr uint32_t kTargetTypeDomain = 0x00010000;
constexpr uint32_t kTargetTypeServer = 0x00020000;
constexpr uint32_t kExtendedSessionSecurity = 0x00080000;
constexpr uint32_t kIdentify = 0x00100000;
constexpr uint32_t kRequestNonNtSessionKey = 0x00400000;
constexpr uint32_t kTargetInfo = 0x00800000;
constexpr uint32_t kVersion = 0x02000000;
constexpr uint32_t k128 = 0x20000000;
constexpr uint32_t kKeyExch = 0x40000000;
constexpr uint32_t k56 = 0x80000000;
}  // namespace ntlm_flags

// AV_PAIR ids (MS-NLMP 2.2.2.1).
namespace ntlm_av {
constexpr uint16_t kEol = 0x0000;
constexpr uint16_t kNbComputerName = 0x0001;
constexpr uint16_t kNbDomainName = 0x0002;
constexpr uint16_t kDnsComputerName = 0x0003;
constexpr uint16_t kDnsDomainName = 0x0004;
constexpr uint16_t kDnsTreeName = 0x0005;
constexpr uint16_t kFlags = 0x0006;
constexpr uint16_t kTimestamp = 0x0007;
constexpr uint16_t kSingleHost = 0x0008;
constexpr uint16_t kTargetName = 0x0009;
constexpr uint16_t kChannelBindings = 0x000A;
constexpr uint32_t kFlagMicPresent = 0x00000002;  // MsvAvFlags bit
}  // namespace ntlm_av

// NTLMv2 one-way functions (MS-NLMP 3.3.2), exposed for tests and tools.
// NTOWFv2 = HMAC_MD5(nt_hash, UNICODE(Uppercase(user) || domain)), user/domain given as UTF-8.
Digest16 ntowfv2(const NtHash& nt_hash, std::string_view user, std::string_view domain);

// The NTLM2 session security keys of one authenticated context (MS-NLMP 3.4.5.2, 3.4.5.3),
// derived from the ExportedSessionKey with extended session security.
struct NtlmSessionSecurity {
    bool valid = false;
    uint32_t flags = 0;  // negotiated flags (KEY_EXCH decides whether checksums are sealed)
    Digest16 client_sign_key{};
    Digest16 server_sign_key{};
    Digest16 client_seal_key{};
    Digest16 server_seal_key{};

    static NtlmSessionSecurity derive(Bytes exported_session_key, uint32_t negotiated_flags);

    // NTLMSSP_MESSAGE_SIGNATURE with extended session security (MS-NLMP 3.4.4.2):
    // Version(1) || RC4(seal, HMAC_MD5(sign, seq || message)[0..8]) || seq, computed from a
    // fresh sealing state with `seq`. A fresh state is what MS-SPNG 3.2.5.1 / 3.3.5.1 ask for
    // the mechListMIC (the handle is rewound so that the first application message reuses it).
    std::array<std::byte, 16> mac(bool client_keys, Bytes message, uint32_t seq = 0) const;
};

// ---- server --------------------------------------------------------------------------------

struct ServerIdentity {
    std::string netbios_name;    // e.g. "FILESRV1"
    std::string netbios_domain;  // e.g. "WORKGROUP"
    std::string dns_name;        // e.g. "filesrv1.example.com"
    std::string dns_domain;      // e.g. "example.com"
};

// Returns the NT hash of a user name (as sent by the client), or nullopt for an unknown user.
using NtHashLookup = std::function<std::optional<NtHash>(std::string_view user)>;

struct NtlmAuthResult {
    std::string user;
    std::string domain;
    std::string workstation;
    std::array<std::byte, 16> session_key{};  // ExportedSessionKey; zero for anonymous
    bool is_anonymous = false;
    uint32_t negotiate_flags = 0;
    bool mic_present = false;  // the AUTHENTICATE carried a (verified) MIC
    NtlmSessionSecurity security;
};

class NtlmServer {
  public:
    NtlmServer(ServerIdentity identity, NtHashLookup lookup);

    // NEGOTIATE -> CHALLENGE (MS-NLMP 3.2.5.1.1). Malformed NEGOTIATE: STATUS_INVALID_PARAMETER.
    Result<ByteVector> challenge(Bytes negotiate_msg);
    // AUTHENTICATE -> verified identity (MS-NLMP 3.2.5.1.2). Wrong password, unknown user,
    // NTLMv1/LM, bad MIC: STATUS_LOGON_FAILURE. Malformed message: STATUS_INVALID_PARAMETER.
    // Called once, after challenge().
    Result<NtlmAuthResult> authenticate(Bytes authenticate_msg);

    // mechListMIC helpers, valid after a successful non-anonymous authenticate(): the server
    // signs with the server keys and verifies the client's MIC with the client keys.
    ByteVector mech_list_mic_sign(Bytes mech_types_der) const;
    bool mech_list_mic_verify(Bytes mech_types_der, Bytes mic) const;

    // After a failed authenticate(): why, and the user name of the AUTHENTICATE ("domain\\user"
    // when a domain was sent; empty when the message could not be parsed).
    const std::string& failure_reason() const { return failure_; }
    const std::string& attempted_user() const { return attempted_user_; }

    // For tests: fixes the server challenge and the timestamp instead of random/now.
    void set_fixed_challenge(const std::array<std::byte, 8>& c) { fixed_challenge_ = c; }
    void set_fixed_time(uint64_t filetime) { fixed_time_ = filetime; }

  private:
    ServerIdentity id_;
    NtHashLookup lookup_;
    ByteVector negotiate_msg_;
    ByteVector challenge_msg_;
    std::array<std::byte, 8> server_challenge_{};
    uint32_t challenge_flags_ = 0;
    bool challenged_ = false;
    bool done_ = false;
    NtlmSessionSecurity security_;
    std::string failure_;
    std::string attempted_user_;
    std::optional<std::array<std::byte, 8>> fixed_challenge_;
    std::optional<uint64_t> fixed_time_;
};

// ---- client --------------------------------------------------------------------------------

struct NtlmCredentials {
    std::string user;  // empty = anonymous
    std::string domain;
    std::string workstation;
    NtHash nt_hash{};

    static NtlmCredentials with_password(std::string user, std::string_view password,
                                         std::string domain = {}, std::string workstation = {});
    static NtlmCredentials with_hash(std::string user, const NtHash& hash, std::string domain = {},
                                     std::string workstation = {});
    static NtlmCredentials anonymous() { return {}; }
};

class NtlmClient {
  public:
    explicit NtlmClient(NtlmCredentials creds);

    // NEGOTIATE (MS-NLMP 3.1.5.1.1).
    ByteVector negotiate();
    // CHALLENGE -> AUTHENTICATE with an NTLMv2 response, MIC (MsvAvFlags 0x2) and KEY_EXCH
    // (MS-NLMP 3.1.5.1.2). Malformed CHALLENGE: STATUS_INVALID_PARAMETER.
    Result<ByteVector> authenticate(Bytes challenge_msg);

    const std::array<std::byte, 16>& session_key() const { return session_key_; }
    uint32_t negotiated_flags() const { return flags_; }
    // The client signs with the client keys and verifies the server's MIC with the server keys.
    ByteVector mech_list_mic_sign(Bytes mech_types_der) const;
    bool mech_list_mic_verify(Bytes mech_types_der, Bytes mic) const;

    // For tests: deterministic client challenge / exported session key.
    void set_fixed_client_challenge(const std::array<std::byte, 8>& c) { fixed_cc_ = c; }
    void set_fixed_session_key(const std::array<std::byte, 16>& k) { fixed_key_ = k; }

  private:
    NtlmCredentials creds_;
    ByteVector negotiate_msg_;
    uint32_t flags_ = 0;
    std::array<std::byte, 16> session_key_{};
    NtlmSessionSecurity security_;
    std::optional<std::array<std::byte, 8>> fixed_cc_;
    std::optional<std::array<std::byte, 16>> fixed_key_;
};

// Current time as a Windows FILETIME (100 ns since 1601-01-01).
uint64_t filetime_now();

}  // namespace daxsmbd::auth
