// A named pipe on IPC$ (srvsvc today): the server side of one DCE/RPC association, fed by
// WRITE/IOCTL(FSCTL_PIPE_TRANSCEIVE) and drained by READ. No sockets or threads: the handlers
// call it on their connection's loop.
#pragma once

#include <memory>
#include <string_view>

#include "protocol/bytes.h"

namespace daxsmbd::server {
class Server;
}

namespace daxsmbd::server::rpcpipe {

class PipeEndpoint {
public:
    virtual ~PipeEndpoint() = default;
    // Consumes client PDUs (bind, request, ...). Malformed input: STATUS_INVALID_PARAMETER.
    virtual Status write(protocol::Bytes data) = 0;
    // Bytes of server output waiting to be read.
    virtual size_t pending() const = 0;
    // Up to `max` bytes of pending output (a READ on the pipe; the handler answers
    // STATUS_BUFFER_OVERFLOW when pending() was larger than `max`).
    virtual protocol::ByteVector read(size_t max) = 0;
    // FSCTL_PIPE_TRANSCEIVE: write `in`, then read up to `max_out` bytes of the reply.
    virtual Result<protocol::ByteVector> transceive(protocol::Bytes in, size_t max_out) = 0;
    virtual std::string_view name() const = 0;
};

// The endpoint for a pipe name as a client opens it on IPC$ ("srvsvc", "\\srvsvc",
// case-insensitive); nullptr for pipes this server does not offer.
std::unique_ptr<PipeEndpoint> make_pipe_endpoint(Server& server, std::string_view pipe_name);

}  // namespace daxsmbd::server::rpcpipe
