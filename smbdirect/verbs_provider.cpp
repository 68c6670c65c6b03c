#include "smbdirect/verbs_provider.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace daxsmbd::smbdirect {

namespace {

// librdmacm closes the context of a device that went away only once it notices (a refresh of
// its device list, which rdma_get_devices makes) while nothing references the device any more;
// the kernel's removal of the device waits for that close.
void let_removed_devices_go() {
    if (ibv_context** list = rdma_get_devices(nullptr)) rdma_free_devices(list);
}

using namespace asio::experimental::awaitable_operators;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

// Address and route resolution each get this long (rdma_resolve_addr/route time out
// themselves and report ADDR_ERROR/ROUTE_ERROR; the timer is the backstop).
constexpr int kResolveMs = 2000;
constexpr std::chrono::milliseconds kResolveWait{kResolveMs + 500};
constexpr std::chrono::milliseconds kEstablishWait{5000};
// Scatter/gather entries of one work request: enough for an SMB Direct header plus a payload
// in a few pieces, small enough to keep the send queue's WQEs small.
constexpr uint32_t kMaxSge = 8;
// Completions wait() takes from the CQ after re-arming it.
constexpr size_t kPendingWc = 16;
constexpr int kListenBacklog = 64;
// IB retry counts (3 bits; 7 for RNR means "retry forever"): the peer may be slow to repost
// receives, and MS-SMBD's credits are what bounds sends, not the RNR NAK.
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetryCount = 7;

bool set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

std::string with_errno(const char* what, int err) {
    return std::string(what) + ": " + errno_name(err) + " (" + std::strerror(err) + ")";
}

void set_error(std::string* error, std::string text) {
    if (error) *error = std::move(text);
}

// sockaddr for rdma_cm from an asio address.
socklen_t to_sockaddr(const asio::ip::address& addr, uint16_t port, sockaddr_storage& out) {
    std::memset(&out, 0, sizeof(out));
    if (addr.is_v4()) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&out);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        auto bytes = addr.to_v4().to_bytes();
        std::memcpy(&sin->sin_addr, bytes.data(), bytes.size());
        return sizeof(sockaddr_in);
    }
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    auto bytes = addr.to_v6().to_bytes();
    std::memcpy(&sin6->sin6_addr, bytes.data(), bytes.size());
    sin6->sin6_scope_id = addr.to_v6().scope_id();
    return sizeof(sockaddr_in6);
}

// The address of `sa` ("192.0.2.1", "fe80::1"); empty when not IP.
std::string address_text(const sockaddr* sa) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof(buf));
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf,
                  sizeof(buf));
    return buf;
}

unsigned ibv_access(unsigned bits) {
    unsigned flags = 0;
    if (bits & access::kLocalWrite) flags |= IBV_ACCESS_LOCAL_WRITE;
    if (bits & access::kRemoteRead) flags |= IBV_ACCESS_REMOTE_READ;
    // Verbs requires local write with remote write (ibv_reg_mr(3): EINVAL otherwise).
    if (bits & access::kRemoteWrite) flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if (bits & access::kOnDemand) flags |= IBV_ACCESS_ON_DEMAND;
    return flags;
}

class VerbsMemoryRegion final : public MemoryRegion {
  public:
    VerbsMemoryRegion(ibv_mr* mr, std::shared_ptr<VerbsDomain> domain)
        : mr_(mr), domain_(std::move(domain)) {
        addr = static_cast<std::byte*>(mr->addr);
        length = mr->length;
        lkey = mr->lkey;
        rkey = mr->rkey;
    }
    ~VerbsMemoryRegion() override { ibv_dereg_mr(mr_); }
    VerbsMemoryRegion(const VerbsMemoryRegion&) = delete;
    VerbsMemoryRegion& operator=(const VerbsMemoryRegion&) = delete;

  private:
    ibv_mr* mr_;
    std::shared_ptr<VerbsDomain> domain_;  // the PD outlives its regions
};

// A receive completion that carries an invalidated rkey. IBV_WC_WITH_INV is bit 3; soft-RoCE
// (rxe, Linux 6.1 with rdma-core 44) copies the kernel's work completion to user space as it is,
// where IB_WC_WITH_INVALIDATE is bit 2, which in libibverbs is IBV_WC_IP_CSUM_OK. That flag
// belongs to raw packet and UD receives and never describes an RC receive, so on our RC queue
// pairs either bit means "with invalidate" (the rkey is in the same place either way).
constexpr unsigned kWcWithInvalidate = IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK;

// RDMA_CM_EVENT_* values as bits of VerbsQueuePair::cm_events_seen_ (all below 32).
constexpr uint32_t event_bit(int event) {
    return event >= 0 && event < 32 ? 1u << event : 0;
}

