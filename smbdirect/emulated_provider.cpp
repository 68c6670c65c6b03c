#include "smbdirect/emulated_provider.h"

#include <boost/asio/post.hpp>
#include <cstring>

namespace daxsmbd::smbdirect {

namespace {

class EmulatedRegion final : public MemoryRegion {
  public:
    EmulatedRegion(std::shared_ptr<EmulatedDomain> d, uint32_t key)
        : domain_(std::move(d)), key_(key) {}
    ~EmulatedRegion() override { domain_->forget(key_); }

  private:
    std::shared_ptr<EmulatedDomain> domain_;
    uint32_t key_;
};

}  // namespace

std::recursive_mutex& EmulatedDomain::regions_mu() {
    // One lock for the regions of every emulated domain: a peer checks them from its thread.
    static std::recursive_mutex mu;
    return mu;
}

namespace {

Completion completion(uint64_t wr_id, Completion::Op op) {
    Completion c;
    c.wr_id = wr_id;
    c.op = op;
    return c;
}

}  // namespace

std::unique_ptr<MemoryRegion> EmulatedDomain::register_memory(void* addr, size_t length,
                                                              unsigned access_bits,
                                                              std::string* why) {
    if (!refuse_.empty() && !(access_bits & access::kOnDemand && on_demand_paging_)) {
        if (why) *why = refuse_;
        return nullptr;
    }
    if ((access_bits & access::kOnDemand) && !on_demand_paging_) {
        if (why) *why = "EINVAL";
        return nullptr;
    }
    std::lock_guard lk(regions_mu());
    const uint32_t key = next_key_++;
    regions[key] = Entry{static_cast<std::byte*>(addr), length, access_bits, true};
    auto r = std::make_unique<EmulatedRegion>(shared_from_this(), key);
    r->addr = static_cast<std::byte*>(addr);
    r->length = length;
    r->lkey = r->rkey = key;
    return r;
}

struct EmulatedQueuePair::Link {
    std::recursive_mutex mu;  // everything of both ends
    EmulatedQueuePair* side[2] = {nullptr, nullptr};
    bool down = false;
    // Until the passive end accepts, the active end's sends wait here, as a device holds them
    // until the connection is established.
    bool established = true;
    struct HeldSend {
        int from;
        uint64_t wr_id;
        std::vector<LocalSegment> segs;
        std::optional<uint32_t> invalidate;
    };
    std::vector<HeldSend> held;
};

QueuePairCaps EmulatedQueuePair::default_caps() {
    QueuePairCaps c;
    c.max_send_wr = 512;
    c.max_recv_wr = 512;
    c.max_send_sge = 4;
    c.max_rdma_read_outstanding = 8;
    c.max_rdma_size = 1u << 20;
    return c;
}

std::pair<std::unique_ptr<EmulatedQueuePair>, std::unique_ptr<EmulatedQueuePair>>
EmulatedQueuePair::make_pair(boost::asio::any_io_executor a, boost::asio::any_io_executor b,
                             QueuePairCaps caps) {
    auto link = std::make_shared<Link>();
    std::unique_ptr<EmulatedQueuePair> qa(new EmulatedQueuePair(link, 0, std::move(a), caps));
    std::unique_ptr<EmulatedQueuePair> qb(new EmulatedQueuePair(link, 1, std::move(b), caps));
    return {std::move(qa), std::move(qb)};
}

EmulatedQueuePair::EmulatedQueuePair(std::shared_ptr<Link> link, int side,
                                     boost::asio::any_io_executor ex, QueuePairCaps caps)
    : link_(std::move(link)),
      side_(side),
      caps_(caps),
      peer_(side == 0 ? "emulated-passive" : "emulated-active") {
    set_executor(std::move(ex));
    link_->side[side_] = this;
}

void EmulatedQueuePair::set_executor(boost::asio::any_io_executor ex) {
    std::lock_guard lk(link_->mu);
    ++generation_;  // wake-ups posted to the old executor are dropped
    ex_ = ex;
    event_.emplace(std::move(ex));
}

void EmulatedQueuePair::announce() {
    // The Event belongs to this end's loop: notified there. The end is alive when the post
    // runs: an end is destroyed on its own loop, after which nothing of it runs there.
    boost::asio::post(ex_, [this, link = link_, gen = generation_] {
        std::lock_guard lk(link->mu);
        if (link->side[side_] == this && generation_ == gen) event_->notify();
    });
}

void EmulatedQueuePair::interrupt_wait() {
    event_->notify();
}

EmulatedQueuePair::~EmulatedQueuePair() {
    std::lock_guard lk(link_->mu);
    link_->side[side_] = nullptr;
    if (!link_->down) {
        link_->down = true;
        if (auto* o = other()) o->fail_connection("peer destroyed its queue pair");
    }
}

EmulatedQueuePair* EmulatedQueuePair::other() const {
    return link_->side[1 - side_];
}

void EmulatedQueuePair::complete(Completion c) {
    completions_.push_back(std::move(c));
    announce();
}

asio::awaitable<Status> EmulatedQueuePair::accept() {
    std::lock_guard lk(link_->mu);
    if (link_->down) co_return Error(NtStatus::ConnectionDisconnected);
    link_->established = true;
    auto held = std::move(link_->held);
    for (auto& h : held)
        if (auto* q = link_->side[h.from]) (void)q->post_send(h.wr_id, h.segs, h.invalidate);
    co_return Status{};
}

bool EmulatedQueuePair::disconnected() const {
    return link_->down;
}

void EmulatedQueuePair::fail_connection(std::string why) {
    // Both ends go to error: what is posted is flushed.
    link_->down = true;
    for (auto* q : link_->side) {
        if (!q) continue;
        while (!q->receives_.empty()) {
            Completion c;
            c.wr_id = q->receives_.front().first;
            c.op = Completion::Op::Receive;
            c.ok = false;
            c.error = "flushed: " + why;
            q->receives_.pop_front();
            q->completions_.push_back(std::move(c));
        }
        q->announce();
    }
}

void EmulatedQueuePair::disconnect() {
    std::lock_guard lk(link_->mu);
    if (!link_->down) fail_connection("disconnected");
}

std::optional<size_t> EmulatedQueuePair::check_local(std::span<const LocalSegment> segs,
                                                     bool write) const {
    if (segs.size() > caps_.max_send_sge) return std::nullopt;
    size_t n = 0;
    for (auto& s : segs) {
        std::lock_guard dl(EmulatedDomain::regions_mu());
        auto it = domain_->regions.find(s.lkey);
        if (it == domain_->regions.end() || !it->second.valid) return std::nullopt;
        auto& e = it->second;
        if (write && !(e.access & access::kLocalWrite)) return std::nullopt;
        if (s.addr < e.addr || s.length > e.length || size_t(s.addr - e.addr) > e.length - s.length)
            return std::nullopt;
        n += s.length;
    }
    return n;
}

std::byte* EmulatedQueuePair::remote(uint64_t addr, uint32_t rkey, size_t len, unsigned need) {
    auto* o = other();
    if (!o) return nullptr;
    std::lock_guard dl(EmulatedDomain::regions_mu());
    auto it = o->domain_->regions.find(rkey);
    if (it == o->domain_->regions.end() || !it->second.valid) return nullptr;
    auto& e = it->second;
    if (!(e.access & need)) return nullptr;
    auto base = uint64_t(reinterpret_cast<uintptr_t>(e.addr));
    if (addr < base || len > e.length || addr - base > e.length - len) return nullptr;
    return e.addr + (addr - base);
}

Status EmulatedQueuePair::post_receive(uint64_t wr_id, LocalSegment into) {
    std::lock_guard lk(link_->mu);
    if (link_->down) return Error(NtStatus::ConnectionDisconnected);
    if (receives_.size() >= caps_.max_recv_wr) return Error(NtStatus::InsufficientResources);
    if (!check_local(std::span(&into, 1), true)) return Error(NtStatus::InvalidParameter);
    receives_.emplace_back(wr_id, into);
    max_posted_ = std::max(max_posted_, receives_.size());
    return {};
}

Status EmulatedQueuePair::post_send(uint64_t wr_id, std::span<const LocalSegment> from,
                                    std::optional<uint32_t> invalidate_rkey) {
    std::lock_guard lk(link_->mu);
    if (link_->down) return Error(NtStatus::ConnectionDisconnected);
    auto len = check_local(from, false);
    if (!len) return Error(NtStatus::InvalidParameter);
    if (!link_->established) {
        link_->held.push_back({side_, wr_id, {from.begin(), from.end()}, invalidate_rkey});
        return {};
    }
    auto* o = other();
    Completion mine = completion(wr_id, Completion::Op::Send);
    if (!o || o->receives_.empty()) {
        // No receive posted at the peer: the sender had no credit (MS-SMBD 3.1.5.1).
        ++failed_sends_;
        mine.ok = false;
        mine.error = "receiver not ready: no receive posted";
        complete(std::move(mine));
        fail_connection("send without a posted receive");
        return {};
    }
    auto [rid, seg] = o->receives_.front();
    o->receives_.pop_front();
    Completion theirs = completion(rid, Completion::Op::Receive);
    if (*len > seg.length) {
        mine.ok = theirs.ok = false;
        mine.error = theirs.error = "message longer than the posted receive";
        complete(std::move(mine));
        o->complete(std::move(theirs));
        fail_connection("receive overrun");
        return {};
    }
    size_t at = 0;
    for (auto& s : from) {
        std::memcpy(seg.addr + at, s.addr, s.length);
        at += s.length;
    }
    theirs.byte_len = uint32_t(*len);
    if (invalidate_rkey) {
        std::lock_guard dl(EmulatedDomain::regions_mu());
        auto it = o->domain_->regions.find(*invalidate_rkey);
        if (it == o->domain_->regions.end() || !it->second.valid) {
            mine.ok = theirs.ok = false;
            mine.error = theirs.error = "invalidate of an unknown or invalid rkey";
            complete(std::move(mine));
            o->complete(std::move(theirs));
            fail_connection("bad remote invalidate");
            return {};
        }
        it->second.valid = false;
        theirs.invalidated_rkey = *invalidate_rkey;
    }
    complete(std::move(mine));
    o->complete(std::move(theirs));
    return {};
}

Status EmulatedQueuePair::post_write(uint64_t wr_id, std::span<const LocalSegment> from,
                                     uint64_t remote_addr, uint32_t rkey) {
    std::lock_guard lk(link_->mu);
    if (link_->down) return Error(NtStatus::ConnectionDisconnected);
    auto len = check_local(from, false);
    if (!len) return Error(NtStatus::InvalidParameter);
    Completion mine = completion(wr_id, Completion::Op::Write);
    std::byte* dst = *len > caps_.max_rdma_size
                         ? nullptr
                         : remote(remote_addr, rkey, *len, access::kRemoteWrite);
    if (!dst) {
        mine.ok = false;
        mine.error = "remote access error";
        complete(std::move(mine));
        fail_connection("RDMA WRITE outside a remote region");
        return {};
    }
    for (auto& s : from) {
        std::memcpy(dst, s.addr, s.length);
        dst += s.length;
    }
    complete(std::move(mine));
    return {};
}

Status EmulatedQueuePair::post_read(uint64_t wr_id, std::span<const LocalSegment> into,
                                    uint64_t remote_addr, uint32_t rkey) {
    std::lock_guard lk(link_->mu);
    if (link_->down) return Error(NtStatus::ConnectionDisconnected);
    auto len = check_local(into, true);
    if (!len) return Error(NtStatus::InvalidParameter);
    Completion mine = completion(wr_id, Completion::Op::Read);
    const std::byte* src =
        *len > caps_.max_rdma_size ? nullptr : remote(remote_addr, rkey, *len, access::kRemoteRead);
    if (!src) {
        mine.ok = false;
        mine.error = "remote access error";
        complete(std::move(mine));
        fail_connection("RDMA READ outside a remote region");
        return {};
    }
    for (auto& s : into) {
        std::memcpy(s.addr, src, s.length);
        src += s.length;
    }
    complete(std::move(mine));
    return {};
}

size_t EmulatedQueuePair::poll(std::span<Completion> out) {
    std::lock_guard lk(link_->mu);
    size_t n = 0;
    while (n < out.size() && !completions_.empty()) {
        out[n++] = std::move(completions_.front());
        completions_.pop_front();
    }
    return n;
}

asio::awaitable<void> EmulatedQueuePair::wait() {
    {
        std::lock_guard lk(link_->mu);
        if (!completions_.empty() || link_->down) co_return;
    }
    co_await event_->wait();
}

}  // namespace daxsmbd::smbdirect

