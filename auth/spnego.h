// SPNEGO (RFC 4178 with the MS-SPNG extensions) for SESSION_SETUP: a small bounds-checked DER
// reader/writer, the NegTokenInit/NegTokenInit2/NegTokenResp codecs, the server-side
// SpnegoAcceptor that drives one session setup exchange over pluggable mechanisms (NTLM here;
// Kerberos through MIT GSS plugs into the same AcceptorMechanism interface), and a client-side
// SpnegoClient for NTLM used by daxsmbd's own test client.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth/crypto.h"
#include "auth/ntlm.h"
#include "protocol/result.h"

namespace daxsmbd::auth {

// ---- DER -----------------------------------------------------------------------------------

namespace der {

constexpr uint8_t kBoolean = 0x01;
constexpr uint8_t kBitString = 0x03;
constexpr uint8_t kOctetString = 0x04;
constexpr uint8_t kOid = 0x06;
constexpr uint8_t kEnumerated = 0x0A;
constexpr uint8_t kGeneralString = 0x1B;
constexpr uint8_t kSequence = 0x30;
constexpr uint8_t kApplication0 = 0x60;  // [APPLICATION 0] constructed (GSS initial token)
constexpr uint8_t context(uint8_t n) {
    return uint8_t(0xA0 | n);
}  // [n] constructed

struct Tlv {
    uint8_t tag = 0;
    Bytes value;     // contents
    Bytes encoding;  // tag + length + contents
};

// Reads one TLV from the start of `in`. Only single-byte tags; definite lengths in short form
// or long form of up to 4 length bytes; indefinite lengths (0x80) are refused. Every failure is
// STATUS_INVALID_PARAMETER.
Result<Tlv> read_tlv(Bytes in);

// Sequential reader over the contents of a constructed value.
class Reader {
  public:
    explicit Reader(Bytes data) : rest_(data) {}
    bool empty() const { return rest_.empty(); }
    // Tag of the next element, if any.
    std::optional<uint8_t> peek_tag() const {
        if (rest_.empty()) return std::nullopt;
        return uint8_t(rest_[0]);
    }
    Result<Tlv> next();
    // next(), failing unless the tag is `tag`.
    Result<Tlv> expect(uint8_t tag);

  private:
    Bytes rest_;
};

void append_length(ByteVector& out, size_t len);
void append_tlv(ByteVector& out, uint8_t tag, Bytes content);
ByteVector tlv(uint8_t tag, Bytes content);

}  // namespace der

// An object identifier, held as its DER contents (without tag and length).
class Oid {
  public:
    Oid() = default;
    Oid(std::initializer_list<uint8_t> der_contents);
    static Oid from_contents(Bytes contents) {
        Oid o;
        o.v_.assign(contents.begin(), contents.end());
        return o;
    }
    Bytes contents() const { return bytes_of(v_); }
    // Tag + length + contents.
    ByteVector encode() const { return der::tlv(der::kOid, contents()); }
    bool empty() const { return v_.empty(); }
    // Dotted form, e.g. "1.3.6.1.5.5.2" (for logs).
    std::string to_string() const;
    bool operator==(const Oid&) const = default;