bool is_connection_failure(int event) {
    switch (event) {
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
        case RDMA_CM_EVENT_CONNECT_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_REJECTED:
            return true;
        default:
            return false;
    }
}

}  // namespace

std::string errno_name(int err) {
    switch (err) {
        case EPERM:
            return "EPERM";
        case ENOENT:
            return "ENOENT";
        case EINTR:
            return "EINTR";
        case EIO:
            return "EIO";
        case ENXIO:
            return "ENXIO";
        case E2BIG:
            return "E2BIG";
        case EBADF:
            return "EBADF";
        case EAGAIN:
            return "EAGAIN";
        case ENOMEM:
            return "ENOMEM";
        case EACCES:
            return "EACCES";
        case EFAULT:
            return "EFAULT";
        case EBUSY:
            return "EBUSY";
        case EEXIST:
            return "EEXIST";
        case ENODEV:
            return "ENODEV";
        case EINVAL:
            return "EINVAL";
        case ENFILE:
            return "ENFILE";
        case EMFILE:
            return "EMFILE";
        case ENOSPC:
            return "ENOSPC";
        case ERANGE:
            return "ERANGE";
        case ENOSYS:
            return "ENOSYS";
        case EPROTONOSUPPORT:
            return "EPROTONOSUPPORT";
        case EOPNOTSUPP:
            return "EOPNOTSUPP";
        case EAFNOSUPPORT:
            return "EAFNOSUPPORT";
        case EADDRINUSE:
            return "EADDRINUSE";
        case EADDRNOTAVAIL:
            return "EADDRNOTAVAIL";
        case ENETDOWN:
            return "ENETDOWN";
        case ENETUNREACH:
            return "ENETUNREACH";
        case ECONNABORTED:
            return "ECONNABORTED";
        case ECONNRESET:
            return "ECONNRESET";
        case ENOTCONN:
            return "ENOTCONN";
        case ETIMEDOUT:
            return "ETIMEDOUT";
        case ECONNREFUSED:
            return "ECONNREFUSED";
        case EHOSTUNREACH:
            return "EHOSTUNREACH";
        case EMSGSIZE:
            return "EMSGSIZE";
        default:
            return "errno " + std::to_string(err);
    }
}

// ---------------------------------------------------------------------------------------------
// VerbsDomain

