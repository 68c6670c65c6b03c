// daxsmbd's own synchronous SMB2 client, built on the project's codec (protocol/) and auth code
// (auth/): for end-to-end tests, the bad-input tool and (later) the load generator.
//
// One Smb2Client is one connection with at most one session and one current tree: TCP (Direct
// TCP framing, MS-SMB2 2.1), or a MessageLink that carries whole messages (SMB Direct,
// tests/client/smbd_link.h) once attach()ed. Calls
// block until the response arrives or the timeout passes; a call never throws. Every call
// returns a Reply whose `status` is the server's NTSTATUS, or a local failure (timeout,
// disconnect, malformed or badly signed response) with `from_server` false.
//
// The per-request path reuses the client's send and receive buffers: a Reply's views (`msg`,
// and views inside `body` such as ReadResponse::data) point into the receive buffer and stay
// valid until the next call on the same client.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "auth/encryption.h"
#include "auth/kdf.h"
#include "auth/signing.h"
#include "protocol/bytes.h"
#include "protocol/close.h"
#include "protocol/create.h"
#include "protocol/echo.h"
#include "protocol/error.h"
#include "protocol/flush.h"
#include "protocol/header.h"
#include "protocol/ioctl.h"
#include "protocol/lock.h"
#include "protocol/logoff.h"
#include "protocol/negotiate.h"
#include "protocol/query_directory.h"
#include "protocol/query_info.h"
#include "protocol/read.h"
#include "protocol/session_setup.h"
#include "protocol/tree_connect.h"
#include "protocol/tree_disconnect.h"
#include "protocol/write.h"
#include "smbdirect/smbd_codec.h"  // BufferDescriptorV1 (a plain struct: no link dependency)

namespace daxsmbd::client {

using protocol::Bytes;
using protocol::ByteVector;
using protocol::Command;
using protocol::FileId;
using protocol::MutableBytes;

// Statuses for conditions the server never sends (always with from_server == false).
namespace local_status {
inline constexpr NtStatus kTimeout = NtStatus::IoTimeout;
inline constexpr NtStatus kBadResponse = NtStatus::InvalidNetworkResponse;
inline constexpr NtStatus kDisconnected = NtStatus::ConnectionDisconnected;
inline constexpr NtStatus kBadSignature = NtStatus::InvalidSignature;
inline constexpr NtStatus kNoCredits = NtStatus::InsufficientResources;
}  // namespace local_status

// One response message. `msg` is the whole response element (header + body, the padding of a
// compound element included).
struct RawReply {
    NtStatus status = local_status::kDisconnected;
    bool from_server = false;  // false: local failure, `header` and `msg` are meaningless
    protocol::Header header;
    Bytes msg;
    bool signature_verified = false;  // the response was signed and its signature checked
    bool encrypted = false;           // the response came in a TRANSFORM_HEADER (decrypted)
    // SMB Direct: the memory token of ours that the message carrying this response invalidated
    // (Send with Invalidate, MS-SMBD 3.1.4.1 and 3.1.5.8).
    std::optional<uint32_t> invalidated_rkey;

    bool ok() const { return from_server && status == NtStatus::Success; }
    // The ERROR response body (MS-SMB2 2.2.2) of a failed request.
    Result<protocol::ErrorResponse> error_body() const;
};

template <class T>
struct Reply : RawReply {
    // Parsed when the server answered with a non-error status (success, a warning, or
    // MORE_PROCESSING_REQUIRED on SESSION_SETUP); default-constructed otherwise.
    T body{};
};

// A reply that owns its bytes (compound elements, stashed out-of-order responses).
struct OwnedReply {
    NtStatus status = local_status::kDisconnected;
    bool from_server = false;
    protocol::Header header;
    ByteVector msg;
    bool signature_verified = false;
    bool encrypted = false;