  private:
    ByteVector v_;
};

namespace oid {
const Oid& spnego();             // 1.3.6.1.5.5.2
const Oid& krb5();               // 1.2.840.113554.1.2.2
const Oid& ms_krb5();            // 1.2.840.48018.1.2.2 (Microsoft's "wrong" Kerberos OID)
const Oid& krb5_user_to_user();  // 1.2.840.113554.1.2.2.3
const Oid& ntlmssp();            // 1.3.6.1.4.1.311.2.2.10
const Oid& negoex();             // 1.3.6.1.4.1.311.2.2.30
}  // namespace oid

// ---- SPNEGO tokens -------------------------------------------------------------------------

// NegTokenInit as sent by the client (RFC 4178 4.2.1). Views point into the parsed token.
struct NegTokenInit {
    std::vector<Oid> mech_types;
    Bytes mech_types_der;  // DER of the MechTypeList SEQUENCE: what mechListMIC covers
    std::optional<Bytes> mech_token;
    std::optional<Bytes> mech_list_mic;
};

// Parses a GSS initial context token ([APPLICATION 0] with the SPNEGO OID) carrying a
// NegTokenInit, or a bare [0] NegTokenInit. Also accepts the NegTokenInit2 layout (negHints
// at [3], mechListMIC at [4]); negHints are ignored (MS-SPNG 3.2.5).
Result<NegTokenInit> parse_neg_token_init(Bytes token);

// The server's NegTokenInit2 for the SMB2 NEGOTIATE response (MS-SPNG 2.2.1, 3.2.5.2):
// mechTypes as given, negHints.hintName "not_defined_in_RFC4178@please_ignore".
ByteVector encode_neg_token_init2(const std::vector<Oid>& mech_types);
// A client NegTokenInit wrapped in the GSS initial context token.
ByteVector encode_neg_token_init(const std::vector<Oid>& mech_types, Bytes mech_token,
                                 Bytes mech_list_mic = {});
// DER of a MechTypeList (what the mechListMIC is computed over).
ByteVector encode_mech_type_list(const std::vector<Oid>& mech_types);

enum class NegState : uint8_t {
    AcceptCompleted = 0,
    AcceptIncomplete = 1,
    Reject = 2,
    RequestMic = 3,
};

// NegTokenResp (RFC 4178 4.2.2), both directions. Views point into the parsed token (or, for
// encoding, into buffers the caller keeps alive).
struct NegTokenResp {
    std::optional<NegState> neg_state;
    std::optional<Oid> supported_mech;
    std::optional<Bytes> response_token;
    std::optional<Bytes> mech_list_mic;
};

Result<NegTokenResp> parse_neg_token_resp(Bytes token);
ByteVector encode_neg_token_resp(const NegTokenResp& resp);

// ---- acceptor ------------------------------------------------------------------------------

struct MechStep {
    ByteVector output_token;
    bool complete = false;  // GSS_S_COMPLETE (false = GSS_S_CONTINUE_NEEDED)
};

// One security mechanism instance for one authentication exchange, shaped after
// gss_accept_sec_context: step() consumes a token and returns the reply token and whether the
// context is established; afterwards the identity, key and MIC functions are valid.
class AcceptorMechanism {
  public:
    virtual ~AcceptorMechanism() = default;
    // The OID this mechanism is advertised under.
    virtual Oid oid() const = 0;
    // Whether a client mechType selects this mechanism (Kerberos accepts both KRB5 OIDs).
    virtual bool accepts(const Oid& o) const { return o == oid(); }
    // Whether a raw (non-SPNEGO) token is for this mechanism (MS-SMB2 <292>).
    virtual bool accepts_raw(Bytes token) const = 0;
    virtual Result<MechStep> step(Bytes token) = 0;

    // Valid once complete. The session key has the mechanism's full length (the SMB layer
    // takes the first 16 bytes and keeps the full key for AES-256); empty for anonymous.
    virtual ByteVector session_key() const = 0;
    virtual std::string user_name() const = 0;
    virtual std::string domain_name() const { return {}; }
    virtual bool is_anonymous() const { return false; }
    // True when this exchange obliges a mechListMIC (NTLM: the AUTHENTICATE carried a MIC).
    virtual bool wants_mech_list_mic() const { return false; }
    // GSS_GetMIC / GSS_VerifyMIC over the mechTypes DER; empty / false when not available.
    virtual ByteVector get_mic(Bytes message) = 0;
    virtual bool verify_mic(Bytes message, Bytes mic) = 0;

    // After a failed step: why (for the log line of the refused logon), and the user name the
    // client tried, as far as the mechanism got to know it (empty when it could not tell).
    virtual std::string failure_reason() const { return {}; }
    virtual std::string attempted_user() const { return {}; }
};

// NTLM through NtlmServer: NEGOTIATE -> CHALLENGE (continue), AUTHENTICATE -> done.
class NtlmMechanism final : public AcceptorMechanism {
  public:
    NtlmMechanism(ServerIdentity identity, NtHashLookup lookup)
        : server_(std::move(identity), std::move(lookup)) {}

    Oid oid() const override { return oid::ntlmssp(); }
    bool accepts_raw(Bytes token) const override;
    Result<MechStep> step(Bytes token) override;
    ByteVector session_key() const override;
    std::string user_name() const override { return result_ ? result_->user : std::string(); }
    std::string domain_name() const override { return result_ ? result_->domain : std::string(); }
    bool is_anonymous() const override { return result_ && result_->is_anonymous; }
    bool wants_mech_list_mic() const override { return result_ && result_->mic_present; }
    ByteVector get_mic(Bytes message) override { return server_.mech_list_mic_sign(message); }
    bool verify_mic(Bytes message, Bytes mic) override {
        return server_.mech_list_mic_verify(message, mic);
    }
    std::string failure_reason() const override { return server_.failure_reason(); }
    std::string attempted_user() const override { return server_.attempted_user(); }

