#include "server/state/open.h"

#include <unistd.h>

#include <random>

#include "server/rpcpipe/pipe_endpoint.h"
#include "server/vfs/dir.h"

namespace daxsmbd::server {

LocalOpen::LocalOpen() = default;
Open::Open() = default;

LocalOpen::~LocalOpen() {
    if (fd >= 0) ::close(fd);
}

Open::~Open() {
    // The hooks (lock release, notify teardown) still see the descriptor and the registration.
    if (on_close) on_close();
}

OpenTable::OpenTable() : OpenTable(std::random_device{}()) {}
OpenTable::OpenTable(uint32_t epoch) : epoch_(uint64_t{epoch == 0 ? 1u : epoch} << 32) {}

void OpenTable::insert(const std::shared_ptr<Open>& open) {
    std::lock_guard lk(mu_);
    uint64_t id = next_++;
    // The epoch is nonzero, so the two halves always differ; unique within the run because the
    // volatile id is.
    open->id = protocol::FileId{epoch_ + id, id};
    opens_.emplace(id, open);
    ++per_session_[open->session_id];
}

void OpenTable::uncount_durable(const Open& o) {
    if (!o.durable.counted) return;
    auto it = durable_per_client_.find(o.durable.client_guid);
    if (it != durable_per_client_.end() && --it->second == 0) durable_per_client_.erase(it);
}

bool OpenTable::claim_durable(const std::shared_ptr<Open>& open, const protocol::Guid& client,
                              size_t max) {
    std::lock_guard lk(mu_);
    auto it = opens_.find(open->id.volatile_);
    if (it == opens_.end() || it->second != open) return false;
    if (open->durable.counted) return true;
    size_t& n = durable_per_client_[client];
    if (n >= max) {
        if (n == 0) durable_per_client_.erase(client);
        return false;
    }
    ++n;
    open->durable.counted = true;
    open->durable.client_guid = client;
    return true;
}

size_t OpenTable::durable_count(const protocol::Guid& client) {
    std::lock_guard lk(mu_);
    auto it = durable_per_client_.find(client);
    return it == durable_per_client_.end() ? 0 : it->second;
}

void OpenTable::uncount(const Open& o) {
    auto it = per_session_.find(o.session_id);
    if (it != per_session_.end() && --it->second == 0) per_session_.erase(it);
}

size_t OpenTable::count_for_session(uint64_t session_id) {
    std::lock_guard lk(mu_);
    auto it = per_session_.find(session_id);
    return it == per_session_.end() ? 0 : it->second;
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
    uncount(*o);
    uncount_durable(*o);
    // A READ parked on a closed pipe ends (STATUS_PIPE_BROKEN).
    if (o->local.pipe) o->local.pipe->wake_reader();
    return o;
}

std::vector<std::shared_ptr<Open>> OpenTable::remove_if(
    const std::function<bool(const Open&)>& pred) {
    std::vector<std::shared_ptr<Open>> out;
    std::lock_guard lk(mu_);
    for (auto it = opens_.begin(); it != opens_.end();) {
        if (pred(*it->second)) {
            uncount(*it->second);
            uncount_durable(*it->second);
            out.push_back(std::move(it->second));
            it = opens_.erase(it);
        } else {
            ++it;
        }
    }
    for (auto& o : out)
        if (o->local.pipe) o->local.pipe->wake_reader();
    return out;
}

bool OpenTable::any_of(const std::function<bool(const Open&)>& pred) {
    std::lock_guard lk(mu_);
    for (auto& [id, o] : opens_)
        if (pred(*o)) return true;
    return false;
}

std::shared_ptr<Open> OpenTable::find_first(const std::function<bool(const Open&)>& pred) {
    std::lock_guard lk(mu_);
    for (auto& [id, o] : opens_)
        if (pred(*o)) return o;
    return nullptr;
}

std::vector<std::shared_ptr<Open>> OpenTable::find_all(
    const std::function<bool(const Open&)>& pred) {
    std::vector<std::shared_ptr<Open>> out;
    std::lock_guard lk(mu_);
    for (auto& [id, o] : opens_)
        if (pred(*o)) out.push_back(o);
    return out;
}

void OpenTable::insert_restored(const std::shared_ptr<Open>& open, uint64_t persistent_id) {
    std::lock_guard lk(mu_);
    if ((persistent_id & ~0xFFFFFFFFull) == epoch_) {
        epoch_ += uint64_t{1} << 32;
        if (epoch_ == 0) epoch_ = uint64_t{1} << 32;
    }
    const uint64_t id = next_++;
    open->id = protocol::FileId{persistent_id, id};
    open->session_id = 0;
    open->connection_id = 0;
    open->durable.disconnected = true;
    opens_.emplace(id, open);
    restored_[persistent_id] = id;
    ++durable_per_client_[open->durable.client_guid];
    open->durable.counted = true;
}

std::shared_ptr<Open> OpenTable::find_persistent(uint64_t persistent_id) {
    std::lock_guard lk(mu_);
    if (auto r = restored_.find(persistent_id); r != restored_.end()) {
        auto it = opens_.find(r->second);
        if (it != opens_.end() && it->second->id.persistent == persistent_id) return it->second;
        restored_.erase(r);
        return nullptr;
    }
    // Persistent ids are epoch + volatile id (insert()).
    if ((persistent_id & ~0xFFFFFFFFull) != epoch_) return nullptr;
    auto it = opens_.find(persistent_id - epoch_);
    if (it == opens_.end() || it->second->id.persistent != persistent_id) return nullptr;
    return it->second;
}

std::vector<std::shared_ptr<Open>> OpenTable::disconnect_durable(uint64_t session_id) {
    std::vector<std::shared_ptr<Open>> out;
    std::lock_guard lk(mu_);
    for (auto& [vid, o] : opens_) {
        if (o->session_id != session_id || !o->durable.version || o->local.pipe) continue;
        uncount(*o);
        o->session_id = 0;
        o->connection_id = 0;
        o->durable.disconnected = true;
        ++o->durable.generation;
        out.push_back(o);
    }
    return out;
}

bool OpenTable::reconnect(const std::shared_ptr<Open>& open, uint64_t session_id,
                          std::shared_ptr<TreeConnect> tree, uint64_t connection_id) {
    std::lock_guard lk(mu_);
    auto it = opens_.find(open->id.volatile_);
    if (it == opens_.end() || it->second != open || !open->durable.disconnected) return false;
    open->durable.disconnected = false;
    ++open->durable.generation;
    open->session_id = session_id;
    open->tree_id = tree->id;
    open->tree = std::move(tree);
    open->connection_id = connection_id;
    ++per_session_[session_id];
    return true;
}

std::shared_ptr<Open> OpenTable::remove_disconnected(uint64_t volatile_id, uint64_t generation) {
    std::lock_guard lk(mu_);
    auto it = opens_.find(volatile_id);
    if (it == opens_.end() || !it->second->durable.disconnected ||
        it->second->durable.generation != generation)
        return nullptr;
    auto o = std::move(it->second);
    opens_.erase(it);
    uncount_durable(*o);
    return o;
}

size_t OpenTable::disconnected_count() {
    std::lock_guard lk(mu_);
    size_t n = 0;
    for (auto& [vid, o] : opens_)
        n += o->durable.disconnected;
    return n;
}

size_t OpenTable::size() {
    std::lock_guard lk(mu_);
    return opens_.size();
}

}  // namespace daxsmbd::server
