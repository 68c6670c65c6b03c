#include "auth/ntlm.h"

#include <chrono>
#include <cstring>
#include <utility>

namespace daxsmbd::auth {

using protocol::ByteReader;
using protocol::ByteWriter;

namespace {

constexpr char kSignature[8] = {'N', 'T', 'L', 'M', 'S', 'S', 'P', '\0'};
constexpr uint32_t kNegotiateType = 1;
constexpr uint32_t kChallengeType = 2;
constexpr uint32_t kAuthenticateType = 3;

// CHALLENGE: 48 bytes of fixed fields + Version(8); AUTHENTICATE: 64 + Version(8) + MIC(16).
constexpr size_t kAuthenticateHeaderSize = 88;
constexpr size_t kMicOffset = 72;

// The VERSION structure we send (MS-NLMP 2.2.2.10): 10.0 build 20348, NTLMSSP_REVISION_W2K3.
constexpr uint8_t kVersionBytes[8] = {10, 0, 0x7C, 0x4F, 0, 0, 0, 0x0F};

// Uppercase of one UTF-16 code unit for the NTOWFv2 user name. Windows uses its Unicode upcase
// table; this covers ASCII, Latin-1, Latin Extended-A pairs, Greek and Cyrillic, which is what
// local account names use in practice.
uint16_t upcase_unit(uint16_t c) {
    if (c >= 'a' && c <= 'z') return uint16_t(c - 0x20);
    if (c < 0x80) return c;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return uint16_t(c - 0x20);
    if (c == 0xFF) return 0x178;
    if (c >= 0x100 && c <= 0x17F) {
        // Latin Extended-A: mostly (upper, lower) pairs at even/odd positions.
        bool odd_lower = (c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
        bool even_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
        if (odd_lower && (c & 1)) return uint16_t(c - 1);
        if (even_lower && !(c & 1)) return uint16_t(c - 1);
        return c;
    }
    if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return uint16_t(c - 0x20);
    if (c >= 0x430 && c <= 0x44F) return uint16_t(c - 0x20);
    if (c >= 0x450 && c <= 0x45F) return uint16_t(c - 0x50);
    return c;
}

ByteVector upcase_utf16(Bytes s) {
    ByteVector out(s.begin(), s.end());
    for (size_t i = 0; i + 1 < out.size(); i += 2)
        protocol::store_le16(out.data() + i, upcase_unit(protocol::load_le16(out.data() + i)));
    return out;
}

// OEM strings are taken as Latin-1 (the OEM code page is a local agreement, MS-NLMP 2.2.2.5).
ByteVector latin1_to_utf16(Bytes s) {
    ByteVector out;
    out.reserve(s.size() * 2);
    for (std::byte b : s) {
        out.push_back(b);
        out.push_back(std::byte{0});
    }
    return out;
}

std::string latin1_to_utf8(Bytes s) {
    std::string out;
    for (std::byte b : s) {
        auto c = uint8_t(b);
        if (c < 0x80) {
            out.push_back(char(c));
        } else {
            out.push_back(char(0xC0 | (c >> 6)));
            out.push_back(char(0x80 | (c & 0x3F)));
        }
    }
    return out;
}

Digest16 ntowfv2_wire(const NtHash& nt_hash, Bytes user_utf16, Bytes domain_utf16) {
    ByteVector upper = upcase_utf16(user_utf16);
    return hmac_md5(bytes_of(nt_hash), {bytes_of(upper), domain_utf16});
}

// A Len/MaxLen/Offset field descriptor (MS-NLMP 2.2.1.x) resolved against the whole message.
Result<Bytes> read_field(Bytes msg, size_t at) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(at));
    DAX_TRY(uint16_t len, r.u16());
    DAX_TRY(uint16_t maxlen, r.u16());
    (void)maxlen;
    DAX_TRY(uint32_t offset, r.u32());
    if (len == 0) return Bytes{};
    return r.slice(offset, len);
}

Status check_header(Bytes msg, uint32_t type) {
    if (msg.size() < 12 || std::memcmp(msg.data(), kSignature, 8) != 0)
        return Error(NtStatus::InvalidParameter);
    if (protocol::load_le32(msg.data() + 8) != type) return Error(NtStatus::InvalidParameter);
    return {};
}

// Writes a field descriptor now and returns its position, to be patched by put_payload().
size_t reserve_field(ByteWriter& w) {
    size_t at = w.size();
    w.zeros(8);
    return at;
}
void put_payload(ByteWriter& w, size_t field_at, Bytes data) {
    auto offset = uint32_t(w.size());
    w.bytes(data);
    w.patch_u16(field_at, uint16_t(data.size()));
    w.patch_u16(field_at + 2, uint16_t(data.size()));
    w.patch_u32(field_at + 4, offset);
}

void put_av(ByteWriter& w, uint16_t id, Bytes value) {
    w.u16(id);
    w.u16(uint16_t(value.size()));
    w.bytes(value);
}

struct AvPair {
    uint16_t id;
    Bytes value;
};

// Parses an AV_PAIR list up to MsvAvEOL (MS-NLMP 2.2.2.1); a list without EOL is malformed.
Result<std::vector<AvPair>> parse_av_pairs(Bytes data) {
    std::vector<AvPair> out;
    ByteReader r(data);
    for (;;) {
        DAX_TRY(uint16_t id, r.u16());
        DAX_TRY(uint16_t len, r.u16());
        DAX_TRY(Bytes value, r.bytes(len));
        if (id == ntlm_av::kEol) return out;
        if (out.size() >= 64) return Error(NtStatus::InvalidParameter);
        out.push_back({id, value});
    }
}

std::string decode_string(Bytes wire, bool unicode, bool* ok) {
    if (!unicode) return latin1_to_utf8(wire);
    auto s = protocol::utf16le_to_utf8(wire);
    if (!s) {
        *ok = false;
        return {};
    }
    return std::move(s).value();
}

template <size_t N>
Bytes cstr(const char (&s)[N]) {
    return protocol::as_bytes(s, N);  // includes the NUL, as MS-NLMP 3.4.5.2/3.4.5.3 require
}

}  // namespace