    bool ok() const { return from_server && status == NtStatus::Success; }
    template <class T>
    Result<T> parse() const {
        return T::parse(Bytes(msg));
    }
};

struct ClientOptions {
    std::chrono::milliseconds timeout{10000};  // per call (connect, each response)
    // Credits the client tries to hold: each request asks for its charge plus what is missing.
    uint16_t credit_target = 64;
    bool force_sign = false;        // sign every request once a session is established
    bool verify_signatures = true;  // check signed responses; refuse unsigned ones when required
    // Encrypt every request once the session has cipher keys (smbclient
    // --client-protection=encrypt). Without it the client encrypts what the server asks for:
    // everything on an ENCRYPT_DATA session, requests on ENCRYPT_DATA trees.
    bool encrypt = false;
    protocol::Guid client_guid{};  // random when all zero
    std::string workstation = "DAXCLIENT";
    // Local IPv4/IPv6 address to connect from (empty: the kernel's choice); load tests spread
    // thousands of loopback connections over 127.x source addresses with it.
    std::string source_address;
    // SO_RCVBUF set before connecting (0: the kernel's autotuned default). A small one makes
    // the server's sends block soon when the client does not read (backpressure tests).
    int receive_buffer = 0;
};

struct NegotiateOptions {
    std::vector<uint16_t> dialects = {protocol::dialect::k202, protocol::dialect::k210,
                                      protocol::dialect::k300, protocol::dialect::k302,
                                      protocol::dialect::k311};
    bool signing_required = false;
    uint32_t capabilities = protocol::global_caps::kDfs | protocol::global_caps::kLeasing |
                            protocol::global_caps::kLargeMtu;
    // 3.1.1 contexts, sent when 0x0311 is listed: PREAUTH (SHA-512) always; SIGNING_CAPABILITIES
    // with these algorithms in preference order unless empty; ENCRYPTION_CAPABILITIES unless
    // `ciphers` is empty; then `extra_contexts`.
    std::vector<uint16_t> signing_algorithms = {protocol::signing_algorithm::kAesGmac,
                                                protocol::signing_algorithm::kAesCmac};
    std::vector<uint16_t> ciphers;
    protocol::NegotiateContextList extra_contexts;
};

// A connection that carries whole SMB2 messages without the 4-byte Direct TCP header: SMB Direct
// carries the message as it is (MS-SMB2 2.1), see tests/client/smbd_link.h. Smb2Client sends and
// receives through an attached link instead of its TCP socket; the link's calls block.
class MessageLink {
  public:
    struct Message {
        ByteVector bytes;  // one whole SMB2 message (a TRANSFORM or a compound included)
        // The memory token of ours that the peer invalidated with the send carrying this
        // message (MS-SMBD 3.1.5.8 hands it up with the message).
        std::optional<uint32_t> invalidated_rkey;
    };
    virtual ~MessageLink() = default;
    // One message; local_status::kDisconnected once the connection is down.
    virtual Status send(Bytes message) = 0;
    // The next message: local_status::kTimeout at `deadline`, kDisconnected once the
    // connection is down and every message received before was taken.
    virtual Result<Message> receive(std::chrono::steady_clock::time_point deadline) = 0;
    virtual bool connected() const = 0;
};

// Per-request overrides, mostly for tests that need a request the normal rules would not send.
struct CallOptions {
    bool related = false;                    // SMB2_FLAGS_RELATED_OPERATIONS (compounds)
    std::optional<bool> sign;                // force signing on or off
    std::optional<bool> encrypt;             // force encryption on or off (whole message)
    std::optional<uint16_t> credit_charge;   // instead of the computed charge
    std::optional<uint16_t> credit_request;  // instead of charge + what is missing
    std::optional<uint64_t> message_id;      // use this id, bypassing the credit accounting
    std::optional<uint64_t> session_id;      // instead of the current session
    std::optional<uint32_t> tree_id;         // instead of the current tree
    uint32_t extra_flags = 0;                // ORed into Flags
    uint16_t channel_sequence = 0;           // ChannelSequence (3.x requests, MS-SMB2 2.2.1.2)
    uint64_t payload = 0;                    // bytes that decide the charge (MS-SMB2 3.1.5.2)
};

class Smb2Client {
  public:
    explicit Smb2Client(ClientOptions options = {});
    ~Smb2Client();
    Smb2Client(const Smb2Client&) = delete;
    Smb2Client& operator=(const Smb2Client&) = delete;

