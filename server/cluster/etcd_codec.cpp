#include "server/cluster/etcd_codec.h"

#include <array>
#include <boost/json.hpp>
#include <charconv>

namespace daxsmbd::cluster {

namespace json = boost::json;

namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::array<int8_t, 256> decode_table() {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    for (size_t i = 0; i < kAlphabet.size(); ++i)
        t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
    return t;
}

std::string to_text(const json::object& o) {
    return json::serialize(o);
}

// The gateway renders int64 as a JSON string; tolerate a plain number too.
std::optional<int64_t> int_field(const json::object& o, std::string_view name) {
    auto it = o.find(name);
    if (it == o.end()) return int64_t{0};
    if (it->value().is_int64()) return it->value().get_int64();
    if (it->value().is_uint64()) {
        uint64_t u = it->value().get_uint64();
        if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
        return static_cast<int64_t>(u);
    }
    if (!it->value().is_string()) return std::nullopt;
    const json::string& s = it->value().get_string();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

std::optional<bool> bool_field(const json::object& o, std::string_view name) {
    auto it = o.find(name);
    if (it == o.end()) return false;
    if (!it->value().is_bool()) return std::nullopt;
    return it->value().get_bool();
}

std::optional<std::string> bytes_field(const json::object& o, std::string_view name) {
    auto it = o.find(name);
    if (it == o.end()) return std::string{};
    if (!it->value().is_string()) return std::nullopt;
    const json::string& s = it->value().get_string();
    return base64_decode(std::string_view(s.data(), s.size()));
}

std::optional<KeyValue> decode_kv(const json::value& v) {
    if (!v.is_object()) return std::nullopt;
    const json::object& o = v.get_object();
    KeyValue kv;
    auto key = bytes_field(o, "key");
    auto value = bytes_field(o, "value");
    auto create = int_field(o, "create_revision");
    auto mod = int_field(o, "mod_revision");
    auto version = int_field(o, "version");
    auto lease = int_field(o, "lease");
    if (!key || !value || !create || !mod || !version || !lease) return std::nullopt;
    kv.key = std::move(*key);
    kv.value = std::move(*value);
    kv.create_revision = *create;
    kv.mod_revision = *mod;
    kv.version = *version;
    kv.lease = *lease;
    return kv;
}

std::optional<std::vector<KeyValue>> decode_kvs(const json::object& o) {
    std::vector<KeyValue> out;
    auto it = o.find("kvs");
    if (it == o.end()) return out;
    if (!it->value().is_array()) return std::nullopt;
    for (const json::value& e : it->value().get_array()) {
        auto kv = decode_kv(e);
        if (!kv) return std::nullopt;
        out.push_back(std::move(*kv));
    }
    return out;
}

std::optional<int64_t> header_revision(const json::object& o) {
    auto it = o.find("header");
    if (it == o.end()) return int64_t{0};
    if (!it->value().is_object()) return std::nullopt;
    return int_field(it->value().get_object(), "revision");
}

// Parses `text` as one JSON object; the gateway's error form ({"error": ..., "code": N}) and
// anything not an object become the error of the result.
template <class T>
std::optional<json::object> parse_object(std::string_view text, Decoded<T>& out,
                                         bool unwrap_result) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec || !v.is_object()) {
        out.error = "malformed etcd response";
        return std::nullopt;
    }
    json::object& o = v.get_object();
    if (auto e = o.find("error"); e != o.end()) {
        out.error = e->value().is_string() ? std::string(e->value().get_string())
                    : e->value().is_object() && e->value().get_object().contains("message") &&
                            e->value().get_object().at("message").is_string()
                        ? std::string(e->value().get_object().at("message").get_string())
                        : std::string("etcd error");
        return std::nullopt;
    }
    if (unwrap_result) {
        auto r = o.find("result");
        if (r == o.end() || !r->value().is_object()) {
            out.error = "etcd stream message without result";
            return std::nullopt;
        }
        return std::move(r->value().get_object());
    }
    return std::move(o);
}

template <class T>
Decoded<T> malformed() {
    Decoded<T> d;
    d.error = "malformed etcd response";
    return d;
}

