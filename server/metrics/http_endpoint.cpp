#include "server/metrics/http_endpoint.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <thread>

#include "server/metrics/exposition.h"

namespace daxsmbd::server::metrics {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A scraper gets this long to send its request and take the answer.
constexpr std::chrono::seconds kRequestTimeout{10};
// A GET needs no more than a request line and a few headers; a body is never read.
constexpr size_t kMaxHeaderBytes = 8192;
constexpr size_t kMaxBodyBytes = 1024;

struct HttpEndpoint::Impl {
    asio::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    Render render;
    uint16_t port = 0;
    std::thread thread;
};

bool parse_host_port(const std::string& address, std::string* host, uint16_t* port) {
    std::string h, p;
    if (!address.empty() && address.front() == '[') {
        auto close = address.find(']');
        if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':')
            return false;
        h = address.substr(1, close - 1);
        p = address.substr(close + 2);
    } else {
        auto colon = address.rfind(':');
        if (colon == std::string::npos || address.find(':') != colon) return false;
        h = address.substr(0, colon);
        p = address.substr(colon + 1);
    }
    if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos)
        return false;
    const unsigned long n = std::stoul(p);
    if (n > 65535) return false;
    boost::system::error_code ec;
    asio::ip::make_address(h, ec);
    if (ec) return false;
    *host = h;
    *port = uint16_t(n);
    return true;
}

namespace {

http::response<http::string_body> answer(const http::request<http::string_body>& req,
                                         const HttpEndpoint::Render& render) {
    http::response<http::string_body> res;
    res.version(req.version());
    res.keep_alive(false);
    res.set(http::field::server, "daxsmbd");
    const std::string_view target(req.target().data(), req.target().size());
    const bool metrics = target == "/metrics" || target.starts_with("/metrics?");
    if (!metrics) {
        res.result(http::status::not_found);
        res.set(http::field::content_type, "text/plain");
        res.body() = "not found; the metrics are at /metrics\n";
    } else if (req.method() != http::verb::get) {
        res.result(http::status::method_not_allowed);
        res.set(http::field::allow, "GET");
        res.set(http::field::content_type, "text/plain");
        res.body() = "only GET\n";
    } else {
        res.result(http::status::ok);
        res.set(http::field::content_type, kExpositionContentType);
        res.body() = render();
    }
    res.prepare_payload();
    return res;
}

asio::awaitable<void> serve_one(tcp::socket socket, const HttpEndpoint::Render& render) {
    beast::tcp_stream stream(std::move(socket));
    stream.expires_after(kRequestTimeout);
    beast::flat_buffer buffer(kMaxHeaderBytes + kMaxBodyBytes);
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(kMaxBodyBytes);
    boost::system::error_code ec;
    co_await http::async_read(stream, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;  // timed out, too large or not HTTP: just close
    auto res = answer(parser.get(), render);
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
}

asio::awaitable<void> accept_loop(HttpEndpoint::Impl& impl) {
    for (;;) {
        auto [ec, socket] =
            co_await impl.acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
        if (ec == asio::error::operation_aborted || !impl.acceptor.is_open()) co_return;
        if (ec) continue;
        co_await serve_one(std::move(socket), impl.render);  // one scrape at a time
    }
}

}  // namespace

std::unique_ptr<HttpEndpoint> HttpEndpoint::start(const std::string& address, Render render,
                                                  std::string* error) {
    std::string host;
    uint16_t port = 0;
    if (!parse_host_port(address, &host, &port)) {
        *error = "metrics address: not IP:port: " + address;
        return nullptr;
    }
    auto impl = std::make_unique<Impl>();
    impl->render = std::move(render);
    boost::system::error_code ec;
    const tcp::endpoint ep(asio::ip::make_address(host), port);
    impl->acceptor.open(ep.protocol(), ec);
    if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) impl->acceptor.bind(ep, ec);
    if (!ec) impl->acceptor.listen(16, ec);
    if (ec) {
        *error = "metrics address " + address + ": " + ec.message();
        return nullptr;
    }
    impl->port = impl->acceptor.local_endpoint().port();
    asio::co_spawn(impl->ioc, accept_loop(*impl), asio::detached);
    Impl* raw = impl.get();
    impl->thread = std::thread([raw] { raw->ioc.run(); });
    return std::unique_ptr<HttpEndpoint>(new HttpEndpoint(std::move(impl)));
}

HttpEndpoint::HttpEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpEndpoint::~HttpEndpoint() {
    impl_->ioc.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
}

uint16_t HttpEndpoint::port() const {
    return impl_->port;
}

}  // namespace daxsmbd::server::metrics
