// The verbs implementation of the RDMA provider (smbdirect/provider.h): librdmacm for the
// connection manager (RDMA_PS_TCP, i.e. reliable connected queue pairs addressed by IP and port,
// MS-SMBD 2.1) and libibverbs for memory registration, work requests and completions.
//
// Threads and loops: a VerbsConnectionRequests reads its connection manager (CM) events on its
// home loop; each connection request it hands out gets its own CM event channel
// (rdma_migrate_id) and completion channel, both read on the loop the queue pair was created for,
// so a connection's whole life (accept, completions, disconnect) happens on one thread. The
// channels' file descriptors are waited for with asio's reactor, which is edge-triggered
// (epoll EPOLLET, and posix::stream_descriptor::async_wait is never speculative): every wait
// drains its channel until EAGAIN first, or an event that arrived earlier would go unnoticed.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "smbdirect/provider.h"

struct ibv_context;
struct ibv_pd;
struct ibv_qp;
struct ibv_cq;
struct ibv_comp_channel;
struct ibv_wc;
struct rdma_cm_event;
struct rdma_cm_id;
struct rdma_event_channel;

namespace daxsmbd::smbdirect {

// Where the verbs provider reports what went wrong beyond a status (one line, no newline).
using VerbsLog = std::function<void(const std::string&)>;

// "EOPNOTSUPP" for EOPNOTSUPP, and so on for the errno values verbs and rdma_cm return;
// "errno N" for the others.
std::string errno_name(int err);

// What the device allows, as read once from ibv_query_device(_ex) and ibv_query_port.
struct DeviceLimits {
    uint32_t max_qp_wr = 0;
    uint32_t max_sge = 0;
    uint32_t max_sge_rd = 0;
    uint32_t max_cqe = 0;
    uint32_t max_qp_rd_atom = 0;       // RDMA READs a QP answers at once (responder)
    uint32_t max_qp_init_rd_atom = 0;  // RDMA READs a QP may have in flight (initiator)
    uint64_t max_mr_size = 0;
    uint32_t max_msg_size = 0;  // port 1: the largest message (and single RDMA transfer)
};

// The protection domain (ibv_pd) of one device. Shared: every queue pair and memory region of
// the domain holds it, so it is deallocated after the last of them.
class VerbsDomain final : public ProtectionDomain,
                          public std::enable_shared_from_this<VerbsDomain> {
  public:
    // Allocates a PD on `context` (a device context of librdmacm: rdma_cm_id::verbs).
    static std::shared_ptr<VerbsDomain> open(ibv_context* context, std::string* error);
    ~VerbsDomain() override;
    VerbsDomain(const VerbsDomain&) = delete;
    VerbsDomain& operator=(const VerbsDomain&) = delete;

    std::unique_ptr<MemoryRegion> register_memory(void* addr, size_t length, unsigned access_bits,
                                                  std::string* why) override;
    bool on_demand_paging() const override { return on_demand_paging_; }
    std::string device_name() const override { return device_name_; }

    ibv_context* context() const { return context_; }
    ibv_pd* pd() const { return pd_; }
    const DeviceLimits& limits() const { return limits_; }

  private:
    VerbsDomain() = default;
    ibv_context* context_ = nullptr;
    ibv_pd* pd_ = nullptr;
    // From rdma_get_devices(), reduced to this domain's device: keeps librdmacm's context of it
    // open while the PD lives.
    ibv_context** devices_ = nullptr;
    DeviceLimits limits_;
    bool on_demand_paging_ = false;
    std::string device_name_;
};

// One VerbsDomain per device, for all listeners and connections that share this object (the
// server keeps one, so that its buffer pool registers with each device once).
class VerbsDomains {
  public:
    std::shared_ptr<VerbsDomain> get(ibv_context* context, std::string* error);

  private:
    std::mutex mutex_;
    std::vector<std::pair<ibv_context*, std::weak_ptr<VerbsDomain>>> domains_;
};

class VerbsQueuePair final : public QueuePair {
  public:
    // Called once the queue pair exists and before rdma_connect: post the receives the peer's
    // first message needs (MS-SMBD 3.1.5.2: the negotiate response).
    using BeforeConnect = std::function<Status(QueuePair&)>;

    // The active side (our test client): resolves `addr` (2 s), its route (2 s), creates the
    // queue pair, runs `before_connect`, connects and waits for ESTABLISHED (5 s). All on `loop`.
    static asio::awaitable<Result<std::unique_ptr<VerbsQueuePair>>> connect(
        asio::io_context& loop, const asio::ip::address& addr, uint16_t port,
        const QueuePairRequest& req, BeforeConnect before_connect, std::string* error,
        VerbsLog log = {}, std::shared_ptr<VerbsDomains> domains = {});

    // Releases the queue pair, CQ, channels and CM id; must not be called while accept() or
    // wait() is in progress.
    ~VerbsQueuePair() override;
    VerbsQueuePair(const VerbsQueuePair&) = delete;
    VerbsQueuePair& operator=(const VerbsQueuePair&) = delete;

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
    bool disconnected() const override { return disconnected_; }
    void disconnect() override;
    const QueuePairCaps& caps() const override { return caps_; }
    ProtectionDomain& domain() override { return *domain_; }
    std::string peer() const override;
    std::string peer_address() const override;

    // The device went away (RDMA_CM_EVENT_DEVICE_REMOVAL): destroy this queue pair and every
    // memory region of its domain soon, the kernel waits for that to finish the removal.
    bool device_removed() const { return device_removed_; }
    // The verbs QP, for what the interface does not cover (tests bind memory windows with it).
    // Work requests posted on it directly must be unsignaled and use a wr_id >= 2^32.
    ibv_qp* native_qp() const;