Decoded<LeaseResult> decode_lease(std::string_view text, bool unwrap) {
    Decoded<LeaseResult> d;
    auto o = parse_object(text, d, unwrap);
    if (!o) return d;
    auto id = int_field(*o, "ID");
    auto ttl = int_field(*o, "TTL");
    if (!id || !ttl) return malformed<LeaseResult>();
    d.value = LeaseResult{*id, *ttl};
    return d;
}

std::optional<WatchEvent> decode_event(const json::value& v) {
    if (!v.is_object()) return std::nullopt;
    const json::object& o = v.get_object();
    WatchEvent ev;
    if (auto t = o.find("type"); t != o.end()) {
        if (!t->value().is_string()) return std::nullopt;
        if (t->value().get_string() == "DELETE")
            ev.type = WatchEvent::Type::remove;
        else if (t->value().get_string() != "PUT")
            return std::nullopt;
    }
    auto kv = o.find("kv");
    if (kv == o.end()) return std::nullopt;
    auto decoded = decode_kv(kv->value());
    if (!decoded) return std::nullopt;
    ev.kv = std::move(*decoded);
    if (auto p = o.find("prev_kv"); p != o.end()) {
        ev.prev_kv = decode_kv(p->value());
        if (!ev.prev_kv) return std::nullopt;
    }
    return ev;
}

}  // namespace

std::string base64_encode(std::string_view raw) {
    std::string out;
    out.reserve((raw.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= raw.size(); i += 3) {
        uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(raw[i])) << 16 |
                     static_cast<uint32_t>(static_cast<unsigned char>(raw[i + 1])) << 8 |
                     static_cast<unsigned char>(raw[i + 2]);
        for (int s = 18; s >= 0; s -= 6)
            out += kAlphabet[(n >> s) & 63];
    }
    size_t rest = raw.size() - i;
    if (rest > 0) {
        uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(raw[i])) << 16;
        if (rest == 2) n |= static_cast<uint32_t>(static_cast<unsigned char>(raw[i + 1])) << 8;
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    static const std::array<int8_t, 256> table = decode_table();
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        bool last = i + 4 == text.size();
        int pad = 0;
        uint32_t n = 0;
        for (size_t j = 0; j < 4; ++j) {
            char c = text[i + j];
            if (c == '=' && last && j >= 2) {
                ++pad;
                n <<= 6;
                continue;
            }
            int8_t d = table[static_cast<unsigned char>(c)];
            if (d < 0 || pad > 0) return std::nullopt;
            n = n << 6 | static_cast<uint32_t>(d);
        }
        // Canonical only: the bits a padding drops must be zero, so decode and encode round-trip.
        if ((pad == 1 && (n & 0xff) != 0) || (pad == 2 && (n & 0xffff) != 0)) return std::nullopt;
        out += static_cast<char>(n >> 16 & 0xff);
        if (pad < 2) out += static_cast<char>(n >> 8 & 0xff);
        if (pad < 1) out += static_cast<char>(n & 0xff);
    }
    return out;
}

std::string prefix_range_end(std::string_view prefix) {
    std::string end(prefix);
    while (!end.empty()) {
        unsigned char last = static_cast<unsigned char>(end.back());
        if (last < 0xff) {
            end.back() = static_cast<char>(last + 1);
            return end;
        }
        end.pop_back();
    }
    return std::string(1, '\0');  // every key (etcd: range_end "\0" with key "\0")
}

EtcdCall encode_put(std::string_view key, std::string_view value, int64_t lease) {
    json::object o{{"key", base64_encode(key)}, {"value", base64_encode(value)}};
    if (lease != 0) o["lease"] = std::to_string(lease);
    return {"/v3/kv/put", to_text(o)};
}

EtcdCall encode_range(std::string_view key, bool prefix) {
    json::object o{{"key", base64_encode(key)}};
    if (prefix) o["range_end"] = base64_encode(prefix_range_end(key));
    return {"/v3/kv/range", to_text(o)};
}

EtcdCall encode_delete(std::string_view key) {
    return {"/v3/kv/deleterange", to_text(json::object{{"key", base64_encode(key)}})};
}

