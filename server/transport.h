// Message-oriented transport: TCP (4-byte framing) now, SMB Direct later. Handlers never see
// the transport; the connection receives whole SMB2 messages and sends gather lists. RDMA
// read/write of a client's registered buffers are separate operations on descriptors.
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>
#include <span>
#include <string>

#include "protocol/bytes.h"
#include "server/buffer_pool.h"
#include "server/io/splice_pipe.h"

namespace daxsmbd::server {

namespace asio = boost::asio;

// SMB_DIRECT_BUFFER_DESCRIPTOR_V1 (MS-SMBD 2.2.3.1), as the transport needs it.
struct RdmaDescriptor {
    uint64_t offset = 0;
    uint32_t token = 0;
    uint32_t length = 0;
};

enum class TransportKind { Tcp, SmbDirect };

class Transport {
  public:
    virtual ~Transport() = default;
    // One whole upper-layer message (no transport framing) in a pool buffer. Fails with
    // ConnectionDisconnected on EOF/reset, InvalidParameter on a framing violation, and
    // BufferOverflow when the peer announces a message above the maximum size.
    virtual asio::awaitable<Result<PoolBuffer>> receive() = 0;
    // Sends one message given as gather fragments; concurrent callers are serialised.
    virtual asio::awaitable<Status> send(std::span<const protocol::Bytes> fragments) = 0;
    // Sends one message whose last fragment is the content of a pipe (file pages spliced into
    // it, server/io/splice_pipe.h); the pipe is empty afterwards. A transport that can move the
    // pipe into its connection without reading it says so in splices(); the default reads the
    // pipe into a pool buffer and sends that (correct for any transport, no saving). On
    // failure the connection's framing is broken: the caller closes it.
    virtual bool splices() const { return false; }
    virtual asio::awaitable<Status> send_with_pipe(std::span<const protocol::Bytes> fragments,
                                                   io::SplicePipe& tail);
    // SMB Direct only: RDMA READ from / RDMA WRITE to the peer's registered memory.
    virtual asio::awaitable<Status> rdma_read(std::span<const RdmaDescriptor>,
                                              std::span<std::byte>);
    virtual asio::awaitable<Status> rdma_write(std::span<const RdmaDescriptor>,
                                               std::span<const std::byte>);
    virtual TransportKind kind() const = 0;
    virtual std::string peer() const = 0;
    virtual std::string peer_address() const = 0;  // address only, for per-address limits
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
    TcpTransport(asio::ip::tcp::socket socket, size_t max_message_size);
    asio::awaitable<Result<PoolBuffer>> receive() override;
    asio::awaitable<Status> send(std::span<const protocol::Bytes> fragments) override;
    // The framing, header and body with MSG_MORE, then splice(2) pipe -> socket: the socket
    // buffer references the file's pages, no copy here.
    bool splices() const override { return true; }
    asio::awaitable<Status> send_with_pipe(std::span<const protocol::Bytes> fragments,
                                           io::SplicePipe& tail) override;
    TransportKind kind() const override { return TransportKind::Tcp; }
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

    asio::ip::tcp::socket socket_;
    size_t max_message_size_;
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
