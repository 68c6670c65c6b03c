#include "server/state/session.h"

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

size_t SessionTable::size() {
    std::lock_guard lk(mu_);
    return sessions_.size();
}

}  // namespace daxsmbd::server
