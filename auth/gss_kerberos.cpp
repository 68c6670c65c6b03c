#include "auth/gss_kerberos.h"

#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <krb5/krb5.h>
#include <openssl/crypto.h>

#include <cstring>

namespace daxsmbd::auth {

namespace {

std::string display_status(OM_uint32 code, int type) {
    std::string out;
    OM_uint32 ctx = 0;
    do {
        OM_uint32 minor = 0;
        gss_buffer_desc msg = GSS_C_EMPTY_BUFFER;
        if (GSS_ERROR(gss_display_status(&minor, code, type, gss_mech_krb5, &ctx, &msg))) break;
        if (!out.empty()) out += "; ";
        out.append(static_cast<const char*>(msg.value), msg.length);
        gss_release_buffer(&minor, &msg);
    } while (ctx != 0);
    return out;
}

std::string display_name(gss_name_t name) {
    OM_uint32 minor = 0;
    gss_buffer_desc buf = GSS_C_EMPTY_BUFFER;
    if (GSS_ERROR(gss_display_name(&minor, name, &buf, nullptr))) return {};
    std::string s(static_cast<const char*>(buf.value), buf.length);
    gss_release_buffer(&minor, &buf);
    return s;
}

gss_buffer_desc buffer_of(Bytes b) {
    gss_buffer_desc d;
    d.length = b.size();
    d.value = const_cast<std::byte*>(b.data());
    return d;
}

ByteVector bytes_of_buffer(const gss_buffer_desc& b) {
    const auto* p = static_cast<const std::byte*>(b.value);
    return ByteVector(p, p + b.length);
}

}  // namespace

std::string gss_error_text(OM_uint32 major, OM_uint32 minor) {
    std::string s = display_status(major, GSS_C_GSS_CODE);
    if (minor != 0) s += " (" + display_status(minor, GSS_C_MECH_CODE) + ")";
    return s;
}

// ---- credentials ----------------------------------------------------------------------------

std::shared_ptr<KerberosCredentials> KerberosCredentials::acquire(const std::string& keytab,
                                                                  std::string* error) {
    std::shared_ptr<KerberosCredentials> c(new KerberosCredentials());
    c->keytab_ = keytab;
    // The keytab is named in the credential store (MIT gss_acquire_cred_from) rather than through
    // KRB5_KTNAME, so the process environment and the system keytab play no part.
    gss_key_value_element_desc element{"keytab", keytab.c_str()};
    gss_key_value_set_desc store{1, &element};
    gss_OID_desc krb5 = *gss_mech_krb5;
    gss_OID_set_desc mechs{1, &krb5};
    OM_uint32 minor = 0;
    OM_uint32 major = gss_acquire_cred_from(&minor, GSS_C_NO_NAME, GSS_C_INDEFINITE, &mechs,
                                            GSS_C_ACCEPT, &store, &c->cred_, nullptr, nullptr);
    if (GSS_ERROR(major)) {
        if (error) *error = "keytab " + keytab + ": " + gss_error_text(major, minor);
        return nullptr;
    }
    return c;
}

KerberosCredentials::~KerberosCredentials() {
    OM_uint32 minor = 0;
    if (cred_ != GSS_C_NO_CREDENTIAL) gss_release_cred(&minor, &cred_);
}

// ---- mechanism ------------------------------------------------------------------------------

GssKerberosMechanism::GssKerberosMechanism(std::shared_ptr<const KerberosCredentials> creds,
                                           PrincipalMapper mapper)
    : creds_(std::move(creds)), mapper_(std::move(mapper)) {}

GssKerberosMechanism::~GssKerberosMechanism() {
    OM_uint32 minor = 0;
    if (ctx_ != GSS_C_NO_CONTEXT) gss_delete_sec_context(&minor, &ctx_, GSS_C_NO_BUFFER);
    // The key is a credential: do not leave it in freed memory.
    if (!session_key_.empty()) OPENSSL_cleanse(session_key_.data(), session_key_.size());
}

bool GssKerberosMechanism::accepts_raw(Bytes token) const {
    // RFC 2743 3.1: [APPLICATION 0] { thisMech OID, innerContextToken }.
    auto outer = der::read_tlv(token);
    if (!outer || outer->tag != der::kApplication0) return false;
    auto mech = der::read_tlv(outer->value);
    if (!mech || mech->tag != der::kOid) return false;
    const Oid o = Oid::from_contents(mech->value);
    return accepts(o);
}

Error GssKerberosMechanism::fail(NtStatus status, std::string reason) {
    failure_ = std::move(reason);
    return Error(status);
}

std::string GssKerberosMechanism::domain_name() const {
    const size_t at = principal_.rfind('@');
    return at == std::string::npos ? std::string() : principal_.substr(at + 1);
}

Result<MechStep> GssKerberosMechanism::step(Bytes token) {
    if (complete_ || !creds_) return fail(NtStatus::InvalidParameter, "unexpected token");
    gss_buffer_desc in = buffer_of(token);
    gss_buffer_desc out = GSS_C_EMPTY_BUFFER;
    gss_name_t src = GSS_C_NO_NAME;
    gss_OID mech = GSS_C_NO_OID;
    OM_uint32 flags = 0;
    gss_cred_id_t delegated = GSS_C_NO_CREDENTIAL;
    OM_uint32 minor = 0;
    const OM_uint32 major =
        gss_accept_sec_context(&minor, &ctx_, creds_->handle(), &in, GSS_C_NO_CHANNEL_BINDINGS,
                               &src, &mech, &out, &flags, nullptr, &delegated);
    OM_uint32 ignored = 0;
    // Delegated credentials are not used (no onward authentication from the file server).
    if (delegated != GSS_C_NO_CREDENTIAL) gss_release_cred(&ignored, &delegated);
    ByteVector reply = bytes_of_buffer(out);
    gss_release_buffer(&ignored, &out);
    if (src != GSS_C_NO_NAME) {
        principal_ = display_name(src);
        gss_release_name(&ignored, &src);
    }
    if (GSS_ERROR(major)) {
        // A token GSS cannot even parse is bad input; every other failure is a refused logon.
        // Any KRB-ERROR token GSS produced is not sent: SMB2 reports the NTSTATUS instead.
        const NtStatus st = GSS_ROUTINE_ERROR(major) == GSS_S_DEFECTIVE_TOKEN &&
                                    minor != uint32_t(KRB5KRB_AP_ERR_BAD_INTEGRITY)
                                ? NtStatus::InvalidParameter
                                : NtStatus::LogonFailure;
        return fail(st, "Kerberos: " + gss_error_text(major, minor));
    }
    if (major & GSS_S_CONTINUE_NEEDED) return MechStep{std::move(reply), false};

    complete_ = true;
    // The ticket must be for the file service: a keytab often also holds host/ or nfs/ keys,
    // and a ticket for those services must not open an SMB session.
    gss_name_t target = GSS_C_NO_NAME;
    if (GSS_ERROR(gss_inquire_context(&ignored, ctx_, nullptr, &target, nullptr, nullptr, nullptr,
                                      nullptr, nullptr)))
        return fail(NtStatus::LogonFailure, "Kerberos: cannot inquire the accepted context");
    const std::string service = display_name(target);
    gss_release_name(&ignored, &target);
    if (service.rfind("cifs/", 0) != 0)
        return fail(NtStatus::LogonFailure,
                    "Kerberos: ticket for " + service + " is not for the cifs service");

    gss_buffer_set_t keys = GSS_C_NO_BUFFER_SET;
    const OM_uint32 kmajor =
        gss_inquire_sec_context_by_oid(&minor, ctx_, GSS_C_INQ_SSPI_SESSION_KEY, &keys);
    if (GSS_ERROR(kmajor) || keys == GSS_C_NO_BUFFER_SET || keys->count < 1 ||
        keys->elements[0].length == 0) {
        if (keys != GSS_C_NO_BUFFER_SET) gss_release_buffer_set(&ignored, &keys);
        return fail(NtStatus::LogonFailure,
                    "Kerberos: no session key: " + gss_error_text(kmajor, minor));
    }
    session_key_ = bytes_of_buffer(keys->elements[0]);
    gss_release_buffer_set(&ignored, &keys);

    std::string why;
    auto user = mapper_ ? mapper_(principal_, &why) : std::nullopt;
    if (!user || user->empty())
        return fail(NtStatus::LogonFailure,
                    "Kerberos: principal " + principal_ + ": " +
                        (why.empty() ? std::string("maps to no local user") : why));
    local_user_ = std::move(*user);
    return MechStep{std::move(reply), true};
}

ByteVector GssKerberosMechanism::get_mic(Bytes message) {
    if (!complete_) return {};
    gss_buffer_desc msg = buffer_of(message);
    gss_buffer_desc mic = GSS_C_EMPTY_BUFFER;
    OM_uint32 minor = 0;
    if (GSS_ERROR(gss_get_mic(&minor, ctx_, GSS_C_QOP_DEFAULT, &msg, &mic))) return {};
    ByteVector out = bytes_of_buffer(mic);
    gss_release_buffer(&minor, &mic);
    return out;
}

bool GssKerberosMechanism::verify_mic(Bytes message, Bytes mic) {
    if (!complete_) return false;
    gss_buffer_desc msg = buffer_of(message);
    gss_buffer_desc tok = buffer_of(mic);
    OM_uint32 minor = 0;
    gss_qop_t qop = 0;
    return !GSS_ERROR(gss_verify_mic(&minor, ctx_, &msg, &tok, &qop));
}

}  // namespace daxsmbd::auth
