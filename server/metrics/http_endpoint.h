// The HTTP endpoint that serves /metrics ("metrics address" in [global]): Boost.Beast on a
// thread and io_context of its own, so that a slow scraper never touches an event loop. One
// request at a time, each bounded in size and time: GET /metrics answers the text that
// `render` returns (Prometheus text format 0.0.4), any other path 404, any other method 405.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace daxsmbd::server::metrics {

class HttpEndpoint {
  public:
    using Render = std::function<std::string()>;
    // Binds `address` ("127.0.0.1:9922", "[::1]:9922"; port 0: the kernel picks) and starts
    // serving; null with `error` set when the address is bad or cannot be bound.
    static std::unique_ptr<HttpEndpoint> start(const std::string& address, Render render,
                                               std::string* error);
    ~HttpEndpoint();  // stops the thread
    uint16_t port() const;

    struct Impl;

  private:
    explicit HttpEndpoint(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Splits "host:port" / "[v6]:port" into an IP literal and a port; false when it is not one.
bool parse_host_port(const std::string& address, std::string* host, uint16_t* port);

}  // namespace daxsmbd::server::metrics