    NtlmServer& server() { return server_; }
    const std::optional<NtlmAuthResult>& result() const { return result_; }

  private:
    NtlmServer server_;
    int legs_ = 0;
    std::optional<NtlmAuthResult> result_;
};

struct AcceptorStep {
    ByteVector output_token;  // SPNEGO-wrapped (or raw, when the client sent a raw token)
    bool done = false;        // false: STATUS_MORE_PROCESSING_REQUIRED
    // Valid when done:
    std::string user;
    std::string domain;
    ByteVector session_key;  // full length; empty for anonymous
    bool is_anonymous = false;
    Oid mech;
};

// Drives one SESSION_SETUP exchange (MS-SMB2 3.3.5.5.3, RFC 4178, MS-SPNG). Construct one per
// exchange with fresh mechanisms, in the server's order of preference.
class SpnegoAcceptor {
  public:
    explicit SpnegoAcceptor(std::vector<std::unique_ptr<AcceptorMechanism>> mechanisms);

    // The NEGOTIATE response security buffer advertising `mech_types`.
    static ByteVector negotiate_token(const std::vector<Oid>& mech_types) {
        return encode_neg_token_init2(mech_types);
    }

    // One SESSION_SETUP security buffer in, the reply buffer out. Errors: malformed tokens
    // STATUS_INVALID_PARAMETER; failed authentication, mechListMIC mismatch, or no common
    // mechanism STATUS_LOGON_FAILURE. After an error or completion the acceptor is finished.
    Result<AcceptorStep> step(Bytes security_buffer);

    bool done() const { return state_ == State::Done; }
    // After a failed step: why (SPNEGO's own reason, else the mechanism's), and the user name
    // the client tried as far as known.
    std::string failure_reason() const;
    std::string attempted_user() const { return mech_ ? mech_->attempted_user() : std::string(); }
    // The mechanism in use (after the first step), e.g. to query PAC data from Kerberos.
    AcceptorMechanism* mechanism() const { return mech_; }

  private:
    enum class State { Start, Raw, Negotiating, AwaitClientMic, Done, Failed };
    Result<AcceptorStep> start(Bytes token);
    Result<AcceptorStep> start_spnego(const NegTokenInit& init);
    Result<AcceptorStep> run_mech(Bytes token);
    Result<AcceptorStep> finish_raw(MechStep ms);
    AcceptorStep completed_result(ByteVector token) const;
    AcceptorStep fail_state();

    std::vector<std::unique_ptr<AcceptorMechanism>> mechs_;
    AcceptorMechanism* mech_ = nullptr;
    State state_ = State::Start;
    Oid selected_oid_;  // as the client spelled it (echoed in supportedMech)
    bool first_reply_ = true;
    bool mic_required_ = false;  // selected mech was not the client's first choice
    ByteVector mech_types_der_;
    std::optional<ByteVector> client_mic_;
    std::string failure_;  // SPNEGO-level reason of a failure
};

// ---- client (NTLM only, for the test client) ------------------------------------------------

class SpnegoClient {
  public:
    explicit SpnegoClient(NtlmCredentials creds);

    // NegTokenInit { mechTypes [NTLMSSP], mechToken NEGOTIATE } in the GSS wrapper.
    ByteVector initial_token();
    // Processes the server's NegTokenResp. After the CHALLENGE it returns the AUTHENTICATE
    // wrapped in a NegTokenResp with the mechListMIC; after the final accept-completed it
    // verifies the server's mechListMIC and returns an empty buffer (done() is then true).
    Result<ByteVector> step(Bytes server_token);
    bool done() const { return state_ == State::Done; }
    const std::array<std::byte, 16>& session_key() const { return ntlm_.session_key(); }
    NtlmClient& ntlm() { return ntlm_; }

    // For tests: leave out the mechListMIC.
    void set_send_mech_list_mic(bool on) { send_mic_ = on; }

  private:
    enum class State { Start, SentInit, SentAuth, Done };
    NtlmClient ntlm_;
    State state_ = State::Start;
    bool send_mic_ = true;
    ByteVector mech_types_der_;
};

}  // namespace daxsmbd::auth
