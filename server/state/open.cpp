#include "server/state/open.h"

#include <unistd.h>

#include "server/rpcpipe/pipe_endpoint.h"
#include "server/vfs/dir.h"

namespace daxsmbd::server {

Open::~Open() {
    if (on_close) on_close();
    if (fd >= 0) ::close(fd);
}

void OpenTable::insert(const std::shared_ptr<Open>& open) {
    std::lock_guard lk(mu_);
    uint64_t id = next_++;
    open->id = protocol::FileId{id, id};
    opens_.emplace(id, open);
}

std::shared_ptr<Open> OpenTable::find(uint64_t volatile_id) {
    std::lock_guard lk(mu_);
    auto it = opens_.find(volatile_id);
    return it == opens_.end() ? nullptr : it->second;
}

std::shared_ptr<Open> OpenTable::remove(uint64_t volatile_id) {
    std::lock_guard lk(mu_);
    auto it = opens_.find(volatile_id);
    if (it == opens_.end()) return nullptr;
    auto o = std::move(it->second);
    opens_.erase(it);
    return o;
}

std::vector<std::shared_ptr<Open>> OpenTable::remove_if(
    const std::function<bool(const Open&)>& pred) {
    std::vector<std::shared_ptr<Open>> out;
    std::lock_guard lk(mu_);
    for (auto it = opens_.begin(); it != opens_.end();) {
        if (pred(*it->second)) {
            out.push_back(std::move(it->second));
            it = opens_.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

bool OpenTable::any_of(const std::function<bool(const Open&)>& pred) {
    std::lock_guard lk(mu_);
    for (auto& [id, o] : opens_)
        if (pred(*o)) return true;
    return false;
}

size_t OpenTable::size() {
    std::lock_guard lk(mu_);
    return opens_.size();
}

}  // namespace daxsmbd::server
