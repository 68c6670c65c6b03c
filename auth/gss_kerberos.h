// Kerberos 5 as an SPNEGO acceptor mechanism through MIT GSS-API (RFC 4121 over RFC 4120): the
// AP-REQ in the client's mechToken is accepted with the keys of a keytab, the AP-REP (mutual
// authentication) goes back as the responseToken, the session key is the one GSS reports
// (GSS_C_INQ_SSPI_SESSION_KEY: the acceptor subkey when there is one, as MS-KILE 3.1.1.2 wants),
// and the client principal is mapped to a local user. The mechanism accepts both Kerberos OIDs
// (1.2.840.113554.1.2.2 and Microsoft's 1.2.840.48018.1.2.2, MS-SPNG 3.2.5).
#pragma once

#include <gssapi/gssapi.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "auth/spnego.h"

namespace daxsmbd::auth {

// Acceptor credentials: every key of one keytab (any principal in it may be the target, as with
// GSS_C_NO_NAME; the mechanism then requires the "cifs" service). One set is shared by all
// exchanges: MIT locks a credential internally, and it re-reads the keytab on every accept, so
// a rotated keytab is picked up without a restart.
class KerberosCredentials {
  public:
    // Fails with a readable message when the keytab is missing, unreadable or empty.
    static std::shared_ptr<KerberosCredentials> acquire(const std::string& keytab,
                                                        std::string* error);
    ~KerberosCredentials();
    KerberosCredentials(const KerberosCredentials&) = delete;
    KerberosCredentials& operator=(const KerberosCredentials&) = delete;

    gss_cred_id_t handle() const { return cred_; }
    const std::string& keytab() const { return keytab_; }

  private:
    KerberosCredentials() = default;
    gss_cred_id_t cred_ = GSS_C_NO_CREDENTIAL;
    std::string keytab_;
};

// Maps an authenticated client principal ("user@REALM") to the local user it logs on as;
// nullopt refuses the logon (unmapped principal, or no such user in the user database), with
// the reason in *why.
using PrincipalMapper =
    std::function<std::optional<std::string>(std::string_view principal, std::string* why)>;

class GssKerberosMechanism final : public AcceptorMechanism {
  public:
    GssKerberosMechanism(std::shared_ptr<const KerberosCredentials> creds, PrincipalMapper mapper);
    ~GssKerberosMechanism() override;

    Oid oid() const override { return oid::krb5(); }
    bool accepts(const Oid& o) const override { return o == oid::krb5() || o == oid::ms_krb5(); }
    // A GSS initial context token (RFC 2743 3.1) whose mechanism is one of the Kerberos OIDs.
    bool accepts_raw(Bytes token) const override;
    // GSS_Accept_sec_context. Failures: a malformed token STATUS_INVALID_PARAMETER, every
    // Kerberos refusal (bad or expired ticket, unknown key, wrong service, unmapped principal)
    // STATUS_LOGON_FAILURE; failure_reason() says which.
    Result<MechStep> step(Bytes token) override;

    ByteVector session_key() const override { return session_key_; }
    std::string user_name() const override { return local_user_; }
    std::string domain_name() const override;  // the client's realm
    ByteVector get_mic(Bytes message) override;
    bool verify_mic(Bytes message, Bytes mic) override;
    std::string failure_reason() const override { return failure_; }
    std::string attempted_user() const override { return principal_; }

    // The authenticated client principal, e.g. "alice@EXAMPLE.COM".
    const std::string& principal() const { return principal_; }

  private:
    Error fail(NtStatus status, std::string reason);

    std::shared_ptr<const KerberosCredentials> creds_;
    PrincipalMapper mapper_;
    gss_ctx_id_t ctx_ = GSS_C_NO_CONTEXT;
    bool complete_ = false;
    std::string principal_;
    std::string local_user_;
    ByteVector session_key_;
    std::string failure_;
};

// "major: text; minor: text" for a GSS status pair (for logs).
std::string gss_error_text(OM_uint32 major, OM_uint32 minor);

}  // namespace daxsmbd::auth
