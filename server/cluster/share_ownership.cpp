#include "server/cluster/share_ownership.h"

#include <charconv>
#include <mutex>

namespace daxsmbd::server::cluster {

namespace asio = boost::asio;

const char* serving_name(ShareServing s) {
    switch (s) {
        case ShareServing::OwnedBySelf:
            return "owned by this node";
        case ShareServing::OwnedByOther:
            return "owned by another node";
        case ShareServing::Unknown:
            return "no owner known";
    }
    return "?";
}

std::optional<asio::ip::tcp::endpoint> parse_endpoint(std::string_view text) {
    std::string_view host;
    std::string_view port;
    if (!text.empty() && text.front() == '[') {
        size_t close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            return std::nullopt;
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        if (host.find(':') == std::string_view::npos) return std::nullopt;  // IPv6 only
    } else {
        size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) return std::nullopt;
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string_view::npos) return std::nullopt;  // IPv6 needs []
    }
    unsigned n = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc() || end != port.data() + port.size() || n == 0 || n > 65535)
        return std::nullopt;
    boost::system::error_code aec;
    auto addr = asio::ip::make_address(std::string(host), aec);
    if (aec) return std::nullopt;
    return asio::ip::tcp::endpoint(addr, uint16_t(n));
}

bool ShareOwnershipCache::NameLess::operator()(std::string_view a, std::string_view b) const {
    size_t n = std::min(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
        auto ca = uint8_t(a[i]);
        auto cb = uint8_t(b[i]);
        if (ca >= 'A' && ca <= 'Z') ca = uint8_t(ca - 'A' + 'a');
        if (cb >= 'A' && cb <= 'Z') cb = uint8_t(cb - 'A' + 'a');
        if (ca != cb) return ca < cb;
    }
    return a.size() < b.size();
}

std::shared_ptr<const ShareOwnershipCache::Map> ShareOwnershipCache::snapshot() const {
    std::shared_lock lk(mu_);
    return map_;
}

std::optional<ShareOwner> ShareOwnershipCache::owner(std::string_view share) const {
    auto map = snapshot();
    auto it = map->find(share);
    if (it == map->end()) return std::nullopt;
    return it->second;
}

ShareServing ShareOwnershipCache::serving(std::string_view share) const {
    return lookup(share).first;
}

std::pair<ShareServing, std::optional<ShareOwner>> ShareOwnershipCache::lookup(
    std::string_view share) const {
    auto map = snapshot();
    auto it = map->find(share);
    if (it == map->end())
        return {feed_attached() ? ShareServing::Unknown : ShareServing::OwnedBySelf, std::nullopt};
    return {it->second.is_self ? ShareServing::OwnedBySelf : ShareServing::OwnedByOther,
            it->second};
}

bool ShareOwnershipCache::update(std::string_view share, ShareOwner owner) {
    // Writers are serialised: the copy below races only readers, which keep whichever
    // snapshot they took.
    std::lock_guard wl(write_mu_);
    auto current = snapshot();
    auto it = current->find(share);
    if (it != current->end() && it->second.epoch > owner.epoch) return false;
    auto next = std::make_shared<Map>(*current);
    (*next)[std::string(share)] = std::move(owner);
    publish(std::move(next));
    return true;
}

bool ShareOwnershipCache::remove(std::string_view share, int64_t epoch) {
    std::lock_guard wl(write_mu_);
    auto current = snapshot();
    auto it = current->find(share);
    if (it == current->end() || it->second.epoch > epoch) return false;
    auto next = std::make_shared<Map>(*current);
    next->erase(next->find(share));
    publish(std::move(next));
    return true;
}

void ShareOwnershipCache::replace_all(Map entries) {
    std::lock_guard wl(write_mu_);
    publish(std::make_shared<const Map>(std::move(entries)));
}

void ShareOwnershipCache::publish(std::shared_ptr<const Map> next) {
    {
        std::unique_lock lk(mu_);
        map_.swap(next);
    }
    // `next` now holds the previous snapshot; readers that still use it keep it alive.
}

}  // namespace daxsmbd::server::cluster
