// Sessions and tree connects.
//
// Ownership and threads (architecture.md "Concurrency and memory"): a Session is owned by the
// global SessionTable (shared_ptr) and referenced by the connections (channels) it is bound
// to; a TreeConnect is owned by its Session. A connection lives on one event loop; today a
// session has exactly one channel, so its fields are only touched from that loop, except the
// table itself, which is locked. Multichannel (next wave) binds more connections: fields that
// several loops touch are then guarded by `mu`.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "auth/encryption.h"
#include "auth/kdf.h"
#include "auth/signing.h"
#include "auth/spnego.h"
#include "protocol/header.h"
#include "server/state/share.h"

namespace daxsmbd::server {

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
    bool is_ipc() const { return share && share->is_ipc; }
};

struct Session {
    enum class State { InProgress, Valid, Expired };

    uint64_t id = 0;
    State state = State::InProgress;
    protocol::Dialect dialect = protocol::Dialect::None;
    std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now();

    // Identity once authenticated.
    std::string user;
    std::string domain;
    bool is_guest = false;
    bool is_anonymous = false;
    uint32_t uid = 0;
    uint32_t gid = 0;

    // Keys (MS-SMB2 3.3.1.8). session_key = first 16 bytes of the GSS key; full_session_key
    // is kept for 3.1.1 AES-256 encryption key derivation.
    std::array<uint8_t, 16> session_key{};
    protocol::ByteVector full_session_key;
    auth::SessionKeys keys;
    std::unique_ptr<auth::Signer> signer;  // Session.SigningKey / Channel.SigningKey (1 channel)
    bool signing_required = false;
    // Session.EncryptData (MS-SMB2 3.3.5.5.3): every response is encrypted; with
    // `reject_unencrypted` ("smb encrypt = required") unencrypted requests are refused
    // (3.3.5.2.9). `encryption` holds the cipher keys whenever the connection negotiated a
    // cipher, so a client may encrypt even when the server does not ask for it.
    bool encrypt_data = false;
    bool reject_unencrypted = false;
    std::unique_ptr<auth::SessionEncryption> encryption;
    uint16_t cipher_id = 0;  // the cipher its connection negotiated (0: none)

    // Authentication in progress.
    std::unique_ptr<auth::SpnegoAcceptor> acceptor;
    std::optional<auth::PreauthHash> preauth;  // 3.1.1 Session.PreauthIntegrityHashValue

    // Trees of this session.
    std::mutex mu;
    std::map<uint32_t, std::shared_ptr<TreeConnect>> trees;
    uint32_t next_tree_id = 1;

    std::shared_ptr<TreeConnect> find_tree(uint32_t tid) {
        std::lock_guard lk(mu);
        auto it = trees.find(tid);
        return it == trees.end() ? nullptr : it->second;
    }
};

class SessionTable {
  public:
    // Allocates a session with a fresh non-zero id (never reused while the server runs).
    std::shared_ptr<Session> create();
    std::shared_ptr<Session> find(uint64_t id);
    void remove(uint64_t id);
    size_t size();

  private:
    std::mutex mu_;
    std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;
    uint64_t next_id_ = 0;
};

}  // namespace daxsmbd::server
