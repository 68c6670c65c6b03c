// An asynchronous client of etcd's v3 JSON gateway (etcd 3.4: POST /v3/...), HTTP/1.1 with
// Boost.Beast on the caller's executor. It keeps no connection between calls: each call connects
// to an endpoint, posts one request and reads the reply, which is cheap at the rate a cluster
// node calls (a keepalive every few seconds) and leaves no half-dead connection to detect.
//
// Failures: every call is bounded by the call timeout per endpoint (connect, request and reply
// together), so that a SIGSTOPped or partitioned etcd, which accepts connections but never
// answers, costs at most timeout x endpoints. A call whose endpoint fails at the transport level
// (refused, reset, timed out, HTTP 5xx without an etcd answer) goes to the next endpoint; the
// endpoint that answered last is tried first next time. An etcd error answer (lease not found,
// ...) is returned as it is: another member would say the same.
//
// Threads: the client holds no lock; use it from one strand (the executor given must serialise
// the calls, as a strand or a one-threaded io_context does).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/cluster/etcd_codec.h"

namespace daxsmbd::cluster {

// Stops a watch from outside: cancel() closes the watch's connection, and the awaitable that runs
// the watch returns. Call it on the client's executor (post to it from other threads).
class EtcdWatchControl {
  public:
    void cancel();
    bool cancelled() const { return cancelled_; }

    // The connection of the running watch; set and cleared by EtcdClient::watch.
    struct Stream;
    std::weak_ptr<Stream> stream;

  private:
    bool cancelled_ = false;
};

class EtcdClient {
  public:
    using Executor = boost::asio::any_io_executor;

    // `endpoints` must not be empty. `timeout` bounds one attempt on one endpoint.
    EtcdClient(Executor executor, std::vector<EtcdEndpoint> endpoints,
               std::chrono::milliseconds timeout);

    // Builds the endpoint list from a comma/space separated list of http:// URLs; null with
    // `why` set when one is not valid.
    static std::unique_ptr<EtcdClient> from_urls(Executor executor, std::string_view urls,
                                                 std::chrono::milliseconds timeout,
                                                 std::string* why);

    // The reply body of `call` from the first endpoint that answers, or the transport error of
    // the last one tried.
    boost::asio::awaitable<Decoded<std::string>> post(EtcdCall call);

    boost::asio::awaitable<Decoded<RangeResult>> range(std::string key, bool prefix = false);
    boost::asio::awaitable<Decoded<PutResult>> put(std::string key, std::string value,
                                                   int64_t lease = 0);
    boost::asio::awaitable<Decoded<PutResult>> remove(std::string key);
    boost::asio::awaitable<Decoded<TxnResult>> create_if_absent(std::string key, std::string value,
                                                                int64_t lease);
    boost::asio::awaitable<Decoded<TxnResult>> delete_if_created(std::string key,
                                                                 int64_t create_revision);
    boost::asio::awaitable<Decoded<TxnResult>> guarded_txn(
        std::string guard_key, int64_t guard_create_revision,
        std::vector<std::pair<std::string, std::string>> puts, std::vector<std::string> deletes);
    boost::asio::awaitable<Decoded<LeaseResult>> lease_grant(int64_t ttl_seconds);
    // One keepalive round trip (the gateway's streaming call with a single request).
    boost::asio::awaitable<Decoded<LeaseResult>> lease_keepalive(int64_t lease);
    boost::asio::awaitable<Decoded<PutResult>> lease_revoke(int64_t lease);

    // Watches `key` (every key under it with `prefix`) from `start_revision` (0: now), with
    // previous values, calling `on_response` for each message, creation and progress included.
    // Runs until `on_response` returns false, `control` is cancelled, or the stream ends or
    // fails (etcd gone, malformed stream); returns why it ended ("" when asked to stop). The
    // connect and the creation reply are bounded by the timeout; the stream itself is not (a
    // watch is silent while nothing changes).
    using WatchCallback = std::function<bool(const WatchResponse&)>;
    boost::asio::awaitable<std::string> watch(std::string key, bool prefix, int64_t start_revision,
                                              WatchCallback on_response,
                                              std::shared_ptr<EtcdWatchControl> control);

    const std::vector<EtcdEndpoint>& endpoints() const { return endpoints_; }
    std::chrono::milliseconds timeout() const { return timeout_; }

  private:
    Executor executor_;
    std::vector<EtcdEndpoint> endpoints_;
    std::chrono::milliseconds timeout_;
    size_t preferred_ = 0;  // the endpoint that answered last
};

}  // namespace daxsmbd::cluster