EtcdCall encode_create_if_absent(std::string_view key, std::string_view value, int64_t lease) {
    std::string k = base64_encode(key);
    json::object put{{"key", k}, {"value", base64_encode(value)}};
    if (lease != 0) put["lease"] = std::to_string(lease);
    json::object o{
        {"compare",
         json::array{json::object{{"target", "CREATE"}, {"key", k}, {"createRevision", "0"}}}},
        {"success", json::array{json::object{{"requestPut", put}}}},
        {"failure", json::array{json::object{{"requestRange", json::object{{"key", k}}}}}}};
    return {"/v3/kv/txn", to_text(o)};
}

EtcdCall encode_delete_if_created(std::string_view key, int64_t create_revision) {
    std::string k = base64_encode(key);
    json::object o{
        {"compare", json::array{json::object{{"target", "CREATE"},
                                             {"key", k},
                                             {"createRevision", std::to_string(create_revision)}}}},
        {"success", json::array{json::object{{"requestDeleteRange", json::object{{"key", k}}}}}}};
    return {"/v3/kv/txn", to_text(o)};
}

EtcdCall encode_guarded_txn(std::string_view guard_key, int64_t guard_create_revision,
                            const std::vector<std::pair<std::string, std::string>>& puts,
                            const std::vector<std::string>& deletes) {
    json::array ops;
    for (const auto& [key, value] : puts)
        ops.push_back(json::object{{"requestPut", json::object{{"key", base64_encode(key)},
                                                               {"value", base64_encode(value)}}}});
    for (const auto& key : deletes)
        ops.push_back(
            json::object{{"requestDeleteRange", json::object{{"key", base64_encode(key)}}}});
    json::object o{{"compare", json::array{json::object{
                                   {"target", "CREATE"},
                                   {"key", base64_encode(guard_key)},
                                   {"createRevision", std::to_string(guard_create_revision)}}}},
                   {"success", std::move(ops)}};
    return {"/v3/kv/txn", to_text(o)};
}

EtcdCall encode_lease_grant(int64_t ttl_seconds) {
    return {"/v3/lease/grant", to_text(json::object{{"TTL", std::to_string(ttl_seconds)}})};
}

EtcdCall encode_lease_keepalive(int64_t lease) {
    return {"/v3/lease/keepalive", to_text(json::object{{"ID", std::to_string(lease)}})};
}

EtcdCall encode_lease_revoke(int64_t lease) {
    return {"/v3/lease/revoke", to_text(json::object{{"ID", std::to_string(lease)}})};
}

EtcdCall encode_watch(std::string_view key, bool prefix, int64_t start_revision) {
    json::object create{{"key", base64_encode(key)}, {"prev_kv", true}};
    if (prefix) create["range_end"] = base64_encode(prefix_range_end(key));
    if (start_revision != 0) create["start_revision"] = std::to_string(start_revision);
    return {"/v3/watch", to_text(json::object{{"create_request", create}})};
}

Decoded<RangeResult> decode_range(std::string_view text) {
    Decoded<RangeResult> d;
    auto o = parse_object(text, d, false);
    if (!o) return d;
    auto rev = header_revision(*o);
    auto kvs = decode_kvs(*o);
    if (!rev || !kvs) return malformed<RangeResult>();
    d.value = RangeResult{*rev, std::move(*kvs)};
    return d;
}

Decoded<PutResult> decode_put(std::string_view text) {
    Decoded<PutResult> d;
    auto o = parse_object(text, d, false);
    if (!o) return d;
    auto rev = header_revision(*o);
    if (!rev) return malformed<PutResult>();
    d.value = PutResult{*rev};
    return d;
}

Decoded<TxnResult> decode_txn(std::string_view text) {
    Decoded<TxnResult> d;
    auto o = parse_object(text, d, false);
    if (!o) return d;
    auto rev = header_revision(*o);
    auto ok = bool_field(*o, "succeeded");
    if (!rev || !ok) return malformed<TxnResult>();
    TxnResult r{*rev, *ok, {}};
    if (auto it = o->find("responses"); it != o->end()) {
        if (!it->value().is_array()) return malformed<TxnResult>();
        for (const json::value& op : it->value().get_array()) {
            if (!op.is_object()) return malformed<TxnResult>();
            auto range = op.get_object().find("response_range");
            if (range == op.get_object().end()) continue;
            if (!range->value().is_object()) return malformed<TxnResult>();
            auto kvs = decode_kvs(range->value().get_object());
            if (!kvs) return malformed<TxnResult>();
            r.range_kvs = std::move(*kvs);
            break;
        }
    }
    d.value = std::move(r);
    return d;
}