    // ---- connection ----------------------------------------------------------------------------
    // TCP connect (IPv4/IPv6 literal or host name) with the call timeout.
    Status connect(const std::string& host, uint16_t port);
    // Uses `link` (already connected, e.g. an SmbdLink after its MS-SMBD negotiation) as the
    // connection from now on; `host` names the server in TREE_CONNECT paths. Every message
    // goes through the link without the Direct TCP header, in both directions; signing,
    // encryption, compounds and credits are the same as on TCP.
    Status attach(std::unique_ptr<MessageLink> link, std::string host);
    // The attached link (null on TCP).
    MessageLink* link() const { return link_.get(); }
    void disconnect();
    bool connected() const { return fd_ >= 0 || (link_ && link_->connected()); }
    // The socket, for callers that poll several clients from one thread (-1 when closed or
    // on a link).
    int native_handle() const { return fd_; }
    const std::string& host() const { return host_; }

    // ---- session-level commands ----------------------------------------------------------------
    Reply<protocol::NegotiateResponse> negotiate(const NegotiateOptions& opts = {});
    // NTLMv2 in SPNEGO; on 3.1.1 with the preauth integrity hash. On success the session's keys
    // are derived, the final response's signature is verified and session_id() is set; on
    // failure the client has no session (a new session_setup starts from SessionId 0).
    Reply<protocol::SessionSetupResponse> session_setup(std::string_view user,
                                                        std::string_view password,
                                                        std::string_view domain = {});
    // What another connection of the same client needs to bind to this client's session as a
    // further channel (MS-SMB2 3.3.5.5.2): the session's id, its Session.SigningKey with the
    // algorithm of this connection, and the cipher keys.
    struct SessionBinding {
        uint64_t id = 0;
        ByteVector signing_key;
        auth::SigningAlgorithm signing_algorithm = auth::SigningAlgorithm::AesCmac;
        auth::SessionKeys keys;
        uint16_t cipher = 0;
        bool signing_required = false;
        bool encrypt_data = false;
    };
    // The binding data of the current session (none before a keyed session is set up).
    std::optional<SessionBinding> session_binding() const;
    // SESSION_SETUP with SMB2_SESSION_FLAG_BINDING (MS-SMB2 3.2.4.2.3 / 3.3.5.5.2): a new
    // authentication as `user` on this (negotiated) connection that makes it a channel of `b`'s
    // session. The requests are signed with Session.SigningKey; on success this client uses
    // that session (session_id() == b.id) with the new Channel.SigningKey, the final response
    // verified with it.
    Reply<protocol::SessionSetupResponse> bind_session(const SessionBinding& b,
                                                       std::string_view user,
                                                       std::string_view password,
                                                       std::string_view domain = {});
    // "\\host\share"; on success tree_id() is the new tree.
    Reply<protocol::TreeConnectResponse> tree_connect(std::string_view share);
    // The same with the 3.1.1 request extension (SMB2_TREE_CONNECT_FLAG_EXTENSION_PRESENT,
    // MS-SMB2 2.2.9.1) carrying `contexts` (e.g. a remoted identity, 2.2.9.2.1).
    Reply<protocol::TreeConnectResponse> tree_connect(
        std::string_view share, const protocol::TreeConnectContextList& contexts);
    // With request Flags as given (MS-SMB2 2.2.9, 3.1.1: e.g.
    // tree_connect_flags::kRedirectToOwner); EXTENSION_PRESENT is added when `contexts` is not
    // empty.
    Reply<protocol::TreeConnectResponse> tree_connect(
        std::string_view share, uint16_t flags, const protocol::TreeConnectContextList& contexts);
    // The Share Redirect error context (MS-SMB2 2.2.2.2.2) of a STATUS_BAD_NETWORK_NAME reply:
    // nullopt when the reply is another status or carries no such context; an error when its
    // ERROR body or the context is malformed.
    static Result<std::optional<protocol::ShareRedirectErrorContext>> share_redirect(
        const RawReply& reply);
    Reply<protocol::TreeDisconnectResponse> tree_disconnect();
    Reply<protocol::LogoffResponse> logoff();
    Reply<protocol::EchoResponse> echo();

