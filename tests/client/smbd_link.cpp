#include "tests/client/smbd_link.h"

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

#include "smbdirect/emulated_provider.h"
#include "smbdirect/verbs_provider.h"

namespace daxsmbd::client {

namespace asio = boost::asio;
using smbdirect::QueuePair;
using smbdirect::SmbdConnection;

struct SmbdLinkCore {
    asio::io_context io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{
        asio::make_work_guard(io)};
    std::thread thread;
    std::thread::id thread_id;
    std::promise<void> stopped;
    std::future<void> stopped_future = stopped.get_future();
    // The loop's thread runs: calls are posted to it (otherwise they run where they are made).
    std::atomic<bool> running{false};

    // On the loop's thread only.
    std::shared_ptr<SmbdConnection> conn;

    // Shared between the loop's thread and the caller's.
    mutable std::mutex mu;
    std::condition_variable cv;
    std::deque<MessageLink::Message> inbox;
    bool up = false;
    std::string reason;

    // Runs `f` (which does not block) on the loop's thread and returns its result. Made from
    // the thread that owns the link (the link's destruction does not race with it).
    template <class F>
    std::invoke_result_t<F&> call(F f) {
        using R = std::invoke_result_t<F&>;
        if (!running || std::this_thread::get_id() == thread_id) return f();
        std::packaged_task<R()> task(std::move(f));
        auto result = task.get_future();
        asio::post(io, [&task] { task(); });
        return result.get();
    }

