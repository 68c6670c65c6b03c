// SMB Direct (MS-SMBD) for the synchronous test client: one active-side smbdirect::SmbdConnection
// over any provider's queue pair (the emulated one in CI, the verbs one on an RDMA device),
// driven by an event loop on the link's own thread, with blocking calls for Smb2Client
// (a MessageLink, tests/client/smb2_client.h) and the client's RDMA memory for READ and WRITE
// with an RDMA channel (MS-SMB2 2.2.19, 2.2.21).
//
// Threads: a QueuePair and its SmbdConnection are used on one event loop only (smbdirect/
// provider.h); every call here posts to the link's loop and waits for the result there. A
// background coroutine takes every received message off the connection (which then reposts
// the receive and grants the credit, MS-SMBD 3.1.5.9) and queues it for receive().
//
// Usage (emulated):
//   auto link = std::make_unique<SmbdLink>();
//   auto st = link->connect(requests->connect(link->executor()));  // MS-SMBD negotiation
//   client.attach(std::move(link), "127.0.0.1");
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "protocol/bytes.h"
#include "protocol/result.h"
#include "smbdirect/provider.h"
#include "smbdirect/smbd_codec.h"
#include "smbdirect/smbd_connection.h"
#include "tests/client/smb2_client.h"

namespace daxsmbd::client {

// The loop, its thread, the connection and the received messages (tests/client/smbd_link.cpp);
// shared with the registrations, which may outlive the link.
struct SmbdLinkCore;

class SmbdLink final : public MessageLink {
  public:
    struct Options {
        // The client's MS-SMBD parameters (3.1.1.1); the defaults are the Linux client's but
        // for MaxFragmentedSize (1 MiB here, 173910 there).
        smbdirect::SmbdConfig config;
        smbdirect::SmbdTimers timers;
        // The negotiation, and each send (a send waits for a send credit).
        std::chrono::milliseconds timeout{10000};
        // Log lines of the connection (none when empty); called on the link's thread.
        smbdirect::SmbdConnection::Logger log;
    };

    // Starts the link's thread; nothing is connected yet.
    SmbdLink();
    explicit SmbdLink(Options options);
    // Closes the connection on the link's thread and joins it.
    ~SmbdLink() override;
    SmbdLink(const SmbdLink&) = delete;
    SmbdLink& operator=(const SmbdLink&) = delete;

    // The loop the queue pair must be made for (EmulatedConnectionRequests::connect(executor())).
    boost::asio::any_io_executor executor();
    // The active side's negotiation (MS-SMBD 3.1.5.2, 3.1.5.7) on `qp`, a connected queue pair
    // made for executor(). Fails with the negotiation's status, or local_status::kTimeout.
    Status connect(std::unique_ptr<smbdirect::QueuePair> qp);
    // A link over the verbs provider (smbdirect/verbs_provider.h) to `address`:`port` (an
    // RDMA device's IP address; 445 or 5445 for SMB Direct, MS-SMBD 2.1), negotiated.
    static Result<std::unique_ptr<SmbdLink>> connect_verbs(const std::string& address,
                                                           uint16_t port, Options options,
                                                           std::string* error);

    // MessageLink: one upper-layer message, fragmented as the peer's MaxReceiveSize needs
    // (MS-SMBD 3.1.4.1); a message above the peer's MaxFragmentedSize is InvalidParameter and
    // leaves the connection up.
    Status send(Bytes message) override;
    Result<Message> receive(std::chrono::steady_clock::time_point deadline) override;
    bool connected() const override;
    // Disconnects now (what a client that goes away does); receive() and send() fail after.
    void close();
    // Why the connection is down ("the peer disconnected", ...); empty while it is up.
    std::string close_reason() const;
    const smbdirect::NegotiatedParameters& parameters() const { return params_; }

    // Client memory registered for the server's RDMA READ (remote_write false: a WRITE's
    // data) or RDMA WRITE (remote_write true: where a READ's data lands) in the queue pair's
    // protection domain. Deregistered (on the link's thread) when destroyed; `memory` must
    // outlive it.
    class Registration {
      public:
        ~Registration();
        Registration(const Registration&) = delete;
        Registration& operator=(const Registration&) = delete;
        // The buffer descriptor the server addresses (MS-SMBD 2.2.3.1: Offset = the virtual
        // address for IB/RoCE/iWARP, Token = the rkey).
        smbdirect::BufferDescriptorV1 descriptor() const;
        // A descriptor for [offset, offset + length) of the registration.
        smbdirect::BufferDescriptorV1 descriptor(size_t offset, uint32_t length) const;
        uint32_t rkey() const { return rkey_; }
        std::span<std::byte> memory() const { return memory_; }

      private:
        friend class SmbdLink;
        Registration(std::shared_ptr<SmbdLinkCore> core,
                     std::unique_ptr<smbdirect::MemoryRegion> region, std::span<std::byte> memory);
        std::shared_ptr<SmbdLinkCore> core_;
        std::unique_ptr<smbdirect::MemoryRegion> region_;
        std::span<std::byte> memory_;
        uint32_t rkey_ = 0;
    };
    Result<std::unique_ptr<Registration>> register_buffer(std::span<std::byte> memory,
                                                          bool remote_write);
    // Whether the region with this rkey is still valid, as the provider knows it: the
    // emulated provider only (nullopt elsewhere). A Send with Invalidate makes it invalid.
    std::optional<bool> token_valid(uint32_t rkey);

  private:
    std::shared_ptr<SmbdLinkCore> core_;
    Options options_;
    smbdirect::NegotiatedParameters params_;
};

}  // namespace daxsmbd::client
