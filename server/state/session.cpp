#include "server/state/session.h"

#include <algorithm>

#include <random>

namespace daxsmbd::server {

std::shared_ptr<Session> SessionTable::create() {
    std::lock_guard lk(mu_);
    if (next_id_ == 0) {
        // Start from a random point so ids of a restarted server do not collide with ids a
        // client still remembers (PreviousSessionId), as Windows does.
        std::random_device rd;
        next_id_ = ((uint64_t(rd()) << 32 | rd()) & 0x0000FFFFFFFFFFFFull) | 0x1;
    }
    auto s = std::make_shared<Session>();
    do {
        s->id = next_id_++;
    } while (s->id == 0 || s->id == ~0ull || sessions_.count(s->id));
    sessions_.emplace(s->id, s);
    return s;
}

std::shared_ptr<Session> SessionTable::find(uint64_t id) {
    std::lock_guard lk(mu_);
    auto it = sessions_.find(id);
    return it == sessions_.end() ? nullptr : it->second;
}

void SessionTable::remove(uint64_t id) {
    std::lock_guard lk(mu_);
    sessions_.erase(id);
}

std::unique_ptr<auth::Signer> Session::session_signer() const {
    if (!has_signing_key) return nullptr;
    protocol::Bytes key =
        protocol::is_smb3(dialect)
            ? protocol::Bytes(keys.signing_key)
            : protocol::Bytes(reinterpret_cast<const std::byte*>(session_key.data()),
                              session_key.size());
    auto signer = auth::Signer::create(signing_algorithm, key);
    if (!signer) return nullptr;
    return std::make_unique<auth::Signer>(std::move(*signer));
}

bool Session::add_channel(uint64_t connection_id, std::weak_ptr<Connection> connection) {
    std::lock_guard lk(mu);
    if (state == State::Deleted) return false;
    channels.push_back(ChannelRef{connection_id, std::move(connection)});
    return true;
}

bool Session::remove_channel(uint64_t connection_id) {
    std::lock_guard lk(mu);
    std::erase_if(channels, [connection_id](const ChannelRef& c) {
        return c.connection_id == connection_id;
    });
    if (!channels.empty() || state == State::Deleted) return false;
    state = State::Deleted;
    return true;
}

std::vector<std::shared_ptr<Connection>> Session::channel_connections(uint64_t preferred_id) {
    std::vector<std::shared_ptr<Connection>> out;
    std::lock_guard lk(mu);
    for (const auto& c : channels)
        if (auto conn = c.connection.lock()) {
            out.push_back(std::move(conn));
            if (c.connection_id == preferred_id) std::swap(out.front(), out.back());
        }
    return out;
}

void SessionTable::for_each(const std::function<void(const Session&)>& f) {
    std::lock_guard lk(mu_);
    for (const auto& [id, s] : sessions_)
        f(*s);
}

std::vector<std::shared_ptr<Session>> SessionTable::all() {
    std::vector<std::shared_ptr<Session>> out;
    {
        std::lock_guard lk(mu_);
        out.reserve(sessions_.size());
        for (const auto& [id, s] : sessions_)
            out.push_back(s);
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id < b->id; });
    return out;
}

size_t SessionTable::size() {
    std::lock_guard lk(mu_);
    return sessions_.size();
}

}  // namespace daxsmbd::server
