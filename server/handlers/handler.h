// What an SMB2 command handler sees: parsed input via the codec, the state the dispatcher
// resolved (session, tree), and a writer for the response body. Handlers never touch the
// transport, signing or credits (MS-SMB2 3.3.5.2 is done by the dispatcher before the handler
// runs, 3.3.4.1 after it returns).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

#include "protocol/bytes.h"
#include "protocol/header.h"
#include "server/buffer_pool.h"
#include "server/io/data_path.h"
#include "server/io/splice_pipe.h"
#include "server/metrics/registry.h"
#include "server/payload.h"
#include "server/state/open.h"
#include "server/state/session.h"
#include "server/wakeup.h"

namespace daxsmbd::server {

namespace asio = boost::asio;
class ConnectionState;
class ConnectionLog;
struct Limits;
class Server;
namespace io {
class Engine;  // server/io/uring_engine.h
}

// Cancellation and async state of one request (MS-SMB2 3.3.1.13 Request).
struct PendingRequest {
    uint64_t message_id = 0;
    uint64_t async_id = 0;  // non-zero once an interim response was sent
    bool cancelled = false;
    // Cancelled because its connection closed (the session may go on over other channels).
    bool connection_lost = false;
    // Wakes the handler while it is parked (server/wakeup.h); set by the handler before it parks.
    std::shared_ptr<Wakeup> waiter;
    void cancel() {
        cancelled = true;
        if (waiter) waiter->notify();
    }
};

class RequestContext {
  public:
    RequestContext(ConnectionState& c, Server& s, const protocol::Header& h, protocol::Bytes m,
                   protocol::ByteVector& out)
        : conn(c), server(s), header(h), msg(m), out_(out), writer_(out, 0) {}

    ConnectionState& conn;
    Server& server;
    const protocol::Header& header;  // the request header (ids already resolved for related)
    protocol::Bytes msg;             // the whole request element, header included
    // The request arrived inside a TRANSFORM_HEADER (Request.IsEncrypted, MS-SMB2 3.3.5.2.1.1).
    bool request_encrypted = false;

    std::shared_ptr<Session> session;  // set when the handler needs a session
    // What this connection signs and encrypts `session` with (its Channel), set with it; the
    // handler of the SESSION_SETUP that creates a channel sets them for its own response.
    std::shared_ptr<auth::Signer> channel_signer;
    std::shared_ptr<auth::SessionEncryption> channel_encryption;
    std::shared_ptr<TreeConnect> tree;  // set when the handler needs a tree
    // Effective ids of this element (a related compound element inherits them, MS-SMB2
    // 3.3.5.2.7.2); CREATE sets created_file_id for the elements after it.
    uint64_t session_id = 0;
    uint32_t tree_id = 0;
    std::optional<protocol::FileId> related_file_id;
    std::optional<protocol::FileId> created_file_id;
    // Status of a failed CREATE earlier in a related chain: the placeholder FileId then fails
    // with the same status (3.3.5.2.7.2).
    std::optional<NtStatus> related_create_status;
    // SESSION_SETUP answers with the id of the session it created.
    std::optional<uint64_t> response_session_id;
    std::optional<uint32_t> response_tree_id;

