#include "server/transport.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <vector>

#include "server/log.h"

namespace daxsmbd::server {

namespace {

// MS-SMB2 2.1 Direct TCP transport: a zero byte and the message length, 24-bit big-endian;
// nullopt for a message too long to frame.
std::optional<std::array<uint8_t, 4>> direct_tcp_header(size_t length) {
    if (length > 0xFFFFFF) return std::nullopt;
    return std::array<uint8_t, 4>{0, uint8_t(length >> 16), uint8_t(length >> 8), uint8_t(length)};
}

}  // namespace

asio::awaitable<Status> Transport::send_invalidating(std::span<const protocol::Bytes> fragments,
                                                     Payload& tail, uint32_t) {
    co_return co_await send(fragments, tail);
}

asio::awaitable<Status> Transport::send(std::span<const protocol::Bytes> fragments) {
    Payload none;
    co_return co_await send(fragments, none);
}

asio::awaitable<void> AsyncMutex::lock() {
    if (!locked_) {
        locked_ = true;
        co_return;
    }
    auto t = std::make_shared<asio::steady_timer>(ex_, asio::steady_timer::time_point::max());
    waiters_.push_back(t);
    boost::system::error_code ec;
    co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    // Woken by unlock(): ownership was handed over, locked_ stays true.
}

void AsyncMutex::unlock() {
    if (waiters_.empty()) {
        locked_ = false;
        return;
    }
    auto t = std::move(waiters_.front());
    waiters_.pop_front();
    t->cancel();
}

TcpTransport::TcpTransport(asio::ip::tcp::socket socket, size_t max_message_size, BufferPool& pool)
    : socket_(std::move(socket)),
      max_message_size_(max_message_size),
      pool_(pool),
      send_mutex_(socket_.get_executor()) {
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    if (!ec) {
        peer_address_ = ep.address().to_string();
        peer_ = peer_address_ + ":" + std::to_string(ep.port());
    } else {
        peer_ = peer_address_ = "?";
    }
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

// Receiving: small messages (most requests) are read through a staging buffer, so that one
// recv takes a whole message with its framing header (or several pipelined ones) instead of a
// recv for the 4-byte header and another for the body; a read that does not fill its buffer
// also tells asio that the socket is empty, so the next read waits in epoll instead of trying a
// recv that fails first. The staging buffer (a pool buffer) is held only while bytes are in it:
// a connection with nothing buffered waits with a small buffer inside the transport, so idle
// connections stay small.
asio::awaitable<bool> TcpTransport::stage_at_least(size_t n) {
    while (staged() < n) {
        boost::system::error_code ec;
        if (!stage_) {
            const size_t got = co_await socket_.async_read_some(
                asio::buffer(idle_buffer_), asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return false;
            stage_ = pool_.acquire(kStageSize);
            std::memcpy(stage_.data(), idle_buffer_.data(), got);
            stage_begin_ = 0;
            stage_end_ = got;
            continue;
        }
        if (stage_begin_ + n > stage_.capacity()) {
            std::memmove(stage_.data(), stage_.data() + stage_begin_, staged());
            stage_end_ -= stage_begin_;
            stage_begin_ = 0;
        }
        const size_t got = co_await socket_.async_read_some(
            asio::buffer(stage_.data() + stage_end_, stage_.capacity() - stage_end_),
            asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return false;
        stage_end_ += got;
    }
    co_return true;
}

void TcpTransport::consume_staged(size_t n) {
    stage_begin_ += n;
    if (stage_begin_ == stage_end_) {
        stage_.reset();
        stage_begin_ = stage_end_ = 0;
    }
}

asio::awaitable<Result<PoolBuffer>> TcpTransport::receive() {
    for (;;) {
        if (!co_await stage_at_least(4)) co_return Error(NtStatus::ConnectionDisconnected);
        const auto* hdr = reinterpret_cast<const uint8_t*>(stage_.data() + stage_begin_);
        // MS-SMB2 2.1: Direct TCP framing, byte 0 zero, 24-bit big-endian length. NetBIOS
        // session keepalives (type 0x85, length 0) may still arrive from old stacks: skip them.
        const size_t len = (size_t(hdr[1]) << 16) | (size_t(hdr[2]) << 8) | hdr[3];
        if (hdr[0] == 0x85 && len == 0) {
            consume_staged(4);
            continue;
        }
        if (hdr[0] != 0) co_return Error(NtStatus::InvalidParameter);
        if (len > max_message_size_) co_return Error(NtStatus::BufferOverflow);
        if (len < 4) co_return Error(NtStatus::InvalidParameter);

        if (len <= kStagedMessageMax) {
            if (!co_await stage_at_least(4 + len))
                co_return Error(NtStatus::ConnectionDisconnected);
            PoolBuffer msg;
            if (staged() == 4 + len) {
                // The message is all there is: hand the staging buffer over (no new buffer).
                msg = std::move(stage_);
                std::memmove(msg.data(), msg.data() + stage_begin_ + 4, len);
                stage_begin_ = stage_end_ = 0;
            } else {
                msg = pool_.acquire(len);
                std::memcpy(msg.data(), stage_.data() + stage_begin_ + 4, len);
                consume_staged(4 + len);
            }
            msg.set_size(len);
            co_return msg;
        }

        // A larger message gets its own buffer: what is staged of it is copied, the rest is
        // read into place.
        auto buf = pool_.acquire(len);
        const size_t have = std::min(staged() - 4, len);
        std::memcpy(buf.data(), stage_.data() + stage_begin_ + 4, have);
        consume_staged(4 + have);
        if (len - have >= kLowWatermarkFrom) {
            if (!co_await receive_large(buf.data() + have, len - have))
                co_return Error(NtStatus::ConnectionDisconnected);
        } else if (have < len) {
            boost::system::error_code ec;
            co_await asio::async_read(socket_, asio::buffer(buf.data() + have, len - have),
                                      asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return Error(NtStatus::ConnectionDisconnected);
        }
        buf.set_size(len);
        co_return buf;
    }
}

asio::awaitable<bool> TcpTransport::receive_large(std::byte* dst, size_t len) {
    // A large message (a 1 MiB WRITE) arrives in loopback/MTU-sized segments: waiting for it
    // piece by piece costs an epoll wakeup and a recv per segment (19 of each per 1 MiB on
    // loopback). Take what is queued, then ask the kernel to report the socket readable only
    // once the rest is there (SO_RCVLOWAT, set to exactly what is missing so that it can never
    // wait for bytes that will not come; Linux also reports readable when the receive window is
    // about to close, and caps the value at half the largest receive buffer).
    size_t got = 0;
    bool ok = true;
    while (got < len) {
        const ssize_t n = ::recv(socket_.native_handle(), dst + got, len - got, MSG_DONTWAIT);
        if (n > 0) {
            got += size_t(n);
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            ok = false;
            break;
        }
        if (errno == EINTR) continue;
        set_receive_low_watermark(len - got);
        boost::system::error_code ec;
        co_await socket_.async_wait(asio::ip::tcp::socket::wait_read,
                                    asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            ok = false;
            break;
        }
    }
    // Back to "any byte" before the next 4-byte header is awaited.
    if (low_watermark_ != 1) set_receive_low_watermark(1);
    co_return ok;
}

void TcpTransport::set_receive_low_watermark(size_t bytes) {
    const int v = int(std::min<size_t>(bytes, INT_MAX));
    // Failure only costs the extra wakeups; remember 1 then so that it is not retried as
    // though a watermark were set.
    if (::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) != 0) {
        low_watermark_ = 1;
        return;
    }
    low_watermark_ = size_t(v);
}

asio::awaitable<Status> TcpTransport::send(std::span<const protocol::Bytes> fragments,
                                           Payload& tail) {
    if (io::SplicePipe* pipe = tail.pipe()) {
        co_await send_mutex_.lock();
        const bool ok = co_await splice_message(fragments, *pipe);
        send_mutex_.unlock();
        if (!ok) co_return Error(NtStatus::ConnectionDisconnected);
        co_return Status{};
    }
    co_return co_await send_gathered(fragments, tail.bytes());
}

asio::awaitable<Status> TcpTransport::send_gathered(std::span<const protocol::Bytes> fragments,
                                                    std::span<const std::byte> tail) {
    size_t total = tail.size();
    for (auto& f : fragments)
        total += f.size();
    const auto hdr = direct_tcp_header(total);
    if (!hdr) co_return Error(NtStatus::InvalidParameter);
    std::vector<asio::const_buffer> bufs;
    bufs.reserve(fragments.size() + 1);
    bufs.emplace_back(hdr->data(), hdr->size());
    for (auto& f : fragments)
        bufs.emplace_back(f.data(), f.size());
    if (!tail.empty()) bufs.emplace_back(tail.data(), tail.size());
    co_await send_mutex_.lock();
    boost::system::error_code ec;
    co_await asio::async_write(socket_, bufs, asio::redirect_error(asio::use_awaitable, ec));
    send_mutex_.unlock();
    if (ec) co_return Error(NtStatus::ConnectionDisconnected);
    co_return Status{};
}

asio::awaitable<bool> TcpTransport::wait_writable() {
    boost::system::error_code ec;
    co_await socket_.async_wait(asio::ip::tcp::socket::wait_write,
                                asio::redirect_error(asio::use_awaitable, ec));
    // close() may have run between the wake-up and now: its descriptor number may already
    // belong to another connection.
    co_return !ec && socket_.is_open();
}

asio::awaitable<bool> TcpTransport::splice_message(std::span<const protocol::Bytes> fragments,
                                                   io::SplicePipe& tail) {
    size_t total = tail.size();
    for (auto& f : fragments)
        total += f.size();
    auto hdr = direct_tcp_header(total);
    if (!hdr) co_return false;
    // splice(2) into a socket waits for buffer space unless the socket itself is non-blocking
    // (O_NONBLOCK on the file, not SPLICE_F_NONBLOCK, decides that).
    boost::system::error_code ec;
    if (!socket_.native_non_blocking()) socket_.native_non_blocking(true, ec);
    if (ec) co_return false;
    // MS-SMB2 2.1 framing, then the SMB2 header and READ body. MSG_MORE keeps them in the
    // socket until the data follows, so the header does not go out as a segment of its own
    // (the socket has TCP_NODELAY).
    std::vector<iovec> iov;
    iov.reserve(fragments.size() + 1);
    iov.push_back({hdr->data(), hdr->size()});
    for (auto& f : fragments)
        if (!f.empty()) iov.push_back({const_cast<std::byte*>(f.data()), f.size()});
    size_t first = 0;
    while (first < iov.size()) {
        msghdr m{};
        m.msg_iov = iov.data() + first;
        m.msg_iovlen = iov.size() - first;
        const int more = tail.size() > 0 ? MSG_MORE : 0;
        const ssize_t n =
            ::sendmsg(socket_.native_handle(), &m, MSG_DONTWAIT | MSG_NOSIGNAL | more);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) co_return false;
            if (!co_await wait_writable()) co_return false;
            continue;
        }
        size_t sent = size_t(n);
        while (first < iov.size() && sent >= iov[first].iov_len)
            sent -= iov[first++].iov_len;
        if (sent > 0) {
            iov[first].iov_base = static_cast<std::byte*>(iov[first].iov_base) + sent;
            iov[first].iov_len -= sent;
        }
    }
    // The data: the pipe's page references move into the socket's buffer.
    while (tail.size() > 0) {
        const ssize_t n = ::splice(tail.read_fd(), nullptr, socket_.native_handle(), nullptr,
                                   tail.size(), SPLICE_F_NONBLOCK);
        if (n > 0) {
            tail.removed(size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        // EAGAIN with data in the pipe: the socket is full.
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!co_await wait_writable()) co_return false;
            continue;
        }
        co_return false;
    }
    co_return true;
}

void TcpTransport::close() {
    boost::system::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
}

Result<std::unique_ptr<TcpListener>> TcpListener::open(asio::io_context& home,
                                                       const asio::ip::address& address,
                                                       uint16_t port, size_t max_message_size,
                                                       BufferPool& pool, std::string* error) {
    asio::ip::tcp::acceptor acc(home);
    asio::ip::tcp::endpoint ep(address, port);
    boost::system::error_code ec;
    acc.open(ep.protocol(), ec);
    if (!ec) acc.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
    if (!ec && address.is_v6()) acc.set_option(asio::ip::v6_only(true), ec);
    if (!ec) acc.bind(ep, ec);
    if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        *error = ec.message();
        return Error(NtStatus::InvalidParameter);
    }
    return std::unique_ptr<TcpListener>(new TcpListener(std::move(acc), max_message_size, pool));
}

asio::awaitable<Result<std::unique_ptr<Transport>>> TcpListener::accept(asio::io_context& loop) {
    boost::system::error_code ec;
    asio::ip::tcp::socket sock =
        co_await acceptor_.async_accept(loop, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted) co_return Error(NtStatus::Cancelled);
    if (ec) {
        log_error("accept: ", ec.message());
        co_return Error(NtStatus::InsufficientResources);
    }
    co_return std::unique_ptr<Transport>(
        std::make_unique<TcpTransport>(std::move(sock), max_message_size_, pool_));
}

uint16_t TcpListener::port() const {
    boost::system::error_code ec;
    auto ep = acceptor_.local_endpoint(ec);
    return ec ? 0 : ep.port();
}

void TcpListener::close() {
    boost::system::error_code ec;
    acceptor_.close(ec);
}

}  // namespace daxsmbd::server