    // ---- file commands (on the current tree) ---------------------------------------------------
    Reply<protocol::CreateResponse> create(const protocol::CreateRequest& req,
                                           const CallOptions& co = {});
    // Convenience CREATE: share access read|write|delete, no oplock.
    Reply<protocol::CreateResponse> open(std::string_view name, uint32_t desired_access,
                                         uint32_t disposition, uint32_t create_options = 0);
    Reply<protocol::CloseResponse> close(FileId id, uint16_t flags = 0);
    Reply<protocol::FlushResponse> flush(FileId id);
    Reply<protocol::ReadResponse> read(FileId id, uint64_t offset, uint32_t length);
    Reply<protocol::WriteResponse> write(FileId id, uint64_t offset, Bytes data);
    // READ with an RDMA channel (MS-SMB2 2.2.19, 3.2.4.6): the server RDMA WRITEs the data
    // into the client's registered buffers `into`; the response carries no data (DataLength
    // 0) and says in DataRemaining how much was placed (3.3.5.12). With `invalidate`
    // (SMB2_CHANNEL_RDMA_V1_INVALIDATE, 3.0.2 and later) the server invalidates the first
    // buffer's token with the response's Send with Invalidate: a successful response without
    // that invalidation is local_status::kBadResponse (reply.invalidated_rkey says what came).
    Reply<protocol::ReadResponse> read_rdma(FileId id, uint64_t offset, uint32_t length,
                                            std::span<const smbdirect::BufferDescriptorV1> into,
                                            bool invalidate, const CallOptions& co = {});
    // WRITE with an RDMA channel (MS-SMB2 2.2.21, 3.2.4.7): nothing inline (Length 0,
    // DataOffset 0), RemainingBytes = `length`, which the server RDMA READs from `from`
    // (3.3.5.13). `invalidate` as for read_rdma.
    Reply<protocol::WriteResponse> write_rdma(FileId id, uint64_t offset, uint32_t length,
                                              std::span<const smbdirect::BufferDescriptorV1> from,
                                              bool invalidate, const CallOptions& co = {});
    // The same with Channel and the channel info as given (malformed-input tests).
    Reply<protocol::ReadResponse> read_channel(FileId id, uint64_t offset, uint32_t length,
                                               uint32_t channel, Bytes channel_info,
                                               const CallOptions& co = {});
    Reply<protocol::WriteResponse> write_channel(FileId id, uint64_t offset,
                                                 uint32_t remaining_bytes, uint32_t channel,
                                                 Bytes channel_info, const CallOptions& co = {});
    // SMB_DIRECT_BUFFER_DESCRIPTOR_V1 list as channel info (MS-SMBD 2.2.3.1; the same bytes as
    // smbdirect::write_buffer_descriptors, written here so that this library does not link the
    // SMB Direct one).
    static ByteVector channel_info_of(std::span<const smbdirect::BufferDescriptorV1> list);
    Reply<protocol::QueryInfoResponse> query_info(const protocol::QueryInfoRequest& req);
    Reply<protocol::QueryDirectoryResponse> query_directory(
        const protocol::QueryDirectoryRequest& req);
    Reply<protocol::IoctlResponse> ioctl(const protocol::IoctlRequest& req);
    Reply<protocol::LockResponse> lock(const protocol::LockRequest& req);