  private:
    friend class VerbsConnectionRequests;
    struct Slot {
        uint64_t wr_id = 0;
        Completion::Op op = Completion::Op::Send;
    };

    // Takes ownership of `channel` and `id` (already on that channel).
    VerbsQueuePair(asio::io_context& loop, rdma_event_channel* channel, rdma_cm_id* id,
                   VerbsLog log);
    // The completion channel, CQ and RC queue pair on id_->verbs, caps clamped to the device.
    Status create_queue_pair(std::shared_ptr<VerbsDomain> domain, const QueuePairRequest& req,
                             std::string* error);
    // Reads every pending CM event of the connection and records what it means.
    void drain_cm_events();
    // Waits until the CM event `want` was seen; fails on an error event, a disconnect, or after
    // `timeout`.
    asio::awaitable<Status> wait_for_cm_event(int want, std::chrono::milliseconds timeout,
                                              std::string* error);
    int take_slot(uint64_t wr_id, Completion::Op op);
    // False for a completion of a work request not posted through this class (native_qp()).
    bool translate(const ibv_wc& wc, Completion& out);
    Status post_send_wr(uint64_t wr_id, Completion::Op op, int opcode,
                        std::span<const LocalSegment> sges, uint64_t remote_addr, uint32_t rkey,
                        std::optional<uint32_t> invalidate_rkey);
    void log(const std::string& line) const {
        if (log_) log_(line);
    }

    asio::io_context& loop_;
    rdma_event_channel* cm_channel_ = nullptr;
    rdma_cm_id* id_ = nullptr;
    ibv_comp_channel* comp_channel_ = nullptr;
    ibv_cq* cq_ = nullptr;
    bool qp_created_ = false;
    asio::posix::stream_descriptor cm_fd_;
    asio::posix::stream_descriptor comp_fd_;
    std::shared_ptr<VerbsDomain> domain_;
    VerbsLog log_;
    QueuePairCaps caps_;
    // The peer's conn param of its connect request (passive side): bounds our RDMA READ depths.
    // From the connect request, as the CM reports it to the passive side: the RDMA READs this
    // side may have outstanding, and the ones the peer wants this side to serve.
    uint32_t offered_read_depth_ = 0;
    uint32_t requested_responder_resources_ = 0;
    uint32_t requested_read_depth_ = 0;

    uint32_t cm_events_seen_ = 0;  // bit (1 << rdma_cm_event_type) of every event seen
    int cm_failure_ = -1;          // the first error event (REJECTED, UNREACHABLE, ...)
    bool disconnected_ = false;
    bool disconnect_sent_ = false;
    bool device_removed_ = false;
    bool accepted_ = false;

    // wr_id of the work request posted = index into slots_; the caller's wr_id and the kind of
    // work are kept there, because a failed completion's opcode is undefined (IB 11.4.2.1).
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_slots_;
    // Completions wait() found while checking the CQ after re-arming it; poll() returns these
    // first.
    std::unique_ptr<ibv_wc[]> pending_;
    size_t pending_count_ = 0;
    size_t pending_next_ = 0;
};

// Connection requests on one IP address and port (rdma_listen).
class VerbsConnectionRequests final : public ConnectionRequests {
  public:
    static std::unique_ptr<VerbsConnectionRequests> listen(
        asio::io_context& home, const asio::ip::address& addr, uint16_t port,
        const QueuePairRequest& req, std::string* error, VerbsLog log = {},
        std::shared_ptr<VerbsDomains> domains = {});
    ~VerbsConnectionRequests() override;
    VerbsConnectionRequests(const VerbsConnectionRequests&) = delete;
    VerbsConnectionRequests& operator=(const VerbsConnectionRequests&) = delete;

    // Runs on `home`; one call at a time. Connection requests whose queue pair cannot be made
    // are rejected (and logged) and the next one is awaited. Fails with Cancelled after close(),
    // with InvalidDeviceState once the device went away.
    asio::awaitable<Result<std::unique_ptr<QueuePair>>> next(asio::io_context& loop) override;
    uint16_t port() const override { return port_; }
    // On home's thread.
    void close() override;

  private:
    VerbsConnectionRequests(asio::io_context& home, rdma_event_channel* channel, rdma_cm_id* id,
                            const QueuePairRequest& req, VerbsLog log,
                            std::shared_ptr<VerbsDomains> domains);
    std::unique_ptr<VerbsQueuePair> take_request(rdma_cm_event* connect_request,
                                                 asio::io_context& loop);
    void log(const std::string& line) const {
        if (log_) log_(line);
    }

    rdma_event_channel* channel_ = nullptr;
    rdma_cm_id* id_ = nullptr;
    asio::posix::stream_descriptor fd_;
    QueuePairRequest req_;
    VerbsLog log_;
    std::shared_ptr<VerbsDomains> domains_;
    uint16_t port_ = 0;
    bool closed_ = false;
    bool device_removed_ = false;
};

// An IP address of a network interface with an RDMA device on it.
struct RdmaInterface {
    std::string address;  // "192.0.2.1", "fe80::1"
    std::string netdev;   // "sd0"
    std::string device;   // "rxe0"
    bool iwarp = false;   // the device is an RNIC (iWARP: MS-SMBD port 5445) rather than IB/RoCE
    uint64_t link_speed_bps = 0;  // 0 when unknown
};

// Every address of every netdev an RDMA device sits on. Blocking (sysfs, device queries): call
// at start.
std::vector<RdmaInterface> rdma_interfaces();

}  // namespace daxsmbd::smbdirect
