#include "server/connection.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>

#include "protocol/compound.h"
#include "protocol/error.h"
#include "protocol/oplock_break.h"
#include "protocol/transform.h"
#include "server/handlers/negotiate_smb1.h"
#include "server/log.h"
#include "server/server.h"

namespace daxsmbd::server {

using namespace protocol;

Connection::Connection(Server& s, asio::any_io_executor ex, std::unique_ptr<Transport> t,
                       uint64_t cid)
    : ConnectionState(s, ex, cid, t->peer(), t->peer_address()),
      transport(std::move(t)),
      last_activity_(std::chrono::steady_clock::now()),
      created_(last_activity_),
      watchdog_timer_(ex),
      reader_wake_(Wakeup::make(ex)) {
    rdma = transport->rdma();
}

Connection::~Connection() = default;

void Connection::close(std::string_view reason) {
    if (closed_) return;
    closed_ = true;
    log_info("conn ", id, " ", transport->peer(), ": closed (", reason, ")");
    transport->close();
    watchdog_timer_.cancel();
    reader_wake_->notify();
    for (auto& [pid, p] : pending_by_mid_) {
        p->connection_lost = true;
        p->cancel();
    }
    // Each session this connection is a channel of loses the channel; a session whose last
    // channel this was ends with its opens. A session with other channels lives on.
    while (!channels.empty())
        release_channel(channels.begin()->first);
    pending_binds.clear();
    server.connection_closed(*this);
}

void Connection::release_channel(uint64_t session_id) {
    auto it = channels.find(session_id);
    if (it == channels.end()) return;
    std::shared_ptr<Session> s = std::move(it->second.session);
    channels.erase(it);
    if (s->remove_channel(id)) {
        server.end_session(*s, /*keep_durable=*/true);
    } else if (s->state != Session::State::Deleted) {
        log_info("conn ", id, " ", transport->peer(), ": channel of session 0x", std::hex, s->id,
                 std::dec, " closed; the session goes on over ", s->channel_count(),
                 " other channel(s)");
    }
}

asio::awaitable<void> Connection::watchdog() {
    auto self = shared_from_this();
    const auto& g = server.config().global;
    while (!closed_) {
        watchdog_timer_.expires_after(std::chrono::seconds(2));
        boost::system::error_code ec;
        co_await watchdog_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (closed_) break;
        auto now = std::chrono::steady_clock::now();
        bool authenticated = false;
        for (auto& [sid, ch] : channels)
            if (ch.session->state == Session::State::Valid) authenticated = true;
        // Unauthenticated connections get auth_timeout_s to finish (abuse limit); idle ones
        // without open files are closed after idle_timeout_s.
        if (!authenticated && now - created_ > std::chrono::seconds(g.auth_timeout_s)) {
            server.limit_hits.hit(metrics::Limit::AuthTimeout);
            log_info("conn ", id, " ", transport->peer(), ": limit 'auth timeout' (",
                     g.auth_timeout_s, " s) reached without a finished SESSION_SETUP");
            close("authentication not finished in time");
            break;
        }
        if (g.idle_timeout_s && now - last_activity_ > std::chrono::seconds(g.idle_timeout_s) &&
            pending_by_mid_.empty()) {
            bool has_opens = false;
            for (auto& [sid, ch] : channels) {
                (void)ch;
                has_opens |=
                    server.opens.any_of([sid = sid](const Open& o) { return o.session_id == sid; });
            }
            if (!has_opens) {
                close("idle timeout");
                break;
            }
        }
    }
}

void Connection::add_weight(FrameState& fs, uint64_t bytes) {
    fs.weight += bytes;
    note_in_flight(bytes);
}

void Connection::note_in_flight(uint64_t bytes) {
    bytes_in_flight_ += bytes;
    auto& peak = server.backpressure().peak_in_flight;
    uint64_t seen = peak.load(std::memory_order_relaxed);
    while (bytes_in_flight_ > seen &&
           !peak.compare_exchange_weak(seen, bytes_in_flight_, std::memory_order_relaxed)) {
    }
}

void Connection::release_weight(FrameState& fs) {
    bytes_in_flight_ -= fs.weight;
    fs.weight = 0;
    if (reader_paused_ && bytes_in_flight_ < server.limits().max_bytes_in_flight)
        reader_wake_->notify();
}

asio::awaitable<void> Connection::wait_for_room() {
    const uint64_t max = server.limits().max_bytes_in_flight;
    if (bytes_in_flight_ < max) co_return;
    // TCP backpressure: the frames stay in the socket; once its buffers fill, the client's
    // sends block. Nothing is refused and the connection's requests in processing complete, so
    // the client is slowed down, not broken; other connections are not affected.
    server.backpressure().pauses.fetch_add(1, std::memory_order_relaxed);
    server.limit_hits.hit(metrics::Limit::MaxBytesInFlightPerConnection);
    log_debug("conn ", id, " ", transport->peer(), ": limit 'max bytes in flight per connection' (",
              max, ") reached with ", bytes_in_flight_, " bytes; reading paused");
    reader_paused_ = true;
    while (!closed_ && bytes_in_flight_ >= max) {
        co_await reader_wake_->wait();
    }
    reader_paused_ = false;
}

asio::awaitable<void> Connection::finish_for_stop() {
    // The server is stopping (Server::drain): this frame arrived after the stop began and is
    // not processed (the client sees its connection close without an answer, so it knows the
    // request was not done); the requests in processing finish and are answered first.
    reader_paused_ = true;
    while (!closed_ && bytes_in_flight_ > 0)
        co_await reader_wake_->wait();
    reader_paused_ = false;
    close("the server is stopping");
}

asio::awaitable<void> Connection::run() {
    auto self = shared_from_this();
    asio::co_spawn(executor, watchdog(), asio::detached);
    while (!closed_) {
        co_await wait_for_room();
        if (closed_) break;
        auto r = co_await transport->receive();
        if (!r) {
            if (r.status() == NtStatus::BufferOverflow)
                server.limit_hits.hit(metrics::Limit::MaxMessageSize);
            if (r.status() == NtStatus::BufferOverflow)
                log_info("conn ", id, " ", transport->peer(), ": limit 'max message size' (",
                         server.limits().max_message_size, " bytes) exceeded");
            else if (r.status() == NtStatus::InvalidParameter)
                log_info("conn ", id, " ", transport->peer(), ": framing violation");
            close(r.status() == NtStatus::ConnectionDisconnected ? "peer disconnected"
                                                                 : "bad frame");
            break;
        }
        if (server.draining()) {
            co_await finish_for_stop();
            break;
        }
        note_activity();
        ++frames_in_flight_;
        const uint64_t weight = r->size();
        note_in_flight(weight);
        asio::co_spawn(
            executor,
            [](std::shared_ptr<Connection> c, PoolBuffer buf,
               uint64_t counted) -> asio::awaitable<void> {
                co_await c->process_frame(std::move(buf), counted);
            }(self, std::move(*r), weight),
            [self](std::exception_ptr e) {
                --self->frames_in_flight_;
                if (!e) return;
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& ex) {
                    log_error("conn ", self->id, ": request failed: ", ex.what());
                }
                self->close("internal error");
            });
    }
}