Decoded<LeaseResult> decode_lease_grant(std::string_view text) {
    return decode_lease(text, false);
}

Decoded<LeaseResult> decode_lease_keepalive(std::string_view text) {
    return decode_lease(text, true);
}

Decoded<PutResult> decode_lease_revoke(std::string_view text) {
    return decode_put(text);
}

Decoded<WatchResponse> decode_watch(std::string_view text) {
    Decoded<WatchResponse> d;
    auto o = parse_object(text, d, true);
    if (!o) return d;
    auto rev = header_revision(*o);
    auto id = int_field(*o, "watch_id");
    auto created = bool_field(*o, "created");
    auto canceled = bool_field(*o, "canceled");
    auto compact = int_field(*o, "compact_revision");
    if (!rev || !id || !created || !canceled || !compact) return malformed<WatchResponse>();
    WatchResponse w{*rev, *id, *created, *canceled, *compact, {}};
    if (auto it = o->find("events"); it != o->end()) {
        if (!it->value().is_array()) return malformed<WatchResponse>();
        for (const json::value& e : it->value().get_array()) {
            auto ev = decode_event(e);
            if (!ev) return malformed<WatchResponse>();
            w.events.push_back(std::move(*ev));
        }
    }
    d.value = std::move(w);
    return d;
}

std::optional<EtcdEndpoint> parse_etcd_url(std::string_view url, std::string* why) {
    constexpr std::string_view kHttp = "http://";
    if (url.starts_with("https://")) {
        *why = "https (TLS) is not supported; use http:// on a trusted network";
        return std::nullopt;
    }
    if (!url.starts_with(kHttp)) {
        *why = "not an http:// URL";
        return std::nullopt;
    }
    std::string_view rest = url.substr(kHttp.size());
    if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    EtcdEndpoint ep;
    ep.url = std::string(url);
    std::string_view port;
    if (rest.starts_with("[")) {
        const size_t close = rest.find(']');
        if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
            *why = "expected http://[IPV6]:PORT";
            return std::nullopt;
        }
        ep.host = std::string(rest.substr(1, close - 1));
        port = rest.substr(close + 2);
    } else {
        const size_t colon = rest.find(':');
        if (colon == std::string_view::npos ||
            rest.find(':', colon + 1) != std::string_view::npos) {
            *why = "expected http://HOST:PORT";
            return std::nullopt;
        }
        ep.host = std::string(rest.substr(0, colon));
        port = rest.substr(colon + 1);
    }
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    const bool host_ok = !ep.host.empty() && ep.host.find_first_of("/?#@ ") == std::string::npos;
    if (!host_ok || ec != std::errc{} || end != port.data() + port.size() || value == 0 ||
        value > 65535) {
        *why = "expected http://HOST:PORT with a port 1..65535 and no path";
        return std::nullopt;
    }
    ep.port = static_cast<uint16_t>(value);
    return ep;
}

bool JsonObjectSplitter::feed(std::string_view bytes, std::vector<std::string>& out) {
    for (char c : bytes) {
        if (failed_) return false;
        if (depth_ == 0) {
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
            if (c != '{') {
                failed_ = true;
                return false;
            }
        }
        partial_ += c;
        if (partial_.size() > max_object_bytes_) {
            failed_ = true;
            partial_.clear();
            return false;
        }
        if (in_string_) {
            if (escaped_)
                escaped_ = false;
            else if (c == '\\')
                escaped_ = true;
            else if (c == '"')
                in_string_ = false;
            continue;
        }
        if (c == '"') {
            in_string_ = true;
        } else if (c == '{' || c == '[') {
            ++depth_;
        } else if (c == '}' || c == ']') {
            // A closing bracket more than were opened cannot happen here: at depth 0 only '{'
            // gets this far, so depth_ is at least 1.
            if (--depth_ == 0) {
                out.push_back(std::move(partial_));
                partial_.clear();
            }
        }
    }
    return !failed_;
}

}  // namespace daxsmbd::cluster