uint64_t filetime_now() {
    using namespace std::chrono;
    auto since_unix = duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
    // 11644473600 s between 1601-01-01 and 1970-01-01.
    return uint64_t(since_unix / 100) + 116444736000000000ull;
}

Digest16 ntowfv2(const NtHash& nt_hash, std::string_view user, std::string_view domain) {
    ByteVector u = protocol::utf8_to_utf16le(user);
    ByteVector d = protocol::utf8_to_utf16le(domain);
    return ntowfv2_wire(nt_hash, bytes_of(u), bytes_of(d));
}

// ---- session security ----------------------------------------------------------------------

NtlmSessionSecurity NtlmSessionSecurity::derive(Bytes esk, uint32_t flags) {
    NtlmSessionSecurity s;
    s.flags = flags;
    // Only the extended-session-security variant is implemented (every NTLMv2 client in use
    // negotiates it); without it the context has no MIC capability.
    if (!(flags & ntlm_flags::kExtendedSessionSecurity) || esk.size() != 16) return s;
    s.valid = true;
    // MS-NLMP 3.4.5.2 SIGNKEY.
    s.client_sign_key =
        md5({esk, cstr("session key to client-to-server signing key magic constant")});
    s.server_sign_key =
        md5({esk, cstr("session key to server-to-client signing key magic constant")});
    // MS-NLMP 3.4.5.3 SEALKEY: the key is shortened for 56/40-bit sealing.
    Bytes base = esk;
    if (!(flags & ntlm_flags::k128)) base = esk.first((flags & ntlm_flags::k56) ? 7 : 5);
    s.client_seal_key =
        md5({base, cstr("session key to client-to-server sealing key magic constant")});
    s.server_seal_key =
        md5({base, cstr("session key to server-to-client sealing key magic constant")});
    return s;
}

std::array<std::byte, 16> NtlmSessionSecurity::mac(bool client_keys, Bytes message,
                                                   uint32_t seq) const {
    std::array<std::byte, 16> sig{};
    const Digest16& sign = client_keys ? client_sign_key : server_sign_key;
    const Digest16& seal = client_keys ? client_seal_key : server_seal_key;
    std::byte seq_le[4];
    protocol::store_le32(seq_le, seq);
    Digest16 h = hmac_md5(bytes_of(sign), {Bytes(seq_le, 4), message});
    protocol::store_le32(sig.data(), 1);  // NTLMSSP_MESSAGE_SIGNATURE Version
    std::memcpy(sig.data() + 4, h.data(), 8);
    if (flags & ntlm_flags::kKeyExch) {
        Rc4 rc4(bytes_of(seal));
        rc4.process(MutableBytes(sig.data() + 4, 8));
    }
    std::memcpy(sig.data() + 12, seq_le, 4);
    return sig;
}