std::shared_ptr<VerbsDomain> VerbsDomain::open(ibv_context* context, std::string* error) {
    std::shared_ptr<VerbsDomain> d(new VerbsDomain());
    d->context_ = context;
    // librdmacm closes a device's context once nothing references it and the device is gone;
    // the domain's objects live in that context, so the domain holds a reference to its own
    // device (rdma_get_devices takes one per device; the others are given back at once, or a
    // domain would keep every other device from being removed).
    d->devices_ = rdma_get_devices(nullptr);
    size_t n = 0;
    while (d->devices_ && d->devices_[n])
        ++n;
    if (n > 0) {
        auto** others = static_cast<ibv_context**>(calloc(n + 1, sizeof(ibv_context*)));
        if (others) {
            size_t k = 0;
            bool own = false;
            for (size_t i = 0; i < n; ++i) {
                if (d->devices_[i] == context)
                    own = true;
                else
                    others[k++] = d->devices_[i];
            }
            rdma_free_devices(others);
            d->devices_[0] = own ? context : nullptr;
            d->devices_[1] = nullptr;
        }
    }
    d->device_name_ = ibv_get_device_name(context->device);
    ibv_device_attr_ex attr{};
    if (int err = ibv_query_device_ex(context, nullptr, &attr)) {
        set_error(error, with_errno("ibv_query_device_ex", err));
        return nullptr;
    }
    const ibv_device_attr& a = attr.orig_attr;
    d->limits_.max_qp_wr = uint32_t(std::max(a.max_qp_wr, 0));
    d->limits_.max_sge = uint32_t(std::max(a.max_sge, 0));
    d->limits_.max_sge_rd = uint32_t(std::max(a.max_sge_rd, 0));
    d->limits_.max_cqe = uint32_t(std::max(a.max_cqe, 0));
    d->limits_.max_qp_rd_atom = uint32_t(std::max(a.max_qp_rd_atom, 0));
    d->limits_.max_qp_init_rd_atom = uint32_t(std::max(a.max_qp_init_rd_atom, 0));
    d->limits_.max_mr_size = a.max_mr_size;
    ibv_port_attr port{};
    if (ibv_query_port(context, 1, &port) == 0) d->limits_.max_msg_size = port.max_msg_sz;
    // ODP for what SMB Direct does with a registration: the peer's RDMA READ and WRITE on it,
    // and our own sends and receives in it (ibv_query_device_ex(3), odp_caps).
    const uint32_t need =
        IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ;
    d->on_demand_paging_ = (attr.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
                           (attr.odp_caps.per_transport_caps.rc_odp_caps & need) == need;
    d->pd_ = ibv_alloc_pd(context);
    if (!d->pd_) {
        set_error(error, with_errno("ibv_alloc_pd", errno));
        return nullptr;
    }
    return d;
}

VerbsDomain::~VerbsDomain() {
    if (pd_) ibv_dealloc_pd(pd_);
    if (devices_) rdma_free_devices(devices_);
    let_removed_devices_go();
}

std::unique_ptr<MemoryRegion> VerbsDomain::register_memory(void* addr, size_t length,
                                                           unsigned access_bits, std::string* why) {
    errno = 0;
    ibv_mr* mr = ibv_reg_mr(pd_, addr, length, int(ibv_access(access_bits)));
    if (!mr) {
        if (why) *why = errno_name(errno ? errno : EINVAL);
        return nullptr;
    }
    return std::make_unique<VerbsMemoryRegion>(mr, shared_from_this());
}

std::shared_ptr<VerbsDomain> VerbsDomains::get(ibv_context* context, std::string* error) {
    std::lock_guard lock(mutex_);
    std::erase_if(domains_, [](const auto& e) { return e.second.expired(); });
    for (auto& [ctx, weak] : domains_)
        if (ctx == context)
            if (auto d = weak.lock()) return d;
    auto d = VerbsDomain::open(context, error);
    if (d) domains_.emplace_back(context, d);
    return d;
}

// ---------------------------------------------------------------------------------------------
// VerbsQueuePair

VerbsQueuePair::VerbsQueuePair(asio::io_context& loop, rdma_event_channel* channel, rdma_cm_id* id,
                               VerbsLog log)
    : loop_(loop),
      cm_channel_(channel),
      id_(id),
      cm_fd_(loop, channel->fd),
      comp_fd_(loop),
      log_(std::move(log)),
      pending_(new ibv_wc[kPendingWc]) {}

VerbsQueuePair::~VerbsQueuePair() {
    // The descriptors belong to the channels: release, not close (the channels close them).
    if (comp_fd_.is_open()) comp_fd_.release();
    if (cm_fd_.is_open()) cm_fd_.release();
    if (qp_created_) rdma_destroy_qp(id_);
    if (cq_) {
        // Every CQ event is acknowledged as it is read (wait()), which ibv_destroy_cq needs.
        ibv_destroy_cq(cq_);
    }
    if (comp_channel_) ibv_destroy_comp_channel(comp_channel_);
    // rdma_destroy_id waits until the id's events are acknowledged: drain_cm_events()
    // acknowledges each at once, so this does not block.
    if (id_) rdma_destroy_id(id_);
    if (cm_channel_) rdma_destroy_event_channel(cm_channel_);
    if (device_removed_) {
        domain_.reset();
        let_removed_devices_go();
    }
}

Status VerbsQueuePair::create_queue_pair(std::shared_ptr<VerbsDomain> domain,
                                         const QueuePairRequest& req, std::string* error) {
    domain_ = std::move(domain);
    const DeviceLimits& lim = domain_->limits();
    requested_read_depth_ = req.rdma_read_outstanding;
    uint32_t send_wr = std::clamp<uint32_t>(req.send_wr, 1, std::max<uint32_t>(lim.max_qp_wr, 1));
    uint32_t recv_wr = std::clamp<uint32_t>(req.recv_wr, 1, std::max<uint32_t>(lim.max_qp_wr, 1));
    uint32_t cqe = std::min<uint32_t>(send_wr + recv_wr, std::max<uint32_t>(lim.max_cqe, 2));
    if (send_wr + recv_wr > cqe) {
        // A CQ that cannot hold every work request could overflow: shrink the queues to it.
        send_wr = std::max<uint32_t>(cqe / 2, 1);
        recv_wr = std::max<uint32_t>(cqe - send_wr, 1);
    }
    comp_channel_ = ibv_create_comp_channel(id_->verbs);
    if (!comp_channel_ || !set_nonblocking(comp_channel_->fd)) {
        set_error(error, with_errno("ibv_create_comp_channel", errno));
        return Error(NtStatus::InsufficientResources);
    }
    cq_ = ibv_create_cq(id_->verbs, int(cqe), nullptr, comp_channel_, 0);
    if (!cq_) {
        set_error(error, with_errno("ibv_create_cq", errno));
        return Error(NtStatus::InsufficientResources);
    }
    ibv_qp_init_attr attr{};
    attr.send_cq = cq_;
    attr.recv_cq = cq_;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;  // every work request is posted IBV_SEND_SIGNALED
    attr.cap.max_send_wr = send_wr;
    attr.cap.max_recv_wr = recv_wr;
    attr.cap.max_send_sge = std::clamp<uint32_t>(lim.max_sge, 1, kMaxSge);
    attr.cap.max_recv_sge = 1;
    if (rdma_create_qp(id_, domain_->pd(), &attr)) {
        set_error(error, with_errno("rdma_create_qp", errno));
        return Error(NtStatus::InsufficientResources);
    }
    qp_created_ = true;
    caps_.max_send_wr = attr.cap.max_send_wr;
    caps_.max_recv_wr = attr.cap.max_recv_wr;
    caps_.max_send_sge = std::min<uint32_t>(attr.cap.max_send_sge, kMaxSge);
    caps_.max_rdma_read_outstanding =
        std::max<uint32_t>(1, std::min(req.rdma_read_outstanding, lim.max_qp_init_rd_atom));
    caps_.max_rdma_size =
        lim.max_msg_size ? std::min<uint32_t>(lim.max_msg_size, 1u << 30) : (1u << 30);
    // One slot per completion the CQ can hold, so that the CQ never overflows.
    size_t slots = std::min<size_t>(cqe, size_t(caps_.max_send_wr) + caps_.max_recv_wr);
    slots_.assign(slots, Slot{});
    free_slots_.resize(slots);
    for (size_t i = 0; i < slots; ++i)
        free_slots_[i] = uint32_t(slots - 1 - i);
    comp_fd_.assign(comp_channel_->fd);
    if (ibv_req_notify_cq(cq_, 0)) {
        set_error(error, with_errno("ibv_req_notify_cq", errno));
        return Error(NtStatus::InsufficientResources);
    }
    return {};
}

void VerbsQueuePair::drain_cm_events() {
    rdma_cm_event* ev = nullptr;
    while (rdma_get_cm_event(cm_channel_, &ev) == 0) {
        int type = ev->event;
        if (type == RDMA_CM_EVENT_ESTABLISHED && ev->param.conn.initiator_depth > 0) {
            // Active side: the accept's responder resources bound our RDMA READs in flight; the
            // CM reports them from this side's point of view, as our initiator depth.
            caps_.max_rdma_read_outstanding =
                std::max<uint32_t>(1, std::min<uint32_t>(caps_.max_rdma_read_outstanding,
                                                         ev->param.conn.initiator_depth));
        }
        cm_events_seen_ |= event_bit(type);
        if (is_connection_failure(type) && cm_failure_ < 0) cm_failure_ = type;
        bool gone = type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_TIMEWAIT_EXIT ||
                    type == RDMA_CM_EVENT_DEVICE_REMOVAL;
        if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
            device_removed_ = true;
            log("rdma: device " + (domain_ ? domain_->device_name() : std::string("?")) +
                " removed under the connection with " + peer());
        }
        rdma_ack_cm_event(ev);
        // The peer's DREQ leaves our QP as it was (librdmacm moves it to the error state only
        // in rdma_disconnect): answer it with ours, so that the work in flight is flushed and
        // completes, as the interface promises.
        if (gone) disconnect();
    }
}