namespace daxsmbd::smbdirect {

struct EmulatedConnectionRequests::Queue {
    std::mutex mu;
    std::deque<std::unique_ptr<EmulatedQueuePair>> waiting;
    bool closed = false;
    bool device_removed = false;
    bool on_demand_paging = false;
    // The loop next() waits on, and its wake-up (notified there).
    std::optional<boost::asio::any_io_executor> home;
    std::optional<Event> event;
};

EmulatedConnectionRequests::EmulatedConnectionRequests(uint16_t port)
    : q_(std::make_shared<Queue>()), port_(port) {}

EmulatedConnectionRequests::~EmulatedConnectionRequests() = default;

std::unique_ptr<EmulatedQueuePair> EmulatedConnectionRequests::connect(
    boost::asio::any_io_executor client) {
    auto [active, passive] = EmulatedQueuePair::make_pair(client, client);
    active->link_->established = false;  // until the listener's side accepts
    std::lock_guard lk(q_->mu);
    if (q_->closed) return nullptr;
    passive->emulated_domain().set_on_demand_paging(q_->on_demand_paging);
    q_->waiting.push_back(std::move(passive));
    if (q_->home) boost::asio::post(*q_->home, [q = q_] { q->event->notify(); });
    return std::move(active);
}

asio::awaitable<Result<std::unique_ptr<QueuePair>>> EmulatedConnectionRequests::next(
    asio::io_context& loop) {
    auto ex = co_await boost::asio::this_coro::executor;
    {
        std::lock_guard lk(q_->mu);
        if (!q_->home) {
            q_->home = ex;
            q_->event.emplace(ex);
        }
    }
    for (;;) {
        {
            std::lock_guard lk(q_->mu);
            if (q_->closed) co_return Error(NtStatus::Cancelled);
            if (q_->device_removed) co_return Error(NtStatus::InvalidDeviceState);
            if (!q_->waiting.empty()) {
                auto qp = std::move(q_->waiting.front());
                q_->waiting.pop_front();
                qp->set_executor(loop.get_executor());
                co_return std::unique_ptr<QueuePair>(std::move(qp));
            }
        }
        co_await q_->event->wait();
    }
}

void EmulatedConnectionRequests::remove_device() {
    std::lock_guard lk(q_->mu);
    q_->device_removed = true;
    if (q_->home) boost::asio::post(*q_->home, [q = q_] { q->event->notify(); });
}

void EmulatedConnectionRequests::set_on_demand_paging(bool on) {
    std::lock_guard lk(q_->mu);
    q_->on_demand_paging = on;
}

void EmulatedConnectionRequests::close() {
    std::lock_guard lk(q_->mu);
    q_->closed = true;
    if (q_->home) boost::asio::post(*q_->home, [q = q_] { q->event->notify(); });
}

}  // namespace daxsmbd::smbdirect
