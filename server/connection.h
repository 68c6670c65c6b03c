// One client connection (MS-SMB2 3.3.1.7 Connection): negotiated state, the sequence window,
// outstanding requests, and the request path of architecture.md:
//   frame -> split compound -> charge credits -> check signature -> handler -> sign -> send.
// A Connection lives on exactly one event loop for its whole life; nothing in it is touched
// from another thread except through posts to that loop.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "auth/kdf.h"
#include "auth/signing.h"
#include "protocol/header.h"
#include "server/connection_state.h"
#include "server/credits.h"
#include "server/handlers/handler.h"
#include "server/state/file_table.h"
#include "server/transport.h"

namespace daxsmbd::server {

class Server;

class Connection final : public ConnectionState, public std::enable_shared_from_this<Connection> {
  public:
    Connection(Server& server, asio::any_io_executor ex, std::unique_ptr<Transport> transport,
               uint64_t id);
    ~Connection() override;

    asio::awaitable<void> run();
    void close(std::string_view reason);
    bool closed() const override { return closed_; }
    std::weak_ptr<Connection> weak_self() override { return weak_from_this(); }

    std::unique_ptr<Transport> transport;
    // One log line per request on this connection whatever the log level (daxsmbd-admin
    // debug-connection); at "log level = 3" every connection has them.
    std::atomic<bool> trace_requests{false};
    // Bytes of the requests in processing (not those parked asynchronously); on its loop only.
    // Server::drain waits for every connection's to reach 0.
    uint64_t bytes_in_processing() const { return bytes_in_flight_; }

    void release_channel(uint64_t session_id) override;
    asio::awaitable<Status> go_async(RequestContext& ctx) override;
    Status verify_signature(auth::Signer& signer, protocol::Bytes elem,
                            const protocol::Header& hdr) override;

    // What one break notification says: an oplock break of `file_id` to `level` (MS-SMB2
    // 2.2.23.1, 3.3.4.6), or a lease break (2.2.23.2, 3.3.4.7).
    struct BreakMessage {
        protocol::FileId file_id;
        uint8_t level = 0;
        std::optional<LeaseBreak> lease;
    };
    // Sends a break notification to session `session_id`: MessageId all ones, TreeId 0, not
    // signed, encrypted when the session or the open's share encrypts.
    asio::awaitable<void> send_oplock_break(uint64_t session_id, const BreakMessage& m,
                                            bool tree_encrypts);
    OplockBreakNotifier oplock_break_notifier(uint64_t session_id, protocol::FileId file_id,
                                              bool tree_encrypts) override;
    LeaseBreakNotifier lease_break_notifier(uint64_t session_id, bool tree_encrypts) override;

    void note_activity() { last_activity_ = std::chrono::steady_clock::now(); }

  private:
    struct ResponseElement {
        protocol::ByteVector bytes;            // header + body
        Payload data;                          // READ data, sent after the body (server/payload.h)
        std::shared_ptr<auth::Signer> signer;  // the channel's, or RequestContext::response_signer
        bool sign = false;
        // The EncryptionKey (and its session) that seals the message this element goes out in
        // (MS-SMB2 3.3.4.1.4); a compound response gets one TRANSFORM_HEADER around all
        // elements.
        std::shared_ptr<auth::SessionEncryption> encrypt_with;
        uint64_t encrypt_session_id = 0;
        std::function<void(protocol::Bytes)> on_response;
        // The client's memory token this response invalidates (RequestContext::invalidate_token).
        std::optional<uint32_t> invalidate_token;
    };
    struct ChainState {
        bool valid = false;
        uint64_t session_id = 0;
        uint32_t tree_id = 0;
        std::optional<protocol::FileId> file_id;
        std::optional<NtStatus> failed_create_status;
    };
    struct FrameState {
        // What this frame counts in bytes_in_flight_ until it completes or goes async.
        uint64_t weight = 0;
        std::vector<ResponseElement> out;  // responses not yet sent
        bool async_seen = false;           // an element went async: later ones go out alone
        bool more_elements = false;        // the element being processed is not the last
        bool compound = false;             // the request frame holds more than one element
        // The request frame came in a TRANSFORM_HEADER of this session (MS-SMB2 3.3.5.2.1.1),
        // opened with this channel's contexts.
        std::shared_ptr<Session> transform_session;
        std::shared_ptr<auth::SessionEncryption> transform_encryption;
    };
    friend class RequestContext;

