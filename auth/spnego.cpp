#include "auth/spnego.h"

#include <cstring>
#include <utility>

namespace daxsmbd::auth {

// ---- DER -----------------------------------------------------------------------------------

namespace der {

Result<Tlv> read_tlv(Bytes in) {
    if (in.size() < 2) return Error(NtStatus::InvalidParameter);
    const uint8_t tag = uint8_t(in[0]);
    if ((tag & 0x1F) == 0x1F) return Error(NtStatus::InvalidParameter);  // multi-byte tag
    size_t pos = 1;
    const uint8_t first = uint8_t(in[pos++]);
    size_t len = 0;
    if (first < 0x80) {
        len = first;
    } else {
        const size_t n = first & 0x7F;
        if (n == 0 || n > 4) return Error(NtStatus::InvalidParameter);  // indefinite / too long
        if (in.size() - pos < n) return Error(NtStatus::InvalidParameter);
        for (size_t i = 0; i < n; ++i)
            len = (len << 8) | uint8_t(in[pos++]);
    }
    if (len > in.size() - pos) return Error(NtStatus::InvalidParameter);
    Tlv t;
    t.tag = tag;
    t.value = in.subspan(pos, len);
    t.encoding = in.first(pos + len);
    return t;
}

Result<Tlv> Reader::next() {
    DAX_TRY(Tlv t, read_tlv(rest_));
    rest_ = rest_.subspan(t.encoding.size());
    return t;
}

Result<Tlv> Reader::expect(uint8_t tag) {
    DAX_TRY(Tlv t, next());
    if (t.tag != tag) return Error(NtStatus::InvalidParameter);
    return t;
}

void append_length(ByteVector& out, size_t len) {
    if (len < 0x80) {
        out.push_back(std::byte(len));
        return;
    }
    int n = 0;
    for (size_t v = len; v; v >>= 8)
        ++n;
    out.push_back(std::byte(0x80 | n));
    for (int i = n - 1; i >= 0; --i)
        out.push_back(std::byte(len >> (8 * i)));
}

void append_tlv(ByteVector& out, uint8_t tag, Bytes content) {
    out.push_back(std::byte(tag));
    append_length(out, content.size());
    out.insert(out.end(), content.begin(), content.end());
}

ByteVector tlv(uint8_t tag, Bytes content) {
    ByteVector out;
    out.reserve(content.size() + 6);
    append_tlv(out, tag, content);
    return out;
}

}  // namespace der

// ---- OIDs ----------------------------------------------------------------------------------

Oid::Oid(std::initializer_list<uint8_t> c) {
    for (uint8_t b : c)
        v_.push_back(std::byte(b));
}

std::string Oid::to_string() const {
    std::string out;
    uint64_t acc = 0;
    bool first = true;
    for (std::byte b : v_) {
        acc = (acc << 7) | (uint8_t(b) & 0x7F);
        if (uint8_t(b) & 0x80) continue;
        if (first) {
            uint64_t a = acc < 80 ? acc / 40 : 2;
            out = std::to_string(a) + "." + std::to_string(acc - a * 40);
            first = false;
        } else {
            out += "." + std::to_string(acc);
        }
        acc = 0;
    }
    return out;
}

namespace oid {
const Oid& spnego() {
    static const Oid o{0x2b, 0x06, 0x01, 0x05, 0x05, 0x02};
    return o;
}
const Oid& krb5() {
    static const Oid o{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02};
    return o;
}
const Oid& ms_krb5() {
    static const Oid o{0x2a, 0x86, 0x48, 0x82, 0xf7, 0x12, 0x01, 0x02, 0x02};
    return o;
}
const Oid& krb5_user_to_user() {
    static const Oid o{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x03};
    return o;
}
const Oid& ntlmssp() {
    static const Oid o{0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a};
    return o;
}
const Oid& negoex() {
    static const Oid o{0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x1e};
    return o;
}
}  // namespace oid

// ---- tokens --------------------------------------------------------------------------------

namespace {

// Bounds an attacker-supplied mechTypes list; real clients send at most a handful.
constexpr size_t kMaxMechTypes = 32;

Result<std::vector<Oid>> parse_mech_type_list(Bytes seq_value) {
    std::vector<Oid> out;
    der::Reader r(seq_value);
    while (!r.empty()) {
        DAX_TRY(der::Tlv o, r.expect(der::kOid));
        if (o.value.empty() || out.size() >= kMaxMechTypes)
            return Error(NtStatus::InvalidParameter);
        out.push_back(Oid::from_contents(o.value));
    }
    return out;
}

// Strips the GSS initial-context-token wrapper (RFC 2743 3.1) when present and checks the
// SPNEGO OID; returns the inner token.
Result<Bytes> unwrap_initial(Bytes token, Oid* this_mech) {
    DAX_TRY(der::Tlv outer, der::read_tlv(token));
    if (outer.tag != der::kApplication0) return token;
    der::Reader r(outer.value);
    DAX_TRY(der::Tlv o, r.expect(der::kOid));
    *this_mech = Oid::from_contents(o.value);
    return outer.value.subspan(o.encoding.size());
}

}  // namespace

ByteVector encode_mech_type_list(const std::vector<Oid>& mech_types) {
    ByteVector oids;
    for (const Oid& o : mech_types)
        der::append_tlv(oids, der::kOid, o.contents());
    return der::tlv(der::kSequence, bytes_of(oids));
}

Result<NegTokenInit> parse_neg_token_init(Bytes token) {
    Oid this_mech;
    DAX_TRY(Bytes inner, unwrap_initial(token, &this_mech));
    if (!this_mech.empty() && this_mech != oid::spnego()) return Error(NtStatus::InvalidParameter);
    DAX_TRY(der::Tlv choice, der::read_tlv(inner));
    if (choice.tag != der::context(0)) return Error(NtStatus::InvalidParameter);
    der::Reader outer(choice.value);
    DAX_TRY(der::Tlv seq, outer.expect(der::kSequence));
    NegTokenInit init;
    bool have_mech_types = false;
    int last = -1;
    der::Reader r(seq.value);
    while (!r.empty()) {
        DAX_TRY(der::Tlv field, r.next());
        if ((field.tag & 0xE0) != 0xA0) return Error(NtStatus::InvalidParameter);
        const int n = field.tag & 0x1F;
        if (n <= last) return Error(NtStatus::InvalidParameter);  // DER: fields in tag order
        last = n;
        der::Reader fr(field.value);
        switch (n) {
            case 0: {
                DAX_TRY(der::Tlv list, fr.expect(der::kSequence));
                DAX_TRY(init.mech_types, parse_mech_type_list(list.value));
                init.mech_types_der = list.encoding;
                have_mech_types = true;
                break;
            }
            case 1:  // reqFlags: ignored (RFC 4178 4.2.1)
                break;
            case 2: {
                DAX_TRY(der::Tlv t, fr.expect(der::kOctetString));
                init.mech_token = t.value;
                break;
            }
            case 3: {
                // NegTokenInit: mechListMIC; NegTokenInit2: negHints (a SEQUENCE, ignored).
                DAX_TRY(der::Tlv t, fr.next());
                if (t.tag == der::kOctetString)
                    init.mech_list_mic = t.value;
                else if (t.tag != der::kSequence)
                    return Error(NtStatus::InvalidParameter);
                break;
            }
            case 4: {
                DAX_TRY(der::Tlv t, fr.expect(der::kOctetString));
                init.mech_list_mic = t.value;
                break;
            }
            default:  // extensions: ignored
                break;
        }
        if (n <= 4 && n != 1 && !fr.empty()) return Error(NtStatus::InvalidParameter);
    }
    if (!have_mech_types || init.mech_types.empty()) return Error(NtStatus::InvalidParameter);
    return init;
}

ByteVector encode_neg_token_init2(const std::vector<Oid>& mech_types) {
    static constexpr char kHint[] = "not_defined_in_RFC4178@please_ignore";
    ByteVector fields;
    der::append_tlv(fields, der::context(0), bytes_of(encode_mech_type_list(mech_types)));
    ByteVector hint_name = der::tlv(
        der::context(0),
        bytes_of(der::tlv(der::kGeneralString, protocol::as_bytes(kHint, sizeof(kHint) - 1))));
    der::append_tlv(fields, der::context(3),
                    bytes_of(der::tlv(der::kSequence, bytes_of(hint_name))));
    ByteVector init =
        der::tlv(der::context(0), bytes_of(der::tlv(der::kSequence, bytes_of(fields))));
    ByteVector body = oid::spnego().encode();
    body.insert(body.end(), init.begin(), init.end());
    return der::tlv(der::kApplication0, bytes_of(body));
}

ByteVector encode_neg_token_init(const std::vector<Oid>& mech_types, Bytes mech_token,
                                 Bytes mech_list_mic) {
    ByteVector fields;
    der::append_tlv(fields, der::context(0), bytes_of(encode_mech_type_list(mech_types)));
    if (!mech_token.empty())
        der::append_tlv(fields, der::context(2), bytes_of(der::tlv(der::kOctetString, mech_token)));
    if (!mech_list_mic.empty())
        der::append_tlv(fields, der::context(3),
                        bytes_of(der::tlv(der::kOctetString, mech_list_mic)));
    ByteVector init =
        der::tlv(der::context(0), bytes_of(der::tlv(der::kSequence, bytes_of(fields))));
    ByteVector body = oid::spnego().encode();
    body.insert(body.end(), init.begin(), init.end());
    return der::tlv(der::kApplication0, bytes_of(body));
}

Result<NegTokenResp> parse_neg_token_resp(Bytes token) {
    DAX_TRY(der::Tlv choice, der::read_tlv(token));
    if (choice.tag != der::context(1)) return Error(NtStatus::InvalidParameter);
    der::Reader outer(choice.value);
    DAX_TRY(der::Tlv seq, outer.expect(der::kSequence));
    NegTokenResp resp;
    int last = -1;
    der::Reader r(seq.value);
    while (!r.empty()) {
        DAX_TRY(der::Tlv field, r.next());
        if ((field.tag & 0xE0) != 0xA0) return Error(NtStatus::InvalidParameter);
        const int n = field.tag & 0x1F;
        if (n <= last) return Error(NtStatus::InvalidParameter);
        last = n;
        der::Reader fr(field.value);
        switch (n) {
            case 0: {
                DAX_TRY(der::Tlv e, fr.expect(der::kEnumerated));
                if (e.value.size() != 1 || uint8_t(e.value[0]) > 3)
                    return Error(NtStatus::InvalidParameter);
                resp.neg_state = NegState(uint8_t(e.value[0]));
                break;
            }
            case 1: {
                DAX_TRY(der::Tlv o, fr.expect(der::kOid));
                if (o.value.empty()) return Error(NtStatus::InvalidParameter);
                resp.supported_mech = Oid::from_contents(o.value);
                break;
            }
            case 2: {
                DAX_TRY(der::Tlv t, fr.expect(der::kOctetString));
                resp.response_token = t.value;
                break;
            }
            case 3: {
                DAX_TRY(der::Tlv t, fr.expect(der::kOctetString));
                resp.mech_list_mic = t.value;
                break;
            }
            default:
                break;
        }
        if (n <= 3 && !fr.empty()) return Error(NtStatus::InvalidParameter);
    }
    if (!outer.empty()) return Error(NtStatus::InvalidParameter);
    return resp;
}

ByteVector encode_neg_token_resp(const NegTokenResp& resp) {
    ByteVector fields;
    if (resp.neg_state) {
        std::byte e{uint8_t(*resp.neg_state)};
        der::append_tlv(fields, der::context(0),
                        bytes_of(der::tlv(der::kEnumerated, Bytes(&e, 1))));
    }
    if (resp.supported_mech)
        der::append_tlv(fields, der::context(1), bytes_of(resp.supported_mech->encode()));
    if (resp.response_token)
        der::append_tlv(fields, der::context(2),
                        bytes_of(der::tlv(der::kOctetString, *resp.response_token)));
    if (resp.mech_list_mic)
        der::append_tlv(fields, der::context(3),
                        bytes_of(der::tlv(der::kOctetString, *resp.mech_list_mic)));
    return der::tlv(der::context(1), bytes_of(der::tlv(der::kSequence, bytes_of(fields))));
}

// ---- NTLM mechanism ------------------------------------------------------------------------

bool NtlmMechanism::accepts_raw(Bytes token) const {
    static constexpr char kSig[8] = {'N', 'T', 'L', 'M', 'S', 'S', 'P', '\0'};
    return token.size() >= 8 && std::memcmp(token.data(), kSig, 8) == 0;
}

Result<MechStep> NtlmMechanism::step(Bytes token) {
    ++legs_;
    if (legs_ == 1) {
        DAX_TRY(ByteVector challenge, server_.challenge(token));
        return MechStep{std::move(challenge), false};
    }
    if (legs_ == 2) {
        DAX_TRY(NtlmAuthResult r, server_.authenticate(token));
        result_ = std::move(r);
        return MechStep{{}, true};
    }
    return Error(NtStatus::InvalidParameter);
}

ByteVector NtlmMechanism::session_key() const {
    if (!result_ || result_->is_anonymous) return {};
    return ByteVector(result_->session_key.begin(), result_->session_key.end());
}

// ---- acceptor ------------------------------------------------------------------------------

SpnegoAcceptor::SpnegoAcceptor(std::vector<std::unique_ptr<AcceptorMechanism>> mechanisms)
    : mechs_(std::move(mechanisms)) {}

AcceptorStep SpnegoAcceptor::fail_state() {
    state_ = State::Failed;
    return {};
}

AcceptorStep SpnegoAcceptor::completed_result(ByteVector token) const {
    AcceptorStep s;
    s.output_token = std::move(token);
    s.done = true;
    s.user = mech_->user_name();
    s.domain = mech_->domain_name();
    s.is_anonymous = mech_->is_anonymous();
    s.session_key = mech_->session_key();
    s.mech = selected_oid_;
    return s;
}

Result<AcceptorStep> SpnegoAcceptor::step(Bytes token) {
    Result<AcceptorStep> r = Error(NtStatus::InvalidParameter);
    switch (state_) {
        case State::Start:
            r = start(token);
            break;
        case State::Raw: {
            auto ms = mech_->step(token);
            if (!ms) {
                r = Error(ms.status());
                break;
            }
            r = finish_raw(std::move(ms).value());
            break;
        }
        case State::Negotiating:
        case State::AwaitClientMic: {
            auto resp = parse_neg_token_resp(token);
            if (!resp) {
                r = Error(resp.status());
                break;
            }
            if (resp->neg_state == NegState::Reject) {
                r = Error(NtStatus::LogonFailure);
                break;
            }
            if (resp->mech_list_mic)
                client_mic_ = ByteVector(resp->mech_list_mic->begin(), resp->mech_list_mic->end());
            if (state_ == State::AwaitClientMic) {
                // The mechanism finished on the previous leg; this leg only carries the
                // client's mechListMIC (RFC 4178 5, MIC exchange after completion).
                if (!client_mic_ ||
                    !mech_->verify_mic(bytes_of(mech_types_der_), bytes_of(*client_mic_))) {
                    failure_ = client_mic_ ? "mechListMIC mismatch" : "mechListMIC missing";
                    r = Error(NtStatus::LogonFailure);
                    break;
                }
                NegTokenResp out;
                out.neg_state = NegState::AcceptCompleted;
                state_ = State::Done;
                r = completed_result(encode_neg_token_resp(out));
                break;
            }
            if (!resp->response_token) {
                r = Error(NtStatus::InvalidParameter);
                break;
            }
            r = run_mech(*resp->response_token);
            break;
        }
        case State::Done:
        case State::Failed:
            r = Error(NtStatus::InvalidParameter);
            break;
    }
    if (!r) fail_state();
    return r;
}

Result<AcceptorStep> SpnegoAcceptor::start(Bytes token) {
    if (token.empty()) return Error(NtStatus::InvalidParameter);
    // Raw mechanism tokens without SPNEGO (MS-SMB2 <292>): NTLMSSP, or a GSS initial token
    // whose mechanism OID is not SPNEGO (raw Kerberos).
    for (auto& m : mechs_) {
        if (m->accepts_raw(token)) {
            mech_ = m.get();
            selected_oid_ = m->oid();
            state_ = State::Raw;
            DAX_TRY(MechStep ms, mech_->step(token));
            return finish_raw(std::move(ms));
        }
    }
    DAX_TRY(NegTokenInit init, parse_neg_token_init(token));
    return start_spnego(init);
}

Result<AcceptorStep> SpnegoAcceptor::start_spnego(const NegTokenInit& init) {
    mech_types_der_.assign(init.mech_types_der.begin(), init.mech_types_der.end());
    if (init.mech_list_mic)
        client_mic_ = ByteVector(init.mech_list_mic->begin(), init.mech_list_mic->end());
    // The first mechanism in the client's order that we have (RFC 4178 3.2).
    for (size_t i = 0; i < init.mech_types.size() && !mech_; ++i) {
        for (auto& m : mechs_) {
            if (m->accepts(init.mech_types[i])) {
                mech_ = m.get();
                selected_oid_ = init.mech_types[i];  // echo MS-KRB5 as sent (MS-SPNG 3.2.5)
                mic_required_ = i != 0;
                break;
            }
        }
    }
    if (!mech_) {
        failure_ = "no common mechanism (client offered";
        for (const auto& o : init.mech_types)
            failure_ += " " + o.to_string();
        failure_ += ")";
        return Error(NtStatus::LogonFailure);
    }
    state_ = State::Negotiating;
    // The optimistic token only belongs to the client's first mechanism (RFC 4178 4.2.1).
    if (init.mech_token && !mic_required_) return run_mech(*init.mech_token);
    NegTokenResp out;
    out.neg_state = NegState::AcceptIncomplete;
    out.supported_mech = selected_oid_;
    first_reply_ = false;
    AcceptorStep s;
    s.output_token = encode_neg_token_resp(out);
    return s;
}

Result<AcceptorStep> SpnegoAcceptor::finish_raw(MechStep ms) {
    if (!ms.complete) {
        AcceptorStep s;
        s.output_token = std::move(ms.output_token);
        return s;
    }
    state_ = State::Done;
    return completed_result(std::move(ms.output_token));
}

Result<AcceptorStep> SpnegoAcceptor::run_mech(Bytes token) {
    DAX_TRY(MechStep ms, mech_->step(token));
    NegTokenResp out;
    if (first_reply_) out.supported_mech = selected_oid_;
    first_reply_ = false;
    if (!ms.output_token.empty()) out.response_token = bytes_of(ms.output_token);
    if (!ms.complete) {
        out.neg_state = NegState::AcceptIncomplete;
        AcceptorStep s;
        s.output_token = encode_neg_token_resp(out);
        return s;
    }
    // Context established: the mechListMIC rules (RFC 4178 5, MS-SPNG 3.2.5.1). Anonymous
    // contexts have no key to sign with; like Windows and Samba, the MIC check is skipped.
    ByteVector server_mic;
    if (!mech_->is_anonymous()) {
        const bool need_mic = mic_required_ || client_mic_ || mech_->wants_mech_list_mic();
        if (client_mic_) {
            if (!mech_->verify_mic(bytes_of(mech_types_der_), bytes_of(*client_mic_))) {
                failure_ = "mechListMIC mismatch";
                return Error(NtStatus::LogonFailure);
            }
        } else if (need_mic && ms.output_token.empty()) {
            // The client has no further leg in which to send its MIC: a MIC-capable client
            // that left it out (NTLM with MIC) or a downgraded negotiation is refused, as
            // Samba does.
            failure_ = "mechListMIC missing";
            return Error(NtStatus::LogonFailure);
        }
        if (need_mic) {
            server_mic = mech_->get_mic(bytes_of(mech_types_der_));
            if (server_mic.empty()) {
                failure_ = "cannot compute the mechListMIC";
                return Error(NtStatus::LogonFailure);
            }
            out.mech_list_mic = bytes_of(server_mic);
        }
        if (need_mic && !client_mic_) {
            // The mechanism's last token still has to reach the client; its MIC comes next.
            out.neg_state = NegState::AcceptIncomplete;
            state_ = State::AwaitClientMic;
            AcceptorStep s;
            s.output_token = encode_neg_token_resp(out);
            return s;
        }
    }
    out.neg_state = NegState::AcceptCompleted;
    state_ = State::Done;
    return completed_result(encode_neg_token_resp(out));
}

std::string SpnegoAcceptor::failure_reason() const {
    if (!failure_.empty()) return failure_;
    return mech_ ? mech_->failure_reason() : std::string();
}

// ---- client --------------------------------------------------------------------------------

SpnegoClient::SpnegoClient(NtlmCredentials creds) : ntlm_(std::move(creds)) {}

ByteVector SpnegoClient::initial_token() {
    std::vector<Oid> mechs{oid::ntlmssp()};
    mech_types_der_ = encode_mech_type_list(mechs);
    ByteVector neg = ntlm_.negotiate();
    state_ = State::SentInit;
    return encode_neg_token_init(mechs, bytes_of(neg));
}

Result<ByteVector> SpnegoClient::step(Bytes server_token) {
    DAX_TRY(NegTokenResp resp, parse_neg_token_resp(server_token));
    if (resp.neg_state == NegState::Reject) return Error(NtStatus::LogonFailure);
    switch (state_) {
        case State::SentInit: {
            if (resp.neg_state != NegState::AcceptIncomplete || !resp.response_token ||
                (resp.supported_mech && *resp.supported_mech != oid::ntlmssp()))
                return Error(NtStatus::InvalidParameter);
            DAX_TRY(ByteVector auth, ntlm_.authenticate(*resp.response_token));
            ByteVector mic;
            NegTokenResp out;
            out.neg_state = NegState::AcceptIncomplete;
            out.response_token = bytes_of(auth);
            if (send_mic_) {
                mic = ntlm_.mech_list_mic_sign(bytes_of(mech_types_der_));
                if (!mic.empty()) out.mech_list_mic = bytes_of(mic);
            }
            state_ = State::SentAuth;
            return encode_neg_token_resp(out);
        }
        case State::SentAuth: {
            if (resp.neg_state != NegState::AcceptCompleted) return Error(NtStatus::LogonFailure);
            if (resp.mech_list_mic) {
                if (!ntlm_.mech_list_mic_verify(bytes_of(mech_types_der_), *resp.mech_list_mic))
                    return Error(NtStatus::LogonFailure);
            } else if (send_mic_ && !(ntlm_.negotiated_flags() & ntlm_flags::kAnonymous)) {
                // We sent a MIC; an acceptor that understood it answers with its own.
                return Error(NtStatus::LogonFailure);
            }
            state_ = State::Done;
            return ByteVector{};
        }
        default:
            return Error(NtStatus::InvalidParameter);
    }
}

}  // namespace daxsmbd::auth