    // Any request body (a codec struct with serialize(ByteWriter&)), sent alone. The typed
    // calls above are this plus the body parse.
    template <class Req>
    RawReply call(Command cmd, const Req& body, const CallOptions& co = {}) {
        auto mid = send(cmd, body, co);
        if (!mid) return local_failure(mid.status());
        return wait_reply(*mid);
    }
    // Sends one request without waiting; returns its MessageId for wait_reply(). Several may be
    // in flight (pipelining), as many as the credits allow.
    template <class Req>
    Result<uint64_t> send(Command cmd, const Req& body, const CallOptions& co = {}) {
        begin_message();
        uint64_t mid = add_element(cmd, co);
        serialize_body(body);
        finish_message();
        DAX_CHECK(flush_message());
        return mid;
    }

    // ---- compounds (MS-SMB2 3.2.4.1.4) ---------------------------------------------------------
    // Usage: auto c = client.compound(); c.add(Command::Create, create_req);
    //        c.add(Command::Write, write_req, {.related = true, .payload = n}); auto r = c.run();
    // Elements are 8-byte aligned, NextCommand chained, each element signed on its own bytes.
    class Compound {
      public:
        template <class Req>
        Compound& add(Command cmd, const Req& body, const CallOptions& co = {}) {
            if (!started_) {
                c_.begin_message();
                started_ = true;
            }
            mids_.push_back(c_.add_element(cmd, co));
            c_.serialize_body(body);
            return *this;
        }
        // Sends the chain and waits for every response (in request order).
        std::vector<OwnedReply> run();
        // Sends the chain without waiting; the MessageIds for wait_reply().
        Result<std::vector<uint64_t>> send();

      private:
        friend class Smb2Client;
        explicit Compound(Smb2Client& c) : c_(c) {}
        Smb2Client& c_;
        bool started_ = false;
        std::vector<uint64_t> mids_;
    };
    Compound compound() { return Compound(*this); }

    // ---- building blocks for malformed-input tests ---------------------------------------------
    // A request message (header + body, no transport framing) with the next MessageId, charged
    // and signed as call() would do it, but not sent. `*mid` receives its MessageId.
    template <class Req>
    ByteVector build(Command cmd, const Req& body, const CallOptions& co = {},
                     uint64_t* mid = nullptr) {
        begin_message();
        uint64_t m = add_element(cmd, co);
        serialize_body(body);
        finish_message();
        if (mid) *mid = m;
        return ByteVector(tx_.begin() + 4, tx_.end());
    }
    // Signs a message in place with the session's signing key (Flags |= SIGNED).
    Status sign_message(MutableBytes msg);
    // Bytes exactly as given (no framing).
    Status send_raw(Bytes bytes);
    // One message with the 4-byte Direct TCP header (MS-SMB2 2.1) in front.
    Status send_frame(Bytes msg);
    // The next frame, without its 4-byte header; a view valid until the next receive.
    // kTimeout / kDisconnected / kBadResponse (bad framing byte) on failure.
    Result<Bytes> receive_raw();
    Result<Bytes> receive_raw(std::chrono::milliseconds timeout);
    // Waits for the response with this MessageId. Interim responses (STATUS_PENDING with
    // SMB2_FLAGS_ASYNC_COMMAND, MS-SMB2 3.3.4.2) are skipped unless `return_interim`, in which
    // case the interim itself is returned (its header.async_id is what CANCEL needs).
    RawReply wait_reply(uint64_t message_id, bool return_interim = false);
    // Waits for the next final response to any outstanding request (interim responses and
    // unsolicited breaks skipped), in arrival order: for pipelined load, where completions are
    // taken as they come and no response is stashed. The reply's header.message_id says which.
    RawReply wait_any();

    // CANCEL (MS-SMB2 2.2.30, 3.2.4.24) of an outstanding request: no credit, no response.
    Status cancel(uint64_t message_id, std::optional<uint64_t> async_id = std::nullopt);

    enum class PeerState { Closed, Data, Timeout };
    // Whether the server closes the connection within `timeout` (Data: it sent something).
    PeerState wait_closed(std::chrono::milliseconds timeout);

