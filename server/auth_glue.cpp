#include "server/auth_glue.h"

#include "auth/userdb.h"
#include "server/server.h"

namespace daxsmbd::server {

protocol::ByteVector negotiate_security_blob(Server&) {
    // Mechanisms this server accepts, in preference order (Kerberos joins with the security
    // issue).
    return auth::SpnegoAcceptor::negotiate_token({auth::oid::ntlmssp()});
}

std::unique_ptr<auth::SpnegoAcceptor> make_acceptor(Server& server) {
    auth::ServerIdentity id;
    id.netbios_name = server.netbios_name();
    id.netbios_domain = server.config().global.workgroup;
    id.dns_name = id.netbios_name;
    for (auto& c : id.dns_name)
        c = char(tolower(uint8_t(c)));
    id.dns_domain = "";
    auto lookup = [&server](std::string_view user) -> std::optional<auth::NtHash> {
        auto rec = server.find_user(user);
        if (!rec) return std::nullopt;
        return rec->nt_hash;
    };
    std::vector<std::unique_ptr<auth::AcceptorMechanism>> mechs;
    mechs.push_back(std::make_unique<auth::NtlmMechanism>(std::move(id), std::move(lookup)));
    return std::make_unique<auth::SpnegoAcceptor>(std::move(mechs));
}

}  // namespace daxsmbd::server
