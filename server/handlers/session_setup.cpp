// SESSION_SETUP (MS-SMB2 3.3.5.5): SPNEGO over Kerberos (MIT GSS) and NTLMv2, the 3.1.1 preauth
// integrity hash, key derivation, the signing decision, and the logon throttle (failed logons
// are logged with user and address, and answers to addresses with recent failures are held
// back; server/logon_throttle.h).
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>

#include "protocol/session_setup.h"
#include "server/auth_glue.h"
#include "server/connection.h"
#include "server/handlers/handlers.h"
#include "server/log.h"
#include "server/server.h"

namespace daxsmbd::server::handlers {

using namespace protocol;

namespace {

void drop_session(Connection& conn, uint64_t sid) {
    conn.server.opens.remove_if([sid](const Open& o) { return o.session_id == sid; });
    conn.sessions.erase(sid);
    conn.server.sessions.remove(sid);
}

// Session.SigningKey and the signer for this connection's algorithm (3.3.5.5.3).
Status install_keys(Connection& conn, Session& s) {
    auto d = conn.state.dialect;
    s.keys = auth::derive_session_keys(
        d, conn.state.cipher_id,
        Bytes(reinterpret_cast<const std::byte*>(s.session_key.data()), 16), s.full_session_key,
        s.preauth ? s.preauth->bytes() : Bytes{});
    Bytes key = is_smb3(d) ? Bytes(s.keys.signing_key)
                           : Bytes(reinterpret_cast<const std::byte*>(s.session_key.data()), 16);
    auto signer = auth::Signer::create(conn.signing_algorithm(), key);
    if (!signer) return Error(signer.status());
    s.signer = std::make_unique<auth::Signer>(std::move(*signer));
    // Cipher keys whenever the connection negotiated encryption (3.3.5.5.3): the server's
    // EncryptionKey seals responses, its DecryptionKey opens requests.
    s.cipher_id = is_smb3(d) ? conn.state.cipher_id : 0;
    if (is_smb3(d) && conn.state.cipher_id != 0) {
        auto enc = auth::SessionEncryption::create(conn.state.cipher_id, s.keys.encryption_key_s2c,
                                                   s.keys.decryption_key_c2s);
        if (!enc) return Error(enc.status());
        s.encryption = std::make_unique<auth::SessionEncryption>(std::move(*enc));
    }
    return {};
}

// Waits without blocking the event loop: other connections on this loop go on meanwhile.
asio::awaitable<void> hold_back(Connection& conn, std::chrono::milliseconds delay) {
    if (delay.count() <= 0) co_return;
    asio::steady_timer timer(conn.executor);
    timer.expires_after(delay);
    boost::system::error_code ec;  // cancelled at shutdown: just go on
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// Counts a failed logon against the client's address, logs it, and returns how long the
// answer is held back.
std::chrono::milliseconds note_logon_failure(Connection& conn, std::string_view user,
                                             std::string_view reason, NtStatus status) {
    auto& throttle = conn.server.logon_throttle();
    const std::string addr = conn.transport->peer_address();
    const unsigned n = throttle.record_failure(addr, LogonThrottle::Clock::now());
    const auto delay = throttle.delay_after(n);
    log_info("conn ", conn.id, " ", conn.transport->peer(), ": logon failure, user '",
             user.empty() ? std::string_view("?") : user, "' from ", addr, ": ",
             reason.empty() ? std::string_view("refused") : reason, " (", status_name(status),
             "); ", n, " failure(s) from this address, answer delayed ", delay.count(), " ms");
    return delay;
}

// A signer of its own with `s`'s Session.SigningKey and algorithm (3.3.5.5.3), for answering on
// another connection than the session's.
std::unique_ptr<auth::Signer> copy_signer(const Session& s) {
    if (!s.signer) return nullptr;
    Bytes key = is_smb3(s.dialect)
                    ? Bytes(s.keys.signing_key)
                    : Bytes(reinterpret_cast<const std::byte*>(s.session_key.data()), 16);
    auto signer = auth::Signer::create(s.signer->algorithm(), key);
    if (!signer) return nullptr;
    return std::make_unique<auth::Signer>(std::move(*signer));
}

// SESSION_SETUP naming a session this connection does not hold: a request to bind this
// connection as another channel of it (SMB2_SESSION_FLAG_BINDING), or a client that mixed up
// its sessions. A request signed with the session's key is answered signed with it, as Windows
// and Samba do, so that the client sees the real status rather than a signature failure.
// Binding checks in the order Windows applies them (smbtorture smb2.session.bind_negative_*);
// binding itself needs multichannel, which daxsmbd does not offer yet, so a request that
// passes every check is refused with STATUS_REQUEST_NOT_ACCEPTED (MS-SMB2 3.3.5.5).
NtStatus session_setup_foreign(RequestContext& ctx, const SessionSetupRequest& req) {
    auto& conn = ctx.conn;
    std::shared_ptr<Session> s = conn.server.sessions.find(ctx.header.session_id);
    if (!s || s->state != Session::State::Valid) return NtStatus::UserSessionDeleted;
    std::unique_ptr<auth::Signer> signer = copy_signer(*s);
    const bool verified = signer && ctx.signature_valid(*signer);
    if (verified) ctx.response_signer = std::move(signer);
    if (!req.is_binding()) return NtStatus::UserSessionDeleted;
    if (!ctx.header.is_signed()) return NtStatus::InvalidParameter;
    if (!verified) {
        log_info("conn ", conn.id, " ", conn.transport->peer(), ": binding to session ", std::hex,
                 s->id, std::dec, " refused: bad signature");
        return NtStatus::AccessDenied;
    }
    using auth::SigningAlgorithm;
    const SigningAlgorithm session_alg = s->signer->algorithm();
    const SigningAlgorithm conn_alg = conn.signing_algorithm();
    if (session_alg == SigningAlgorithm::AesGmac && conn_alg != session_alg)
        return NtStatus::RequestOutOfSequence;
    if (conn_alg == SigningAlgorithm::AesGmac && conn_alg != session_alg)
        return NtStatus::NotSupported;
    if (!is_smb3(conn.state.dialect)) return NtStatus::RequestNotAccepted;
    if (s->cipher_id != (is_smb3(conn.state.dialect) ? conn.state.cipher_id : 0))
        return NtStatus::InvalidParameter;
    log_info("conn ", conn.id, " ", conn.transport->peer(), ": binding to session ", std::hex,
             s->id, std::dec, " refused: multichannel is not supported");
    return NtStatus::RequestNotAccepted;
}

}  // namespace

asio::awaitable<NtStatus> session_setup(RequestContext& ctx) {
    auto& conn = ctx.conn;
    auto& server = conn.server;
    auto req = SessionSetupRequest::parse(ctx.msg);
    if (!req) co_return req.status();

    if (req->is_binding() ||
        (ctx.header.session_id != 0 && !conn.sessions.count(ctx.header.session_id)))
        co_return session_setup_foreign(ctx, *req);

    std::shared_ptr<Session> s;
    if (ctx.header.session_id == 0) {
        // Abuse limit "max sessions per connection". MS-SMB2 3.3.5.5 sets no per-connection
        // number; like Samba when it can allocate no further session (smbXsrv_session_create),
        // the new session is refused with STATUS_INSUFFICIENT_RESOURCES.
        if (conn.sessions.size() >= server.limits().max_sessions_per_connection) {
            log_info("conn ", conn.id, " ", conn.transport->peer(),
                     ": limit 'max sessions per connection' (",
                     server.limits().max_sessions_per_connection, ") reached; new session refused");
            co_return NtStatus::InsufficientResources;
        }
        s = server.sessions.create();
        s->dialect = conn.state.dialect;
        if (conn.state.preauth) s->preauth = *conn.state.preauth;  // 3.3.5.5 step: copy conn H
        conn.sessions[s->id] = s;
    } else {
        auto it = conn.sessions.find(ctx.header.session_id);
        if (it == conn.sessions.end()) co_return NtStatus::UserSessionDeleted;
        s = it->second;
    }
    ctx.response_session_id = s->id;
    bool reauth = s->state != Session::State::InProgress;
    // The acceptor leaves the session while it works: a second SESSION_SETUP on the same session
    // meanwhile cannot reach it (it would start an exchange of its own and fail).
    std::unique_ptr<auth::SpnegoAcceptor> acceptor = std::move(s->acceptor);
    if (!acceptor) acceptor = make_acceptor(server);

    // 3.1.1: every SESSION_SETUP request of the first authentication is hashed (3.3.5.5.1).
    bool hashing = !reauth && s->preauth.has_value();
    if (hashing) s->preauth->update(ctx.msg);

    // GSS reads the keytab and writes the replay cache, NTLM reads the user database: file I/O
    // that the event loop must not wait for.
    auth::SpnegoAcceptor* acc = acceptor.get();
    const Bytes token = req->security_buffer;
    auto step = co_await ctx.blocking([acc, token] { return acc->step(token); });
    if (!step) {
        const NtStatus status = step.status() == NtStatus::InvalidParameter
                                    ? NtStatus::InvalidParameter
                                    : NtStatus::LogonFailure;
        const auto delay = note_logon_failure(conn, acceptor->attempted_user(),
                                              acceptor->failure_reason(), step.status());
        acceptor.reset();
        // A failed re-authentication ends the session too, as Windows and Samba do: what comes
        // next on it gets USER_SESSION_DELETED (smbtorture smb2.session.reauth6).
        drop_session(conn, s->id);
        co_await hold_back(conn, delay);
        co_return status;
    }

    SessionSetupResponse resp;
    resp.security_buffer = std::move(step->output_token);
    if (!step->done) {
        s->acceptor = std::move(acceptor);
        resp.serialize(ctx.body());
        if (hashing) {
            auto sp = s;
            ctx.on_response = [sp](Bytes r) {
                if (sp->preauth) sp->preauth->update(r);
            };
        }
        co_return NtStatus::MoreProcessingRequired;
    }

    // Authenticated. While the address has recent failures, success waits as long as a failure
    // would: the delay must not tell a guesser which attempt was right.
    const auto& g = server.config().global;
    co_await hold_back(conn, server.logon_throttle().delay_for(conn.transport->peer_address(),
                                                               LogonThrottle::Clock::now()));
    if (step->is_anonymous && !g.guest_ok) {
        const auto delay = note_logon_failure(conn, "(anonymous)",
                                              "anonymous logon refused ('map to guest = never')",
                                              NtStatus::LogonFailure);
        drop_session(conn, s->id);
        co_await hold_back(conn, delay);
        co_return NtStatus::LogonFailure;
    }
    if (reauth) {
        // Re-authentication keeps the keys (3.3.5.5.3) but must be the same user.
        if (!step->is_anonymous && step->user != s->user) {
            log_info("conn ", conn.id, ": re-authentication as a different user refused");
            co_return NtStatus::AccessDenied;
        }
        s->state = Session::State::Valid;
        resp.serialize(ctx.body());
        ctx.session = s;
        co_return NtStatus::Success;
    }

    // "smb encrypt = required" globally (MS-SMB2 3.3.5.5: Server.EncryptData and
    // RejectUnencryptedAccess): a client that cannot encrypt (2.x, no common cipher) and
    // anonymous or guest logons (no keys) cannot have a session.
    const bool can_encrypt = is_smb3(conn.state.dialect) && conn.state.cipher_id != 0;
    if (g.encrypt == EncryptPolicy::Required && (!can_encrypt || step->is_anonymous)) {
        log_info("conn ", conn.id, " ", conn.transport->peer(), ": session refused: encryption ",
                 "is required and the ",
                 step->is_anonymous ? "logon is anonymous" : "client cannot encrypt");
        drop_session(conn, s->id);
        co_return NtStatus::AccessDenied;
    }

    s->user = step->user;
    s->domain = step->domain;
    s->is_anonymous = step->is_anonymous;
    if (auto rec = server.find_user(s->user)) {
        s->uid = rec->uid;
        s->gid = rec->gid;
    }
    s->full_session_key = step->session_key;
    s->session_key.fill(0);
    for (size_t i = 0; i < 16 && i < step->session_key.size(); ++i)
        s->session_key[i] = uint8_t(step->session_key[i]);
    if (!s->is_anonymous) {
        auto st = install_keys(conn, *s);
        if (!st) {
            drop_session(conn, s->id);
            co_return st.status();
        }
        // MS-SMB2 3.3.5.5.3: signing required when the client or the server requires it.
        s->signing_required = (req->security_mode & security_mode::kSigningRequired) ||
                              g.signing == SigningPolicy::Mandatory;
        // Session.EncryptData for "desired"/"required" when the client can encrypt; the flag
        // tells it to encrypt everything (3.3.5.5.3, 2.2.6).
        if (s->encryption && g.encrypt >= EncryptPolicy::Desired) {
            s->encrypt_data = true;
            s->reject_unencrypted = g.encrypt == EncryptPolicy::Required;
            resp.session_flags |= session_flags::kEncryptData;
        }
    } else {
        resp.session_flags |= session_flags::kIsNull;
    }
    s->state = Session::State::Valid;
    s->preauth.reset();

    // PreviousSessionId of the same user: the old session goes (3.3.5.5.3 step 4).
    if (req->previous_session_id && req->previous_session_id != s->id) {
        auto old = server.sessions.find(req->previous_session_id);
        if (old && old->user == s->user) {
            server.opens.remove_if([id = old->id](const Open& o) { return o.session_id == id; });
            server.sessions.remove(old->id);
        }
    }

    log_info("conn ", conn.id, " ", conn.transport->peer(), ": session ", std::hex, s->id, std::dec,
             " user ", s->is_anonymous ? "(anonymous)" : s->user, " via ",
             step->mech == auth::oid::ntlmssp() ? "NTLMv2" : "Kerberos", " dialect 0x", std::hex,
             uint16_t(conn.state.dialect), std::dec, " cipher ",
             s->encryption ? auth::cipher_name(conn.state.cipher_id) : "none",
             s->encrypt_data ? " (session encrypted)" : "");
    resp.serialize(ctx.body());
    ctx.session = s;
    ctx.force_sign = !s->is_anonymous;  // the final response MUST be signed (3.3.5.5.3)
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
