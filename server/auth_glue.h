// Builds the authentication pieces the SMB handlers need from the server's configuration: the
// SPNEGO blob of the NEGOTIATE response and one acceptor per SESSION_SETUP exchange.
#pragma once

#include <memory>

#include "auth/spnego.h"
#include "protocol/bytes.h"

namespace daxsmbd::server {

class Server;

protocol::ByteVector negotiate_security_blob(Server& server);
std::unique_ptr<auth::SpnegoAcceptor> make_acceptor(Server& server);

}  // namespace daxsmbd::server