// ---- server --------------------------------------------------------------------------------

NtlmServer::NtlmServer(ServerIdentity identity, NtHashLookup lookup)
    : id_(std::move(identity)), lookup_(std::move(lookup)) {}

Result<ByteVector> NtlmServer::challenge(Bytes negotiate_msg) {
    if (challenged_) return Error(NtStatus::InvalidParameter);
    DAX_CHECK(check_header(negotiate_msg, kNegotiateType));
    if (negotiate_msg.size() < 16) return Error(NtStatus::InvalidParameter);
    const uint32_t cf = protocol::load_le32(negotiate_msg.data() + 12);
    negotiate_msg_.assign(negotiate_msg.begin(), negotiate_msg.end());

    // Flags as Windows answers (MS-NLMP 3.2.5.1.1): our own target info and target type, and
    // the client's security options echoed back.
    using namespace ntlm_flags;
    uint32_t flags = kNtlm | kRequestTarget | kTargetTypeServer | kTargetInfo;
    flags |= (cf & kUnicode) || !(cf & kOem) ? kUnicode : kOem;
    flags |= cf & (kSign | kSeal | kKeyExch | k128 | k56 | kExtendedSessionSecurity | kVersion |
                   kAlwaysSign | kIdentify);
    challenge_flags_ = flags;

    if (fixed_challenge_)
        server_challenge_ = *fixed_challenge_;
    else
        random_bytes(server_challenge_);
    const uint64_t now = fixed_time_ ? *fixed_time_ : filetime_now();

    // Target name: the server's NetBIOS name (TARGET_TYPE_SERVER), in the negotiated charset.
    ByteVector target_name = (flags & kUnicode)
                                 ? protocol::utf8_to_utf16le(id_.netbios_name)
                                 : ByteVector(protocol::as_bytes(id_.netbios_name).begin(),
                                              protocol::as_bytes(id_.netbios_name).end());
    ByteVector info;
    {
        ByteWriter w(info);
        // Windows' order: NbDomain, NbComputer, DnsDomain, DnsComputer, Timestamp, EOL.
        auto put_str = [&](uint16_t id, const std::string& s) {
            ByteVector v = protocol::utf8_to_utf16le(s);
            put_av(w, id, bytes_of(v));
        };
        put_str(ntlm_av::kNbDomainName, id_.netbios_domain);
        put_str(ntlm_av::kNbComputerName, id_.netbios_name);
        put_str(ntlm_av::kDnsDomainName, id_.dns_domain);
        put_str(ntlm_av::kDnsComputerName, id_.dns_name);
        std::byte ts[8];
        protocol::store_le64(ts, now);
        put_av(w, ntlm_av::kTimestamp, Bytes(ts, 8));
        put_av(w, ntlm_av::kEol, {});
    }

    ByteVector out;
    ByteWriter w(out);
    w.bytes(protocol::as_bytes(kSignature, 8));
    w.u32(kChallengeType);
    size_t target_name_field = reserve_field(w);
    w.u32(flags);
    w.bytes(bytes_of(server_challenge_));
    w.zeros(8);  // Reserved
    size_t target_info_field = reserve_field(w);
    if (flags & kVersion)
        w.bytes(protocol::as_bytes(kVersionBytes, 8));
    else
        w.zeros(8);
    put_payload(w, target_name_field, bytes_of(target_name));
    put_payload(w, target_info_field, bytes_of(info));
    challenge_msg_ = out;
    challenged_ = true;
    return out;
}