uint16_t Connection::grant_credits(const Header& req) {
    uint16_t requested = req.credits ? req.credits : 1;
    return credits.grant(requested, server.config().global.max_credits);
}

Status Connection::verify_signature(auth::Signer& signer, Bytes elem, const Header& hdr) {
    // The frame buffer is ours: zero the signature in place to compute, then restore it.
    auto* p = const_cast<std::byte*>(elem.data()) + kSignatureOffset;
    std::array<std::byte, 16> sig;
    std::memcpy(sig.data(), p, 16);
    std::memset(p, 0, 16);
    std::array<Bytes, 1> frags{elem};
    bool ok = signer.verify(frags, hdr.message_id, false, hdr.command == Command::Cancel, sig);
    std::memcpy(p, sig.data(), 16);
    if (!ok) return Error(NtStatus::AccessDenied);
    return {};
}

void Connection::finish_header(ResponseElement& el, const Header& req, NtStatus status,
                               uint16_t credits_granted, bool async, uint64_t async_id,
                               uint64_t session_id, uint32_t tree_id) {
    Header h;
    h.credit_charge = req.credit_charge;
    h.status = to_u32(status);
    h.command = req.command;
    h.credits = credits_granted;
    h.flags = flags::kServerToRedir | (req.flags & flags::kRelatedOperations) |
              (req.flags & flags::kPriorityMask);
    if (async) {
        h.flags |= flags::kAsyncCommand;
        h.async_id = async_id;
    } else {
        h.tree_id = tree_id;
        h.process_id = req.process_id;
    }
    h.message_id = req.message_id;
    h.session_id = session_id;
    ByteVector hdr;
    ByteWriter w(hdr);
    h.serialize(w);
    std::memcpy(el.bytes.data(), hdr.data(), kHeaderSize);
}

static void write_error_body(ByteVector& out, uint8_t context_count, Bytes data) {
    out.resize(kHeaderSize);
    ByteWriter w(out, 0);
    ErrorResponse e;
    e.error_context_count = context_count;
    e.error_data.assign(data.begin(), data.end());
    e.serialize(w);
}

asio::awaitable<void> Connection::flush(FrameState& fs) {
    if (fs.out.empty() || closed_) co_return;
    auto& out = fs.out;
    // One TRANSFORM around the whole message (compound included) when any element must be
    // encrypted (MS-SMB2 3.3.4.1.4); an encrypted message is not signed (3.3.4.1.1).
    std::shared_ptr<auth::SessionEncryption> seal_with;
    uint64_t seal_session_id = 0;
    for (auto& el : out)
        if (el.encrypt_with) {
            seal_with = el.encrypt_with;
            seal_session_id = el.encrypt_session_id;
            break;
        }
    if (!data_to_memory_where_needed(out, seal_with != nullptr)) co_return;
    chain_and_sign(out, seal_with != nullptr);
    std::array<std::byte, TransformHeader::kSize> transform{};
    std::vector<Bytes> frags;
    frags.reserve(out.size() * 2 + 1);
    if (seal_with) {
        // Encrypted in place: header+body vectors and the READ data's pool buffer, no copy.
        std::vector<MutableBytes> plain;
        plain.reserve(out.size() * 2);
        for (auto& el : out) {
            plain.push_back(MutableBytes(el.bytes));
            if (el.data) plain.push_back(el.data.writable_bytes());
        }
        if (auto st = seal_with->seal(seal_session_id, plain, transform); !st) {
            log.error("cannot encrypt a response (", status_name(st.status()), ")");
            out.clear();
            close("encryption failed");
            co_return;
        }
        frags.push_back(Bytes(transform));
    }
    // Only the last element can still carry its data as a payload (chain_and_sign copied the
    // others' into their element).
    for (auto& el : out)
        frags.push_back(Bytes(el.bytes));
    Payload tail = std::move(out.back().data);
    // One token per message (Send with Invalidate carries one); a compound with two RDMA
    // READs or WRITEs leaves the others to the client, which then invalidates them itself.
    std::optional<uint32_t> token;
    for (auto& el : out)
        if (el.invalidate_token && !token) token = el.invalidate_token;
    Status st = token ? co_await transport->send_invalidating(frags, tail, *token)
                      : co_await transport->send(frags, tail);
    out.clear();
    if (!st) close("send failed");
}