    // Response body writer: base is the start of the response header, the header space is
    // already reserved, so offset_from_base() gives header-relative offsets.
    protocol::ByteWriter& body() { return writer_; }
    bool body_written() const { return out_.size() > protocol::kHeaderSize; }
    // Error data of the ERROR response (MS-SMB2 2.2.2) when the handler fails.
    protocol::ByteVector error_data;
    uint8_t error_context_count = 0;
    // The data the response carries after its body (READ), never copied into it: the handler
    // replies with what its data path lent (io::DataPath::lend), of one of reply_data_kinds,
    // which the dispatcher sets for a command that returns data (HandlerInfo::returns_data).
    Payload reply_data;
    PayloadKinds reply_data_kinds = PayloadKind::Memory;
    // The client's memory token the response invalidates (SMB2_CHANNEL_RDMA_V1_INVALIDATE:
    // the first buffer descriptor's, MS-SMB2 3.3.5.12/3.3.5.13), sent as Send with Invalidate.
    std::optional<uint32_t> invalidate_token;
    // The file data a successful READ or WRITE moved and the data path that moved it, for the
    // share's I/O metrics (server/metrics/registry.h); the dispatcher records them.
    uint64_t io_bytes = 0;
    metrics::IoPath io_path = metrics::IoPath::Block;
    // Called with the final response message bytes (after signing), e.g. for the preauth hash.
    std::function<void(protocol::Bytes)> on_response;
    // Sign this response even if the dispatcher would not (final SESSION_SETUP, 3.3.5.5.3).
    bool force_sign = false;
    // Signs this response instead of the session's signer: the answer to a SESSION_SETUP that
    // names a session of another connection (a binding attempt) is signed with that session's
    // key, which the client checks; a signer of its own because the session's belongs to the
    // other connection's event loop.
    std::unique_ptr<auth::Signer> response_signer;
    // Checks this request's signature with `signer` (MS-SMB2 3.3.5.2.4).
    bool signature_valid(auth::Signer& signer) const;
    // Disconnect after sending (or without sending if `suppress_response`).
    bool disconnect_after = false;
    bool suppress_response = false;

    // Resolves a FileId to an open of this session/tree; the related placeholder
    // {~0,~0} resolves to the previous compound element's file (3.3.5.2.7.2). The first open a
    // request names counts it under the open's ChannelSequence (MS-SMB2 3.3.5.2.10):
    // STATUS_FILE_NOT_AVAILABLE for a WRITE, SET_INFO or IOCTL with a stale one.
    Result<std::shared_ptr<Open>> find_open(const protocol::FileId& id);
    // Ends the request's count in Open.OutstandingRequestCount (the dispatcher, when the
    // handler returns).
    void finish_sequence();

    // Sends the interim STATUS_PENDING response now (3.3.4.2) and marks the request async;
    // the final response goes out when the handler returns. Fails (nothing sent) with the
    // status the handler must fail the request with: STATUS_INSUFFICIENT_RESOURCES when the
    // connection is at its limit of async requests, STATUS_INTERNAL_ERROR when the request is
    // not the last of a compound and not a CREATE (MS-SMB2 3.3.5.2.7 note: Windows lets only
    // the last element, or a CREATE waiting for an oplock break, go async; smbtorture
    // smb2.compound.interim2 checks it).
    [[nodiscard]] asio::awaitable<Status> go_async();
    bool is_async() const { return pending && pending->async_id != 0; }
    bool cancelled() const { return pending && pending->cancelled; }
    std::shared_ptr<PendingRequest> pending;

    // The dialect negotiated on this request's connection, the server's abuse limits, and log
    // lines prefixed with the connection.
    protocol::Dialect dialect() const;
    const Limits& limits() const;
    const ConnectionLog& log() const;
    // The event loop this request runs on (its connection's).
    asio::any_io_executor executor() const;

    // The io_uring engine of this connection's event loop (file data, server/io).
    io::Engine& io();
    // A data-path call on `o` for this request: this loop's engine, the file's path for log
    // lines, and the request's user (fs_identity(), kept alive by `session`).
    io::Caller caller(const Open& o);

    // Runs a blocking call (metadata syscalls the event loop must not do) on the blocking pool
    // and resumes on this connection's loop. The call's file-system operations run as the
    // request's user (fs_identity(); vfs/fs_credentials.h).
    template <class F>
    auto blocking(F f) -> asio::awaitable<std::invoke_result_t<F>>;
    // The same with the daemon's own rights: authentication (keytab, NSS), nothing that
    // touches a share for a user.
    template <class F>
    auto blocking_as_daemon(F f) -> asio::awaitable<std::invoke_result_t<F>>;
    // Who this request's file-system operations run as: its session's identity; null (the
    // daemon) only for requests without an authenticated session, which touch no share.
    const std::shared_ptr<const vfs::UnixIdentity>& fs_identity() const {
        static const std::shared_ptr<const vfs::UnixIdentity> none;
        return session ? session->identity : none;
    }

  private:
    bool admit_sequence(const std::shared_ptr<Open>& o);

