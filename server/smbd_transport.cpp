#include "server/smbd_transport.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>
#include <sstream>

#include "dax/media_guard.h"
#include "server/log.h"

namespace daxsmbd::server {

using protocol::Bytes;

void RdmaRegistrations::attach(smbdirect::ProtectionDomain& pd) {
    std::lock_guard lk(mu_);
    ++domains_[&pd].connections;
}

void RdmaRegistrations::detach(smbdirect::ProtectionDomain& pd) {
    std::vector<std::unique_ptr<smbdirect::MemoryRegion>> gone;
    std::list<std::shared_ptr<smbdirect::MemoryRegion>> gone_mapped;
    {
        std::lock_guard lk(mu_);
        auto it = domains_.find(&pd);
        if (it == domains_.end() || --it->second.connections > 0) return;
        gone = std::move(it->second.slabs);
        gone_mapped = std::move(it->second.mapped);
        domains_.erase(it);
    }
    // Deregistered outside the lock (a verbs call).
}

bool RdmaRegistrations::maps_directly(smbdirect::ProtectionDomain& pd) const {
    if (!pd.on_demand_paging()) return false;
    std::lock_guard lk(mu_);
    auto it = domains_.find(&pd);
    return it == domains_.end() || !it->second.mapped_failed;
}

std::optional<smbdirect::LocalSegment> RdmaRegistrations::mapped_segment(
    smbdirect::ProtectionDomain& pd, std::span<std::byte> mapping, std::span<const std::byte> bytes,
    std::shared_ptr<smbdirect::MemoryRegion>* hold) {
    if (!pd.on_demand_paging() || bytes.empty()) return std::nullopt;
    auto* p = const_cast<std::byte*>(bytes.data());
    auto found = [&](const std::shared_ptr<smbdirect::MemoryRegion>& r) {
        *hold = r;
        return smbdirect::LocalSegment{p, uint32_t(bytes.size()), r->lkey};
    };
    {
        std::lock_guard lk(mu_);
        auto& d = domains_[&pd];
        if (d.mapped_failed) return std::nullopt;
        for (auto it = d.mapped.begin(); it != d.mapped.end(); ++it) {
            if (!(*it)->contains(p, bytes.size())) continue;
            d.mapped.splice(d.mapped.begin(), d.mapped, it);  // most recently used
            return found(d.mapped.front());
        }
    }
    // The window of the mapping holding the transfer: every byte of it is mapped now (an ODP
    // registration may fault the whole range in at once), and it stays a few large regions
    // for a large file. A mapping that does not fill the window yet (a file being written
    // from start to end) gets the granules around the transfer only, so that its growth does
    // not register its whole beginning again at each step.
    std::byte* const base = mapping.data();
    const size_t at = size_t(p - base), end = at + bytes.size();
    size_t from = at / kMappedWindow * kMappedWindow;
    size_t to = from + kMappedWindow;
    if (to > mapping.size()) {
        from = at / kMappedGranule * kMappedGranule;
        to = (end + kMappedGranule - 1) / kMappedGranule * kMappedGranule;
    }
    to = std::min(mapping.size(), std::max(to, end));
    std::string why;
    std::shared_ptr<smbdirect::MemoryRegion> r =
        pd.register_memory(base + from, to - from,
                           smbdirect::access::kLocalWrite | smbdirect::access::kOnDemand, &why);
    // Deregistered after the lock (by their last user).
    std::shared_ptr<smbdirect::MemoryRegion> evicted;
    std::vector<std::shared_ptr<smbdirect::MemoryRegion>> covered;
    std::lock_guard lk(mu_);
    auto& d = domains_[&pd];
    if (!r) {
        if (!d.mapped_failed)
            log_error("SMB Direct: On-Demand-Paging registration of a DAX mapping with ",
                      pd.device_name(), " failed: ", why,
                      "; READ and WRITE by RDMA of DAX shares go through pool buffers");
        d.mapped_failed = true;
        return std::nullopt;
    }
    // Regions the new one covers are of no further use.
    for (auto it = d.mapped.begin(); it != d.mapped.end();) {
        if (r->contains((*it)->addr, (*it)->length)) {
            covered.push_back(std::move(*it));
            it = d.mapped.erase(it);
        } else {
            ++it;
        }
    }
    d.mapped.push_front(r);
    if (d.mapped.size() > kMappedRegions) {
        evicted = std::move(d.mapped.back());
        d.mapped.pop_back();
    }
    return found(r);
}

size_t RdmaRegistrations::mapped_regions() const {
    std::lock_guard lk(mu_);
    size_t n = 0;
    for (auto& [pd, d] : domains_)
        n += d.mapped.size();
    return n;
}

std::optional<smbdirect::LocalSegment> RdmaRegistrations::segment(smbdirect::ProtectionDomain& pd,
                                                                  std::byte* p, size_t len) {
    const int slab = pool_.slab_of(p, len);
    if (slab < 0) return std::nullopt;
    std::lock_guard lk(mu_);
    auto& d = domains_[&pd];
    auto& v = d.slabs;
    if (v.size() <= size_t(slab)) v.resize(size_t(slab) + 1);
    if (!v[slab]) {
        if (d.failed) return std::nullopt;
        std::string why;
        // Local write: RDMA READ (a WRITE request's data) lands in pool buffers. Nothing remote:
        // the client never addresses server memory.
        v[slab] = pd.register_memory(pool_.slab_base(size_t(slab)), BufferPool::kSlabSize,
                                     smbdirect::access::kLocalWrite, &why);
        if (!v[slab]) {
            d.failed = true;
            log_error("SMB Direct: cannot register buffer pool memory with ", pd.device_name(),
                      ": ", why, "; RDMA READ and WRITE requests fail on it");
            return std::nullopt;
        }
    }
    return smbdirect::LocalSegment{p, uint32_t(len), v[slab]->lkey};
}

size_t RdmaRegistrations::registered_slabs() const {
    std::lock_guard lk(mu_);
    size_t n = 0;
    for (auto& [pd, d] : domains_)
        for (auto& r : d.slabs)
            n += r != nullptr;
    return n;
}

SmbdTransport::SmbdTransport(std::shared_ptr<smbdirect::SmbdConnection> conn, BufferPool& pool,
                             RdmaRegistrations& registrations, smbdirect::SmbdCounters* counters)
    : conn_(std::move(conn)),
      pool_(pool),
      registrations_(registrations),
      counters_(counters),
      peer_(conn_->queue_pair().peer()),
      peer_address_(conn_->queue_pair().peer_address()) {
    registrations_.attach(conn_->queue_pair().domain());
}

SmbdTransport::~SmbdTransport() {
    close();
    // The queue pair (and with it the domain) outlives this: the regions go first.
    registrations_.detach(conn_->queue_pair().domain());
}

void SmbdTransport::close() {
    conn_->close("closed by the server");
}

asio::awaitable<Result<PoolBuffer>> SmbdTransport::receive() {
    if (!started_) {
        started_ = true;
        // MS-SMBD 3.1.5.6: the negotiation runs here, on the connection's own loop.
        if (auto st = co_await conn_->accept(); !st)
            co_return Error(NtStatus::ConnectionDisconnected);
    }
    auto m = co_await conn_->receive();
    if (!m) co_return Error(NtStatus::ConnectionDisconnected);
    // One copy out of the receive buffers, which go back to the device at once (the SMB2
    // layer keeps a request's buffer for as long as the request runs).
    PoolBuffer b = pool_.acquire(m->bytes.size());
    std::memcpy(b.data(), m->bytes.data(), m->bytes.size());
    b.set_size(m->bytes.size());
    co_return b;
}

asio::awaitable<Status> SmbdTransport::send_message(std::span<const Bytes> fragments, Payload& tail,
                                                    std::optional<uint32_t> token) {
    std::vector<Bytes> parts(fragments.begin(), fragments.end());
    if (tail) parts.push_back(tail.bytes());
    auto st = co_await conn_->send(parts, token);
    tail = Payload();
    co_return st;
}

asio::awaitable<Status> SmbdTransport::send(std::span<const Bytes> fragments, Payload& tail) {
    return send_message(fragments, tail, std::nullopt);
}

asio::awaitable<Status> SmbdTransport::send_invalidating(std::span<const Bytes> fragments,
                                                         Payload& tail, uint32_t token) {
    return send_message(fragments, tail, token);
}

uint32_t SmbdTransport::max_read_write_size() const {
    return conn_->parameters().max_read_write_size;
}

PayloadKinds SmbdTransport::push_kinds() const {
    if (registrations_.maps_directly(conn_->queue_pair().domain()))
        return PayloadKind::Memory | PayloadKind::Mapped;
    return PayloadKind::Memory;
}

asio::awaitable<Status> SmbdTransport::push(std::span<const smbdirect::BufferDescriptorV1> to,
                                            const Payload& data) {
    auto& pd = conn_->queue_pair().domain();
    auto bytes = data.bytes();
    if (const dax::MappedRange* m = data.mapped()) {
        // Straight out of persistent memory (the range stays pinned until the payload goes).
        std::shared_ptr<smbdirect::MemoryRegion> hold;
        if (auto seg = registrations_.mapped_segment(pd, m->mapping(), bytes, &hold)) {
            auto st = co_await conn_->write_to_peer(to, std::span(&*seg, 1));
            if (st && counters_) counters_->direct_bytes += bytes.size();
            co_return st;
        }
    }
    auto* p = const_cast<std::byte*>(bytes.data());
    auto seg = registrations_.segment(pd, p, bytes.size());
    PoolBuffer staged;
    if (!seg) {
        // Not pool memory (a one-off buffer, a mapping without a registration): staged through
        // a pool buffer; a mapping's bytes are copied guarded against media errors.
        staged = pool_.acquire(bytes.size());
        if (data.mapped()) {
            if (!dax::guarded_copy(staged.data(), bytes.data(), bytes.size(), bytes.data(),
                                   bytes.size()))
                co_return Error(NtStatus::UnexpectedIoError);
        } else {
            std::memcpy(staged.data(), bytes.data(), bytes.size());
        }
        seg = registrations_.segment(pd, staged.data(), bytes.size());
        if (!seg) co_return Error(NtStatus::InsufficientResources);
    }
    auto st = co_await conn_->write_to_peer(to, std::span(&*seg, 1));
    if (st && counters_) counters_->bounce_bytes += bytes.size();
    co_return st;
}

asio::awaitable<Status> SmbdTransport::pull_into(
    std::span<const smbdirect::BufferDescriptorV1> from, const dax::MappedRange& into) {
    std::shared_ptr<smbdirect::MemoryRegion> hold;
    auto seg = registrations_.mapped_segment(conn_->queue_pair().domain(), into.mapping(),
                                             into.bytes(), &hold);
    if (!seg) co_return Error(NtStatus::NotSupported);
    auto st = co_await conn_->read_from_peer(from, std::span(&*seg, 1));
    if (st && counters_) counters_->direct_bytes += into.bytes().size();
    co_return st;
}

asio::awaitable<Result<PoolBuffer>> SmbdTransport::pull(
    std::span<const smbdirect::BufferDescriptorV1> from, size_t length) {
    PoolBuffer b = pool_.acquire(length);
    auto seg = registrations_.segment(conn_->queue_pair().domain(), b.data(), length);
    if (!seg) co_return Error(NtStatus::InsufficientResources);
    auto st = co_await conn_->read_from_peer(from, std::span(&*seg, 1));
    if (!st) co_return Error(st.status());
    b.set_size(length);
    if (counters_) counters_->bounce_bytes += length;
    co_return b;
}

SmbdListener::SmbdListener(std::unique_ptr<smbdirect::ConnectionRequests> requests,
                           smbdirect::SmbdConfig config, smbdirect::SmbdCounters& counters,
                           BufferPool& pool, RdmaRegistrations& registrations, std::string name,
                           Relisten relisten, std::chrono::milliseconds relisten_interval)
    : config_(config),
      counters_(counters),
      pool_(pool),
      registrations_(registrations),
      name_(std::move(name)) {
    requests_ = std::move(requests);
    relisten_ = std::move(relisten);
    relisten_interval_ = relisten_interval;
    port_ = requests_->port();
}

uint16_t SmbdListener::port() const {
    return port_;
}

void SmbdListener::close() {
    std::lock_guard lk(mu_);
    closed_ = true;
    requests_->close();
}

asio::awaitable<bool> SmbdListener::listen_again() {
    log_info("SMB Direct ", name_, ": the RDMA device went away; listening again once it is back");
    auto ex = co_await asio::this_coro::executor;
    for (;;) {
        asio::steady_timer t(ex, relisten_interval_);
        co_await t.async_wait(asio::use_awaitable);
        {
            std::lock_guard lk(mu_);
            if (closed_) co_return false;
        }
        auto r = relisten_();
        if (!r) continue;
        std::lock_guard lk(mu_);
        if (closed_) co_return false;
        requests_ = std::move(r);
        log_info("SMB Direct ", name_, ": listening again");
        co_return true;
    }
}

asio::awaitable<Result<std::unique_ptr<Transport>>> SmbdListener::accept(asio::io_context& loop) {
    for (;;) {
        auto qp = co_await requests_->next(loop);
        if (!qp) {
            if (qp.status() == NtStatus::InvalidDeviceState && relisten_ && co_await listen_again())
                continue;
            co_return Error(qp.status());
        }
        std::string peer = (*qp)->peer();
        auto conn = std::make_shared<smbdirect::SmbdConnection>(
            std::move(*qp), config_, loop.get_executor(), &counters_,
            [peer](const std::string& s) { log_info("SMB Direct ", peer, ": ", s); });
        conn->set_trace(g_log_level.load(std::memory_order_relaxed) >= 3);
        std::unique_ptr<Transport> t =
            std::make_unique<SmbdTransport>(conn, pool_, registrations_, &counters_);
        co_return t;
    }
}

std::string smbd_stats_line(const smbdirect::SmbdCounters& c, const RdmaRegistrations& r) {
    std::ostringstream o;
    o << "smbdirect: connections=" << c.connections
      << " negotiate_failures=" << c.negotiate_failures << " sends=" << c.sends
      << " receives=" << c.receives << " rdma_reads=" << c.rdma_reads
      << " rdma_read_bytes=" << c.rdma_read_bytes << " rdma_writes=" << c.rdma_writes
      << " rdma_write_bytes=" << c.rdma_write_bytes << " send_invalidates=" << c.send_invalidates
      << " keepalives=" << c.keepalives << " error_disconnects=" << c.disconnects_on_error
      << " bounce_bytes=" << c.bounce_bytes << " direct_bytes=" << c.direct_bytes
      << " registered_slabs=" << r.registered_slabs() << " mapped_regions=" << r.mapped_regions();
    return o.str();
}

}  // namespace daxsmbd::server