bool Connection::data_to_memory_where_needed(std::vector<ResponseElement>& out, bool sealed) {
    // The edge of the data path: data the transport cannot carry as it is, or whose bytes are
    // needed here (signing, encryption, a compound), becomes a pool buffer, once.
    const PayloadKinds carried = transport->carries();
    for (auto& el : out) {
        if (!el.data || el.data.kind() == PayloadKind::Memory) continue;
        if (!sealed && !el.sign && out.size() == 1 && carried.has(el.data.kind())) continue;
        if (!el.data.make_memory(server.buffers)) {
            log.error("reading a response's data failed");
            out.clear();
            close("response data unreadable");
            return false;
        }
    }
    return true;
}

void Connection::chain_and_sign(std::vector<ResponseElement>& out, bool sealed) {
    for (size_t i = 0; i < out.size(); ++i) {
        auto& el = out[i];
        bool last = i + 1 == out.size();
        if (!last) {
            if (el.data) {  // data of a non-final element is copied in: it must be followed
                auto d = el.data.bytes();
                el.bytes.insert(el.bytes.end(), d.begin(), d.end());
                el.data = {};
            }
            // MS-SMB2 3.3.4.1.3: each response in a chain is 8-byte aligned.
            el.bytes.resize((el.bytes.size() + 7) & ~size_t(7));
            store_le32(el.bytes.data() + kNextCommandOffset, uint32_t(el.bytes.size()));
        } else if (out.size() > 1 && !el.data) {
            el.bytes.resize((el.bytes.size() + 7) & ~size_t(7));
        }
        auth::Signer* signer = el.signer.get();
        if (!sealed && el.sign && signer) {
            // MS-SMB2 3.3.4.1.1: signature over the whole element including its padding.
            uint32_t f = load_le32(el.bytes.data() + kFlagsOffset) | flags::kSigned;
            store_le32(el.bytes.data() + kFlagsOffset, f);
            std::memset(el.bytes.data() + kSignatureOffset, 0, 16);
            std::vector<Bytes> frags{Bytes(el.bytes)};
            if (el.data) frags.push_back(el.data.bytes());
            uint64_t mid = load_le64(el.bytes.data() + 24);
            auto sig = signer->sign(frags, mid, true, false);
            std::memcpy(el.bytes.data() + kSignatureOffset, sig.data(), 16);
        }
        if (el.on_response) el.on_response(Bytes(el.bytes));
    }
}

bool Connection::signs_response(const RequestContext& ctx, const Header& req) {
    // MS-SMB2 3.3.4.1.1: signed with the channel's key when the request was signed, the
    // session requires signing or the handler asks (force_sign); a response_signer signs anyway.
    if (ctx.response_signer) return true;
    return ctx.session && ctx.channel_signer &&
           (req.is_signed() || ctx.session->signing_required || ctx.force_sign);
}

PayloadKinds Connection::reply_data_kinds(const RequestContext& ctx, const FrameState& fs) const {
    // Bytes that are signed, sealed or copied into a compound response must be in memory; only
    // a lone, clear, unsigned response may carry what the transport sends without reading it.
    if (fs.compound || signs_response(ctx, ctx.header)) return PayloadKind::Memory;
    ResponseElement probe;
    choose_encryption(probe, ctx, fs);
    if (probe.encrypt_with) return PayloadKind::Memory;
    return transport->carries() | PayloadKind::Memory;
}

void Connection::choose_encryption(ResponseElement& el, const RequestContext& ctx,
                                   const FrameState& fs) const {
    // MS-SMB2 3.3.4.1.4: encrypted when the request was, or when the session (EncryptData) or
    // the tree's share (EncryptData) asks for it. NEGOTIATE and SESSION_SETUP answers of a
    // clear request stay clear: the client may not hold the keys yet.
    if (fs.transform_session) {
        el.encrypt_with = fs.transform_encryption;
        el.encrypt_session_id = fs.transform_session->id;
        return;
    }
    const auto& s = ctx.session;
    if (!s || !ctx.channel_encryption) return;
    if (handler_for(ctx.header.command).answers_clear_request_clear) return;
    if (s->encrypt_data || (ctx.tree && ctx.tree->encrypt_data)) {
        el.encrypt_with = ctx.channel_encryption;
        el.encrypt_session_id = s->id;
    }
}