asio::awaitable<Status> VerbsQueuePair::wait_for_cm_event(int want,
                                                          std::chrono::milliseconds timeout,
                                                          std::string* error) {
    asio::steady_timer timer(loop_, timeout);
    for (;;) {
        drain_cm_events();
        if (cm_events_seen_ & event_bit(want)) co_return Status{};
        if (cm_failure_ >= 0) {
            set_error(error,
                      std::string("rdma_cm: ") + rdma_event_str(rdma_cm_event_type(cm_failure_)));
            co_return Error(NtStatus::ConnectionDisconnected);
        }
        if (disconnected_) {
            set_error(error, "rdma_cm: disconnected while waiting for " +
                                 std::string(rdma_event_str(rdma_cm_event_type(want))));
            co_return Error(NtStatus::ConnectionDisconnected);
        }
        auto which =
            co_await (cm_fd_.async_wait(asio::posix::stream_descriptor::wait_read, kNoThrow) ||
                      timer.async_wait(kNoThrow));
        if (which.index() == 1 && !std::get<0>(std::get<1>(which))) {
            drain_cm_events();
            if (cm_events_seen_ & event_bit(want)) co_return Status{};
            set_error(error, "rdma_cm: no " +
                                 std::string(rdma_event_str(rdma_cm_event_type(want))) +
                                 " within " + std::to_string(timeout.count()) + " ms");
            co_return Error(NtStatus::IoTimeout);
        }
    }
}