    // ---- state ---------------------------------------------------------------------------------
    protocol::Dialect dialect() const { return dialect_; }
    const protocol::NegotiateResponse& negotiate_response() const { return negotiated_; }
    uint32_t max_read_size() const { return negotiated_.max_read_size; }
    uint32_t max_write_size() const { return negotiated_.max_write_size; }
    bool multi_credit() const { return multi_credit_; }
    std::optional<auth::SigningAlgorithm> signing_algorithm() const;

    uint64_t session_id() const { return session_.id; }
    void set_session_id(uint64_t id) { session_.id = id; }
    bool session_valid() const { return session_.valid; }
    bool signing_required() const { return session_.signing_required; }
    // The cipher the connection negotiated (0: none) and whether the session has cipher keys.
    uint16_t cipher() const { return cipher_id_; }
    bool can_encrypt() const { return session_.encryption.has_value(); }
    uint16_t session_flags() const { return session_.flags; }
    uint32_t tree_id() const { return tree_id_; }
    void set_tree_id(uint32_t id) { tree_id_ = id; }

    // Credits the client holds now, and everything the server has granted so far.
    uint64_t credits() const { return credits_; }
    uint64_t total_granted() const { return total_granted_; }
    uint64_t next_message_id() const { return next_mid_; }
    // Server messages with MessageId 0xFFFFFFFFFFFFFFFF (oplock/lease breaks) received.
    size_t unsolicited_count() const { return unsolicited_; }
    // Transport frames received so far (a compound response arrives as one frame).
    uint64_t frames_received() const { return frames_received_; }
    // SMB Direct: the memory token the most recent message that invalidated one invalidated
    // (MS-SMBD 3.1.5.8); nullopt before any.
    std::optional<uint32_t> last_invalidated_rkey() const { return last_invalidated_rkey_; }
    ClientOptions& options() { return opts_; }

  private:
    struct Session {
        uint64_t id = 0;
        bool valid = false;
        bool signing_required = false;
        uint16_t flags = 0;
        // Session.SigningKey, its algorithm and the cipher keys, for binding other connections.
        ByteVector signing_key;
        auth::SigningAlgorithm signing_algorithm = auth::SigningAlgorithm::AesCmac;
        auth::SessionKeys keys;
        std::optional<auth::Signer> signer;                 // Channel.SigningKey of this connection
        std::optional<auth::SessionEncryption> encryption;  // seals with C2S, opens with S2C
        bool encrypt_data = false;                          // SMB2_SESSION_FLAG_ENCRYPT_DATA
    };
    struct TxElement {
        size_t start;  // absolute offset in tx_
        uint64_t mid;
        bool sign;
        bool cancel;
        bool encrypt;
    };

    // session_setup() and bind_session(): a whole SESSION_SETUP exchange.
    Reply<protocol::SessionSetupResponse> authenticate(std::string_view user,
                                                       std::string_view password,
                                                       std::string_view domain,
                                                       const SessionBinding* binding);
    void begin_message();
    uint64_t add_element(Command cmd, const CallOptions& co);
    // Appends a request body; a codec whose serialize() can fail (TREE_CONNECT) fails the send.
    template <class Req>
    void serialize_body(const Req& body) {
        if constexpr (std::is_void_v<decltype(body.serialize(writer_))>) {
            body.serialize(writer_);
        } else {
            auto st = body.serialize(writer_);
            if (!st) tx_error_ = st.status();
        }
    }
    void finish_message();
    Status flush_message();
    RawReply local_failure(NtStatus s);
    template <class T>
    Reply<T> typed(RawReply raw);
    template <class Req, class Resp>
    Reply<Resp> typed_call(Command cmd, const Req& body, const CallOptions& co = {});

