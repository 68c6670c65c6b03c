// SESSION_SETUP (MS-SMB2 3.3.5.5): SPNEGO over Kerberos (MIT GSS) and NTLMv2, the 3.1.1 preauth
// integrity hash, key derivation, the signing decision, and the logon throttle (failed logons
// are logged with user and address, and answers to addresses with recent failures are held
// back; server/logon_throttle.h), and multichannel binding (MS-SMB2 3.3.5.5.2): a further
// connection of the client joins a session as another channel with a signing key of its own.
#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cctype>

#include "protocol/session_setup.h"
#include "server/auth_glue.h"
#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/log.h"
#include "server/server.h"

namespace daxsmbd::server::handlers {

using namespace protocol;

namespace {

// Channels of one session: Windows and Samba allow 32, and answer the binding of a 33rd with
// STATUS_INSUFFICIENT_RESOURCES (smbtorture smb2.multichannel.generic.num_channels).
constexpr size_t kMaxChannelsPerSession = 32;

// A failed first authentication or re-authentication ends the session for all its channels.
// This connection's channel entry stays behind (Connection::channel) to sign what still names
// the session.
void drop_session(ConnectionState& conn, const std::shared_ptr<Session>& s) {
    conn.server.end_session(*s);
}

Bytes session_key_bytes(const Session& s) {
    return Bytes(reinterpret_cast<const std::byte*>(s.session_key.data()), 16);
}

// This connection's signer and cipher contexts of session `s` (MS-SMB2 3.3.5.5.3): signing with
// `signing_key` in the connection's algorithm; the session's cipher keys in contexts of their
// own that draw nonces from the session's sequence.
Status make_channel_crypto(ConnectionState& conn, Session& s, Bytes signing_key, Channel& ch) {
    auto signer = auth::Signer::create(conn.signing_algorithm(), signing_key);
    if (!signer) return Error(signer.status());
    ch.signer = std::make_shared<auth::Signer>(std::move(*signer));
    if (s.can_encrypt()) {
        // The server's EncryptionKey seals responses, its DecryptionKey opens requests.
        auto enc = auth::SessionEncryption::create(s.cipher_id, s.keys.encryption_key_s2c,
                                                   s.keys.decryption_key_c2s, s.nonces);
        if (!enc) return Error(enc.status());
        ch.encryption = std::make_shared<auth::SessionEncryption>(std::move(*enc));
        if (!s.nonces) s.nonces = ch.encryption->nonces();
    }
    return {};
}

// Session.SigningKey and the cipher keys of a first authentication (3.3.5.5.3), and the
// session's first channel: this connection, whose Channel.SigningKey is Session.SigningKey.
Status install_keys(ConnectionState& conn, Session& s, Channel& ch) {
    auto d = conn.state.dialect;
    s.keys =
        auth::derive_session_keys(d, conn.state.cipher_id, session_key_bytes(s), s.full_session_key,
                                  s.preauth ? s.preauth->bytes() : Bytes{});
    s.cipher_id = is_smb3(d) ? conn.state.cipher_id : 0;
    s.signing_algorithm = conn.signing_algorithm();
    s.has_signing_key = true;
    return make_channel_crypto(conn, s,
                               is_smb3(d) ? Bytes(s.keys.signing_key) : session_key_bytes(s), ch);
}

// Abuse limit "max sessions per connection": whether this connection may take one more
// session, bound or new (sessions it is a channel of plus bindings in progress). Entries of
// ended sessions (Connection::channel) do not count and are dropped here. Logs a refusal.
bool session_slot_free(ConnectionState& conn, Server& server, const char* what) {
    std::erase_if(conn.channels, [](const auto& kv) {
        return kv.second.session->state == Session::State::Deleted;
    });
    const size_t limit = server.limits().max_sessions_per_connection;
    if (conn.channels.size() + conn.pending_binds.size() < limit) return true;
    server.limit_hits.hit(metrics::Limit::MaxSessionsPerConnection);
    conn.log.refusal("limit 'max sessions per connection' (", limit, ") reached; ", what,
                     " refused");
    return false;
}

// Waits without blocking the event loop: other connections on this loop go on meanwhile.
asio::awaitable<void> hold_back(ConnectionState& conn, std::chrono::milliseconds delay) {
    if (delay.count() <= 0) co_return;
    asio::steady_timer timer(conn.executor);
    timer.expires_after(delay);
    boost::system::error_code ec;  // cancelled at shutdown: just go on
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// Counts a failed logon against the client's address, logs it, and returns how long the
// answer is held back.
std::chrono::milliseconds note_logon_failure(ConnectionState& conn, std::string_view user,
                                             std::string_view reason, NtStatus status) {
    auto& throttle = conn.server.logon_throttle();
    const std::string addr = conn.peer_address();
    const unsigned n = throttle.record_failure(addr, LogonThrottle::Clock::now());
    const auto delay = throttle.delay_after(n);
    conn.log.refusal("logon failure, user '", user.empty() ? std::string_view("?") : user,
                     "' from ", addr, ": ", reason.empty() ? std::string_view("refused") : reason,
                     " (", status_name(status), "); ", n,
                     " failure(s) from this address, answer delayed ", delay.count(), " ms");
    return delay;
}

bool same_user(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

// Why a SESSION_SETUP naming a session this connection is no channel of cannot bind it, in the
// order Windows checks (smbtorture smb2.session.bind_negative_*); Success when it may. `s` is
// the session, found in the global table and Valid. A request signed with the session's key is
// answered signed with it, as Windows and Samba do, so that the client sees the real status
// rather than a signature failure (the signer goes to ctx.response_signer).
NtStatus binding_refusal(RequestContext& ctx, const SessionSetupRequest& req, const Session& s) {
    auto& conn = ctx.conn;
    std::unique_ptr<auth::Signer> signer = s.session_signer();
    // MS-SMB2 3.3.5.5.2: the binding request is verified with Session.SigningKey.
    const bool verified = signer && ctx.signature_valid(*signer);
    if (verified) ctx.response_signer = std::move(signer);
    if (!req.is_binding()) return NtStatus::UserSessionDeleted;
    if (!ctx.header.is_signed()) return NtStatus::InvalidParameter;
    if (!verified) {
        conn.log.refusal("binding to session 0x", std::hex, s.id, std::dec,
                         " refused: bad signature");
        return NtStatus::AccessDenied;
    }
    // Samba's rule: when either side signs with AES-GMAC both must (3.1.1 signing algorithms).
    using auth::SigningAlgorithm;
    const SigningAlgorithm session_alg = s.signing_algorithm;
    const SigningAlgorithm conn_alg = conn.signing_algorithm();
    if (session_alg == SigningAlgorithm::AesGmac && conn_alg != session_alg)
        return NtStatus::RequestOutOfSequence;
    if (conn_alg == SigningAlgorithm::AesGmac && conn_alg != session_alg)
        return NtStatus::NotSupported;
    // MS-SMB2 3.3.5.5.2: binding needs a 3.x connection and multichannel; the dialect (and
    // cipher) must be the session's first connection's.
    if (!is_smb3(conn.state.dialect)) return NtStatus::RequestNotAccepted;
    if (!conn.server.config().global.multi_channel) {
        conn.log.refusal("binding to session 0x", std::hex, s.id, std::dec,
                         " refused: multichannel is off ('server multi channel support = no')");
        return NtStatus::RequestNotAccepted;
    }
    if (conn.state.dialect != s.dialect || s.cipher_id != conn.state.cipher_id)
        return NtStatus::InvalidParameter;
    if (s.is_anonymous || s.is_guest) return NtStatus::NotSupported;
    return NtStatus::Success;
}

// SESSION_SETUP with SMB2_SESSION_FLAG_BINDING, or naming a session this connection is no
// channel of (MS-SMB2 3.3.5.5.2): binds this connection to the session as a further channel
// after an authentication of its own as the session's user. The channel signs with a key of its
// own (3.3.5.5.3); everything else of the session (trees, opens, cipher keys) is shared. A
// failed binding leaves the session as it was.
asio::awaitable<NtStatus> bind(RequestContext& ctx, const SessionSetupRequest& req) {
    auto& conn = ctx.conn;
    auto& server = conn.server;
    const uint64_t sid = ctx.header.session_id;
    std::shared_ptr<Session> s = server.sessions.find(sid);
    if (!s || s->state != Session::State::Valid) {
        conn.pending_binds.erase(sid);
        co_return NtStatus::UserSessionDeleted;
    }
    if (NtStatus refused = binding_refusal(ctx, req, *s); refused != NtStatus::Success) {
        conn.pending_binds.erase(sid);
        co_return refused;
    }
    // MS-SMB2 3.3.5.5.2: a connection that already is a channel of the session cannot bind it
    // again.
    if (conn.channel(sid)) co_return NtStatus::RequestNotAccepted;
    if (s->channel_count() >= kMaxChannelsPerSession) {
        conn.pending_binds.erase(sid);
        conn.log.refusal("binding to session 0x", std::hex, sid, std::dec, " refused: it has ",
                         kMaxChannelsPerSession, " channels already");
        co_return NtStatus::InsufficientResources;
    }
    auto pit = conn.pending_binds.find(sid);
    if (pit == conn.pending_binds.end()) {
        if (!session_slot_free(conn, server, "binding")) co_return NtStatus::InsufficientResources;
        ConnectionState::PendingBind pb;
        pb.session = s;
        // 3.1.1: PreauthSession.PreauthIntegrityHashValue starts as the connection's.
        if (conn.state.preauth) pb.preauth = *conn.state.preauth;
        pit = conn.pending_binds.emplace(sid, std::move(pb)).first;
    }
    ctx.response_session_id = sid;
    std::unique_ptr<auth::SpnegoAcceptor> acceptor = std::move(pit->second.acceptor);
    if (!acceptor) acceptor = make_acceptor(server);
    if (pit->second.preauth) pit->second.preauth->update(ctx.msg);

    auth::SpnegoAcceptor* acc = acceptor.get();
    const Bytes token = req.security_buffer;
    auto step = co_await ctx.blocking_as_daemon([acc, token] { return acc->step(token); });
    // The map may have changed while the step ran (the connection closed, another leg came).
    pit = conn.pending_binds.find(sid);
    if (!step || pit == conn.pending_binds.end()) {
        if (pit != conn.pending_binds.end()) conn.pending_binds.erase(pit);
        if (!step) {
            const NtStatus status = step.status() == NtStatus::InvalidParameter
                                        ? NtStatus::InvalidParameter
                                        : NtStatus::LogonFailure;
            const auto delay = note_logon_failure(conn, acceptor->attempted_user(),
                                                  acceptor->failure_reason(), step.status());
            co_await hold_back(conn, delay);
            co_return status;
        }
        co_return NtStatus::UserSessionDeleted;
    }

    SessionSetupResponse resp;
    resp.security_buffer = std::move(step->output_token);
    if (!step->done) {
        pit->second.acceptor = std::move(acceptor);
        resp.serialize(ctx.body());
        if (pit->second.preauth) {
            ConnectionState* c = &conn;
            ctx.on_response = [c, sid](Bytes r) {
                auto it = c->pending_binds.find(sid);
                if (it != c->pending_binds.end() && it->second.preauth)
                    it->second.preauth->update(r);
            };
        }
        // Intermediate answers are signed with Session.SigningKey (ctx.response_signer).
        co_return NtStatus::MoreProcessingRequired;
    }

    std::optional<auth::PreauthHash> preauth = std::move(pit->second.preauth);
    conn.pending_binds.erase(pit);
    co_await hold_back(
        conn, server.logon_throttle().delay_for(conn.peer_address(), LogonThrottle::Clock::now()));
    // MS-SMB2 3.3.5.5.2: the binding must authenticate the session's user. Windows answers a
    // different user (guest and anonymous included) with ACCESS_DENIED (smbtorture
    // smb2.session.bind_different_user); the session stays as it was.
    if (step->is_anonymous || !same_user(step->user, s->user)) {
        conn.log.refusal("binding to session 0x", std::hex, sid, std::dec, " of user '", s->user,
                         "' refused: authenticated as '",
                         step->is_anonymous ? std::string("(anonymous)") : step->user, "'");
        co_return NtStatus::AccessDenied;
    }
    // Channel.SigningKey (3.3.5.5.3): from the binding's own session key; on 3.1.1 with the
    // binding's PreauthSession hash as context.
    std::array<uint8_t, 16> key16{};
    for (size_t i = 0; i < 16 && i < step->session_key.size(); ++i)
        key16[i] = uint8_t(step->session_key[i]);
    const auto channel_key = auth::derive_channel_signing_key(
        conn.state.dialect, Bytes(reinterpret_cast<const std::byte*>(key16.data()), 16),
        preauth ? preauth->bytes() : Bytes{});
    Channel ch;
    ch.session = s;
    if (auto st = make_channel_crypto(conn, *s, Bytes(channel_key), ch); !st) co_return st.status();
    if (!s->add_channel(conn.id, conn.weak_self())) co_return NtStatus::UserSessionDeleted;
    conn.channels[sid] = ch;
    conn.log.info("bound to session 0x", std::hex, sid, std::dec, " of user ", s->user,
                  " as channel ", s->channel_count(), " (dialect 0x", std::hex,
                  uint16_t(conn.state.dialect), std::dec, ")");
    resp.serialize(ctx.body());
    // The final response is signed with the new Channel.SigningKey (3.3.5.5.3).
    ctx.response_signer.reset();
    ctx.session = s;
    ctx.channel_signer = ch.signer;
    ctx.channel_encryption = ch.encryption;
    ctx.force_sign = true;
    co_return NtStatus::Success;
}

// The session a SESSION_SETUP that is not a binding works on: a new one for SessionId 0
// (refused with STATUS_INSUFFICIENT_RESOURCES at the limit), else this connection's session.
Result<std::shared_ptr<Session>> session_to_set_up(ConnectionState& conn, Server& server,
                                                   uint64_t session_id) {
    if (session_id != 0) {
        Channel* ch = conn.channel(session_id);
        if (!ch) return Error(NtStatus::UserSessionDeleted);
        return ch->session;
    }
    // Abuse limit "max sessions per connection". MS-SMB2 3.3.5.5 sets no per-connection
    // number; like Samba when it can allocate no further session (smbXsrv_session_create),
    // the new session is refused with STATUS_INSUFFICIENT_RESOURCES.
    if (!session_slot_free(conn, server, "new session"))
        return Error(NtStatus::InsufficientResources);
    std::shared_ptr<Session> s = server.sessions.create();
    s->dialect = conn.state.dialect;
    if (conn.state.preauth) s->preauth = *conn.state.preauth;  // 3.3.5.5 step: copy conn H
    s->add_channel(conn.id, conn.weak_self());
    conn.channels[s->id] = Channel{s, nullptr, nullptr};
    return s;
}

// A logon whose security exchange failed: LOGON_FAILURE (INVALID_PARAMETER for a malformed
// token), after the delay the logon throttle asks for.
asio::awaitable<NtStatus> refuse_failed_logon(ConnectionState& conn,
                                              const std::shared_ptr<Session>& s,
                                              std::unique_ptr<auth::SpnegoAcceptor> acceptor,
                                              NtStatus failure) {
    const NtStatus status =
        failure == NtStatus::InvalidParameter ? NtStatus::InvalidParameter : NtStatus::LogonFailure;
    const auto delay =
        note_logon_failure(conn, acceptor->attempted_user(), acceptor->failure_reason(), failure);
    acceptor.reset();
    // A failed re-authentication ends the session too, as Windows and Samba do: what comes
    // next on it gets USER_SESSION_DELETED (smbtorture smb2.session.reauth6).
    drop_session(conn, s);
    co_await hold_back(conn, delay);
    co_return status;
}

// Who the session acts as on disk (README "Identity"): the user database entry's uid/gid,
// never root unless the name is in 'admin users'; anonymous sessions act as the guest
// account.
// Who the session acts as on disk (README "Identity"): the user database entry's uid/gid, never
// root unless the name is in 'admin users'; anonymous sessions act as the guest account. The
// failures (logged here) refuse the logon; the caller drops the session.
asio::awaitable<Result<std::shared_ptr<const vfs::UnixIdentity>>> unix_identity_of(
    RequestContext& ctx, const auth::AcceptorStep& step) {
    auto& conn = ctx.conn;
    auto& server = conn.server;
    const auto& g = server.config().global;
    if (step.is_anonymous) {
        const std::string guest = g.guest_account;
        // A named lambda: GCC 12 destroys a capturing temporary in a co_await expression twice.
        auto lookup = [&guest] { return vfs::resolve_unix_account(guest); };
        auto acct = co_await ctx.blocking_as_daemon(lookup);
        if (!acct) {
            conn.log.error("guest logon refused: ", "'guest account' ", guest,
                           " is not a Unix account");
            co_return Error(NtStatus::LogonFailure);
        }
        if ((*acct)->is_root()) {
            conn.log.error("guest logon refused: ", "'guest account' ", guest, " is uid 0");
            co_return Error(NtStatus::LogonFailure);
        }
        co_return std::shared_ptr<const vfs::UnixIdentity>(std::move(*acct));
    }
    auto rec = server.find_user(step.user);
    if (!rec) {
        // Removed from the database while the logon ran.
        conn.log.refusal("logon of ", step.user, " refused: no longer in the user database");
        co_return Error(NtStatus::LogonFailure);
    }
    if (rec->uid == 0 && !g.is_admin_user(rec->name)) {
        conn.log.error("logon of ", rec->name,
                       " refused: its user database entry maps it to uid 0 and it is not in ",
                       "'admin users'");
        co_return Error(NtStatus::AccessDenied);
    }
    const uid_t uid = rec->uid;
    const gid_t gid = rec->gid;
    auto resolve = [uid, gid] { return vfs::resolve_unix_identity(uid, gid); };
    co_return std::shared_ptr<const vfs::UnixIdentity>(co_await ctx.blocking_as_daemon(resolve));
}

// MS-SMB2 3.3.5.5.3: the keys, signing and encryption of a session that has just authenticated;
// the SessionFlags of the response (IS_NULL for an anonymous session, which has no keys).
Result<uint16_t> secure_session(ConnectionState& conn, Session& s, Channel& ch,
                                const SessionSetupRequest& req, const GlobalConfig& g) {
    if (s.is_anonymous) return uint16_t(session_flags::kIsNull);
    DAX_CHECK(install_keys(conn, s, ch));
    // MS-SMB2 3.3.5.5.3: signing required when the client or the server requires it.
    s.signing_required = (req.security_mode & security_mode::kSigningRequired) ||
                         g.signing == SigningPolicy::Mandatory;
    // Session.EncryptData for "desired"/"required" when the client can encrypt; the flag
    // tells it to encrypt everything (3.3.5.5.3, 2.2.6).
    if (ch.encryption && g.encrypt >= EncryptPolicy::Desired) {
        s.encrypt_data = true;
        s.reject_unencrypted = g.encrypt == EncryptPolicy::Required;
        return uint16_t(session_flags::kEncryptData);
    }
    return uint16_t(0);
}

void log_session_established(const ConnectionState& conn, const Session& s, const Channel& ch,
                             const auth::AcceptorStep& step) {
    conn.log.info("session ", std::hex, s.id, std::dec, " user ",
                  s.is_anonymous ? "(anonymous)" : s.user, " via ",
                  step.mech == auth::oid::ntlmssp() ? "NTLMv2" : "Kerberos", " dialect 0x",
                  std::hex, uint16_t(conn.state.dialect), std::dec, " cipher ",
                  ch.encryption ? auth::cipher_name(conn.state.cipher_id) : "none",
                  s.encrypt_data ? " (session encrypted)" : "");
}

// The acceptor of the session's exchange (a new one for its first leg). It leaves the session
// while it works: a second SESSION_SETUP on the same session meanwhile (on this or another
// channel) cannot reach it (it would start an exchange of its own and fail).
std::unique_ptr<auth::SpnegoAcceptor> take_acceptor(Session& s, Server& server) {
    std::unique_ptr<auth::SpnegoAcceptor> acceptor;
    {
        std::lock_guard lk(s.mu);
        acceptor = std::move(s.acceptor);
    }
    if (!acceptor) acceptor = make_acceptor(server);
    return acceptor;
}

// A leg of the exchange that needs another one (MS-SMB2 3.3.5.5.3): the acceptor goes back to
// the session, and on 3.1.1 the response goes into the preauth hash as well (3.3.5.5.1).
NtStatus continue_logon(RequestContext& ctx, const std::shared_ptr<Session>& s,
                        std::unique_ptr<auth::SpnegoAcceptor> acceptor,
                        const SessionSetupResponse& resp, bool hashing) {
    {
        std::lock_guard lk(s->mu);
        s->acceptor = std::move(acceptor);
    }
    resp.serialize(ctx.body());
    if (hashing) {
        auto sp = s;
        ctx.on_response = [sp](Bytes r) {
            if (sp->preauth) sp->preauth->update(r);
        };
    }
    return NtStatus::MoreProcessingRequired;
}

// "smb encrypt = required" globally (MS-SMB2 3.3.5.5: Server.EncryptData and
// RejectUnencryptedAccess): a client that cannot encrypt (2.x, no common cipher) and anonymous or
// guest logons (no keys) cannot have a session (true: refused, logged).
bool encryption_refuses(const ConnectionState& conn, const GlobalConfig& g, bool is_anonymous) {
    const bool can_encrypt = is_smb3(conn.state.dialect) && conn.state.cipher_id != 0;
    if (g.encrypt != EncryptPolicy::Required || (can_encrypt && !is_anonymous)) return false;
    conn.log.refusal("session refused: encryption ", "is required and the ",
                     is_anonymous ? "logon is anonymous" : "client cannot encrypt");
    return true;
}

// Who authenticated, as the session keeps it: user, domain, identity and the session key
// (SessionKey is its first 16 bytes, zero-padded).
void record_logon(Session& s, const auth::AcceptorStep& step,
                  std::shared_ptr<const vfs::UnixIdentity> identity) {
    s.user = step.user;
    s.domain = step.domain;
    s.is_anonymous = step.is_anonymous;
    s.identity = std::move(identity);
    s.full_session_key = step.session_key;
    s.session_key.fill(0);
    for (size_t i = 0; i < 16 && i < step.session_key.size(); ++i)
        s.session_key[i] = uint8_t(step.session_key[i]);
}

// PreviousSessionId of the same user: the old session goes (3.3.5.5.3 step 4), with all its
// channels.
void end_previous_session(Server& server, uint64_t previous_session_id, const Session& s) {
    if (!previous_session_id || previous_session_id == s.id) return;
    auto old = server.sessions.find(previous_session_id);
    if (old && old->user == s.user) server.end_session(*old, /*keep_durable=*/true);
}

}  // namespace

asio::awaitable<NtStatus> session_setup(RequestContext& ctx) {
    auto& conn = ctx.conn;
    auto& server = conn.server;
    auto req = SessionSetupRequest::parse(ctx.msg);
    if (!req) co_return req.status();

    if (req->is_binding() || (ctx.header.session_id != 0 && !conn.channel(ctx.header.session_id)))
        co_return co_await bind(ctx, *req);

    auto session = session_to_set_up(conn, server, ctx.header.session_id);
    if (!session) co_return session.status();
    std::shared_ptr<Session> s = std::move(*session);
    ctx.response_session_id = s->id;
    bool reauth = s->state != Session::State::InProgress;
    std::unique_ptr<auth::SpnegoAcceptor> acceptor = take_acceptor(*s, server);

    // 3.1.1: every SESSION_SETUP request of the first authentication is hashed (3.3.5.5.1).
    bool hashing = !reauth && s->preauth.has_value();
    if (hashing) s->preauth->update(ctx.msg);

    // GSS reads the keytab and writes the replay cache, NTLM reads the user database: file I/O
    // that the event loop must not wait for.
    auth::SpnegoAcceptor* acc = acceptor.get();
    const Bytes token = req->security_buffer;
    auto step = co_await ctx.blocking_as_daemon([acc, token] { return acc->step(token); });
    if (!step) co_return co_await refuse_failed_logon(conn, s, std::move(acceptor), step.status());

    SessionSetupResponse resp;
    resp.security_buffer = std::move(step->output_token);
    if (!step->done) co_return continue_logon(ctx, s, std::move(acceptor), resp, hashing);

    // Authenticated. While the address has recent failures, success waits as long as a failure
    // would: the delay must not tell a guesser which attempt was right.
    const auto& g = server.config().global;
    co_await hold_back(
        conn, server.logon_throttle().delay_for(conn.peer_address(), LogonThrottle::Clock::now()));
    if (step->is_anonymous && !g.guest_ok) {
        const auto delay = note_logon_failure(conn, "(anonymous)",
                                              "anonymous logon refused ('map to guest = never')",
                                              NtStatus::LogonFailure);
        drop_session(conn, s);
        co_await hold_back(conn, delay);
        co_return NtStatus::LogonFailure;
    }
    if (reauth) {
        // Re-authentication keeps the keys (3.3.5.5.3) but must be the same user.
        if (!step->is_anonymous && step->user != s->user) {
            conn.log.refusal("re-authentication as a different user refused");
            co_return NtStatus::AccessDenied;
        }
        s->state = Session::State::Valid;
        resp.serialize(ctx.body());
        ctx.session = s;
        co_return NtStatus::Success;
    }

    if (encryption_refuses(conn, g, step->is_anonymous)) {
        drop_session(conn, s);
        co_return NtStatus::AccessDenied;
    }

    auto identity = co_await unix_identity_of(ctx, *step);
    if (!identity) {
        drop_session(conn, s);
        co_return identity.status();
    }
    record_logon(*s, *step, std::move(*identity));
    Channel* ch = conn.channel(s->id);
    if (!ch) co_return NtStatus::UserSessionDeleted;  // ended meanwhile (connection closing)
    auto flags = secure_session(conn, *s, *ch, *req, g);
    if (!flags) {
        drop_session(conn, s);
        co_return flags.status();
    }
    resp.session_flags |= *flags;
    s->preauth.reset();
    s->state = Session::State::Valid;  // publishes the identity and keys to other loops

    end_previous_session(server, req->previous_session_id, *s);

    log_session_established(conn, *s, *ch, *step);
    resp.serialize(ctx.body());
    ctx.session = s;
    ctx.channel_signer = ch->signer;
    ctx.channel_encryption = ch->encryption;
    ctx.force_sign = !s->is_anonymous;  // the final response MUST be signed (3.3.5.5.3)
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
