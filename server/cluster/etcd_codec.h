// The request bodies and response decoding of etcd's v3 JSON gateway (etcd 3.4 serves it under
// /v3/). Pure: no sockets, so that every encoder and decoder is unit-tested and fuzzed without an
// etcd. Keys and values travel base64-encoded; 64-bit numbers travel as JSON strings (the gateway
// renders int64 as strings, and an absent field is the protobuf default, 0 or false).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daxsmbd::cluster {

std::string base64_encode(std::string_view raw);
// Strict decode (padding required, no whitespace); nullopt on anything else.
std::optional<std::string> base64_decode(std::string_view text);

// The first key after every key starting with `prefix` (etcd's range_end of a prefix range).
std::string prefix_range_end(std::string_view prefix);

// One HTTP POST to the gateway: the path and its JSON body.
struct EtcdCall {
    std::string target;
    std::string body;
};

EtcdCall encode_put(std::string_view key, std::string_view value, int64_t lease = 0);
EtcdCall encode_range(std::string_view key, bool prefix = false);
EtcdCall encode_delete(std::string_view key);
// Puts `key` only when it does not exist (compare CREATE revision == 0); otherwise reads it, so
// that the caller learns the current holder in the same round trip.
EtcdCall encode_create_if_absent(std::string_view key, std::string_view value, int64_t lease);
// Deletes `key` only while its create revision is `create_revision` (releasing what one owns and
// nothing a successor created since).
EtcdCall encode_delete_if_created(std::string_view key, int64_t create_revision);
// Puts every {key, value} of `puts` and deletes every key of `deletes` in one transaction, only
// while `guard_key`'s create revision is `guard_create_revision` (a leader acting only while it
// still holds the key it was elected with).
EtcdCall encode_guarded_txn(std::string_view guard_key, int64_t guard_create_revision,
                            const std::vector<std::pair<std::string, std::string>>& puts,
                            const std::vector<std::string>& deletes);
EtcdCall encode_lease_grant(int64_t ttl_seconds);
EtcdCall encode_lease_keepalive(int64_t lease);
EtcdCall encode_lease_revoke(int64_t lease);
// A streaming watch of `key` (or every key under it with `prefix`) from `start_revision`
// (0: from now), with the previous value of each changed key.
EtcdCall encode_watch(std::string_view key, bool prefix, int64_t start_revision);

struct KeyValue {
    std::string key;
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t version = 0;
    int64_t lease = 0;
};

// What every decoder returns: the decoded value, or why not (the gateway's error message, or
// what was malformed).
template <class T>
struct Decoded {
    std::optional<T> value;
    std::string error;
    explicit operator bool() const { return value.has_value(); }
    const T* operator->() const { return &*value; }
    const T& operator*() const { return *value; }
};

struct RangeResult {
    int64_t revision = 0;
    std::vector<KeyValue> kvs;
};
struct PutResult {
    int64_t revision = 0;
};
struct TxnResult {
    int64_t revision = 0;
    bool succeeded = false;
    // The keys read by the first range operation of the branch taken (the holder after a failed
    // create-if-absent).
    std::vector<KeyValue> range_kvs;
};
struct LeaseResult {
    int64_t id = 0;
    // Seconds left; 0 after a keepalive means the lease has expired (etcd answers without TTL).
    int64_t ttl = 0;
};
struct WatchEvent {
    enum class Type { put, remove };
    Type type = Type::put;
    KeyValue kv;
    std::optional<KeyValue> prev_kv;
};
struct WatchResponse {
    int64_t revision = 0;
    int64_t watch_id = 0;
    bool created = false;
    bool canceled = false;
    // The oldest revision still kept when the watch asked for a compacted one.
    int64_t compact_revision = 0;
    std::vector<WatchEvent> events;
};

Decoded<RangeResult> decode_range(std::string_view json);
Decoded<PutResult> decode_put(std::string_view json);
Decoded<TxnResult> decode_txn(std::string_view json);
Decoded<LeaseResult> decode_lease_grant(std::string_view json);
// keepalive and watch messages arrive wrapped in {"result": ...} (gateway streaming form).
Decoded<LeaseResult> decode_lease_keepalive(std::string_view json);
Decoded<PutResult> decode_lease_revoke(std::string_view json);
Decoded<WatchResponse> decode_watch(std::string_view json);

// One gateway endpoint, "http://HOST:PORT" (HOST a name, an IPv4 address or "[IPV6]"). Only
// plain HTTP: the client speaks no TLS, so "https://" is refused with a reason saying so.
struct EtcdEndpoint {
    std::string host;  // without brackets
    uint16_t port = 0;
    std::string url;  // as written
};
std::optional<EtcdEndpoint> parse_etcd_url(std::string_view url, std::string* why);

// Splits the body of a streaming reply (POST /v3/watch, /v3/lease/keepalive) into its JSON
// objects. The gateway writes one object per message, but HTTP chunking and TCP reads cut and
// join them anywhere, so objects are found by their braces (outside JSON strings), not by
// chunk or line boundaries. Whitespace between objects is skipped; anything else outside an
// object, or an object larger than the limit, makes the stream malformed for good.
class JsonObjectSplitter {
  public:
    explicit JsonObjectSplitter(size_t max_object_bytes = size_t(16) << 20)
        : max_object_bytes_(max_object_bytes) {}
    // Consumes `bytes`, appending each object it completes to `out`; false once malformed.
    bool feed(std::string_view bytes, std::vector<std::string>& out);
    bool failed() const { return failed_; }
    // Bytes of the object begun but not finished.
    size_t pending() const { return partial_.size(); }

  private:
    size_t max_object_bytes_;
    std::string partial_;
    size_t depth_ = 0;  // open braces and brackets of the current object
    bool in_string_ = false;
    bool escaped_ = false;  // the previous byte inside a string was a backslash
    bool failed_ = false;
};

}  // namespace daxsmbd::cluster
