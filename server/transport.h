// Message-oriented transport: TCP (4-byte framing) or SMB Direct (server/smbd_transport.h).
// Handlers never see the transport; the connection receives whole SMB2 messages and sends gather
// lists with at most one payload fragment, in a kind the transport says it carries (carries()).
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>
#include <span>
#include <string>

#include "protocol/bytes.h"
#include "server/buffer_pool.h"
#include "server/io/splice_pipe.h"
#include "server/payload.h"
#include "smbdirect/smbd_codec.h"

namespace daxsmbd::server {

namespace asio = boost::asio;

// The one-sided transfers of an RDMA transport (MS-SMBD 3.1.4.5, 3.1.4.6) for READ and WRITE
// requests whose Channel names RDMA (MS-SMB2 3.3.5.12, 3.3.5.13): the client's buffers, named
// by the request's buffer descriptors, are written or read by the server.
class RdmaChannel {
  public:
    virtual ~RdmaChannel() = default;
    // RDMA WRITE of all of `data` (Memory, or Mapped when carried) into the client's buffers
    // `to`, which describe at least data.size() bytes; done when the data is placed.
    virtual asio::awaitable<Status> push(std::span<const smbdirect::BufferDescriptorV1> to,
                                         const Payload& data) = 0;
    // RDMA READ of `length` bytes from the client's buffers `from` into a pool buffer.
    virtual asio::awaitable<Result<PoolBuffer>> pull(
        std::span<const smbdirect::BufferDescriptorV1> from, size_t length) = 0;
    // RDMA READ of the client's buffers `from` straight into a pinned range of a DAX mapping
    // (io::DataPath::landing), all of into.bytes(). NotSupported when this channel cannot
    // reach the mapping (nothing was read: the caller uses pull()).
    virtual asio::awaitable<Status> pull_into(std::span<const smbdirect::BufferDescriptorV1>,
                                              const dax::MappedRange&) {
        co_return Error(NtStatus::NotSupported);
    }
    // The payload kinds push() takes (Memory always; Mapped where the DAX mapping can be
    // registered for RDMA: then pull_into() may work too).
    virtual PayloadKinds push_kinds() const { return PayloadKind::Memory; }
    // The largest message the peer reassembles (MS-SMBD MaxFragmentedSize): a READ answered
    // inline must fit in it.
    virtual size_t max_inline_message() const = 0;
    // The largest READ or WRITE by RDMA the connection negotiated (MS-SMBD MaxReadWriteSize).
    virtual uint32_t max_read_write_size() const = 0;
};

class Transport {
  public:
    virtual ~Transport() = default;
    // One whole upper-layer message (no transport framing) in a pool buffer. Fails with
    // ConnectionDisconnected on EOF/reset, InvalidParameter on a framing violation, and
    // BufferOverflow when the peer announces a message above the maximum size.
    virtual asio::awaitable<Result<PoolBuffer>> receive() = 0;
    // The payload kinds send() takes as they are (server/payload.h); the caller turns any other
    // kind into Memory first. Every transport carries Memory.
    virtual PayloadKinds carries() const { return PayloadKind::Memory; }
    // Sends one message: `fragments`, then `tail` (empty, or of a kind in carries());
    // concurrent callers are serialised. A pipe tail is empty afterwards. On failure the
    // connection's framing is broken: the caller closes it.
    virtual asio::awaitable<Status> send(std::span<const protocol::Bytes> fragments,
                                         Payload& tail) = 0;
    // A message without a payload.
    asio::awaitable<Status> send(std::span<const protocol::Bytes> fragments);
    // send() that also invalidates the client's memory token `token` (SMB Direct: Send with
    // Invalidate, for READ and WRITE with SMB2_CHANNEL_RDMA_V1_INVALIDATE, MS-SMB2 3.3.5.12);
    // a transport without tokens just sends.
    virtual asio::awaitable<Status> send_invalidating(std::span<const protocol::Bytes> fragments,
                                                      Payload& tail, uint32_t token);
    // The RDMA transfers of this transport; null for a transport without RDMA.
    virtual RdmaChannel* rdma() { return nullptr; }
    virtual std::string peer() const = 0;
    virtual std::string peer_address() const = 0;  // address only, for per-address limits
    virtual void close() = 0;
};

// Accepts the connections of one transport on one address (TCP now; SMB Direct is a second
// implementation). The server runs one accept loop per listener.
class Listener {
  public:
    virtual ~Listener() = default;
    // The next connection, its transport running on `loop` (the event loop the server chose
    // for it). Fails with Cancelled once the listener is closed; other failures (EMFILE, a
    // connection reset before it was accepted) are worth a log line and the next accept.
    virtual asio::awaitable<Result<std::unique_ptr<Transport>>> accept(asio::io_context& loop) = 0;
    virtual uint16_t port() const = 0;  // the port bound (tests bind port 0)
    virtual void close() = 0;
};

// Serialises senders on one connection without blocking the loop (single-threaded use).
class AsyncMutex {
  public:
    explicit AsyncMutex(asio::any_io_executor ex) : ex_(std::move(ex)) {}
    asio::awaitable<void> lock();
    void unlock();