    void set_down(const std::string& why) {
        std::lock_guard lk(mu);
        up = false;
        if (reason.empty()) reason = why.empty() ? "disconnected" : why;
        cv.notify_all();
    }
};

namespace {

// Takes every message off the connection as it arrives (so that the receive goes back to the
// device and its credit to the peer, MS-SMBD 3.1.5.9) until the connection is down.
asio::awaitable<void> take_messages(std::shared_ptr<SmbdLinkCore> core,
                                    std::shared_ptr<SmbdConnection> conn) {
    for (;;) {
        auto m = co_await conn->receive();
        if (!m) {
            core->set_down(conn->close_reason());
            co_return;
        }
        std::lock_guard lk(core->mu);
        core->inbox.push_back(MessageLink::Message{std::move(m->bytes), m->invalidated_rkey});
        core->cv.notify_all();
    }
}

// MS-SMBD 3.1.5.2: the negotiate request and its response; then the messages flow.
asio::awaitable<Status> negotiate(std::shared_ptr<SmbdLinkCore> core) {
    std::shared_ptr<SmbdConnection> conn = core->conn;
    Status st = co_await conn->connect();
    if (!st) {
        core->set_down(conn->close_reason());
        co_return st;
    }
    {
        std::lock_guard lk(core->mu);
        core->up = true;
    }
    asio::co_spawn(core->io, take_messages(core, conn), asio::detached);
    co_return st;
}

asio::awaitable<Status> send_message(std::shared_ptr<SmbdLinkCore> core,
                                     std::shared_ptr<ByteVector> message) {
    std::shared_ptr<SmbdConnection> conn = core->conn;
    if (!conn || conn->closed()) co_return Error(local_status::kDisconnected);
    std::array<Bytes, 1> parts{Bytes(*message)};
    Status st = co_await conn->send(parts);
    if (!st && st.status() == NtStatus::ConnectionDisconnected)
        co_return Error(local_status::kDisconnected);
    co_return st;
}

using QueuePairResult = Result<std::unique_ptr<QueuePair>>;

// Sets `done` itself: co_spawn's completion handler wants a default-constructible result.
asio::awaitable<void> connect_verbs_queue_pair(
    std::shared_ptr<SmbdLinkCore> core, asio::ip::address address, uint16_t port,
    std::shared_ptr<std::string> why, std::shared_ptr<std::promise<QueuePairResult>> done) {
    // The receives for the negotiate response are posted by SmbdConnection::connect() before
    // it sends the request (MS-SMBD 3.1.5.2), which is in time: the server speaks second.
    auto qp = co_await smbdirect::VerbsQueuePair::connect(
        core->io, address, port, smbdirect::QueuePairRequest{}, {}, why.get());
    if (!qp)
        done->set_value(Error(qp.status()));
    else
        done->set_value(std::unique_ptr<QueuePair>(std::move(*qp)));
}

// Waits for `f` within `timeout`; kTimeout otherwise (the operation goes on, its result is
// dropped).
template <class T>
Result<T> wait_for(std::future<Result<T>>& f, std::chrono::milliseconds timeout) {
    if (f.wait_for(timeout) != std::future_status::ready) return Error(local_status::kTimeout);
    return f.get();
}

}  // namespace

SmbdLink::SmbdLink() : SmbdLink(Options{}) {}

SmbdLink::SmbdLink(Options options)
    : core_(std::make_shared<SmbdLinkCore>()), options_(std::move(options)) {
    core_->thread = std::thread([c = core_.get()] {
        c->io.run();
        c->stopped.set_value();
    });
    core_->thread_id = core_->thread.get_id();
    core_->running = true;
}

SmbdLink::~SmbdLink() {
    SmbdLinkCore& core = *core_;
    if (!core.running) return;
    // The connection closes and goes on its own thread: the queue pair is destroyed on its
    // loop (smbdirect/provider.h). Its coroutines end once it is closed, and the loop with
    // them; a loop that does not end in time is stopped.
    asio::post(core.io, [c = &core] {
        if (c->conn) c->conn->close("closed by the client");
        c->conn.reset();
    });
    core.work.reset();
    if (core.stopped_future.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
        core.io.stop();
    core.thread.join();
    core.running = false;
    core.set_down("closed by the client");
}

asio::any_io_executor SmbdLink::executor() {
    return core_->io.get_executor();
}

Status SmbdLink::connect(std::unique_ptr<QueuePair> qp) {
    if (!qp) return Error(local_status::kDisconnected);
    auto core = core_;
    auto done = std::make_shared<std::promise<Status>>();
    auto result = done->get_future();
    auto holder = std::make_shared<std::unique_ptr<QueuePair>>(std::move(qp));
    asio::post(core->io, [core, holder, done, o = options_] {
        core->conn = std::make_shared<SmbdConnection>(
            std::move(*holder), o.config, core->io.get_executor(), nullptr, o.log, o.timers);
        asio::co_spawn(core->io, negotiate(core), [done](std::exception_ptr e, Status st) {
            done->set_value(e ? Status(Error(NtStatus::InternalError)) : st);
        });
    });
    if (result.wait_for(options_.timeout) != std::future_status::ready) {
        close();
        return Error(local_status::kTimeout);
    }
    Status st = result.get();
    if (st) params_ = core->call([core] { return core->conn->parameters(); });
    return st;
}

Result<std::unique_ptr<SmbdLink>> SmbdLink::connect_verbs(const std::string& address, uint16_t port,
                                                          Options options, std::string* error) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(address, ec);
    if (ec) {
        if (error) *error = "not an IP address: " + address;
        return Error(NtStatus::InvalidParameter);
    }
    auto link = std::make_unique<SmbdLink>(std::move(options));
    auto core = link->core_;
    auto done = std::make_shared<std::promise<QueuePairResult>>();
    auto result = done->get_future();
    auto why = std::make_shared<std::string>();
    asio::post(core->io, [core, addr, port, done, why] {
        asio::co_spawn(core->io, connect_verbs_queue_pair(core, addr, port, why, done),
                       asio::detached);
    });
    // Address and route resolution and the connection itself have their own limits (9 s).
    auto qp = wait_for(result, link->options_.timeout + std::chrono::seconds(10));
    if (!qp) {
        if (error) *error = why->empty() ? "RDMA connect failed" : *why;
        return Error(qp.status());
    }
    if (auto st = link->connect(std::move(*qp)); !st) {
        if (error) *error = "SMB Direct negotiation failed: " + link->close_reason();
        return Error(st.status());
    }
    return link;
}

Status SmbdLink::send(Bytes message) {
    auto core = core_;
    if (!connected()) return Error(local_status::kDisconnected);
    // A copy: the send may still wait for a credit when this call gives up.
    auto copy = std::make_shared<ByteVector>(message.begin(), message.end());
    auto done = std::make_shared<std::promise<Status>>();
    auto result = done->get_future();
    asio::post(core->io, [core, copy, done] {
        asio::co_spawn(core->io, send_message(core, copy), [done](std::exception_ptr e, Status st) {
            done->set_value(e ? Status(Error(NtStatus::InternalError)) : st);
        });
    });
    return wait_for(result, options_.timeout);
}

Result<MessageLink::Message> SmbdLink::receive(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lk(core_->mu);
    core_->cv.wait_until(lk, deadline, [&] { return !core_->inbox.empty() || !core_->up; });
    if (!core_->inbox.empty()) {
        Message m = std::move(core_->inbox.front());
        core_->inbox.pop_front();
        return m;
    }
    if (!core_->up) return Error(local_status::kDisconnected);
    return Error(local_status::kTimeout);
}

bool SmbdLink::connected() const {
    std::lock_guard lk(core_->mu);
    return core_->up;
}

void SmbdLink::close() {
    auto core = core_;
    core->call([core] {
        if (core->conn) core->conn->close("closed by the client");
    });
    core->set_down("closed by the client");
}

std::string SmbdLink::close_reason() const {
    std::lock_guard lk(core_->mu);
    return core_->reason;
}

SmbdLink::Registration::Registration(std::shared_ptr<SmbdLinkCore> core,
                                     std::unique_ptr<smbdirect::MemoryRegion> region,
                                     std::span<std::byte> memory)
    : core_(std::move(core)), region_(std::move(region)), memory_(memory), rkey_(region_->rkey) {}

SmbdLink::Registration::~Registration() {
    core_->call([this] { region_.reset(); });
}

smbdirect::BufferDescriptorV1 SmbdLink::Registration::descriptor() const {
    return descriptor(0, uint32_t(memory_.size()));
}

smbdirect::BufferDescriptorV1 SmbdLink::Registration::descriptor(size_t offset,
                                                                 uint32_t length) const {
    return smbdirect::BufferDescriptorV1{
        uint64_t(reinterpret_cast<uintptr_t>(memory_.data())) + offset, rkey_, length};
}

Result<std::unique_ptr<SmbdLink::Registration>> SmbdLink::register_buffer(
    std::span<std::byte> memory, bool remote_write) {
    auto core = core_;
    std::string why;
    // Remote write needs local write too (ibv_reg_mr); a WRITE's data is only read remotely.
    const unsigned bits = remote_write
                              ? smbdirect::access::kLocalWrite | smbdirect::access::kRemoteWrite
                              : smbdirect::access::kRemoteRead;
    std::unique_ptr<smbdirect::MemoryRegion> region =
        core->call([&]() -> std::unique_ptr<smbdirect::MemoryRegion> {
            if (!core->conn) return nullptr;
            return core->conn->queue_pair().domain().register_memory(memory.data(), memory.size(),
                                                                     bits, &why);
        });
    if (!region) return Error(NtStatus::InsufficientResources);
    return std::unique_ptr<Registration>(new Registration(core, std::move(region), memory));
}

std::optional<bool> SmbdLink::token_valid(uint32_t rkey) {
    auto core = core_;
    return core->call([&]() -> std::optional<bool> {
        if (!core->conn) return std::nullopt;
        auto* qp = dynamic_cast<smbdirect::EmulatedQueuePair*>(&core->conn->queue_pair());
        if (!qp) return std::nullopt;
        // Written by the peer's thread (a Send with Invalidate) before the completion that
        // carried it to this loop, which the caller has seen.
        auto& regions = qp->emulated_domain().regions;
        auto it = regions.find(rkey);
        return it != regions.end() && it->second.valid;
    });
}

}  // namespace daxsmbd::client