    uint16_t charge_for(uint64_t payload) const;
    bool bind_source(int fd, int family) const;
    Status write_all(const void* p, size_t n);
    Status read_exact(std::byte* p, size_t n, std::chrono::steady_clock::time_point deadline);
    Result<Bytes> receive_frame(std::chrono::steady_clock::time_point deadline);
    Result<Bytes> receive_from_link(std::chrono::steady_clock::time_point deadline);
    // Bookkeeping for one received element: credits; returns its parsed header.
    Result<protocol::Header> absorb(Bytes elem);
    // Signature policy of MS-SMB2 3.2.5.1.3 for a received element.
    bool check_signature(MutableBytes elem, const protocol::Header& h, bool* verified,
                         bool encrypted);
    // Whether a request of the current session on `tree_id` is encrypted by default.
    bool wants_encryption(uint32_t tree_id) const;
    // wait_reply() for one id, or wait_any() without one.
    RawReply wait_for(std::optional<uint64_t> message_id, bool return_interim);

    ClientOptions opts_;
    int fd_ = -1;
    std::string host_;
    std::unique_ptr<MessageLink> link_;  // instead of fd_ once attached

    protocol::Dialect dialect_ = protocol::Dialect::None;
    protocol::NegotiateResponse negotiated_;
    bool multi_credit_ = false;
    std::optional<uint16_t> signing_algorithm_id_;
    uint16_t cipher_id_ = 0;
    std::optional<auth::PreauthHash> conn_preauth_;  // 3.1.1 Connection.PreauthIntegrityHashValue
    bool client_signing_required_ = false;

    Session session_;
    uint32_t tree_id_ = 0;
    std::unordered_set<uint32_t> encrypted_trees_;  // SMB2_SHAREFLAG_ENCRYPT_DATA trees

    uint64_t next_mid_ = 0;
    uint64_t credits_ = 1;  // MS-SMB2 3.2.4.1.5: one credit at connect
    uint64_t total_granted_ = 0;
    size_t unsolicited_ = 0;
    uint64_t frames_received_ = 0;
    std::optional<uint32_t> last_invalidated_rkey_;

    // Send path: [4-byte header][element 0][pad][element 1]...
    ByteVector tx_;
    protocol::ByteWriter writer_;
    std::vector<TxElement> tx_elems_;
    NtStatus tx_error_ = NtStatus::Success;  // a message that cannot be sent (no credits, ...)

    // Receive path: the current frame, plus responses that arrived while waiting for another.
    std::unique_ptr<std::byte[]> rx_;
    size_t rx_cap_ = 0;
    // On a link: the current message, the one wait_closed() saw arrive, and the token the
    // current message invalidated.
    ByteVector rx_link_;
    std::optional<MessageLink::Message> link_pending_;
    std::optional<uint32_t> rx_invalidated_rkey_;
    struct Stashed {
        ByteVector msg;
        bool encrypted = false;
        std::optional<uint32_t> invalidated_rkey;
    };
    std::unordered_map<uint64_t, Stashed> stash_;
    ByteVector stash_hold_;  // keeps the last stashed reply returned alive
};

// The application's part of a share redirect (MS-SMB2 3.2.5.5: the client hands the Share
// Redirect context up, the caller connects to a listed address and repeats the TREE_CONNECT).
struct FollowedRedirect {
    std::unique_ptr<Smb2Client> client;  // connected to `address`, with a session
    std::string address;                 // the address followed (the first one listed)
    // The repeated TREE_CONNECT's reply, or the failure of connect/negotiate/session setup
    // (status, from_server false for a local failure).
    Reply<protocol::TreeConnectResponse> tree;
};

// Connects a new client (`options`) to the first address of `redirect` at `port` (the redirect
// carries addresses only; SMB clients use their usual port), negotiates `negotiate`, logs on as
// user/password and repeats the tree connect of `share` with `flags`.
FollowedRedirect follow_share_redirect(const protocol::ShareRedirectErrorContext& redirect,
                                       uint16_t port, std::string_view user,
                                       std::string_view password, std::string_view share,
                                       uint16_t flags, const ClientOptions& options = {},
                                       const NegotiateOptions& negotiate = {});

}  // namespace daxsmbd::client