Result<NtlmAuthResult> NtlmServer::authenticate(Bytes msg) {
    if (!challenged_ || done_) return Error(NtStatus::InvalidParameter);
    done_ = true;  // one AUTHENTICATE per challenge: no retries against the same challenge
    DAX_CHECK(check_header(msg, kAuthenticateType));
    if (msg.size() < 64) return Error(NtStatus::InvalidParameter);
    DAX_TRY(Bytes lm, read_field(msg, 12));
    DAX_TRY(Bytes nt, read_field(msg, 20));
    DAX_TRY(Bytes domain, read_field(msg, 28));
    DAX_TRY(Bytes user, read_field(msg, 36));
    DAX_TRY(Bytes workstation, read_field(msg, 44));
    DAX_TRY(Bytes ersk, read_field(msg, 52));
    const uint32_t af = protocol::load_le32(msg.data() + 60);
    const bool unicode = (af & ntlm_flags::kUnicode) || !(af & ntlm_flags::kOem);

    NtlmAuthResult res;
    bool ok = true;
    res.user = decode_string(user, unicode, &ok);
    res.domain = decode_string(domain, unicode, &ok);
    res.workstation = decode_string(workstation, unicode, &ok);
    if (!ok) return Error(NtStatus::InvalidParameter);
    attempted_user_ = res.domain.empty() ? res.user : res.domain + "\\" + res.user;
    auto refuse = [this](std::string why) {
        failure_ = std::move(why);
        return Error(NtStatus::LogonFailure);
    };
    const uint32_t negotiated = challenge_flags_ & af;
    res.negotiate_flags = negotiated;

    // Anonymous (MS-NLMP 3.2.5.1.2): no user, no NT response, LM empty or one zero byte.
    if (user.empty() && nt.empty() && (lm.empty() || (lm.size() == 1 && lm[0] == std::byte{0}))) {
        res.is_anonymous = true;
        res.negotiate_flags |= ntlm_flags::kAnonymous;
        return res;
    }
    // NTLMv1 (24-byte response) and LM-only logons are refused; an NTLMv2 response is at least
    // NTProofStr(16) + the 28-byte fixed part of NTLMv2_CLIENT_CHALLENGE + an AV_PAIR EOL.
    if (nt.size() < 48)
        return refuse(nt.size() == 24 ? "NTLMv1 response refused (only NTLMv2 is accepted)"
                      : nt.empty()    ? "LM-only response refused (only NTLMv2 is accepted)"
                                      : "NT response too short for NTLMv2 (" +
                                         std::to_string(nt.size()) + " bytes)");

    Bytes proof = nt.first(16);
    Bytes temp = nt.subspan(16);
    // The NTLMv2_CLIENT_CHALLENGE must parse before anything is checked against it: a
    // malformed one is STATUS_INVALID_PARAMETER, as Samba answers (its bug 14932; smbtorture
    // smb2.session.ntlmssp_bug14932), not a logon failure.
    auto pairs = parse_av_pairs(temp.subspan(28));
    if (!pairs) {
        failure_ = "NTLMv2 client challenge with malformed AV pairs";
        return Error(NtStatus::InvalidParameter);
    }

    std::optional<NtHash> hash = lookup_ ? lookup_(res.user) : std::nullopt;
    if (!hash) return refuse("unknown user or user without NTLM password");

    if (temp[0] != std::byte{1} || temp[1] != std::byte{1})
        return refuse("NTLMv2 client challenge has an unknown version");
    ByteVector user16 = unicode ? ByteVector(user.begin(), user.end()) : latin1_to_utf16(user);
    ByteVector domain16 =
        unicode ? ByteVector(domain.begin(), domain.end()) : latin1_to_utf16(domain);

    // MS-NLMP 3.3.2 with the domain as sent, then (3.2.5.1.2) with an empty domain.
    std::optional<Digest16> key;
    for (int attempt = 0; attempt < 2 && !key; ++attempt) {
        if (attempt == 1 && domain16.empty()) break;
        Digest16 k =
            ntowfv2_wire(*hash, bytes_of(user16), attempt == 0 ? bytes_of(domain16) : Bytes{});
        Digest16 expect = hmac_md5(bytes_of(k), {bytes_of(server_challenge_), temp});
        if (constant_time_equal(bytes_of(expect), proof)) key = k;
    }
    if (!key) return refuse("wrong password");

    // KeyExchangeKey = SessionBaseKey for NTLMv2.
    Digest16 session_base_key = hmac_md5(bytes_of(*key), {proof});
    Digest16 exported = session_base_key;
    if (negotiated & ntlm_flags::kKeyExch) {
        if (ersk.size() != 16) return refuse("encrypted session key of the wrong size");
        Rc4 rc4(bytes_of(session_base_key));
        std::memcpy(exported.data(), ersk.data(), 16);
        rc4.process(exported);
    }

    // MIC (MS-NLMP 3.2.5.1.2): present when the client's AV pairs carry MsvAvFlags bit 0x2.
    uint32_t av_flags = 0;
    for (const auto& p : *pairs)
        if (p.id == ntlm_av::kFlags && p.value.size() == 4)
            av_flags = protocol::load_le32(p.value.data());
    if (av_flags & ntlm_av::kFlagMicPresent) {
        if (msg.size() < kAuthenticateHeaderSize) return refuse("MIC flagged but missing");
        ByteVector copy(msg.begin(), msg.end());
        std::memset(copy.data() + kMicOffset, 0, 16);
        Digest16 mic = hmac_md5(bytes_of(exported), {bytes_of(negotiate_msg_),
                                                     bytes_of(challenge_msg_), bytes_of(copy)});
        if (!constant_time_equal(bytes_of(mic), msg.subspan(kMicOffset, 16)))
            return refuse("MIC mismatch (message modified)");
        res.mic_present = true;
    }

    res.session_key = exported;
    res.security = NtlmSessionSecurity::derive(bytes_of(exported), negotiated);
    security_ = res.security;
    return res;
}