asio::awaitable<Result<std::unique_ptr<VerbsQueuePair>>> VerbsQueuePair::connect(
    asio::io_context& loop, const asio::ip::address& addr, uint16_t port,
    const QueuePairRequest& req, BeforeConnect before_connect, std::string* error, VerbsLog log,
    std::shared_ptr<VerbsDomains> domains) {
    rdma_event_channel* channel = rdma_create_event_channel();
    if (!channel) {
        set_error(error, with_errno("rdma_create_event_channel", errno));
        co_return Error(NtStatus::InsufficientResources);
    }
    if (!set_nonblocking(channel->fd)) {
        set_error(error, with_errno("fcntl O_NONBLOCK", errno));
        rdma_destroy_event_channel(channel);
        co_return Error(NtStatus::InsufficientResources);
    }
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP)) {
        set_error(error, with_errno("rdma_create_id", errno));
        rdma_destroy_event_channel(channel);
        co_return Error(NtStatus::InsufficientResources);
    }
    // From here on the queue pair object owns channel and id.
    std::unique_ptr<VerbsQueuePair> qp(new VerbsQueuePair(loop, channel, id, std::move(log)));
    sockaddr_storage dst;
    to_sockaddr(addr, port, dst);
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), kResolveMs)) {
        set_error(error, with_errno("rdma_resolve_addr", errno));
        co_return Error(NtStatus::InvalidParameter);
    }
    if (Status s = co_await qp->wait_for_cm_event(RDMA_CM_EVENT_ADDR_RESOLVED, kResolveWait, error);
        !s)
        co_return Error(s.status());
    if (rdma_resolve_route(id, kResolveMs)) {
        set_error(error, with_errno("rdma_resolve_route", errno));
        co_return Error(NtStatus::ConnectionDisconnected);
    }
    if (Status s =
            co_await qp->wait_for_cm_event(RDMA_CM_EVENT_ROUTE_RESOLVED, kResolveWait, error);
        !s)
        co_return Error(s.status());
    if (!domains) domains = std::make_shared<VerbsDomains>();
    auto domain = domains->get(id->verbs, error);
    if (!domain) co_return Error(NtStatus::InsufficientResources);
    if (Status s = qp->create_queue_pair(domain, req, error); !s) co_return Error(s.status());
    if (before_connect)
        if (Status s = before_connect(*qp); !s) {
            set_error(error, "before connect: status " + std::to_string(uint32_t(s.status())));
            co_return Error(s.status());
        }
    const DeviceLimits& lim = domain->limits();
    rdma_conn_param param{};
    param.initiator_depth =
        uint8_t(std::min<uint32_t>({req.rdma_read_outstanding, lim.max_qp_init_rd_atom, 255}));
    param.responder_resources =
        uint8_t(std::min<uint32_t>({req.rdma_read_outstanding, lim.max_qp_rd_atom, 255}));
    param.retry_count = kRetryCount;
    param.rnr_retry_count = kRnrRetryCount;
    qp->caps_.max_rdma_read_outstanding = std::max<uint32_t>(1, param.initiator_depth);
    if (rdma_connect(id, &param)) {
        set_error(error, with_errno("rdma_connect", errno));
        co_return Error(NtStatus::ConnectionDisconnected);
    }
    if (Status s = co_await qp->wait_for_cm_event(RDMA_CM_EVENT_ESTABLISHED, kEstablishWait, error);
        !s)
        co_return Error(s.status());
    qp->accepted_ = true;
    co_return std::move(qp);
}

asio::awaitable<Status> VerbsQueuePair::accept() {
    if (accepted_) co_return Error(NtStatus::InvalidDeviceState);
    if (disconnected_) co_return Error(NtStatus::ConnectionDisconnected);
    accepted_ = true;
    const DeviceLimits& lim = domain_->limits();
    // rdma_accept(3): initiator_depth at most our max_qp_init_rd_atom and what the connect
    // request offers; responder_resources at most our max_qp_rd_atom and what it asks for. The
    // CM reports the request from the passive side's point of view (the IB CM swaps the REQ's
    // fields, the iWARP CM its IRD/ORD): the Linux client sends initiator_depth 0 and
    // responder_resources 32, which arrives here as 32 reads we may issue and 0 to serve.
    rdma_conn_param param{};
    uint32_t depth = std::min<uint32_t>(
        {requested_read_depth_, lim.max_qp_init_rd_atom, offered_read_depth_, 255});
    uint32_t resources = std::min<uint32_t>(
        {requested_read_depth_, lim.max_qp_rd_atom, requested_responder_resources_, 255});
    param.initiator_depth = uint8_t(depth);
    param.responder_resources = uint8_t(resources);
    param.retry_count = kRetryCount;
    param.rnr_retry_count = kRnrRetryCount;
    // Honest even when 0: a peer that offers no responder resources cannot be RDMA READ from.
    caps_.max_rdma_read_outstanding = depth;
    if (rdma_accept(id_, &param)) {
        log("rdma: " + with_errno("rdma_accept", errno) + " for " + peer());
        co_return Error(NtStatus::ConnectionDisconnected);
    }
    std::string error;
    Status s = co_await wait_for_cm_event(RDMA_CM_EVENT_ESTABLISHED, kEstablishWait, &error);
    if (!s) log("rdma: accepting " + peer() + ": " + error);
    co_return s;
}

