#include "server/cluster/etcd_client.h"

#include <array>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <tuple>

namespace daxsmbd::cluster {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct EtcdWatchControl::Stream {
    explicit Stream(const asio::any_io_executor& ex) : stream(ex) {}
    beast::tcp_stream stream;
};

void EtcdWatchControl::cancel() {
    cancelled_ = true;
    if (auto s = stream.lock()) s->stream.close();
}

namespace {

// A unary reply is one small JSON object; anything near this is not etcd talking.
constexpr uint64_t kMaxReplyBytes = uint64_t(64) << 20;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

std::vector<std::string> split_urls(std::string_view list) {
    std::vector<std::string> out;
    std::string item;
    for (char c : list) {
        if (c == ',' || c == ' ' || c == '\t') {
            if (!item.empty()) out.push_back(std::move(item));
            item.clear();
        } else {
            item += c;
        }
    }
    if (!item.empty()) out.push_back(std::move(item));
    return out;
}

// Connects `stream` to `ep` within the stream's current expiry. An IP literal needs no
// resolver; a host name is resolved first (getaddrinfo, which the expiry does not bound).
asio::awaitable<boost::system::error_code> connect_to(beast::tcp_stream& stream,
                                                      const EtcdEndpoint& ep) {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(ep.host, ec);
    if (!ec) {
        auto [cec] = co_await stream.async_connect(tcp::endpoint(address, ep.port), kTuple);
        co_return cec;
    }
    tcp::resolver resolver(stream.get_executor());
    auto [rec, results] = co_await resolver.async_resolve(ep.host, std::to_string(ep.port), kTuple);
    if (rec) co_return rec;
    auto [cec, unused] = co_await stream.async_connect(results, kTuple);
    (void)unused;
    co_return cec;
}

http::request<http::string_body> request_of(const EtcdEndpoint& ep, const EtcdCall& call,
                                            bool keep_alive) {
    http::request<http::string_body> req{http::verb::post, call.target, 11};
    req.set(http::field::host, ep.host + ":" + std::to_string(ep.port));
    req.set(http::field::content_type, "application/json");
    req.set(http::field::user_agent, "daxsmbd");
    req.keep_alive(keep_alive);
    req.body() = call.body;
    req.prepare_payload();
    return req;
}

// What one attempt on one endpoint gave: an answer (any HTTP status etcd chose), or a transport
// failure that sends the call to the next endpoint.
struct Attempt {
    bool answered = false;
    unsigned status = 0;
    std::string body;
    std::string error;
};

asio::awaitable<Attempt> attempt(const EtcdEndpoint& ep, const EtcdCall& call,
                                 std::chrono::milliseconds timeout) {
    Attempt a;
    beast::tcp_stream stream(co_await asio::this_coro::executor);
    stream.expires_after(timeout);
    if (auto ec = co_await connect_to(stream, ep)) {
        a.error = ep.url + ": connect: " + ec.message();
        co_return a;
    }
    auto req = request_of(ep, call, false);
    auto [wec, written] = co_await http::async_write(stream, req, kTuple);
    (void)written;
    if (wec) {
        a.error = ep.url + ": send: " + wec.message();
        co_return a;
    }
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxReplyBytes);
    auto [rec, read] = co_await http::async_read(stream, buffer, parser, kTuple);
    (void)read;
    if (rec) {
        a.error = ep.url + ": reply: " + rec.message();
        co_return a;
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    a.status = parser.get().result_int();
    a.body = std::move(parser.get().body());
    // 5xx: the member cannot serve now (no leader, shutting down); another member may.
    a.answered = a.status < 500;
    if (!a.answered) a.error = ep.url + ": HTTP " + std::to_string(a.status) + ": " + a.body;
    co_return a;
}

template <class T>
Decoded<T> failed(std::string error) {
    Decoded<T> d;
    d.error = std::move(error);
    return d;
}

// Runs the decoder on the body of the call's reply.
template <class T, class Decoder>
asio::awaitable<Decoded<T>> call_and_decode(EtcdClient& client, EtcdCall call, Decoder decode) {
    auto body = co_await client.post(std::move(call));
    if (!body) co_return failed<T>(std::move(body.error));
    co_return decode(*body);
}

}  // namespace

EtcdClient::EtcdClient(Executor executor, std::vector<EtcdEndpoint> endpoints,
                       std::chrono::milliseconds timeout)
    : executor_(std::move(executor)), endpoints_(std::move(endpoints)), timeout_(timeout) {}

std::unique_ptr<EtcdClient> EtcdClient::from_urls(Executor executor, std::string_view urls,
                                                  std::chrono::milliseconds timeout,
                                                  std::string* why) {
    std::vector<EtcdEndpoint> endpoints;
    for (const std::string& url : split_urls(urls)) {
        std::string reason;
        auto ep = parse_etcd_url(url, &reason);
        if (!ep) {
            *why = url + ": " + reason;
            return nullptr;
        }
        endpoints.push_back(std::move(*ep));
    }
    if (endpoints.empty()) {
        *why = "no etcd endpoint";
        return nullptr;
    }
    return std::make_unique<EtcdClient>(std::move(executor), std::move(endpoints), timeout);
}

asio::awaitable<Decoded<std::string>> EtcdClient::post(EtcdCall call) {
    Decoded<std::string> out;
    const size_t first = preferred_;
    for (size_t i = 0; i < endpoints_.size(); ++i) {
        const size_t index = (first + i) % endpoints_.size();
        Attempt a = co_await attempt(endpoints_[index], call, timeout_);
        if (a.answered) {
            preferred_ = index;
            out.value = std::move(a.body);
            co_return out;
        }
        out.error = std::move(a.error);
    }
    co_return out;
}

asio::awaitable<Decoded<RangeResult>> EtcdClient::range(std::string key, bool prefix) {
    co_return co_await call_and_decode<RangeResult>(*this, encode_range(key, prefix), decode_range);
}

asio::awaitable<Decoded<PutResult>> EtcdClient::put(std::string key, std::string value,
                                                    int64_t lease) {
    co_return co_await call_and_decode<PutResult>(*this, encode_put(key, value, lease), decode_put);
}

asio::awaitable<Decoded<PutResult>> EtcdClient::remove(std::string key) {
    // A DeleteRangeResponse has the header (and a count this client does not need).
    co_return co_await call_and_decode<PutResult>(*this, encode_delete(key), decode_put);
}

asio::awaitable<Decoded<TxnResult>> EtcdClient::create_if_absent(std::string key, std::string value,
                                                                 int64_t lease) {
    co_return co_await call_and_decode<TxnResult>(*this, encode_create_if_absent(key, value, lease),
                                                  decode_txn);
}

asio::awaitable<Decoded<TxnResult>> EtcdClient::delete_if_created(std::string key,
                                                                  int64_t create_revision) {
    co_return co_await call_and_decode<TxnResult>(
        *this, encode_delete_if_created(key, create_revision), decode_txn);
}

asio::awaitable<Decoded<TxnResult>> EtcdClient::guarded_txn(
    std::string guard_key, int64_t guard_create_revision,
    std::vector<std::pair<std::string, std::string>> puts, std::vector<std::string> deletes) {
    co_return co_await call_and_decode<TxnResult>(
        *this, encode_guarded_txn(guard_key, guard_create_revision, puts, deletes), decode_txn);
}

asio::awaitable<Decoded<LeaseResult>> EtcdClient::lease_grant(int64_t ttl_seconds) {
    co_return co_await call_and_decode<LeaseResult>(*this, encode_lease_grant(ttl_seconds),
                                                    decode_lease_grant);
}

asio::awaitable<Decoded<LeaseResult>> EtcdClient::lease_keepalive(int64_t lease) {
    co_return co_await call_and_decode<LeaseResult>(*this, encode_lease_keepalive(lease),
                                                    decode_lease_keepalive);
}

asio::awaitable<Decoded<PutResult>> EtcdClient::lease_revoke(int64_t lease) {
    co_return co_await call_and_decode<PutResult>(*this, encode_lease_revoke(lease),
                                                  decode_lease_revoke);
}

namespace {

// Reads the watch reply after its header: body bytes into the splitter, each object decoded and
// handed to `on_response`. The first message (the creation answer) must come within the
// stream's expiry; after it the stream may be silent for as long as nothing changes.
asio::awaitable<std::string> read_watch_body(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                             http::response_parser<http::buffer_body>& parser,
                                             const EtcdClient::WatchCallback& on_response,
                                             const EtcdWatchControl& control) {
    JsonObjectSplitter splitter;
    std::vector<std::string> objects;
    std::array<char, 16384> chunk;
    bool created = false;
    while (!parser.is_done()) {
        parser.get().body().data = chunk.data();
        parser.get().body().size = chunk.size();
        // read_some: returns with what has arrived (read would wait for the buffer to fill).
        auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, kTuple);
        (void)n;
        if (ec == http::error::need_buffer) ec = {};
        if (control.cancelled()) co_return std::string();
        if (ec) co_return "watch stream: " + ec.message();
        const size_t got = chunk.size() - parser.get().body().size;
        if (!splitter.feed(std::string_view(chunk.data(), got), objects))
            co_return std::string("watch stream: malformed");
        for (const std::string& text : objects) {
            auto w = decode_watch(text);
            if (!w) co_return "watch: " + w.error;
            if (!created) {
                created = true;
                stream.expires_never();
            }
            if (!on_response(*w) || control.cancelled()) co_return std::string();
        }
        objects.clear();
    }
    co_return std::string("watch stream ended");
}

}  // namespace

