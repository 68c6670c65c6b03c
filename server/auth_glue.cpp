#include "server/auth_glue.h"

#include "auth/gss_kerberos.h"
#include "auth/userdb.h"
#include "server/server.h"

namespace daxsmbd::server {

protocol::ByteVector negotiate_security_blob(Server& server) {
    // Mechanisms this server accepts, in preference order, as Windows lists them: MS-KRB5 and
    // KRB5 first, NTLMSSP last (MS-SPNG 3.2.5.2; clients pick the first they support).
    const auto& g = server.config().global;
    std::vector<auth::Oid> mechs;
    if (g.auth_kerberos && server.kerberos_credentials()) {
        mechs.push_back(auth::oid::ms_krb5());
        mechs.push_back(auth::oid::krb5());
    }
    if (g.auth_ntlm) mechs.push_back(auth::oid::ntlmssp());
    return auth::SpnegoAcceptor::negotiate_token(mechs);
}

std::unique_ptr<auth::SpnegoAcceptor> make_acceptor(Server& server) {
    const auto& g = server.config().global;
    std::vector<std::unique_ptr<auth::AcceptorMechanism>> mechs;
    if (g.auth_kerberos && server.kerberos_credentials()) {
        // The principal's local user must be in the user database (its uid/gid), even though
        // Kerberos needs no NT hash.
        auto mapper = [&server](std::string_view principal,
                                std::string* why) -> std::optional<std::string> {
            auto user = server.config().global.kerberos_user_map.map(principal);
            if (!user) {
                *why = "not in the realm " + server.config().global.realm +
                       " and not in the kerberos user map";
                return std::nullopt;
            }
            auto rec = server.find_user(*user);
            if (!rec) {
                *why = "local user '" + *user + "' is not in the user database";
                return std::nullopt;
            }
            return rec->name;
        };
        mechs.push_back(std::make_unique<auth::GssKerberosMechanism>(server.kerberos_credentials(),
                                                                     std::move(mapper)));
    }
    if (g.auth_ntlm) {
        auth::ServerIdentity id;
        id.netbios_name = server.netbios_name();
        id.netbios_domain = g.workgroup;
        id.dns_name = id.netbios_name;
        for (auto& c : id.dns_name)
            c = char(tolower(uint8_t(c)));
        id.dns_domain = "";
        auto lookup = [&server](std::string_view user) -> std::optional<auth::NtHash> {
            auto rec = server.find_user(user);
            if (!rec) return std::nullopt;
            return rec->nt_hash;  // none for Kerberos-only users: NTLM cannot succeed
        };
        mechs.push_back(std::make_unique<auth::NtlmMechanism>(std::move(id), std::move(lookup)));
    }
    return std::make_unique<auth::SpnegoAcceptor>(std::move(mechs));
}

}  // namespace daxsmbd::server