  private:
    asio::any_io_executor ex_;
    bool locked_ = false;
    std::deque<std::shared_ptr<asio::steady_timer>> waiters_;
};

class TcpTransport final : public Transport {
  public:
    TcpTransport(asio::ip::tcp::socket socket, size_t max_message_size, BufferPool& pool);
    asio::awaitable<Result<PoolBuffer>> receive() override;
    // A pipe tail: the framing, header and body with MSG_MORE, then splice(2) pipe -> socket:
    // the socket buffer references the file's pages, no copy here.
    PayloadKinds carries() const override { return PayloadKind::Memory | PayloadKind::Pipe; }
    using Transport::send;
    asio::awaitable<Status> send(std::span<const protocol::Bytes> fragments,
                                 Payload& tail) override;
    std::string peer() const override { return peer_; }
    std::string peer_address() const override { return peer_address_; }
    void close() override;

  private:
    // Messages from this size on are received with SO_RCVLOWAT set to what is still missing.
    static constexpr size_t kLowWatermarkFrom = 128 * 1024;
    // Messages up to this size are received through the staging buffer (kStageSize, one of the
    // pool's buffer classes).
    static constexpr size_t kStageSize = 64 * 1024;
    static constexpr size_t kStagedMessageMax = 16 * 1024;
    size_t staged() const { return stage_end_ - stage_begin_; }
    asio::awaitable<bool> stage_at_least(size_t n);
    void consume_staged(size_t n);
    asio::awaitable<bool> receive_large(std::byte* dst, size_t len);
    void set_receive_low_watermark(size_t bytes);
    asio::awaitable<bool> wait_writable();
    asio::awaitable<bool> splice_message(std::span<const protocol::Bytes> fragments,
                                         io::SplicePipe& tail);

    asio::awaitable<Status> send_gathered(std::span<const protocol::Bytes> fragments,
                                          std::span<const std::byte> tail);

    asio::ip::tcp::socket socket_;
    size_t max_message_size_;
    BufferPool& pool_;
    size_t low_watermark_ = 1;  // the socket's SO_RCVLOWAT (Linux default 1)
    PoolBuffer stage_;          // received bytes not yet returned: [stage_begin_, stage_end_)
    size_t stage_begin_ = 0;
    size_t stage_end_ = 0;
    std::array<std::byte, 512> idle_buffer_;  // the read that waits with nothing staged
    AsyncMutex send_mutex_;
    std::string peer_;
    std::string peer_address_;
};

}  // namespace daxsmbd::server

namespace daxsmbd::server {

// A TCP listening socket (MS-SMB2 2.1 Direct TCP transport).
class TcpListener final : public Listener {
  public:
    // Binds and listens on `address` port `port` (0: any); the accept waits run on `home`.
    static Result<std::unique_ptr<TcpListener>> open(asio::io_context& home,
                                                     const asio::ip::address& address,
                                                     uint16_t port, size_t max_message_size,
                                                     BufferPool& pool, std::string* error);
    asio::awaitable<Result<std::unique_ptr<Transport>>> accept(asio::io_context& loop) override;
    uint16_t port() const override;
    void close() override;

  private:
    TcpListener(asio::ip::tcp::acceptor acceptor, size_t max_message_size, BufferPool& pool)
        : acceptor_(std::move(acceptor)), max_message_size_(max_message_size), pool_(pool) {}
    asio::ip::tcp::acceptor acceptor_;
    size_t max_message_size_;
    BufferPool& pool_;
};

}  // namespace daxsmbd::server