Result<Channel> Connection::open_transform(MutableBytes msg) {
    if (!is_smb3(state.dialect) || state.cipher_id == 0) {
        log_info("conn ", id, " ", transport->peer(),
                 ": TRANSFORM message but no encryption was negotiated");
        return Error(NtStatus::InvalidParameter);
    }
    auto th = TransformHeader::parse(msg);
    if (!th) {
        log_info("conn ", id, " ", transport->peer(), ": TRANSFORM message too short");
        return Error(NtStatus::InvalidParameter);
    }
    Channel* ch = channel(th->session_id);
    if (!ch || !ch->encryption) {
        log_info("conn ", id, " ", transport->peer(), ": TRANSFORM message for unknown session 0x",
                 std::hex, th->session_id, std::dec, ", dropped");
        return Error(NtStatus::UserSessionDeleted);
    }
    if (auto st = ch->encryption->open(msg); !st) {
        log_info("conn ", id, " ", transport->peer(), ": TRANSFORM message of session 0x", std::hex,
                 th->session_id, std::dec,
                 st.status() == NtStatus::AccessDenied ? " failed to decrypt (bad signature)"
                                                       : " has a bad header",
                 ", dropped");
        return Error(st.status());
    }
    return *ch;
}

asio::awaitable<void> Connection::send_oplock_break(uint64_t session_id, const BreakMessage& m,
                                                    bool tree_encrypts) {
    if (closed_) co_return;
    ResponseElement el;
    ByteWriter w(el.bytes, 0);
    Header h;
    h.command = Command::OplockBreak;
    h.flags = flags::kServerToRedir;
    h.message_id = ~uint64_t(0);
    h.session_id = session_id;
    h.serialize(w);
    if (m.lease) {
        // MS-SMB2 2.2.23.2, 3.3.4.7.
        LeaseBreakNotification n;
        n.new_epoch = m.lease->version == 2 ? m.lease->new_epoch : 0;
        n.flags = m.lease->ack_required ? lease_break::kFlagAckRequired : 0;
        n.lease_key = m.lease->key;
        n.current_lease_state = m.lease->current_state;
        n.new_lease_state = m.lease->new_state;
        n.serialize(w);
    } else {
        OplockBreakNotification n;
        n.oplock_level = m.level;
        n.file_id = m.file_id;
        n.serialize(w);
    }
    // Not signed, but encrypted when the session or the open's share encrypts (MS-SMB2 3.3.4.6).
    if (Channel* ch = channel(session_id)) {
        if (ch->encryption && (ch->session->encrypt_data || tree_encrypts)) {
            el.encrypt_with = ch->encryption;
            el.encrypt_session_id = session_id;
        }
    }
    FrameState fs;
    fs.out.push_back(std::move(el));
    if (m.lease)
        log_debug("conn ", id, ": lease break 0x", std::hex, m.lease->current_state, " -> 0x",
                  m.lease->new_state, std::dec, m.lease->ack_required ? " (ack required)" : "");
    else
        log_debug("conn ", id, ": oplock break of fid ", m.file_id.volatile_, " to level ",
                  int(m.level));
    co_await flush(fs);
}

namespace {
// MS-SMB2 3.3.4.6: the break goes out on the connection the open was made on while it is a
// channel of the session, else on another channel of the session (multichannel: the session and
// its opens outlive the connection that made them). Runs on `conn`'s loop.
asio::awaitable<void> send_break(Server& server, std::weak_ptr<Connection> conn,
                                 uint64_t connection_id, uint64_t session_id,
                                 Connection::BreakMessage m, bool tree_encrypts, bool fall_back) {
    auto c = conn.lock();
    if (c && !c->closed() && c->channel(session_id)) {
        co_await c->send_oplock_break(session_id, m, tree_encrypts);
        co_return;
    }
    if (!fall_back) co_return;
    auto s = server.sessions.find(session_id);
    if (!s) co_return;
    for (auto& other : s->channel_connections(0)) {
        if (other->id == connection_id) continue;
        // Once, on the other channel's own loop.
        asio::co_spawn(other->executor,
                       send_break(server, other, other->id, session_id, m, tree_encrypts, false),
                       asio::detached);
        co_return;
    }
}
}  // namespace

OplockBreakNotifier Connection::oplock_break_notifier(uint64_t session_id, FileId file_id,
                                                      bool tree_encrypts) {
    std::weak_ptr<Connection> weak = weak_from_this();
    auto exec = executor;
    Server* srv = &server;
    const uint64_t cid = id;
    return [srv, weak, exec, cid, session_id, file_id, tree_encrypts](uint8_t level) {
        BreakMessage m{.file_id = file_id, .level = level, .lease = std::nullopt};
        asio::co_spawn(exec, send_break(*srv, weak, cid, session_id, m, tree_encrypts, true),
                       asio::detached);
    };
}

