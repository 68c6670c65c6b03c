// A named pipe on IPC$ (srvsvc today): the server side of one DCE/RPC association, fed by
// WRITE/IOCTL(FSCTL_PIPE_TRANSCEIVE) and drained by READ. No sockets or threads: the handlers
// call it on their connection's loop.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
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

    // Message-mode details for FSCTL_PIPE_TRANSCEIVE / FSCTL_PIPE_PEEK (added by the IOCTL
    // handler's author; defaults keep other implementations valid).
    //
    // True when the message at the front has been read in part and its rest is still pending:
    // the READ or IOCTL that returned the first part answers STATUS_BUFFER_OVERFLOW
    // (MS-SMB2 3.3.5.12, 3.3.5.15.3).
    virtual bool message_continues() const { return false; }
    // FSCTL_PIPE_PEEK (MS-SMB2 3.3.5.15.4): what is waiting, without consuming it.
    struct Peek {
        size_t bytes_available = 0;    // all pending output
        size_t messages = 0;           // messages pending
        size_t message_remaining = 0;  // unread bytes of the front message
        protocol::ByteVector data;     // up to the requested number of bytes of the front message
    };
    virtual Peek peek(size_t max) const {
        Peek p;
        p.bytes_available = p.message_remaining = pending();
        p.messages = p.bytes_available ? 1 : 0;
        (void)max;
        return p;
    }

    // The READ parked on this pipe for output (handlers/read.cpp) leaves a waker here; a WRITE
    // that produced output and the CLOSE of the pipe call wake_reader(). Any thread.
    void set_reader_waker(std::function<void()> waker) {
        std::lock_guard lk(reader_mu_);
        reader_waker_ = std::move(waker);
    }
    void wake_reader() {
        std::function<void()> w;
        {
            std::lock_guard lk(reader_mu_);
            w = reader_waker_;
        }
        if (w) w();
    }

  private:
    std::mutex reader_mu_;
    std::function<void()> reader_waker_;
};

// The endpoint for a pipe name as a client opens it on IPC$ ("srvsvc", "\\srvsvc",
// case-insensitive); nullptr for pipes this server does not offer.
std::unique_ptr<PipeEndpoint> make_pipe_endpoint(Server& server, std::string_view pipe_name);

// Whether make_pipe_endpoint() would give an endpoint for this name (FSCTL_PIPE_WAIT).
bool pipe_exists(std::string_view pipe_name);

}  // namespace daxsmbd::server::rpcpipe
