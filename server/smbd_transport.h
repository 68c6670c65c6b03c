// SMB Direct as a Transport and a Listener (server/transport.h): SMB2 messages over an
// smbdirect::SmbdConnection, without the 4-byte Direct TCP framing (MS-SMB2 2.1), and the RDMA
// READ/WRITE of READ and WRITE requests (RdmaChannel).
//
// Memory: RDMA moves data between the client's buffers and pool buffers (server/buffer_pool.h).
// Each pool slab is registered once per protection domain (RdmaRegistrations, owned by the
// server), never per I/O; a payload outside the slabs (a one-off buffer) is copied into a pool
// buffer first. On a device with On-Demand Paging, the DAX file mappings are registered too
// (windows of them, kept for later transfers), and READ and WRITE data of DAX shares moves
// straight between the client and persistent memory (counted as direct_bytes; through pool
// buffers: bounce_bytes).
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/buffer_pool.h"
#include "server/transport.h"
#include "smbdirect/provider.h"
#include "smbdirect/smbd_connection.h"

namespace daxsmbd::server {

// The pool's slabs as memory regions of each protection domain that asks, registered at first
// use and kept while a connection of that domain lives (never per I/O). Released with the
// domain's last connection: a device is removed only once every resource on it is gone (the
// kernel waits for them), and an idle server holds nothing on its devices but the listeners.
// Thread-safe (connections of every loop share a domain).
class RdmaRegistrations {
  public:
    explicit RdmaRegistrations(BufferPool& pool) : pool_(pool) {}
    // A connection of `pd` starts or ends; after the last one the domain's regions go.
    void attach(smbdirect::ProtectionDomain& pd);
    void detach(smbdirect::ProtectionDomain& pd);
    // The segment for [p, p + len) when it lies in one pool slab; nullopt otherwise or when the
    // registration failed (logged once per domain).
    std::optional<smbdirect::LocalSegment> segment(smbdirect::ProtectionDomain& pd, std::byte* p,
                                                   size_t len);
    size_t registered_slabs() const;

    // RDMA straight from and into a DAX file mapping: the segment for `bytes`, which lie in
    // `mapping` (dax::MappedRange::mapping(), pinned by the caller), from an On-Demand-Paging
    // registration of a window of the mapping (kMappedWindow, larger for a transfer crossing
    // it; the kMappedGranule pieces around the transfer while the mapping is shorter than the
    // window). Registrations are kept for later transfers, the last kMappedRegions used per domain:
    // an ODP region follows whatever the addresses map when the device touches them, so one
    // that outlived its file's mapping is still right for the next mapping placed there, and a
    // transfer only ever touches a range pinned meanwhile. `hold` keeps the region for the
    // transfer. nullopt when the domain has no ODP or the registration failed (logged once per
    // domain; the caller then goes through pool buffers).
    static constexpr size_t kMappedWindow = size_t(64) << 20;
    static constexpr size_t kMappedGranule = size_t(2) << 20;
    static constexpr size_t kMappedRegions = 32;
    std::optional<smbdirect::LocalSegment> mapped_segment(
        smbdirect::ProtectionDomain& pd, std::span<std::byte> mapping,
        std::span<const std::byte> bytes, std::shared_ptr<smbdirect::MemoryRegion>* hold);
    // Whether mapped_segment() may work on `pd` (ODP offered, no registration failed yet).
    bool maps_directly(smbdirect::ProtectionDomain& pd) const;
    size_t mapped_regions() const;

  private:
    struct Domain {
        size_t connections = 0;
        bool failed = false;
        bool mapped_failed = false;
        std::vector<std::unique_ptr<smbdirect::MemoryRegion>> slabs;
        std::list<std::shared_ptr<smbdirect::MemoryRegion>> mapped;  // most recently used first
    };
    BufferPool& pool_;
    mutable std::mutex mu_;
    std::map<smbdirect::ProtectionDomain*, Domain> domains_;
};

class SmbdTransport final : public Transport, public RdmaChannel {
  public:
    SmbdTransport(std::shared_ptr<smbdirect::SmbdConnection> conn, BufferPool& pool,
                  RdmaRegistrations& registrations, smbdirect::SmbdCounters* counters = nullptr);
    ~SmbdTransport() override;