    protocol::ByteVector& out_;
    protocol::ByteWriter writer_;
    // The open this request is counted on (find_open), and its count. Weak: a request must not
    // keep an open alive (a LOCK waiting on it ends when the open is closed).
    std::weak_ptr<Open> sequenced_open;
    bool sequence_admitted = false;
    std::optional<ChannelSequence::Ticket> sequence_ticket;
};

using Handler = asio::awaitable<NtStatus> (*)(RequestContext&);

// What the dispatcher needs to know of a command before and after its handler runs (the stages
// of Connection::process_element). One entry per command in handlers/table.cpp.
struct HandlerInfo {
    Handler fn = nullptr;
    bool needs_session = true;  // valid session required (3.3.5.2.9)
    bool needs_tree = true;     // tree connect required (3.3.5.2.11)
    // The SessionId of the request is looked up at all (not for NEGOTIATE, which precedes
    // sessions whatever the header says).
    bool looks_up_session = true;
    // Served on a session whose authentication expired (MS-SMB2 3.3.5.2.9: re-authentication,
    // and what lets a client release its state: LOGOFF, CLOSE, LOCK).
    bool on_expired_session = false;
    // Accepted unsigned on a session that requires signing (ECHO; OPLOCK_BREAK acknowledgments,
    // which Windows accepts unsigned too).
    bool may_be_unsigned = false;
    // The answer to a clear request stays clear even when the session encrypts: the client may
    // not hold the keys yet (NEGOTIATE, SESSION_SETUP; MS-SMB2 3.3.4.1.4).
    bool answers_clear_request_clear = false;
    // May go async in the middle of a compound (a CREATE waiting for an oplock break; Windows
    // lets only that and the last element go async).
    bool async_inside_compound = false;
    // The response carries file data: the dispatcher counts its length in flight from the
    // moment the frame is read, and offers it the data kinds the response can take.
    bool returns_data = false;
    // The response body is sent even with an error status (IOCTL: MS-SMB2 3.3.5.15 errors with
    // output, e.g. STATUS_BUFFER_OVERFLOW of a pipe transceive).
    bool body_on_error = false;
    // Opens a file that the related elements after it use (CREATE, MS-SMB2 3.3.5.2.7.2).
    bool opens_file = false;
    // Changes the file: refused with a stale ChannelSequence (WRITE, SET_INFO, IOCTL; MS-SMB2
    // 3.3.5.2.10).
    bool modifies = false;
    // The payload that sets the credit charge (MS-SMB2 3.3.5.2.5; protocol/credit_charge.h),
    // or null when it cannot exceed 64 KiB.
    uint64_t (*payload_size)(protocol::Bytes elem) = nullptr;
};

// The one dispatch table, indexed by command (handlers/table.cpp).
const HandlerInfo& handler_for(protocol::Command c);

asio::thread_pool& blocking_pool(Server& s);

namespace detail {
template <class F>
auto run_blocking(asio::any_io_executor home, asio::thread_pool& pool,
                  std::shared_ptr<const vfs::UnixIdentity> who, F f)
    -> asio::awaitable<std::invoke_result_t<F>> {
    // The completion must be bound to the pool: with plain use_awaitable the coroutine would
    // resume on its own executor (the loop) and the call would run there.
    co_await asio::post(pool, asio::bind_executor(pool, asio::use_awaitable));
    // The pool thread keeps `who`'s credentials (null: the daemon's) after the call
    // (StickyFsCredentials): the next call of the same user on it needs no system call.
    if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
        {
            vfs::StickyFsCredentials as(who.get());
            f();
        }
        co_await asio::post(home, asio::use_awaitable);
    } else {
        auto r = [&] {
            vfs::StickyFsCredentials as(who.get());
            return f();
        }();
        co_await asio::post(home, asio::use_awaitable);
        co_return r;
    }
}
}  // namespace detail

template <class F>
auto RequestContext::blocking(F f) -> asio::awaitable<std::invoke_result_t<F>> {
    return detail::run_blocking(executor(), blocking_pool(server), fs_identity(), std::move(f));
}

template <class F>
auto RequestContext::blocking_as_daemon(F f) -> asio::awaitable<std::invoke_result_t<F>> {
    return detail::run_blocking(executor(), blocking_pool(server), nullptr, std::move(f));
}

}  // namespace daxsmbd::server