namespace {
// A lease break on `c`, an older connection of the client than the open's (MS-SMB2 3.3.4.7),
// under a session that is a channel there; else (closed, no session) on the open's connection
// as an oplock break would go. Runs on `c`'s loop.
asio::awaitable<void> send_lease_break_on(Server& server, std::shared_ptr<Connection> c,
                                          std::weak_ptr<Connection> own, uint64_t own_id,
                                          asio::any_io_executor own_exec, uint64_t session_id,
                                          Connection::BreakMessage m, bool tree_encrypts) {
    if (!c->closed() && !c->channels.empty()) {
        co_await c->send_oplock_break(c->channels.begin()->first, m, tree_encrypts);
        co_return;
    }
    asio::co_spawn(own_exec, send_break(server, own, own_id, session_id, m, tree_encrypts, true),
                   asio::detached);
}
}  // namespace

LeaseBreakNotifier Connection::lease_break_notifier(uint64_t session_id, bool tree_encrypts) {
    std::weak_ptr<Connection> weak = weak_from_this();
    auto exec = executor;
    Server* srv = &server;
    const uint64_t cid = id;
    const protocol::Guid client = state.client_guid;
    srv->add_lease_connection(client, cid, weak);
    return [srv, weak, exec, cid, session_id, tree_encrypts, client](const LeaseBreak& b) {
        BreakMessage m{.file_id = {}, .level = 0, .lease = b};
        // MS-SMB2 3.3.4.7: the client's oldest connection that works, not necessarily the one
        // the open was made on.
        for (auto& c : srv->lease_connections(client)) {
            if (c->id == cid) break;
            asio::co_spawn(
                c->executor,
                send_lease_break_on(*srv, c, weak, cid, exec, session_id, m, tree_encrypts),
                asio::detached);
            return;
        }
        asio::co_spawn(exec, send_break(*srv, weak, cid, session_id, m, tree_encrypts, true),
                       asio::detached);
    };
}

asio::awaitable<Status> Connection::go_async(RequestContext& ctx) {
    if (ctx.is_async()) co_return Status{};
    auto it = frame_of_.find(&ctx);
    if (it == frame_of_.end()) co_return Status{};
    FrameState& fs = *it->second;
    if (fs.more_elements && !handler_for(ctx.header.command).async_inside_compound) {
        // Going async here would hold back the rest of the compound behind an open-ended wait.
        log_debug("conn ", id, ": ", command_name(ctx.header.command),
                  " in the middle of a compound cannot go async");
        co_return Error(NtStatus::InternalError);
    }
    if (pending_by_aid_.size() >= server.limits().max_async_per_connection) {
        server.limit_hits.hit(metrics::Limit::MaxAsyncRequestsPerConnection);
        log_info("conn ", id, " ", transport->peer(),
                 ": limit 'max async requests per connection' (",
                 server.limits().max_async_per_connection, ") reached; ",
                 command_name(ctx.header.command), " refused");
        co_return Error(NtStatus::InsufficientResources);
    }
    ctx.pending->async_id = next_async_id_++;
    pending_by_aid_[ctx.pending->async_id] = ctx.pending;
    // A waiting request no longer counts as in flight (see bytes_in_flight_).
    release_weight(fs);
    // MS-SMB2 3.3.4.2: interim response, ERROR body, credits granted here, not signed.
    ResponseElement el;
    el.bytes.resize(kHeaderSize);
    write_error_body(el.bytes, 0, {});
    finish_header(el, ctx.header, NtStatus::Pending, grant_credits(ctx.header), true,
                  ctx.pending->async_id, ctx.session_id, ctx.tree_id);
    choose_encryption(el, ctx, fs);
    fs.out.push_back(std::move(el));
    fs.async_seen = true;
    co_await flush(fs);
    co_return Status{};
}