asio::awaitable<std::string> EtcdClient::watch(std::string key, bool prefix, int64_t start_revision,
                                               WatchCallback on_response,
                                               std::shared_ptr<EtcdWatchControl> control) {
    const EtcdCall call = encode_watch(key, prefix, start_revision);
    std::string error = "no etcd endpoint";
    const size_t first = preferred_;
    for (size_t i = 0; i < endpoints_.size(); ++i) {
        if (control->cancelled()) co_return std::string();
        const size_t index = (first + i) % endpoints_.size();
        const EtcdEndpoint& ep = endpoints_[index];
        auto s = std::make_shared<EtcdWatchControl::Stream>(executor_);
        control->stream = s;
        s->stream.expires_after(timeout_);
        if (auto ec = co_await connect_to(s->stream, ep)) {
            error = ep.url + ": connect: " + ec.message();
            continue;
        }
        auto req = request_of(ep, call, true);
        auto [wec, written] = co_await http::async_write(s->stream, req, kTuple);
        (void)written;
        beast::flat_buffer buffer;
        http::response_parser<http::buffer_body> parser;
        parser.body_limit(boost::none);  // a stream; each object is bounded by the splitter
        boost::system::error_code hec = wec;
        if (!hec)
            std::tie(hec, std::ignore) =
                co_await http::async_read_header(s->stream, buffer, parser, kTuple);
        if (control->cancelled()) co_return std::string();
        if (hec) {
            error = ep.url + ": watch: " + hec.message();
            continue;
        }
        if (parser.get().result_int() != 200) {
            error = ep.url + ": watch: HTTP " + std::to_string(parser.get().result_int());
            if (parser.get().result_int() >= 500) continue;
            co_return error;
        }
        preferred_ = index;
        co_return co_await read_watch_body(s->stream, buffer, parser, on_response, *control);
    }
    co_return error;
}

}  // namespace daxsmbd::cluster