int VerbsQueuePair::take_slot(uint64_t wr_id, Completion::Op op) {
    if (free_slots_.empty()) return -1;
    uint32_t i = free_slots_.back();
    free_slots_.pop_back();
    slots_[i] = Slot{wr_id, op};
    return int(i);
}

Status VerbsQueuePair::post_receive(uint64_t wr_id, LocalSegment into) {
    if (disconnected_ || !qp_created_) return Error(NtStatus::ConnectionDisconnected);
    int slot = take_slot(wr_id, Completion::Op::Receive);
    if (slot < 0) return Error(NtStatus::InsufficientResources);
    ibv_sge sge{reinterpret_cast<uintptr_t>(into.addr), into.length, into.lkey};
    ibv_recv_wr wr{};
    wr.wr_id = uint64_t(slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (int err = ibv_post_recv(id_->qp, &wr, &bad)) {
        free_slots_.push_back(uint32_t(slot));
        return Error(err == ENOMEM ? NtStatus::InsufficientResources
                                   : NtStatus::ConnectionDisconnected);
    }
    return {};
}

Status VerbsQueuePair::post_send_wr(uint64_t wr_id, Completion::Op op, int opcode,
                                    std::span<const LocalSegment> sges, uint64_t remote_addr,
                                    uint32_t rkey, std::optional<uint32_t> invalidate_rkey) {
    if (disconnected_ || !qp_created_) return Error(NtStatus::ConnectionDisconnected);
    uint32_t max_sge = caps_.max_send_sge;
    if (op == Completion::Op::Read && domain_->limits().max_sge_rd)
        max_sge = std::min(max_sge, domain_->limits().max_sge_rd);
    if (sges.size() > max_sge) return Error(NtStatus::InvalidParameter);
    std::array<ibv_sge, kMaxSge> list{};
    uint64_t total = 0;
    for (size_t i = 0; i < sges.size(); ++i) {
        list[i] = ibv_sge{reinterpret_cast<uintptr_t>(sges[i].addr), sges[i].length, sges[i].lkey};
        total += sges[i].length;
    }
    if ((op == Completion::Op::Read || op == Completion::Op::Write) && total > caps_.max_rdma_size)
        return Error(NtStatus::InvalidParameter);
    int slot = take_slot(wr_id, op);
    if (slot < 0) return Error(NtStatus::InsufficientResources);
    ibv_send_wr wr{};
    wr.wr_id = uint64_t(slot);
    wr.sg_list = list.data();
    wr.num_sge = int(sges.size());
    wr.opcode = ibv_wr_opcode(opcode);
    wr.send_flags = IBV_SEND_SIGNALED;
    if (op == Completion::Op::Read || op == Completion::Op::Write) {
        wr.wr.rdma.remote_addr = remote_addr;
        wr.wr.rdma.rkey = rkey;
    }
    if (invalidate_rkey) {
        wr.invalidate_rkey = *invalidate_rkey;
        // rdma-core's siw provider takes the STag to invalidate from wr.rdma.rkey, not from
        // invalidate_rkey (its send queue entry has one key field): without this the peer's
        // siw finds no such STag and terminates the connection (RDMAP "cannot invalidate").
        // Other providers ignore wr.rdma for sends.
        wr.wr.rdma.rkey = *invalidate_rkey;
    }
    ibv_send_wr* bad = nullptr;
    if (int err = ibv_post_send(id_->qp, &wr, &bad)) {
        free_slots_.push_back(uint32_t(slot));
        return Error(err == ENOMEM   ? NtStatus::InsufficientResources
                     : err == EINVAL ? NtStatus::InvalidParameter
                                     : NtStatus::ConnectionDisconnected);
    }
    return {};
}

Status VerbsQueuePair::post_send(uint64_t wr_id, std::span<const LocalSegment> from,
                                 std::optional<uint32_t> invalidate_rkey) {
    return post_send_wr(wr_id, Completion::Op::Send,
                        invalidate_rkey ? IBV_WR_SEND_WITH_INV : IBV_WR_SEND, from, 0, 0,
                        invalidate_rkey);
}

Status VerbsQueuePair::post_write(uint64_t wr_id, std::span<const LocalSegment> from,
                                  uint64_t remote_addr, uint32_t rkey) {
    return post_send_wr(wr_id, Completion::Op::Write, IBV_WR_RDMA_WRITE, from, remote_addr, rkey,
                        std::nullopt);
}

Status VerbsQueuePair::post_read(uint64_t wr_id, std::span<const LocalSegment> into,
                                 uint64_t remote_addr, uint32_t rkey) {
    return post_send_wr(wr_id, Completion::Op::Read, IBV_WR_RDMA_READ, into, remote_addr, rkey,
                        std::nullopt);
}

bool VerbsQueuePair::translate(const ibv_wc& wc, Completion& out) {
    if (wc.wr_id >= slots_.size()) return false;
    const Slot& slot = slots_[size_t(wc.wr_id)];
    out.wr_id = slot.wr_id;
    out.op = slot.op;
    free_slots_.push_back(uint32_t(wc.wr_id));
    out.ok = wc.status == IBV_WC_SUCCESS;
    if (out.ok)
        out.error.clear();
    else
        out.error = ibv_wc_status_str(wc.status);
    out.byte_len = out.op == Completion::Op::Receive && out.ok ? wc.byte_len : 0;
    out.invalidated_rkey.reset();
    if (out.ok && out.op == Completion::Op::Receive && (wc.wc_flags & kWcWithInvalidate))
        out.invalidated_rkey = wc.invalidated_rkey;
    return true;
}

size_t VerbsQueuePair::poll(std::span<Completion> out) {
    size_t n = 0;
    while (n < out.size() && pending_next_ < pending_count_)
        if (translate(pending_[pending_next_++], out[n])) ++n;
    if (!cq_) return n;
    std::array<ibv_wc, kPendingWc> wc;
    while (n < out.size()) {
        int want = int(std::min(out.size() - n, wc.size()));
        int got = ibv_poll_cq(cq_, want, wc.data());
        if (got <= 0) break;
        for (int i = 0; i < got; ++i)
            if (translate(wc[size_t(i)], out[n])) ++n;
        if (got < want) break;
    }
    return n;
}

ibv_qp* VerbsQueuePair::native_qp() const {
    return qp_created_ ? id_->qp : nullptr;
}

asio::awaitable<void> VerbsQueuePair::wait() {
    if (pending_next_ < pending_count_ || !cq_) co_return;
    // Completion events since the last wait: take and acknowledge them all (the fd is
    // edge-triggered for asio), then re-arm.
    void* cq_context = nullptr;
    ibv_cq* ev_cq = nullptr;
    unsigned events = 0;
    while (ibv_get_cq_event(comp_channel_, &ev_cq, &cq_context) == 0)
        ++events;
    if (events) ibv_ack_cq_events(cq_, events);
    ibv_req_notify_cq(cq_, 0);
    // A completion that arrived between the caller's last poll and the re-arm raises no event:
    // look once more (ibv_req_notify_cq(3)).
    int got = ibv_poll_cq(cq_, int(kPendingWc), pending_.get());
    if (got > 0) {
        pending_count_ = size_t(got);
        pending_next_ = 0;
        co_return;
    }
    pending_count_ = pending_next_ = 0;
    bool was_disconnected = disconnected_;
    drain_cm_events();
    if (disconnected_ != was_disconnected) co_return;
    co_await (comp_fd_.async_wait(asio::posix::stream_descriptor::wait_read, kNoThrow) ||
              cm_fd_.async_wait(asio::posix::stream_descriptor::wait_read, kNoThrow));
}

void VerbsQueuePair::interrupt_wait() {
    // The waits of wait() end with operation_aborted, which it takes as "look again".
    boost::system::error_code ec;
    comp_fd_.cancel(ec);
    cm_fd_.cancel(ec);
}

void VerbsQueuePair::disconnect() {
    disconnected_ = true;
    if (disconnect_sent_ || !id_) return;
    disconnect_sent_ = true;
    // Moves the QP to the error state (work in flight is flushed) and sends a DREQ; the peer
    // sees DISCONNECTED. Fails harmlessly when the connection never got established.
    rdma_disconnect(id_);
}

std::string VerbsQueuePair::peer_address() const {
    return id_ ? address_text(rdma_get_peer_addr(id_)) : std::string();
}

std::string VerbsQueuePair::peer() const {
    if (!id_) return "?";
    std::string a = peer_address();
    const sockaddr* sa = rdma_get_peer_addr(id_);
    if (sa && sa->sa_family == AF_INET6) a = "[" + a + "]";
    return a + ":" + std::to_string(ntohs(rdma_get_dst_port(id_)));
}

// ---------------------------------------------------------------------------------------------
// VerbsConnectionRequests

VerbsConnectionRequests::VerbsConnectionRequests(asio::io_context& home,
                                                 rdma_event_channel* channel, rdma_cm_id* id,
                                                 const QueuePairRequest& req, VerbsLog log,
                                                 std::shared_ptr<VerbsDomains> domains)
    : channel_(channel),
      id_(id),
      fd_(home, channel->fd),
      req_(req),
      log_(std::move(log)),
      domains_(std::move(domains)) {}

std::unique_ptr<VerbsConnectionRequests> VerbsConnectionRequests::listen(
    asio::io_context& home, const asio::ip::address& addr, uint16_t port,
    const QueuePairRequest& req, std::string* error, VerbsLog log,
    std::shared_ptr<VerbsDomains> domains) {
    rdma_event_channel* channel = rdma_create_event_channel();
    if (!channel) {
        set_error(error, with_errno("rdma_create_event_channel", errno));
        return nullptr;
    }
    rdma_cm_id* id = nullptr;
    if (!set_nonblocking(channel->fd) || rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP)) {
        set_error(error, with_errno("rdma_create_id", errno));
        rdma_destroy_event_channel(channel);
        return nullptr;
    }
    if (!domains) domains = std::make_shared<VerbsDomains>();
    std::unique_ptr<VerbsConnectionRequests> l(
        new VerbsConnectionRequests(home, channel, id, req, std::move(log), std::move(domains)));
    sockaddr_storage sa;
    to_sockaddr(addr, port, sa);
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&sa))) {
        set_error(error, with_errno("rdma_bind_addr", errno));
        return nullptr;
    }
    if (rdma_listen(id, kListenBacklog)) {
        set_error(error, with_errno("rdma_listen", errno));
        return nullptr;
    }
    l->port_ = ntohs(rdma_get_src_port(id));
    return l;
}

