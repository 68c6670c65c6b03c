// The RDMA provider under SMB Direct: one reliable-connected queue pair per connection, memory
// registration, and the completions that drive it. Two implementations: the verbs provider
// (smbdirect/verbs_provider.h: librdmacm + libibverbs) and an in-process emulation for tests on
// machines without RDMA (smbdirect/emulated_provider.h). SmbdConnection (smbdirect/
// smbd_connection.h) is written against this interface only.
//
// A QueuePair is used on one event loop (the connection's): its completion and connection
// events are read there, and none of its methods may be called from another thread.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "protocol/result.h"

namespace daxsmbd::smbdirect {

namespace asio = boost::asio;

// What a registration allows (bit set).
namespace access {
constexpr unsigned kLocalWrite = 1;   // receives and RDMA READ land in it
constexpr unsigned kRemoteRead = 2;   // the peer may RDMA READ from it
constexpr unsigned kRemoteWrite = 4;  // the peer may RDMA WRITE into it
constexpr unsigned kOnDemand = 8;     // On-Demand Paging: nothing pinned, faulted in on access
}  // namespace access

// A registered memory region: [addr, addr + length), reachable locally with lkey and (when
// registered with a remote access bit) by the peer with rkey. Deregistered when destroyed.
class MemoryRegion {
  public:
    virtual ~MemoryRegion() = default;
    std::byte* addr = nullptr;
    size_t length = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
    bool contains(const void* p, size_t len) const {
        auto* b = static_cast<const std::byte*>(p);
        return b >= addr && len <= length && size_t(b - addr) <= length - len;
    }
};

// One scatter/gather element of local, registered memory.
struct LocalSegment {
    std::byte* addr = nullptr;
    uint32_t length = 0;
    uint32_t lkey = 0;
};

// The device's memory domain (an ibv_pd). Regions registered here are usable by every queue
// pair of the same domain.
class ProtectionDomain {
  public:
    virtual ~ProtectionDomain() = default;
    // Registers [addr, addr + length) with `access_bits`. Failure: the errno-style reason in
    // `why` (for example "EOPNOTSUPP" for fsdax memory without On-Demand Paging).
    virtual std::unique_ptr<MemoryRegion> register_memory(void* addr, size_t length,
                                                          unsigned access_bits,
                                                          std::string* why) = 0;
    // The device offers On-Demand Paging for RC RDMA READ and WRITE.
    virtual bool on_demand_paging() const = 0;
    // A name for log lines ("rxe0").
    virtual std::string device_name() const = 0;
};

struct Completion {
    enum class Op : uint8_t { Send, Receive, Read, Write };
    uint64_t wr_id = 0;
    Op op = Op::Send;
    bool ok = true;
    std::string error;      // the work completion status when !ok
    uint32_t byte_len = 0;  // Receive: bytes received
    // Receive: the peer sent with invalidate, this rkey of ours is now invalid.
    std::optional<uint32_t> invalidated_rkey;
};

// Limits of the queue pair as created (the provider may have lowered what was asked).
struct QueuePairCaps {
    uint32_t max_send_wr = 0;
    uint32_t max_recv_wr = 0;
    uint32_t max_send_sge = 1;
    uint32_t max_rdma_read_outstanding = 1;  // RDMA READs this side may have in flight
    uint32_t max_rdma_size = 1u << 30;       // largest single RDMA READ/WRITE
};

// What the passive side asks of a connection it accepts.
struct QueuePairRequest {
    uint32_t send_wr = 255 + 64;  // sends + RDMA READ/WRITE in flight
    uint32_t recv_wr = 255;
    uint32_t rdma_read_outstanding = 16;
};

class QueuePair {
  public:
    virtual ~QueuePair() = default;

    // Passive side: completes the connection request (rdma_accept); post the first receive
    // before. Fails when the peer went away or the device refused.
    virtual asio::awaitable<Status> accept() = 0;

    // Work requests. Each produces exactly one Completion with the same wr_id, also when it
    // fails or is flushed by a disconnect. Fails at once (nothing posted) when the queue is full
    // or the queue pair is in error.
    virtual Status post_receive(uint64_t wr_id, LocalSegment into) = 0;
    // A send of `from` (gathered); with `invalidate_rkey`, a Send with Invalidate of that rkey
    // of the peer's (MS-SMBD 3.1.4.1).
    virtual Status post_send(uint64_t wr_id, std::span<const LocalSegment> from,
                             std::optional<uint32_t> invalidate_rkey) = 0;
    // RDMA WRITE of `from` to the peer's [remote_addr, + total) under rkey.
    virtual Status post_write(uint64_t wr_id, std::span<const LocalSegment> from,
                              uint64_t remote_addr, uint32_t rkey) = 0;
    // RDMA READ of the peer's [remote_addr, + total) under rkey into `into`.
    virtual Status post_read(uint64_t wr_id, std::span<const LocalSegment> into,
                             uint64_t remote_addr, uint32_t rkey) = 0;

    // Completions that have arrived, up to out.size(); never waits.
    virtual size_t poll(std::span<Completion> out) = 0;
    // Returns when poll() may find something or the connection state changed (disconnected());
    // spurious returns are allowed. Waits on the loop the queue pair was created for.
    virtual asio::awaitable<void> wait() = 0;
    // Makes a wait() in progress return now (the connection is being closed).
    virtual void interrupt_wait() = 0;
    // The peer disconnected, the device went away, or disconnect() was called. Work posted
    // afterwards fails; work in flight completes with errors (flushed).
    virtual bool disconnected() const = 0;
    virtual void disconnect() = 0;

    virtual const QueuePairCaps& caps() const = 0;
    virtual ProtectionDomain& domain() = 0;
    virtual std::string peer() const = 0;          // "192.0.2.1:40000" for log lines
    virtual std::string peer_address() const = 0;  // address only, for per-address limits
};

// Connection requests arriving at one address and port.
class ConnectionRequests {
  public:
    virtual ~ConnectionRequests() = default;
    // The next connection request, with its queue pair created for `loop` (not yet accepted).
    // Fails with Cancelled once closed.
    virtual asio::awaitable<Result<std::unique_ptr<QueuePair>>> next(asio::io_context& loop) = 0;
    virtual uint16_t port() const = 0;
    virtual void close() = 0;
};

}  // namespace daxsmbd::smbdirect