asio::awaitable<void> Connection::process_frame(PoolBuffer frame, uint64_t counted) {
    FrameState fs;
    fs.weight = counted;  // the frame's bytes, counted by run() when it was read
    // Released when the frame is done, however it ends (or earlier, by go_async).
    struct WeightGuard {
        Connection& c;
        FrameState& fs;
        ~WeightGuard() { c.release_weight(fs); }
    } weight_guard{*this, fs};
    MutableBytes data = frame.span();
    if (data.size() < 4) {
        close("short frame");
        co_return;
    }
    uint32_t proto = load_le32(data.data());
    if (proto == kSmb1ProtocolId) {
        // MS-SMB2 3.3.5.3.1: the multi-protocol negotiate that Windows clients send first.
        auto resp = handle_smb1_negotiate(*this, data);
        if (!resp) {
            close("unsupported SMB1 request");
            co_return;
        }
        std::vector<Bytes> frags{Bytes(*resp)};
        auto st = co_await transport->send(frags);
        if (!st) close("send failed");
        co_return;
    }
    if (proto == kTransformProtocolId) {
        // MS-SMB2 3.3.5.2.1.1: decrypt in place; any failure drops the message and the
        // connection (the client cannot be told without the key).
        auto ch = open_transform(data);
        if (!ch) {
            close("undecryptable TRANSFORM message");
            co_return;
        }
        fs.transform_session = std::move(ch->session);
        fs.transform_encryption = std::move(ch->encryption);
        data = data.subspan(TransformHeader::kSize);
        proto = data.size() >= kHeaderSize ? load_le32(data.data()) : 0;
    }
    if (proto == kCompressionProtocolId) {
        // Compression was never negotiated (no COMPRESSION_CAPABILITIES in our response).
        log_info("conn ", id, " ", transport->peer(), ": compressed message not negotiated");
        close("unexpected compression transform");
        co_return;
    }
    if (proto != kSmb2ProtocolId) {
        log_info("conn ", id, " ", transport->peer(), ": not an SMB2 message");
        close("bad protocol id");
        co_return;
    }
    auto elems = split_compound(data, server.limits().max_compound_elements);
    if (!elems) {
        if (elems.status() == NtStatus::InsufficientResources) {
            server.limit_hits.hit(metrics::Limit::MaxCompoundLength);
            log_info("conn ", id, " ", transport->peer(), ": limit 'max compound length' (",
                     server.limits().max_compound_elements, " elements) exceeded");
            close("compound too long");
            co_return;
        }
        log_info("conn ", id, " ", transport->peer(), ": malformed compound");
        close("malformed compound");
        co_return;
    }
    // The data the responses of this frame will carry counts from now on (the WRITE data is in
    // the frame).
    for (Bytes elem : *elems) {
        if (elem.size() < kHeaderSize) continue;
        const HandlerInfo& info = handler_for(Command(load_le16(elem.data() + 12)));
        if (info.returns_data && info.payload_size) add_weight(fs, info.payload_size(elem));
    }
    fs.compound = elems->size() > 1;
    ChainState chain;
    std::vector<std::unique_ptr<Header>> headers;
    for (size_t i = 0; i < elems->size(); ++i) {
        const Bytes elem = (*elems)[i];
        if (closed_) co_return;
        fs.more_elements = i + 1 < elems->size();
        auto h = Header::parse(elem);
        if (!h) {
            log_info("conn ", id, " ", transport->peer(), ": bad SMB2 header");
            close("bad header");
            co_return;
        }
        // MS-SMB2 3.3.5.2.1.1: the first element of a decrypted message carries the
        // TRANSFORM's SessionId and is not related to anything before it.
        if (fs.transform_session && headers.empty() &&
            (h->session_id != fs.transform_session->id || h->is_related())) {
            log_info("conn ", id, " ", transport->peer(),
                     ": decrypted message's SessionId differs from its TRANSFORM header");
            close("TRANSFORM session mismatch");
            co_return;
        }
        headers.push_back(std::make_unique<Header>(*h));
        co_await process_element(fs, elem, *headers.back(), chain);
        if (fs.async_seen) co_await flush(fs);
    }
    co_await flush(fs);
}

// The stages of one request element: admit (framing rules, CANCEL, sequence window and credit
// charge), begin (ids of a related chain, cancellation state), authenticate (session state,
// signature, encryption), resolve the tree, dispatch to the handler, respond.
asio::awaitable<void> Connection::process_element(FrameState& fs, Bytes elem, Header& hdr,
                                                  ChainState& chain) {
    const auto admitted_at = std::chrono::steady_clock::now();
    auto admitted = admit(hdr, elem);
    if (!admitted) co_return;  // answered without a response (CANCEL) or the connection closed
    NtStatus status = *admitted;

    ByteVector out(kHeaderSize);
    RequestContext ctx(*this, server, hdr, elem, out);
    begin_request(ctx, fs, chain, status);

    const HandlerInfo& info = handler_for(hdr.command);
    if (status == NtStatus::Success && !info.fn) status = NtStatus::InvalidParameter;
    if (status == NtStatus::Success) status = authenticate(ctx, info, fs);
    if (status == NtStatus::Success) status = resolve_tree(ctx, info);

    // An element refused before its handler ran (first element related, unknown session or tree,
    // bad signature) leaves nothing for the elements related to it: they fail with
    // STATUS_INVALID_PARAMETER (smbtorture smb2.compound.invalid1, invalid2, related9).
    const bool dispatched = status == NtStatus::Success;
    if (dispatched) status = co_await dispatch(ctx, info, fs);
    count_request(ctx, status, std::chrono::steady_clock::now() - admitted_at);
    pending_by_mid_.erase(hdr.message_id);
    if (ctx.pending->async_id) pending_by_aid_.erase(ctx.pending->async_id);

    if (trace_requests.load(std::memory_order_relaxed) ||
        g_log_level.load(std::memory_order_relaxed) >= int(LogLevel::Trace)) {
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - admitted_at)
                            .count();
        log.info("request ", command_name(hdr.command), " mid ", hdr.message_id, " session 0x",
                 std::hex, ctx.session_id, std::dec, " tree ", ctx.tree_id, " -> ",
                 status_name(status), " ", us, " us");
    }

    if (ctx.suppress_response) {
        if (ctx.disconnect_after) close("protocol violation");
        co_return;
    }
    respond(fs, ctx, info, out, status);
    pass_on_chain(chain, ctx, info, status, dispatched);
    if (ctx.disconnect_after) {
        co_await flush(fs);
        close("disconnect requested by handler");
    }
}

void Connection::count_request(const RequestContext& ctx, NtStatus status,
                               std::chrono::steady_clock::duration took) {
    if (!metrics_shard) return;
    const uint64_t ns =
        uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    const Command command = ctx.header.command;
    metrics_shard->request_done(command, status, ns);
    if (ctx.io_bytes && ctx.tree && (command == Command::Read || command == Command::Write))
        metrics_shard->share_io(
            ctx.tree->share->metrics_index,
            command == Command::Read ? metrics::IoDirection::Read : metrics::IoDirection::Write,
            ctx.io_path, ctx.io_bytes, ns);
}

