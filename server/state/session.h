// Sessions, their channels and tree connects.
//
// Ownership and threads (architecture.md "Concurrency and memory"): a Session is owned by the
// server's SessionTable (shared_ptr) and referenced by the Channel of every connection bound to
// it; a TreeConnect is owned by its Session. Each connection lives on one event loop, and the
// channels of one session may live on different loops, so a Session is shared between loops:
//   - `state` is atomic;
//   - the identity and the keys are written by the first authentication before `state` becomes
//     Valid and only read afterwards (a binding needs a Valid session, re-authentication keeps
//     them);
//   - everything else that changes later (trees, the channel list, the authentication in
//     progress) is guarded by `mu`.
// What is keyed per connection (Channel.SigningKey, the cipher contexts) lives in that
// connection's Channel, used only on its loop: OpenSSL contexts are not thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "auth/access_check.h"
#include "auth/encryption.h"
#include "auth/kdf.h"
#include "auth/signing.h"
#include "auth/spnego.h"
#include "protocol/header.h"
#include "server/state/share.h"
#include "server/vfs/fs_credentials.h"

namespace daxsmbd::server {

class Connection;

struct TreeConnect {
    uint32_t id = 0;
    std::shared_ptr<Share> share;
    uint32_t maximal_access = 0;
    bool read_only = true;
    // Share encryption (MS-SMB2 3.3.5.7, "smb encrypt" of the share): responses on this tree
    // are encrypted (SMB2_SHAREFLAG_ENCRYPT_DATA), and with `reject_unencrypted` unencrypted
    // requests are refused (3.3.5.2.11).
    bool encrypt_data = false;
    bool reject_unencrypted = false;
    // Identity remoting (MS-SMB2 2.2.9.2.1, server/handlers/remoted_identity.h): the token the
    // NT ACL checks of this tree use instead of the session's; unset = the session's identity.
    std::optional<auth::AccessToken> remoted_token;
    bool is_ipc() const { return share && share->is_ipc; }
};

struct Session {
    // Deleted: ended by LOGOFF, a failed re-authentication, a newer session of the same user
    // (PreviousSessionId) or the close of its last channel; it is out of the table and its
    // channels drop it at their next request.
    enum class State { InProgress, Valid, Expired, Deleted };

    uint64_t id = 0;
    std::atomic<State> state{State::InProgress};
    protocol::Dialect dialect = protocol::Dialect::None;
    std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now();

    // Identity once authenticated.
    std::string user;
    std::string domain;
    bool is_guest = false;
    bool is_anonymous = false;
    // Who the session's file-system operations run as (vfs/fs_credentials.h): the user
    // database entry's uid/gid with the groups of that uid's account, or the "guest account"
    // for anonymous and guest sessions. Set before `state` becomes Valid; never null after.
    std::shared_ptr<const vfs::UnixIdentity> identity;

    // Keys (MS-SMB2 3.3.1.8). session_key = first 16 bytes of the GSS key; full_session_key
    // is kept for 3.1.1 AES-256 encryption key derivation.
    std::array<uint8_t, 16> session_key{};
    protocol::ByteVector full_session_key;
    auth::SessionKeys keys;
    // Session.SigningKey is keys.signing_key (3.x) or session_key (2.x), used with the signing
    // algorithm of the session's first connection; a channel signs with its own key
    // (Channel::signer). has_signing_key: false for anonymous and guest sessions.
    bool has_signing_key = false;
    auth::SigningAlgorithm signing_algorithm = auth::SigningAlgorithm::HmacSha256;
    bool signing_required = false;
    // Session.EncryptData (MS-SMB2 3.3.5.5.3): every response is encrypted; with
    // `reject_unencrypted` ("smb encrypt = required") unencrypted requests are refused
    // (3.3.5.2.9). The cipher keys exist whenever the connection negotiated a cipher
    // (cipher_id != 0), so a client may encrypt even when the server does not ask for it;
    // `nonces` is the sequence of EncryptionKey that every channel's contexts share.
    bool encrypt_data = false;
    bool reject_unencrypted = false;
    uint16_t cipher_id = 0;  // the cipher its first connection negotiated (0: none)
    std::shared_ptr<auth::NonceSequence> nonces;
    bool can_encrypt() const { return cipher_id != 0 && !keys.encryption_key_s2c.empty(); }
    // A signer of its own with Session.SigningKey and its algorithm (MS-SMB2 3.3.5.5.3), for
    // requests that name the session on a connection that is no channel of it (a binding);
    // null without a key. Only for a Valid session (the keys are published then).
    std::unique_ptr<auth::Signer> session_signer() const;

    // Authentication in progress: the first one (no other channel exists yet) or a
    // re-authentication (guarded by `mu`: two channels may re-authenticate at once).
    std::unique_ptr<auth::SpnegoAcceptor> acceptor;
    std::optional<auth::PreauthHash> preauth;  // 3.1.1 Session.PreauthIntegrityHashValue

    std::mutex mu;
    // Trees of this session (guarded by `mu`).
    std::map<uint32_t, std::shared_ptr<TreeConnect>> trees;
    uint32_t next_tree_id = 1;
    // Session.ChannelList (MS-SMB2 3.3.1.8): the connections bound to the session, the first
    // one included (guarded by `mu`).
    struct ChannelRef {
        uint64_t connection_id = 0;
        std::weak_ptr<Connection> connection;
    };
    std::vector<ChannelRef> channels;

    std::shared_ptr<TreeConnect> find_tree(uint32_t tid) {
        std::lock_guard lk(mu);
        auto it = trees.find(tid);
        return it == trees.end() ? nullptr : it->second;
    }
    // Adds connection `id` as a channel; false when the session has ended meanwhile.
    bool add_channel(uint64_t connection_id, std::weak_ptr<Connection> connection);
    // Removes connection `id`'s channel. True when it was the last one: the session is Deleted
    // then and the caller ends it (Server::end_session).
    bool remove_channel(uint64_t connection_id);
    // The connections of the channels, for messages that may go out on any of them (oplock
    // breaks, MS-SMB2 3.3.4.6), the one with `preferred_id` first.
    std::vector<std::shared_ptr<Connection>> channel_connections(uint64_t preferred_id);
    size_t channel_count() {
        std::lock_guard lk(mu);
        return channels.size();
    }
};

// One connection's side of a session (MS-SMB2 3.3.1.14 Channel): the session and what this
// connection signs and encrypts it with. Owned by the connection and only used on its loop;
// shared_ptrs so that a response in flight keeps its keys when the channel goes (LOGOFF).
struct Channel {
    std::shared_ptr<Session> session;
    // Channel.SigningKey with this connection's signing algorithm; for the session's first
    // connection the same key as Session.SigningKey. Null for anonymous and guest sessions.
    std::shared_ptr<auth::Signer> signer;
    // Session.EncryptionKey / DecryptionKey in cipher contexts of this connection's own, sealing
    // from the session's shared nonce sequence. Null when the session has no cipher keys.
    std::shared_ptr<auth::SessionEncryption> encryption;
};

class SessionTable {
  public:
    // Allocates a session with a fresh non-zero id (never reused while the server runs).
    std::shared_ptr<Session> create();
    std::shared_ptr<Session> find(uint64_t id);
    void remove(uint64_t id);
    size_t size();
    // f(session) for every session in the table, under its lock (metrics; not the request path).
    void for_each(const std::function<void(const Session&)>& f);
    // Every session in the table, by id (daxsmbd-admin status).
    std::vector<std::shared_ptr<Session>> all();

  private:
    std::mutex mu_;
    std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;
    uint64_t next_id_ = 0;
};

}  // namespace daxsmbd::server