VerbsConnectionRequests::~VerbsConnectionRequests() {
    if (fd_.is_open()) fd_.release();
    // Connection requests still queued on the channel go with it: the kernel destroys the ids
    // of a closed channel.
    if (id_) rdma_destroy_id(id_);
    if (channel_) rdma_destroy_event_channel(channel_);
}

void VerbsConnectionRequests::close() {
    closed_ = true;
    boost::system::error_code ignored;
    fd_.cancel(ignored);
}

std::unique_ptr<VerbsQueuePair> VerbsConnectionRequests::take_request(rdma_cm_event* ev,
                                                                      asio::io_context& loop) {
    rdma_cm_id* id = ev->id;
    uint32_t offered_depth = ev->param.conn.initiator_depth;
    uint32_t wanted_resources = ev->param.conn.responder_resources;
    // rdma_migrate_id waits for the id's events on the old channel to be acknowledged.
    rdma_ack_cm_event(ev);
    std::string error;
    rdma_event_channel* channel = rdma_create_event_channel();
    if (!channel || !set_nonblocking(channel->fd) || rdma_migrate_id(id, channel)) {
        log("rdma: connection request: " + with_errno("per-connection event channel", errno));
        rdma_reject(id, nullptr, 0);
        rdma_destroy_id(id);
        if (channel) rdma_destroy_event_channel(channel);
        return nullptr;
    }
    std::unique_ptr<VerbsQueuePair> qp(new VerbsQueuePair(loop, channel, id, log_));
    qp->offered_read_depth_ = offered_depth;
    qp->requested_responder_resources_ = wanted_resources;
    auto domain = domains_->get(id->verbs, &error);
    Status s = domain ? qp->create_queue_pair(domain, req_, &error)
                      : Status(Error(NtStatus::InsufficientResources));
    if (!s) {
        log("rdma: rejecting the connection request of " + qp->peer() + ": " + error);
        rdma_reject(id, nullptr, 0);
        return nullptr;  // the queue pair's destructor releases the rest
    }
    return qp;
}