std::optional<NtStatus> Connection::admit(const Header& hdr, Bytes elem) {
    if (hdr.is_response()) {
        close("response flag on a request");
        return std::nullopt;
    }
    // CANCEL (MS-SMB2 3.3.5.16): no credits, no window check, never a response.
    if (hdr.command == Command::Cancel) {
        cancel_request(hdr);
        return std::nullopt;
    }
    if (!negotiated() && hdr.command != Command::Negotiate) {
        close("request before NEGOTIATE");
        return std::nullopt;
    }
    // Sequence window and credit charge (MS-SMB2 3.3.5.2.3, 3.3.5.2.5).
    uint16_t charge = state.supports_multi_credit ? hdr.credit_charge : 1;
    if (!credits.consume(hdr.message_id, charge)) {
        log.info("MessageId ", hdr.message_id, " outside the sequence window");
        close("invalid message id");
        return std::nullopt;
    }
    if (state.supports_multi_credit) {
        const HandlerInfo& info = handler_for(hdr.command);
        uint64_t payload = info.payload_size ? info.payload_size(elem) : 0;
        uint64_t need = payload ? (payload - 1) / 65536 + 1 : 1;
        if ((hdr.credit_charge == 0 && payload > 65536) ||
            (hdr.credit_charge != 0 && need > hdr.credit_charge))
            return NtStatus::InvalidParameter;
    }
    return NtStatus::Success;
}

void Connection::cancel_request(const Header& hdr) {
    std::shared_ptr<PendingRequest> target;
    if (hdr.is_async()) {
        auto it = pending_by_aid_.find(hdr.async_id);
        if (it != pending_by_aid_.end()) target = it->second;
    } else {
        auto it = pending_by_mid_.find(hdr.message_id);
        if (it != pending_by_mid_.end()) target = it->second;
    }
    if (target) target->cancel();
}

void Connection::begin_request(RequestContext& ctx, const FrameState& fs, const ChainState& chain,
                               NtStatus& status) {
    const Header& hdr = ctx.header;
    ctx.request_encrypted = fs.transform_session != nullptr;
    ctx.pending = std::make_shared<PendingRequest>();
    ctx.pending->message_id = hdr.message_id;
    pending_by_mid_[hdr.message_id] = ctx.pending;

    // Related compound elements inherit ids from the previous element (3.3.5.2.7.2).
    ctx.session_id = hdr.session_id;
    ctx.tree_id = hdr.tree_id;
    if (!hdr.is_related()) return;
    if (!chain.valid) {
        if (status == NtStatus::Success) status = NtStatus::InvalidParameter;  // first related
        return;
    }
    ctx.session_id = chain.session_id;
    ctx.tree_id = chain.tree_id;
    ctx.related_file_id = chain.file_id;
    ctx.related_create_status = chain.failed_create_status;
}

// Session (MS-SMB2 3.3.5.2.9) and signature (3.3.5.2.4).
NtStatus Connection::authenticate(RequestContext& ctx, const HandlerInfo& info,
                                  const FrameState& fs) {
    const Header& hdr = ctx.header;
    if (!info.looks_up_session || (!info.needs_session && ctx.session_id == 0))
        return NtStatus::Success;
    Channel* ch = channel(ctx.session_id);
    if (!ch) {
        if (!info.needs_session) return NtStatus::Success;
        sign_answer_for_unknown_session(ctx);
        return NtStatus::UserSessionDeleted;
    }
    const std::shared_ptr<Session>& s = ch->session;
    ctx.session = s;
    ctx.channel_signer = ch->signer;
    ctx.channel_encryption = ch->encryption;
    if (s->state == Session::State::Expired && !info.on_expired_session)
        return NtStatus::NetworkSessionExpired;
    if (s->state == Session::State::InProgress && info.needs_session)
        return NtStatus::UserSessionDeleted;
    if (s->state != Session::State::Valid) return NtStatus::Success;
    if (ctx.request_encrypted) {
        // MS-SMB2 3.3.5.2.4: an encrypted request is not verified; every element of it belongs
        // to the TRANSFORM's session (3.3.5.2.1.1).
        if (s == fs.transform_session) return NtStatus::Success;
        log.info("encrypted ", command_name(hdr.command), " for another session");
        return NtStatus::AccessDenied;
    }
    if (s->reject_unencrypted) {
        // MS-SMB2 3.3.5.2.9: the session requires encryption.
        log.info("unencrypted ", command_name(hdr.command),
                 " on a session that requires encryption");
        return NtStatus::AccessDenied;
    }
    if (hdr.is_signed()) {
        // MS-SMB2 3.3.5.2.4: verified with this channel's Channel.SigningKey.
        if (ch->signer && verify_signature(*ch->signer, ctx.msg, hdr)) return NtStatus::Success;
        log.refusal("bad signature on ", command_name(hdr.command), " (", ctx.msg.size(),
                    " bytes, message id ", hdr.message_id, ")");
        return NtStatus::AccessDenied;
    }
    if (s->signing_required && !info.may_be_unsigned) {
        log.info("unsigned ", command_name(hdr.command), " on a session that requires signing");
        return NtStatus::AccessDenied;
    }
    return NtStatus::Success;
}

