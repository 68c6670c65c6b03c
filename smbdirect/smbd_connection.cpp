#include "smbdirect/smbd_connection.h"

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <cstring>

namespace daxsmbd::smbdirect {

namespace asio = boost::asio;

namespace {

// Completed messages waiting for the upper layer beyond which receives are not reposted: the
// peer then runs out of credits instead of us out of memory (MS-SMBD 3.1.5.9 lets the receiver
// decide when to grant).
constexpr size_t kMaxReadyMessages = 64;

size_t total_of(std::span<const Bytes> parts) {
    size_t n = 0;
    for (auto& p : parts)
        n += p.size();
    return n;
}

// Copies bytes [offset, offset + len) of the concatenation of `parts` to `dst`.
void gather(std::span<const Bytes> parts, size_t offset, size_t len, std::byte* dst) {
    for (auto& p : parts) {
        if (len == 0) return;
        if (offset >= p.size()) {
            offset -= p.size();
            continue;
        }
        size_t n = std::min(len, p.size() - offset);
        std::memcpy(dst, p.data() + offset, n);
        dst += n;
        len -= n;
        offset = 0;
    }
}

}  // namespace

SmbdConnection::SmbdConnection(std::unique_ptr<QueuePair> qp, const SmbdConfig& config,
                               asio::any_io_executor ex, SmbdCounters* counters, Logger log,
                               SmbdTimers timers)
    : qp_(std::move(qp)),
      config_(config),
      ex_(ex),
      counters_(counters),
      log_(std::move(log)),
      timers_(timers),
      event_(ex) {
    const auto& caps = qp_->caps();
    // A few receives beyond ReceiveCreditMax: when only the last send credit is left and the
    // peer holds every credit granted, one more receive lets the next message grant (3.1.5.9).
    recv_slots_ = std::min<uint32_t>(config_.receive_credit_max + 4, caps.max_recv_wr);
    recv_memory_.resize(size_t(recv_slots_) * config_.max_receive_size);
    const uint32_t send_slots =
        std::max<uint32_t>(2, std::min<uint32_t>(config_.send_credit_target, caps.max_send_wr / 2));
    send_memory_.resize(size_t(send_slots) * config_.max_send_size);
    std::string why;
    recv_region_ = qp_->domain().register_memory(recv_memory_.data(), recv_memory_.size(),
                                                 access::kLocalWrite, &why);
    if (recv_region_)
        send_region_ =
            qp_->domain().register_memory(send_memory_.data(), send_memory_.size(), 0, &why);
    if (!recv_region_ || !send_region_) {
        closed_ = true;
        close_reason_ = "cannot register the message buffers: " + why;
        return;
    }
    for (uint32_t i = recv_slots_; i-- > 0;)
        idle_recv_slots_.push_back(i);
    for (uint32_t i = send_slots; i-- > 0;)
        free_send_slots_.push_back(i);
}

SmbdConnection::~SmbdConnection() {
    // The queue pair goes before the regions its work requests point into.
    if (qp_) qp_->disconnect();
    qp_.reset();
}

void SmbdConnection::close(const std::string& reason) {
    if (closed_) return;
    closed_ = true;
    close_reason_ = reason;
    qp_->disconnect();
    qp_->interrupt_wait();
    if (keepalive_timer_) keepalive_timer_->cancel();
    event_.notify();
}

Status SmbdConnection::post_receive(uint32_t slot) {
    LocalSegment seg{recv_memory_.data() + size_t(slot) * config_.max_receive_size,
                     config_.max_receive_size, recv_region_->lkey};
    auto st = qp_->post_receive(kRecvTag | slot, seg);
    if (st) ++posted_;
    return st;
}

uint32_t SmbdConnection::receive_target() const {
    return std::clamp<uint32_t>(receive_credit_target_, 1, config_.receive_credit_max);
}

void SmbdConnection::refill_receives() {
    while (!closed_ && posted_ < receive_target() && !idle_recv_slots_.empty() &&
           ready_.size() < kMaxReadyMessages) {
        uint32_t slot = idle_recv_slots_.back();
        if (!post_receive(slot)) {
            close("cannot post a receive");
            return;
        }
        idle_recv_slots_.pop_back();
    }
}

uint16_t SmbdConnection::take_grant() {
    // Only receives already posted are granted (3.1.5.9): granted_ <= posted_ always.
    uint32_t n = std::min<uint32_t>(posted_ - granted_, 0xffff);
    granted_ += n;
    return uint16_t(n);
}

bool SmbdConnection::need_credit_message() const {
    // The peer is low on credits and we have new ones: tell it without waiting for a response
    // to carry them ("promptly", 3.1.5.9).
    return negotiated_ && !closed_ && posted_ > granted_ &&
           (granted_ == 0 || granted_ * 2 < receive_target());
}

asio::awaitable<Status> SmbdConnection::accept() {
    if (closed_) {
        log(close_reason_);
        co_return Error(NtStatus::InsufficientResources);
    }
    asio::co_spawn(
        ex_, [self = shared_from_this()] { return self->drive(); }, asio::detached);
    // MS-SMBD 3.1.5.6: the receive for the negotiate request is posted before the accept.
    for (uint32_t i = 0; i < config_.receive_credit_max && !idle_recv_slots_.empty(); ++i) {
        if (!post_receive(idle_recv_slots_.back())) break;
        idle_recv_slots_.pop_back();
    }
    if (posted_ == 0) {
        close("cannot post receives");
        co_return Error(NtStatus::InsufficientResources);
    }
    if (auto st = co_await qp_->accept(); !st) {
        close("accept failed");
        co_return st;
    }
    co_return co_await await_negotiation();
}

asio::awaitable<Status> SmbdConnection::await_negotiation() {
    // MS-SMBD 3.1.7.2: the negotiation must finish within the negotiate timer.
    asio::steady_timer timer(ex_, timers_.negotiate);
    auto self = shared_from_this();
    timer.async_wait([self](boost::system::error_code ec) {
        if (!ec && !self->negotiate_result_) {
            if (self->counters_) ++self->counters_->negotiate_failures;
            self->log("no negotiation within the negotiate timer");
            self->close("negotiate timeout");
        }
    });
    while (!negotiate_result_ && !closed_)
        co_await event_.wait();
    timer.cancel();
    if (!negotiate_result_ || !*negotiate_result_) {
        close("negotiation failed");
        co_return negotiate_result_ && !*negotiate_result_ ? *negotiate_result_
                                                           : Status(Error(kDisconnect));
    }
    start_keepalive();
    co_return Status{};
}

void SmbdConnection::start_keepalive() {
    last_receive_ = std::chrono::steady_clock::now();
    keepalive_timer_.emplace(ex_);
    asio::co_spawn(
        ex_, [self = shared_from_this()] { return self->keepalive(); }, asio::detached);
}

asio::awaitable<Status> SmbdConnection::connect() {
    if (closed_) {
        log(close_reason_);
        co_return Error(NtStatus::InsufficientResources);
    }
    active_ = true;
    asio::co_spawn(
        ex_, [self = shared_from_this()] { return self->drive(); }, asio::detached);
    for (uint32_t i = 0; i < config_.receive_credit_max && !idle_recv_slots_.empty(); ++i) {
        if (!post_receive(idle_recv_slots_.back())) break;
        idle_recv_slots_.pop_back();
    }
    NegotiateRequest req;
    req.credits_requested = config_.send_credit_target;
    req.preferred_send_size = config_.max_send_size;
    req.max_receive_size = config_.max_receive_size;
    req.max_fragmented_size = config_.max_fragmented_recv_size;
    ByteVector msg;
    req.serialize(msg);
    uint32_t slot = free_send_slots_.back();
    free_send_slots_.pop_back();
    std::byte* dst = send_memory_.data() + size_t(slot) * config_.max_send_size;
    std::memcpy(dst, msg.data(), msg.size());
    LocalSegment seg{dst, uint32_t(msg.size()), send_region_->lkey};
    ++sq_in_flight_;
    if (auto st = qp_->post_send(kSendTag | slot, std::span(&seg, 1), std::nullopt); !st) {
        close("cannot send the negotiate request");
        co_return st;
    }
    co_return co_await await_negotiation();
}

void SmbdConnection::handle_negotiate_response(std::span<const std::byte> msg) {
    auto p = check_negotiate_response(Bytes(msg), config_);
    if (!p) {
        log("negotiate response refused: disconnecting (MS-SMBD 3.1.5.7)");
        negotiate_result_ = Status(Error(kDisconnect));
        close("bad negotiate response");
        return;
    }
    params_ = *p;
    send_credits_ = params_.send_credits;
    receive_credit_target_ = params_.receive_credit_target;
    reassembler_.emplace(params_.max_fragmented_recv_size);
    negotiated_ = true;
    if (counters_) ++counters_->connections;
    negotiate_result_ = Status{};
    // The first message grants our receives (3.1.5.7).
    schedule_credit_message(0);
}

asio::awaitable<void> SmbdConnection::drive() {
    auto self = shared_from_this();
    std::array<Completion, 32> batch;
    while (!closed_) {
        size_t n = qp_->poll(batch);
        for (size_t i = 0; i < n && !closed_; ++i)
            handle(batch[i]);
        if (n > 0) {
            if (!closed_ && (response_requested_ || need_credit_message()))
                schedule_credit_message(0);
            event_.notify();
            continue;
        }
        if (qp_->disconnected()) {
            close("the peer disconnected");
            break;
        }
        co_await qp_->wait();
    }
    event_.notify();
}

void SmbdConnection::handle(Completion& c) {
    const uint64_t tag = c.wr_id & kTagMask;
    const uint64_t id = c.wr_id & ~kTagMask;
    if (tag == kRecvTag) {
        --posted_;
        idle_recv_slots_.push_back(uint32_t(id));
        if (!c.ok) {
            if (closed_) return;
            // Receives are flushed when the peer disconnects: an orderly end, not an error.
            if (qp_->disconnected()) {
                close("the peer disconnected");
                return;
            }
            if (counters_) ++counters_->disconnects_on_error;
            log("receive failed: " + c.error);
            close("receive failed");
            return;
        }
        handle_receive(c);
        return;
    }
    --sq_in_flight_;
    if (tag == kSendTag) {
        free_send_slots_.push_back(uint32_t(id));
        if (!c.ok && !closed_) {
            if (counters_) ++counters_->disconnects_on_error;
            log("send failed: " + c.error);
            close("send failed");
        }
        return;
    }
    if (c.op == Completion::Op::Read) --reads_in_flight_;
    if (trace_)
        log("RDMA completion op " + std::to_string(id) + (c.ok ? " ok" : " failed: " + c.error));
    auto it = ops_.find(id);
    if (it == ops_.end()) return;
    --it->second.pending;
    if (!c.ok) {
        it->second.failed = true;
        it->second.error = c.error;
    }
}

void SmbdConnection::handle_receive(Completion& c) {
    const uint32_t slot = uint32_t(c.wr_id & ~kTagMask);
    std::span<const std::byte> msg(recv_memory_.data() + size_t(slot) * config_.max_receive_size,
                                   std::min<uint32_t>(c.byte_len, config_.max_receive_size));
    if (counters_) ++counters_->receives;
    if (!negotiated_) {
        if (active_)
            handle_negotiate_response(msg);
        else
            handle_negotiate(msg);
        return;
    }
    // The peer used one of the credits granted (a receive it had no credit for is its fault,
    // and the message is still taken).
    if (granted_ > 0) --granted_;
    last_receive_ = std::chrono::steady_clock::now();
    keepalive_outstanding_ = false;
    auto r = reassembler_->receive(Bytes(msg), c.invalidated_rkey);
    if (!r) {
        if (counters_) ++counters_->disconnects_on_error;
        log("malformed data transfer message: disconnecting (MS-SMBD 3.1.5.8)");
        close("malformed data transfer message");
        return;
    }
    const auto& h = r->header;
    if (trace_)
        log("received " + std::to_string(c.byte_len) + " bytes: data " +
            std::to_string(h.data_length) + " at " + std::to_string(h.data_offset) +
            ", remaining " + std::to_string(h.remaining_data_length) +
            (r->message ? ", message of " + std::to_string(r->message->size()) + " bytes" : ""));
    // MS-SMBD 3.1.5.8: CreditsGranted adds to the send credits; CreditsRequested is the target.
    send_credits_ = std::min<uint32_t>(send_credits_ + h.credits_granted, 0xffff);
    receive_credit_target_ = h.credits_requested;
    if (h.flags & kFlagResponseRequested) response_requested_ = true;
    if (r->message) {
        Message m;
        m.bytes.assign(r->message->begin(), r->message->end());
        m.invalidated_rkey = r->invalidated_token;
        ready_.push_back(std::move(m));
    }
    refill_receives();
}

void SmbdConnection::handle_negotiate(std::span<const std::byte> msg) {
    auto out = accept_negotiate(Bytes(msg), config_, uint16_t(std::min<uint32_t>(posted_, 0xffff)));
    if (!out) {
        if (counters_) ++counters_->negotiate_failures;
        log("malformed negotiate request: disconnecting (MS-SMBD 3.1.5.6)");
        negotiate_result_ = Status(Error(kDisconnect));
        close("malformed negotiate request");
        return;
    }
    ByteVector resp;
    out->response.serialize(resp);
    // The negotiate response needs no credit: the peer posted its receive before it sent.
    if (free_send_slots_.empty()) {
        negotiate_result_ = Status(Error(NtStatus::InsufficientResources));
        close("no send buffer for the negotiate response");
        return;
    }
    uint32_t slot = free_send_slots_.back();
    free_send_slots_.pop_back();
    std::byte* dst = send_memory_.data() + size_t(slot) * config_.max_send_size;
    std::memcpy(dst, resp.data(), resp.size());
    LocalSegment seg{dst, uint32_t(resp.size()), send_region_->lkey};
    ++sq_in_flight_;
    if (auto st = qp_->post_send(kSendTag | slot, std::span(&seg, 1), std::nullopt); !st) {
        negotiate_result_ = st;
        close("cannot send the negotiate response");
        return;
    }
    if (counters_) ++counters_->sends;
    if (!out->parameters) {
        // A refused version range: the failure response, then a graceful disconnect (3.1.5.3).
        if (counters_) ++counters_->negotiate_failures;
        log("negotiate request refused (status " + std::to_string(out->response.status) +
            "): disconnecting");
        negotiate_result_ = Status(Error(NtStatus::NotSupported));
        // Let the response go out before the disconnect.
        asio::co_spawn(
            ex_,
            [self = shared_from_this()]() -> asio::awaitable<void> {
                asio::steady_timer t(self->ex_, std::chrono::milliseconds(100));
                boost::system::error_code ec;
                co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                self->close("negotiate refused");
            },
            asio::detached);
        return;
    }
    params_ = *out->parameters;
    granted_ = out->response.credits_granted;
    receive_credit_target_ = params_.receive_credit_target;
    reassembler_.emplace(params_.max_fragmented_recv_size);
    negotiated_ = true;
    if (counters_) ++counters_->connections;
    negotiate_result_ = Status{};
}

asio::awaitable<Result<SmbdConnection::Message>> SmbdConnection::receive() {
    while (ready_.empty() && !closed_)
        co_await event_.wait();
    if (closed_) co_return Error(NtStatus::ConnectionDisconnected);
    Message m = std::move(ready_.front());
    ready_.pop_front();
    refill_receives();  // receives held back while messages piled up
    if (need_credit_message()) schedule_credit_message(0);
    co_return m;
}

asio::awaitable<bool> SmbdConnection::wait_send_slot() {
    // A send credit, a send buffer and room on the send queue; the last credit only for a
    // message that grants credits (MS-SMBD 3.1.5.1).
    for (;;) {
        if (closed_) co_return false;
        if (send_credits_ == 1 && posted_ == granted_ && !idle_recv_slots_.empty()) {
            // Post one more receive so that this message can grant it (3.1.5.9).
            uint32_t slot = idle_recv_slots_.back();
            if (post_receive(slot)) idle_recv_slots_.pop_back();
        }
        const bool credit = send_credits_ > 1 || (send_credits_ == 1 && posted_ > granted_);
        if (credit && !free_send_slots_.empty() && sq_in_flight_ < qp_->caps().max_send_wr)
            co_return true;
        co_await event_.wait();
    }
}

asio::awaitable<Status> SmbdConnection::send_fragment(std::span<const Bytes> parts, size_t offset,
                                                      size_t length, uint32_t remaining,
                                                      std::optional<uint32_t> invalidate_rkey,
                                                      bool empty, uint16_t extra_flags) {
    if (!co_await wait_send_slot()) co_return Error(NtStatus::ConnectionDisconnected);
    uint32_t slot = free_send_slots_.back();
    free_send_slots_.pop_back();
    std::byte* dst = send_memory_.data() + size_t(slot) * config_.max_send_size;
    DataTransferHeader h;
    h.credits_requested = config_.send_credit_target;
    h.credits_granted = take_grant();
    --send_credits_;
    // Out of send credits after this one: ask for an answer, which brings new credits.
    h.flags = extra_flags | (send_credits_ == 0 ? kFlagResponseRequested : 0);
    h.remaining_data_length = remaining;
    h.data_offset = empty ? 0 : kDataTransferDataOffset;
    h.data_length = empty ? 0 : uint32_t(length);
    // MS-SMBD 2.2.3: the header; Padding up to DataOffset 24 when a payload follows.
    protocol::store_le16(dst, h.credits_requested);
    protocol::store_le16(dst + 2, h.credits_granted);
    protocol::store_le16(dst + 4, h.flags);
    protocol::store_le16(dst + 6, 0);
    protocol::store_le32(dst + 8, h.remaining_data_length);
    protocol::store_le32(dst + 12, h.data_offset);
    protocol::store_le32(dst + 16, h.data_length);
    size_t size = kDataTransferMinSize;
    if (!empty) {
        std::memset(dst + kDataTransferMinSize, 0, kDataTransferDataOffset - kDataTransferMinSize);
        gather(parts, offset, length, dst + kDataTransferDataOffset);
        size = kDataTransferDataOffset + length;
    }
    LocalSegment seg{dst, uint32_t(size), send_region_->lkey};
    response_requested_ = false;  // any message answers a RESPONSE_REQUESTED
    ++sq_in_flight_;
    if (auto st = qp_->post_send(kSendTag | slot, std::span(&seg, 1), invalidate_rkey); !st) {
        --sq_in_flight_;
        free_send_slots_.push_back(slot);
        close("cannot post a send");
        co_return st;
    }
    if (counters_) {
        ++counters_->sends;
        if (invalidate_rkey) ++counters_->send_invalidates;
    }
    co_return Status{};
}

asio::awaitable<Status> SmbdConnection::send(std::span<const Bytes> parts,
                                             std::optional<uint32_t> invalidate_rkey) {
    while (sending_ && !closed_)
        co_await event_.wait();
    if (closed_) co_return Error(NtStatus::ConnectionDisconnected);
    sending_ = true;
    struct Done {
        SmbdConnection* c;
        ~Done() {
            c->sending_ = false;
            c->event_.notify();
        }
    } done{this};
    const size_t size = total_of(parts);
    auto plan = plan_fragments(size, params_.max_send_size, params_.max_fragmented_send_size);
    if (!plan) {
        log("a message of " + std::to_string(size) + " bytes exceeds what the peer reassembles (" +
            std::to_string(params_.max_fragmented_send_size) + ")");
        co_return Error(plan.status());
    }
    for (size_t i = 0; i < plan->size(); ++i) {
        const auto& f = (*plan)[i];
        const bool last = i + 1 == plan->size();
        auto st = co_await send_fragment(parts, f.offset, f.length, f.remaining_data_length,
                                         last ? invalidate_rkey : std::nullopt, size == 0, 0);
        if (!st) co_return st;
    }
    co_return Status{};
}

asio::awaitable<Status> SmbdConnection::send_empty(uint16_t flags) {
    while (sending_ && !closed_)
        co_await event_.wait();
    if (closed_) co_return Error(NtStatus::ConnectionDisconnected);
    sending_ = true;
    struct Done {
        SmbdConnection* c;
        ~Done() {
            c->sending_ = false;
            c->event_.notify();
        }
    } done{this};
    co_return co_await send_fragment({}, 0, 0, 0, std::nullopt, true, flags);
}

void SmbdConnection::schedule_credit_message(uint16_t flags) {
    if (credit_message_scheduled_ || closed_) return;
    credit_message_scheduled_ = true;
    asio::co_spawn(
        ex_,
        [self = shared_from_this(), flags]() -> asio::awaitable<void> {
            // Still needed? A message sent meanwhile carried the credits or the answer.
            if (self->response_requested_ || self->need_credit_message() || flags)
                (void)co_await self->send_empty(flags);
            self->credit_message_scheduled_ = false;
        },
        asio::detached);
}

asio::awaitable<void> SmbdConnection::keepalive() {
    auto self = shared_from_this();
    std::chrono::steady_clock::time_point sent{};
    while (!closed_) {
        auto deadline = keepalive_outstanding_ ? sent + timers_.keepalive_answer
                                               : last_receive_ + timers_.keepalive_idle;
        keepalive_timer_->expires_at(deadline);
        boost::system::error_code ec;
        co_await keepalive_timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (closed_) break;
        auto now = std::chrono::steady_clock::now();
        if (keepalive_outstanding_) {
            if (now < sent + timers_.keepalive_answer) continue;
            if (counters_) ++counters_->disconnects_on_error;
            log("no answer to a keepalive within " +
                std::to_string(timers_.keepalive_answer.count()) + " ms: disconnecting");
            close("keepalive timeout");
            break;
        }
        if (now - last_receive_ < timers_.keepalive_idle) continue;
        // MS-SMBD 3.1.6.2: idle; ask the peer for a message.
        keepalive_outstanding_ = true;
        sent = now;
        if (counters_) ++counters_->keepalives;
        asio::co_spawn(
            ex_, [self]() { return self->send_empty(kFlagResponseRequested); },
            [](std::exception_ptr, Status) {});
    }
}

asio::awaitable<Status> SmbdConnection::write_to_peer(std::span<const BufferDescriptorV1> remote,
                                                      std::span<const LocalSegment> local) {
    return rdma(true, remote, local);
}

asio::awaitable<Status> SmbdConnection::read_from_peer(std::span<const BufferDescriptorV1> remote,
                                                       std::span<const LocalSegment> local) {
    return rdma(false, remote, local);
}

asio::awaitable<Status> SmbdConnection::rdma(bool write, std::span<const BufferDescriptorV1> remote,
                                             std::span<const LocalSegment> local) {
    if (closed_) co_return Error(NtStatus::ConnectionDisconnected);
    uint64_t remote_total = 0, local_total = 0;
    for (auto& d : remote)
        remote_total += d.length;
    for (auto& l : local)
        local_total += l.length;
    if (remote_total != local_total) co_return Error(NtStatus::InvalidParameter);
    const auto& caps = qp_->caps();
    if (!write && caps.max_rdma_read_outstanding == 0) {
        // The connection exchange granted no RDMA READ depth: a posted read would never complete.
        log("the peer accepted no RDMA READ depth: refusing an RDMA READ of " +
            std::to_string(remote_total) + " bytes");
        co_return Error(NtStatus::InvalidParameter);
    }
    const uint64_t id = next_op_++;
    ops_[id] = RdmaOp{};
    size_t li = 0, loff = 0;  // position in `local`
    std::vector<LocalSegment> sges;
    for (const auto& d : remote) {
        uint64_t roff = 0;
        while (roff < d.length) {
            // One work request: at most max_rdma_size bytes and max_send_sge local pieces.
            uint64_t want = std::min<uint64_t>(d.length - roff, caps.max_rdma_size);
            sges.clear();
            uint64_t got = 0;
            while (got < want && li < local.size() && sges.size() < caps.max_send_sge) {
                const auto& l = local[li];
                if (l.length == 0) {
                    ++li;
                    continue;
                }
                uint64_t n = std::min<uint64_t>(want - got, l.length - loff);
                sges.push_back(LocalSegment{l.addr + loff, uint32_t(n), l.lkey});
                got += n;
                loff += n;
                if (loff == l.length) {
                    ++li;
                    loff = 0;
                }
            }
            // Room on the send queue (the message sends keep their share) and, for READ, under
            // the responder resources the peer accepted.
            const uint32_t sq_limit = std::max<uint32_t>(1, caps.max_send_wr / 2);
            while (!closed_ && (sq_in_flight_ >= sq_limit ||
                                (!write && reads_in_flight_ >= caps.max_rdma_read_outstanding)))
                co_await event_.wait();
            if (closed_) break;
            const uint64_t raddr = d.offset + roff;
            auto st = write ? qp_->post_write(kRdmaTag | id, sges, raddr, d.token)
                            : qp_->post_read(kRdmaTag | id, sges, raddr, d.token);
            if (!st) {
                close(write ? "cannot post an RDMA WRITE" : "cannot post an RDMA READ");
                break;
            }
            ++sq_in_flight_;
            if (!write) ++reads_in_flight_;
            if (trace_)
                log(std::string(write ? "RDMA WRITE" : "RDMA READ") + " op " + std::to_string(id) +
                    " posted: " + std::to_string(got) + " bytes at " + std::to_string(raddr) +
                    " rkey " + std::to_string(d.token) + " reads in flight " +
                    std::to_string(reads_in_flight_) + "/" +
                    std::to_string(caps.max_rdma_read_outstanding));
            ++ops_[id].pending;
            if (counters_) {
                if (write) {
                    ++counters_->rdma_writes;
                    counters_->rdma_write_bytes += got;
                } else {
                    ++counters_->rdma_reads;
                    counters_->rdma_read_bytes += got;
                }
            }
            roff += got;
        }
        if (closed_) break;
    }
    while (!closed_ && ops_[id].pending > 0)
        co_await event_.wait();
    RdmaOp op = ops_[id];
    ops_.erase(id);
    if (closed_) co_return Error(NtStatus::ConnectionDisconnected);
    if (op.failed) {
        if (counters_) ++counters_->disconnects_on_error;
        log(std::string(write ? "RDMA WRITE" : "RDMA READ") + " failed: " + op.error);
        close("RDMA transfer failed");
        co_return Error(NtStatus::ConnectionDisconnected);
    }
    co_return Status{};
}

}  // namespace daxsmbd::smbdirect