ByteVector NtlmServer::mech_list_mic_sign(Bytes mech_types_der) const {
    if (!security_.valid) return {};
    auto m = security_.mac(false, mech_types_der, 0);
    return ByteVector(m.begin(), m.end());
}

bool NtlmServer::mech_list_mic_verify(Bytes mech_types_der, Bytes mic) const {
    if (!security_.valid) return false;
    auto m = security_.mac(true, mech_types_der, 0);
    return constant_time_equal(bytes_of(m), mic);
}

// ---- client --------------------------------------------------------------------------------

NtlmCredentials NtlmCredentials::with_password(std::string user, std::string_view password,
                                               std::string domain, std::string workstation) {
    return with_hash(std::move(user), nt_hash_of_password(password), std::move(domain),
                     std::move(workstation));
}

NtlmCredentials NtlmCredentials::with_hash(std::string user, const NtHash& hash, std::string domain,
                                           std::string workstation) {
    NtlmCredentials c;
    c.user = std::move(user);
    c.domain = std::move(domain);
    c.workstation = std::move(workstation);
    c.nt_hash = hash;
    return c;
}

NtlmClient::NtlmClient(NtlmCredentials creds) : creds_(std::move(creds)) {}

ByteVector NtlmClient::negotiate() {
    using namespace ntlm_flags;
    flags_ = kUnicode | kRequestTarget | kSign | kNtlm | kAlwaysSign | kExtendedSessionSecurity |
             kVersion | k128 | kKeyExch | k56;
    ByteVector out;
    ByteWriter w(out);
    w.bytes(protocol::as_bytes(kSignature, 8));
    w.u32(kNegotiateType);
    w.u32(flags_);
    w.zeros(8);  // DomainNameFields
    w.zeros(8);  // WorkstationFields
    w.bytes(protocol::as_bytes(kVersionBytes, 8));
    negotiate_msg_ = out;
    return out;
}