asio::awaitable<Result<std::unique_ptr<QueuePair>>> VerbsConnectionRequests::next(
    asio::io_context& loop) {
    for (;;) {
        if (closed_) co_return Error(NtStatus::Cancelled);
        if (device_removed_) co_return Error(NtStatus::InvalidDeviceState);
        rdma_cm_event* ev = nullptr;
        while (rdma_get_cm_event(channel_, &ev) == 0) {
            if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
                if (auto qp = take_request(ev, loop))
                    co_return std::unique_ptr<QueuePair>(std::move(qp));
                continue;
            }
            bool removal = ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL && ev->id == id_;
            rdma_ack_cm_event(ev);
            if (removal) {
                // The kernel waits for the listening id to be destroyed before it lets the
                // device go.
                log("rdma: the device under the listener on port " + std::to_string(port_) +
                    " was removed");
                device_removed_ = true;
                fd_.release();
                rdma_destroy_id(id_);
                id_ = nullptr;
                let_removed_devices_go();
                co_return Error(NtStatus::InvalidDeviceState);
            }
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            log("rdma: " + with_errno("rdma_get_cm_event", errno));
            co_return Error(NtStatus::InvalidDeviceState);
        }
        auto [ec] = co_await fd_.async_wait(asio::posix::stream_descriptor::wait_read, kNoThrow);
        if (closed_) co_return Error(NtStatus::Cancelled);
        if (ec) {
            log("rdma: waiting for connection requests: " + ec.message());
            co_return Error(NtStatus::Cancelled);
        }
    }
}

}  // namespace daxsmbd::smbdirect