    asio::awaitable<void> watchdog();
    // Abuse limit "max bytes in flight per connection": the reader waits here, before reading
    // the next frame, while the frames in processing weigh that much or more.
    asio::awaitable<void> wait_for_room();
    // A frame read while the server drains: wait for the requests in processing, then close.
    asio::awaitable<void> finish_for_stop();
    void note_in_flight(uint64_t bytes);
    void add_weight(FrameState& fs, uint64_t bytes);
    void release_weight(FrameState& fs);
    // `counted`: the frame's bytes, already in bytes_in_flight_.
    asio::awaitable<void> process_frame(PoolBuffer frame, uint64_t counted);
    asio::awaitable<void> process_element(FrameState& fs, protocol::Bytes elem,
                                          protocol::Header& hdr, ChainState& chain);
    asio::awaitable<void> flush(FrameState& fs);
    void finish_header(ResponseElement& el, const protocol::Header& req, NtStatus status,
                       uint16_t credits_granted, bool async, uint64_t async_id, uint64_t session_id,
                       uint32_t tree_id);
    // Decrypts a TRANSFORM message in place (MS-SMB2 3.3.5.2.1.1); the plaintext is
    // msg[52..]. Logs why and fails when the message must be dropped (the caller disconnects).
    Result<Channel> open_transform(protocol::MutableBytes msg);
    // Whether the response to this request is encrypted (MS-SMB2 3.3.4.1.4): sets the
    // element's encrypt_with / encrypt_session_id.
    void choose_encryption(ResponseElement& el, const RequestContext& ctx,
                           const FrameState& fs) const;
    uint16_t grant_credits(const protocol::Header& req);
    // Whether the response to this request is signed (MS-SMB2 3.3.4.1.1), as far as known so far
    // (before the handler runs, it may still set force_sign).
    static bool signs_response(const RequestContext& ctx, const protocol::Header& req);
    // The payload kinds the response to this request may carry as they are (the rest is made
    // Memory at the edge): RequestContext::reply_data_kinds.
    PayloadKinds reply_data_kinds(const RequestContext& ctx, const FrameState& fs) const;
    // flush(): data that must be in memory made so (false: the connection was closed), then the
    // elements of a compound chained and each signed as needed.
    bool data_to_memory_where_needed(std::vector<ResponseElement>& out, bool sealed);
    void chain_and_sign(std::vector<ResponseElement>& out, bool sealed);

    // The stages of process_element.
    std::optional<NtStatus> admit(const protocol::Header& hdr, protocol::Bytes elem);
    // The request's metrics (server/metrics/registry.h): its command, final status and
    // latency, and a READ's or WRITE's bytes on its share.
    void count_request(const RequestContext& ctx, NtStatus status,
                       std::chrono::steady_clock::duration took);
    void cancel_request(const protocol::Header& hdr);
    void begin_request(RequestContext& ctx, const FrameState& fs, const ChainState& chain,
                       NtStatus& status);
    NtStatus authenticate(RequestContext& ctx, const HandlerInfo& info, const FrameState& fs);
    void sign_answer_for_unknown_session(RequestContext& ctx);
    NtStatus resolve_tree(RequestContext& ctx, const HandlerInfo& info);
    asio::awaitable<NtStatus> dispatch(RequestContext& ctx, const HandlerInfo& info,
                                       FrameState& fs);
    void respond(FrameState& fs, RequestContext& ctx, const HandlerInfo& info,
                 protocol::ByteVector& out, NtStatus status);
    static void pass_on_chain(ChainState& chain, const RequestContext& ctx, const HandlerInfo& info,
                              NtStatus status, bool dispatched);

    bool closed_ = false;
    std::chrono::steady_clock::time_point last_activity_;
    std::chrono::steady_clock::time_point created_;
    asio::steady_timer watchdog_timer_;
    std::unordered_map<uint64_t, std::shared_ptr<PendingRequest>> pending_by_mid_;
    std::unordered_map<uint64_t, std::shared_ptr<PendingRequest>> pending_by_aid_;
    uint64_t next_async_id_ = 1;
    size_t frames_in_flight_ = 0;
    // Request bytes plus the READ lengths asked for, of the frames being processed (not of the
    // ones waiting asynchronously: a parked CHANGE_NOTIFY or blocking LOCK must not stop the
    // reader, or the client could never send the CANCEL or unlock that ends it).
    uint64_t bytes_in_flight_ = 0;
    bool reader_paused_ = false;
    std::shared_ptr<Wakeup> reader_wake_;
    // Frame state of the element currently inside a handler, for go_async.
    std::unordered_map<RequestContext*, FrameState*> frame_of_;
};

}  // namespace daxsmbd::server
