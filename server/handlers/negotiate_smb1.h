// The SMB1 multi-protocol NEGOTIATE that opens a connection from older Windows/Samba clients
// (MS-SMB2 3.3.5.3.1): answered with an SMB2 NEGOTIATE response.
#pragma once

#include "protocol/bytes.h"

namespace daxsmbd::server {

class ConnectionState;

// The full SMB2 response message to send, or an error when the request lists no SMB2 dialect
// (the connection is then closed).
Result<protocol::ByteVector> handle_smb1_negotiate(ConnectionState& conn, protocol::Bytes smb1_msg);

}  // namespace daxsmbd::server