Result<ByteVector> NtlmClient::authenticate(Bytes chal) {
    using namespace ntlm_flags;
    DAX_CHECK(check_header(chal, kChallengeType));
    if (chal.size() < 48 || negotiate_msg_.empty()) return Error(NtStatus::InvalidParameter);
    const uint32_t sf = protocol::load_le32(chal.data() + 20);
    Bytes server_challenge = chal.subspan(24, 8);
    DAX_TRY(Bytes target_info, read_field(chal, 40));
    flags_ = (flags_ & sf) | kUnicode;
    const bool anonymous = creds_.user.empty();

    ByteVector user16 = protocol::utf8_to_utf16le(creds_.user);
    ByteVector domain16 = protocol::utf8_to_utf16le(creds_.domain);
    ByteVector ws16 = protocol::utf8_to_utf16le(creds_.workstation);
    ByteVector lm, nt, ersk;
    std::array<std::byte, 16> exported{};
    bool with_mic = false;

    if (anonymous) {
        flags_ |= kAnonymous;
        lm.assign(1, std::byte{0});
    } else {
        DAX_TRY(auto pairs, parse_av_pairs(target_info));
        uint64_t timestamp = 0;
        bool have_timestamp = false;
        uint32_t av_flags = ntlm_av::kFlagMicPresent;
        ByteVector av;
        ByteWriter aw(av);
        for (const auto& p : pairs) {
            if (p.id == ntlm_av::kTimestamp && p.value.size() == 8) {
                timestamp = protocol::load_le64(p.value.data());
                have_timestamp = true;
            }
            if (p.id == ntlm_av::kFlags && p.value.size() == 4) {
                av_flags |= protocol::load_le32(p.value.data());
                continue;
            }
            put_av(aw, p.id, p.value);
        }
        std::byte fl[4];
        protocol::store_le32(fl, av_flags);
        put_av(aw, ntlm_av::kFlags, Bytes(fl, 4));
        put_av(aw, ntlm_av::kEol, {});
        with_mic = true;
        if (!have_timestamp) timestamp = filetime_now();

        std::array<std::byte, 8> cc;
        if (fixed_cc_)
            cc = *fixed_cc_;
        else
            random_bytes(cc);
        // NTLMv2_CLIENT_CHALLENGE (MS-NLMP 2.2.2.7) followed by 4 zero bytes (3.3.2 "temp").
        ByteVector temp;
        ByteWriter tw(temp);
        tw.u8(1);
        tw.u8(1);
        tw.zeros(6);
        tw.u64(timestamp);
        tw.bytes(bytes_of(cc));
        tw.zeros(4);
        tw.bytes(bytes_of(av));
        tw.zeros(4);

        Digest16 key = ntowfv2_wire(creds_.nt_hash, bytes_of(user16), bytes_of(domain16));
        Digest16 proof = hmac_md5(bytes_of(key), {server_challenge, bytes_of(temp)});
        nt.assign(proof.begin(), proof.end());
        nt.insert(nt.end(), temp.begin(), temp.end());
        if (have_timestamp) {
            lm.assign(24, std::byte{0});  // MS-NLMP 3.1.5.1.2: Z(24) when the server sent a time
        } else {
            Digest16 lmv2 = hmac_md5(bytes_of(key), {server_challenge, bytes_of(cc)});
            lm.assign(lmv2.begin(), lmv2.end());
            lm.insert(lm.end(), cc.begin(), cc.end());
        }
        Digest16 session_base_key = hmac_md5(bytes_of(key), {bytes_of(proof)});
        exported = session_base_key;
        if (flags_ & kKeyExch) {
            if (fixed_key_)
                exported = *fixed_key_;
            else
                random_bytes(exported);
            Rc4 rc4(bytes_of(session_base_key));
            ersk = rc4.process_copy(bytes_of(exported));
        }
    }

    ByteVector out;
    ByteWriter w(out);
    w.bytes(protocol::as_bytes(kSignature, 8));
    w.u32(kAuthenticateType);
    size_t lm_f = reserve_field(w);
    size_t nt_f = reserve_field(w);
    size_t dom_f = reserve_field(w);
    size_t user_f = reserve_field(w);
    size_t ws_f = reserve_field(w);
    size_t key_f = reserve_field(w);
    w.u32(flags_);
    w.bytes(protocol::as_bytes(kVersionBytes, 8));
    w.zeros(16);  // MIC, patched below
    put_payload(w, dom_f, bytes_of(domain16));
    put_payload(w, user_f, bytes_of(user16));
    put_payload(w, ws_f, bytes_of(ws16));
    put_payload(w, lm_f, bytes_of(lm));
    put_payload(w, nt_f, bytes_of(nt));
    put_payload(w, key_f, bytes_of(ersk));
    if (with_mic) {
        Digest16 mic =
            hmac_md5(bytes_of(exported), {bytes_of(negotiate_msg_), chal, bytes_of(out)});
        std::memcpy(out.data() + kMicOffset, mic.data(), 16);
    }
    session_key_ = exported;
    security_ =
        anonymous ? NtlmSessionSecurity{} : NtlmSessionSecurity::derive(bytes_of(exported), flags_);
    return out;
}

ByteVector NtlmClient::mech_list_mic_sign(Bytes mech_types_der) const {
    if (!security_.valid) return {};
    auto m = security_.mac(true, mech_types_der, 0);
    return ByteVector(m.begin(), m.end());
}

bool NtlmClient::mech_list_mic_verify(Bytes mech_types_der, Bytes mic) const {
    if (!security_.valid) return false;
    auto m = security_.mac(false, mech_types_der, 0);
    return constant_time_equal(bytes_of(m), mic);
}

}  // namespace daxsmbd::auth