void Connection::sign_answer_for_unknown_session(RequestContext& ctx) {
    // A session of another connection (a channel that was never bound here) named in a request
    // signed with its Session.SigningKey: the answer is signed with it, as Windows and Samba do;
    // clients take USER_SESSION_DELETED only with the SIGNED flag when they signed (smbtorture
    // smb2.session.bind2). A request that proves no key gets an unsigned answer.
    // Likewise for a session that ended (LOGOFF or a failed re-authentication on another
    // channel) named with this connection's channel key: Windows and Samba sign that
    // USER_SESSION_DELETED with it (smb2.session.bind_invalid_auth).
    const Header& hdr = ctx.header;
    if (!hdr.is_signed()) return;
    auto gone = channels.find(ctx.session_id);
    if (gone != channels.end()) {
        if (gone->second.signer && verify_signature(*gone->second.signer, ctx.msg, hdr)) {
            ctx.session = gone->second.session;
            ctx.channel_signer = gone->second.signer;
        }
        return;
    }
    auto s = server.sessions.find(ctx.session_id);
    auto signer = s && s->state == Session::State::Valid ? s->session_signer() : nullptr;
    if (signer && verify_signature(*signer, ctx.msg, hdr)) ctx.response_signer = std::move(signer);
}

// The tree connect (MS-SMB2 3.3.5.2.11).
NtStatus Connection::resolve_tree(RequestContext& ctx, const HandlerInfo& info) {
    if (!info.needs_tree) return NtStatus::Success;
    ctx.tree = ctx.session ? ctx.session->find_tree(ctx.tree_id) : nullptr;
    if (!ctx.tree) return NtStatus::NetworkNameDeleted;
    if (ctx.tree->reject_unencrypted && !ctx.request_encrypted) {
        // MS-SMB2 3.3.5.2.11: the share requires encryption.
        log.info("unencrypted ", command_name(ctx.header.command), " on [",
                 ctx.tree->share->config.name, "], which requires encryption");
        return NtStatus::AccessDenied;
    }
    return NtStatus::Success;
}

asio::awaitable<NtStatus> Connection::dispatch(RequestContext& ctx, const HandlerInfo& info,
                                               FrameState& fs) {
    if (info.returns_data) ctx.reply_data_kinds = reply_data_kinds(ctx, fs);
    frame_of_[&ctx] = &fs;
    NtStatus status = co_await info.fn(ctx);
    frame_of_.erase(&ctx);
    ctx.finish_sequence();
    co_return status;
}

void Connection::respond(FrameState& fs, RequestContext& ctx, const HandlerInfo& info,
                         ByteVector& out, NtStatus status) {
    const Header& hdr = ctx.header;
    // Decide before `out` moves into the element: body_written() looks at it.
    bool keep_body =
        ctx.body_written() &&
        (!is_error(status) || status == NtStatus::MoreProcessingRequired || info.body_on_error);
    ResponseElement el;
    el.bytes = std::move(out);
    if (!keep_body) {
        write_error_body(el.bytes, ctx.error_context_count, ctx.error_data);
        ctx.reply_data = {};
    }
    el.data = std::move(ctx.reply_data);
    bool async = ctx.is_async();
    uint16_t granted = async ? 0 : grant_credits(hdr);
    uint64_t sid = ctx.response_session_id.value_or(ctx.session_id);
    uint32_t tid = ctx.response_tree_id.value_or(ctx.tree_id);
    finish_header(el, hdr, status, granted, async, ctx.pending->async_id, sid, tid);
    // MS-SMB2 3.3.4.1.1: signed with the channel's key when the request was signed, the
    // session requires signing, or the handler asks (the final SESSION_SETUP response). A
    // session gets its channel signer only when its authentication completes.
    if (signs_response(ctx, hdr)) {
        el.sign = true;
        el.signer = ctx.channel_signer;
    }
    if (ctx.response_signer) {
        el.signer = std::move(ctx.response_signer);
        el.sign = true;
    }
    choose_encryption(el, ctx, fs);
    el.on_response = std::move(ctx.on_response);
    el.invalidate_token = ctx.invalidate_token;
    fs.out.push_back(std::move(el));
}

// What the next (related) element inherits (MS-SMB2 3.3.5.2.7.2).
void Connection::pass_on_chain(ChainState& chain, const RequestContext& ctx,
                               const HandlerInfo& info, NtStatus status, bool dispatched) {
    chain.session_id = ctx.response_session_id.value_or(ctx.session_id);
    chain.tree_id = ctx.response_tree_id.value_or(ctx.tree_id);
    chain.valid = dispatched;
    if (info.opens_file) {
        chain.file_id = ctx.created_file_id;
        chain.failed_create_status =
            ctx.created_file_id ? std::nullopt : std::optional<NtStatus>(status);
    } else {
        // A related element passes on the chain's file (or the one it used); an unrelated one
        // starts over with the file it named, none if it named no open (smb2.compound.invalid3).
        chain.file_id = ctx.related_file_id;
        if (!ctx.header.is_related()) chain.failed_create_status.reset();
    }
}

}  // namespace daxsmbd::server
