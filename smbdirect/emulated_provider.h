// An RDMA provider emulated in process (smbdirect/provider.h), for tests on machines without an
// RDMA device: two queue pairs joined back to back, each with its own protection domain. Sends
// land in the peer's posted receives, RDMA READ and WRITE copy from and to the peer's registered
// regions, Send with Invalidate invalidates the named region of the receiver.
//
// Thread-safe like a device: the two ends may run on different threads (a test client and the
// server's loop); completions are announced on each end's own executor.
//
// Stricter than a device where that finds bugs: a send that finds no posted receive is an error
// that breaks the connection (a real RC queue pair would retry; here it means the sender used a
// credit the receiver never granted), every local segment must lie inside a region of the own
// domain with the right lkey, and every remote access is checked against the region's rkey,
// bounds, access bits and validity.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "smbdirect/event.h"
#include "smbdirect/provider.h"

namespace daxsmbd::smbdirect {

class EmulatedDomain final : public ProtectionDomain,
                             public std::enable_shared_from_this<EmulatedDomain> {
  public:
    std::unique_ptr<MemoryRegion> register_memory(void* addr, size_t length, unsigned access_bits,
                                                  std::string* why) override;
    bool on_demand_paging() const override { return on_demand_paging_; }
    std::string device_name() const override { return "emulated"; }

    // Test knobs: refuse registrations (as fsdax memory without ODP is refused), offer ODP.
    void refuse_registrations(std::string why) { refuse_ = std::move(why); }
    void set_on_demand_paging(bool on) { on_demand_paging_ = on; }

    struct Entry {
        std::byte* addr;
        size_t length;
        unsigned access;
        bool valid;
    };
    // Registered regions by key (lkey == rkey here), under regions_mu().
    std::map<uint32_t, Entry> regions;
    static std::recursive_mutex& regions_mu();
    void forget(uint32_t key) {
        std::lock_guard lk(regions_mu());
        regions.erase(key);
    }
    size_t registrations() const {
        std::lock_guard lk(regions_mu());
        return regions.size();
    }
    // Whether `rkey` names a valid region (a Send with Invalidate clears it).
    bool valid(uint32_t rkey) const {
        std::lock_guard lk(regions_mu());
        auto it = regions.find(rkey);
        return it != regions.end() && it->second.valid;
    }

  private:
    uint32_t next_key_ = 0x100;
    std::string refuse_;
    bool on_demand_paging_ = false;
};

class EmulatedQueuePair final : public QueuePair {
  public:
    // Two connected queue pairs; each runs on the executor given (set_executor may move the
    // passive one to another loop before first use).
    static std::pair<std::unique_ptr<EmulatedQueuePair>, std::unique_ptr<EmulatedQueuePair>>
    make_pair(boost::asio::any_io_executor a, boost::asio::any_io_executor b,
              QueuePairCaps caps = default_caps());
    static QueuePairCaps default_caps();
    ~EmulatedQueuePair() override;

    asio::awaitable<Status> accept() override;
    Status post_receive(uint64_t wr_id, LocalSegment into) override;
    Status post_send(uint64_t wr_id, std::span<const LocalSegment> from,
                     std::optional<uint32_t> invalidate_rkey) override;
    Status post_write(uint64_t wr_id, std::span<const LocalSegment> from, uint64_t remote_addr,
                      uint32_t rkey) override;
    Status post_read(uint64_t wr_id, std::span<const LocalSegment> into, uint64_t remote_addr,
                     uint32_t rkey) override;
    size_t poll(std::span<Completion> out) override;
    asio::awaitable<void> wait() override;
    void interrupt_wait() override;
    bool disconnected() const override;
    void disconnect() override;
    const QueuePairCaps& caps() const override { return caps_; }
    ProtectionDomain& domain() override { return *domain_; }
    EmulatedDomain& emulated_domain() { return *domain_; }
    std::string peer() const override { return peer_; }
    std::string peer_address() const override { return "emulated"; }

    void set_executor(boost::asio::any_io_executor ex);
    // What a test inspects: receives posted now, sends that found no receive.
    size_t posted_receives() const { return receives_.size(); }
    size_t failed_sends() const { return failed_sends_; }
    // The most receives that were ever posted at once.
    size_t max_posted_receives() const { return max_posted_; }

  private:
    friend class EmulatedConnectionRequests;
    struct Link;
    EmulatedQueuePair(std::shared_ptr<Link> link, int side, boost::asio::any_io_executor ex,
                      QueuePairCaps caps);
    EmulatedQueuePair* other() const;
    void complete(Completion c);  // with the link's lock held
    void announce();
    // Local segments inside own regions with the right lkey; their total length.
    std::optional<size_t> check_local(std::span<const LocalSegment> segs, bool write) const;
    std::byte* remote(uint64_t addr, uint32_t rkey, size_t len, unsigned need);
    void fail_connection(std::string why);

    std::shared_ptr<Link> link_;
    int side_;
    boost::asio::any_io_executor ex_;
    uint64_t generation_ = 0;
    std::optional<Event> event_;
    QueuePairCaps caps_;
    // Shared with the regions registered in it, which may outlive the queue pair.
    std::shared_ptr<EmulatedDomain> domain_ = std::make_shared<EmulatedDomain>();
    std::deque<std::pair<uint64_t, LocalSegment>> receives_;
    std::deque<Completion> completions_;
    size_t failed_sends_ = 0;
    size_t max_posted_ = 0;
    std::string peer_;
};

}  // namespace daxsmbd::smbdirect

namespace daxsmbd::smbdirect {

// Connection requests of an emulated listener: connect() makes a connected pair and queues the
// passive end for next().
class EmulatedConnectionRequests final : public ConnectionRequests {
  public:
    explicit EmulatedConnectionRequests(uint16_t port = 445);
    ~EmulatedConnectionRequests() override;
    // The active end, on `client`; thread-safe.
    std::unique_ptr<EmulatedQueuePair> connect(boost::asio::any_io_executor client);
    asio::awaitable<Result<std::unique_ptr<QueuePair>>> next(asio::io_context& loop) override;
    uint16_t port() const override { return port_; }
    void close() override;
    // As the verbs listener when its device goes away: next() fails with InvalidDeviceState.
    void remove_device();
    // The listener's side of later connections offers On-Demand Paging (its domain registers
    // with access::kOnDemand).
    void set_on_demand_paging(bool on);

  private:
    struct Queue;
    std::shared_ptr<Queue> q_;
    uint16_t port_;
};

}  // namespace daxsmbd::smbdirect