    // The first call runs the SMB Direct negotiation (on the connection's loop).
    asio::awaitable<Result<PoolBuffer>> receive() override;
    using Transport::send;
    asio::awaitable<Status> send(std::span<const protocol::Bytes> fragments,
                                 Payload& tail) override;
    asio::awaitable<Status> send_invalidating(std::span<const protocol::Bytes> fragments,
                                              Payload& tail, uint32_t token) override;
    RdmaChannel* rdma() override { return this; }
    std::string peer() const override { return peer_; }
    std::string peer_address() const override { return peer_address_; }
    void close() override;

    asio::awaitable<Status> push(std::span<const smbdirect::BufferDescriptorV1> to,
                                 const Payload& data) override;
    asio::awaitable<Result<PoolBuffer>> pull(std::span<const smbdirect::BufferDescriptorV1> from,
                                             size_t length) override;
    asio::awaitable<Status> pull_into(std::span<const smbdirect::BufferDescriptorV1> from,
                                      const dax::MappedRange& into) override;
    PayloadKinds push_kinds() const override;
    uint32_t max_read_write_size() const override;
    size_t max_inline_message() const override {
        return conn_->parameters().max_fragmented_send_size;
    }

  private:
    asio::awaitable<Status> send_message(std::span<const protocol::Bytes> fragments, Payload& tail,
                                         std::optional<uint32_t> token);

    std::shared_ptr<smbdirect::SmbdConnection> conn_;
    BufferPool& pool_;
    RdmaRegistrations& registrations_;
    smbdirect::SmbdCounters* counters_;
    bool started_ = false;
    std::string peer_;
    std::string peer_address_;
};

// Accepts SMB Direct connections from a provider's connection requests (the verbs listener on
// an RDMA device's address, or the emulated one in tests).
//
// When the device under it goes away (rdma link delete, a driver unload) the connection
// requests end; with `relisten` the listener then tries every `relisten_interval` to listen on
// its address again, so that the device coming back (or another one taking the address) is
// served without a restart.
class SmbdListener final : public Listener {
  public:
    using Relisten = std::function<std::unique_ptr<smbdirect::ConnectionRequests>()>;
    SmbdListener(std::unique_ptr<smbdirect::ConnectionRequests> requests,
                 smbdirect::SmbdConfig config, smbdirect::SmbdCounters& counters, BufferPool& pool,
                 RdmaRegistrations& registrations, std::string name, Relisten relisten = {},
                 std::chrono::milliseconds relisten_interval = std::chrono::seconds(2));
    asio::awaitable<Result<std::unique_ptr<Transport>>> accept(asio::io_context& loop) override;
    uint16_t port() const override;
    void close() override;

  private:
    // After the device went away: true once listening again, false when closed meanwhile.
    asio::awaitable<bool> listen_again();

    mutable std::mutex mu_;  // requests_ is replaced on the accept loop, closed from anywhere
    bool closed_ = false;
    // Replaced only by the accept coroutine, which therefore reads it without the lock.
    std::unique_ptr<smbdirect::ConnectionRequests> requests_;
    Relisten relisten_;
    std::chrono::milliseconds relisten_interval_;
    uint16_t port_ = 0;
    smbdirect::SmbdConfig config_;
    smbdirect::SmbdCounters& counters_;
    BufferPool& pool_;
    RdmaRegistrations& registrations_;
    std::string name_;
};

// The counters as the stats line prints them ("smbdirect: connections=... ").
std::string smbd_stats_line(const smbdirect::SmbdCounters& c, const RdmaRegistrations& r);

}  // namespace daxsmbd::server
