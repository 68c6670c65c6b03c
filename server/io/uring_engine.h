// The io_uring engine of one event loop (architecture.md "Data paths", block path): file reads,
// writes and fsyncs are submitted to io_uring and complete as C++20 awaitables on
// the loop's executor, so no event loop ever waits for the disk.
//
// How a request flows:
//   - An operation takes a submission queue entry (SQE) and parks its coroutine. SQEs are not
//     submitted one by one: the first SQE of a loop iteration posts one submit task to the
//     loop, which runs after the handlers already queued there, so every SQE prepared in the
//     same iteration goes to the kernel with a single io_uring_enter (batched submission).
//   - Completions wake the loop through an eventfd registered with each ring
//     (io_uring_register_eventfd) and watched by an asio posix::stream_descriptor; the reaper
//     takes every completion queue entry (CQE) waiting, advances the CQ, then resumes the
//     parked coroutines in order.
//   - The wait on the eventfd is only armed while operations are outstanding, so an
//     io_context without other work still runs out of work (tests run it to completion).
//
// Rings of an engine (each created only when some share asks for it):
//   Normal  every operation of shares without io sqpoll; always present.
//   SqPoll  IORING_SETUP_SQPOLL: a kernel thread polls the submission queue, so submitting
//           needs no system call while it is awake. All engines of a server share one such
//           thread (IORING_SETUP_ATTACH_WQ) instead of spending a core each.
//   Polled  IORING_SETUP_IOPOLL: O_DIRECT reads and writes on devices with poll queues complete
//           without an interrupt; nothing signals them, so while polled operations are
//           outstanding the loop polls the ring between its other work (the "hipri" mode).
//           Only O_DIRECT reads/writes may go there (the kernel refuses everything else on an
//           IOPOLL ring); fsync of such shares uses the Normal ring.
// A ring that cannot be set up (old kernel, no privilege) is logged once and its operations go
// to the Normal ring. If io_uring itself is unavailable (kernel.io_uring_disabled, seccomp) the
// operations run as plain system calls on the blocking pool, again with one log line.
//
// Registered (fixed) buffers: the slabs of BufferPool are registered as fixed buffers once per
// ring (slab i = buffer index i, registered as the pool hands out new slabs); a read into a pool
// buffer or a write from a received frame uses IORING_OP_READ_FIXED / WRITE_FIXED, sparing the
// kernel the page pinning of every request. Memory outside the slabs uses plain READ/WRITE.
//
// Fixed files are not used. An open's descriptor would have to be registered in the ring of
// every loop that touches it (a multichannel open is used from several loops), and unregistered
// from each when the open closes, which can happen on any thread; that is two io_uring_register
// system calls per open and ring, paid by every CREATE/CLOSE pair (clients open and close a file
// for every small transfer), against the one saving of a file reference count per I/O, which is
// noise next to copying 64 KiB to 8 MiB. SQPOLL no longer needs fixed files since Linux 5.11.
//
// Threading: an Engine belongs to one event loop; every member function is called from that
// loop's thread (the results come back on it too).
#pragma once

#include <liburing.h>
#include <sys/stat.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "server/io/splice_pipe.h"
#include "server/vfs/fs_credentials.h"

namespace daxsmbd::server::io {

namespace asio = boost::asio;

enum class RingKind : uint8_t { Normal = 0, SqPoll = 1, Polled = 2 };
inline constexpr size_t kRingKinds = 3;

// Where an operation goes and whom the kernel runs it as: the ring, and the user whose
// credentials it carries (vfs/fs_credentials.h; null: the daemon's own). Ring operations carry
// the user's registered personality (IORING_REGISTER_PERSONALITY, registered once per user and
// ring, then cached); the ones the engine makes itself (inline writes, no ring) switch the
// thread's file-system credentials around the system call.
struct Submit {
    Submit(RingKind k, const vfs::UnixIdentity* who = nullptr) : ring(k), as(who) {}
    RingKind ring;
    const vfs::UnixIdentity* as;
};

struct EngineOptions {
    unsigned entries = 256;  // SQ size of each ring (the CQ is twice that; overflow is kept)
    bool sqpoll = false;     // set up the SqPoll ring
    bool iopoll = false;     // set up the Polled ring
    // The SqPoll ring of another engine whose kernel thread this one shares (-1: own thread).
    int sqpoll_attach_fd = -1;
    unsigned sqpoll_idle_ms = 20;  // the SQ thread sleeps after this long without work
    bool register_buffers = true;  // register the slabs of `buffers` as fixed buffers
    // The server's buffer pool: its slabs are the fixed buffers, and the block path takes its
    // bounce buffers from it. Null (tests): the engine makes a pool of its own.
    BufferPool* buffers = nullptr;
    // Tests: behave as if io_uring were unavailable (system calls on the blocking pool).
    bool force_no_ring = false;
    // Runs the system calls when there is no ring; null: run them inline (tests only).
    asio::thread_pool* blocking_pool = nullptr;
    const char* name = "io";  // in log lines
    // The loop's thread never changes its credentials (small writes of users go through the
    // ring instead of inline): SMB Direct's kernel files refuse a thread whose credentials
    // changed after they were opened (vfs::credential_switches_on_this_thread).
    bool keep_loop_credentials = false;
};

// One completion queue entry as reaped, in order, for tests of completion ordering.
struct CompletionRecord {
    uint8_t opcode = 0;  // IORING_OP_*
    int32_t res = 0;
};

// Counters of one engine (written by its loop, readable from any thread).
struct EngineStats {
    std::atomic<uint64_t> submit_calls{0};  // io_uring_submit calls that passed SQEs on
    std::atomic<uint64_t> sqes{0};          // SQEs submitted
    std::atomic<uint64_t> fixed_buffer_ops{0};
    std::atomic<uint64_t> polled_ops{0};
    std::atomic<uint64_t> fallback_ops{0};         // operations run on the blocking pool (no ring)
    std::atomic<uint64_t> inline_writes{0};        // small buffered writes done on the loop
    std::atomic<uint64_t> inline_write_stalls{0};  // ... of which blocked long (see below)
    std::atomic<uint64_t> splices{0};              // file-to-pipe splices (IORING_OP_SPLICE)
    // READs whose data was spliced into a pipe for the transport (splice_pipe.h), and their
    // bytes: the proof for tests which path served a READ.
    std::atomic<uint64_t> spliced_reads{0};
    std::atomic<uint64_t> spliced_bytes{0};
};

// f() with the calling thread's file-system credentials switched to `who` (fs_credentials.h).
template <class F>
int as_user(const vfs::UnixIdentity* who, F& f) {
    vfs::FsCredentials guard(who);
    return f();
}

class Engine {
  public:
    Engine(asio::any_io_executor ex, EngineOptions opts = {});
    // The pool whose buffers this engine's rings know as fixed buffers (EngineOptions::buffers).
    BufferPool& buffers() { return *opts_.buffers; }
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Whether io_uring works at all here, and whether a ring of this kind was set up.
    bool uring_available() const { return rings_[0] != nullptr; }
    bool has_ring(RingKind k) const { return rings_[size_t(k)] != nullptr; }
    // The SqPoll ring's descriptor, for other engines to attach to (-1 if none).
    int sqpoll_fd() const;
    bool fixed_buffers(RingKind k) const;
    const EngineStats& stats() const { return stats_; }
    const asio::any_io_executor& executor() const { return ex_; }

    // Results are what the system call returns: bytes (>= 0) or -errno. One SQE each; a short
    // transfer is the caller's to continue. A kind whose ring is missing uses Normal.
    asio::awaitable<int> read(Submit k, int fd, std::byte* buf, size_t len, uint64_t offset);
    asio::awaitable<int> write(Submit k, int fd, const std::byte* buf, size_t len, uint64_t offset);
    // A small buffered (not O_DIRECT, not write-through) write: written with pwrite on the
    // loop's thread instead of through the ring, unless a recent one blocked for longer than
    // kInlineStall (then the ring, for kInlinePause). Callers decide what "small" is (the
    // share's "aio write size").
    asio::awaitable<int> write_small_buffered(Submit k, int fd, const std::byte* buf, size_t len,
                                              uint64_t offset);
    static constexpr std::chrono::microseconds kInlineStall{500};
    static constexpr std::chrono::milliseconds kInlinePause{2000};
    bool inline_writes_paused() const;
    asio::awaitable<int> fsync(Submit k, int fd, bool datasync);
    // Splices up to `len` bytes of file `fd` at `offset` into the pipe `pipe_write_fd`
    // (IORING_OP_SPLICE, SPLICE_F_NONBLOCK: -EAGAIN rather than waiting for pipe space). The
    // kernel runs it on an io-wq worker, so a page-cache miss never blocks the loop.
    asio::awaitable<int> splice_to_pipe(Submit k, int fd, uint64_t offset, int pipe_write_fd,
                                        size_t len);
    // Pipes for spliced READs (splice_pipe.h), one pool per engine, i.e. per event loop.
    PipePool& pipes() { return *pipes_; }
    // Counts a READ served through a pipe (EngineStats::spliced_reads).
    void note_spliced_read(size_t bytes) {
        ++stats_.spliced_reads;
        stats_.spliced_bytes += bytes;
    }
    // A write and an fdatasync linked (IOSQE_IO_LINK): the fsync starts only after the write
    // completed, and the awaitable resumes only after both CQEs arrived. If the write fails or
    // is short, the kernel cancels the fsync (-ECANCELED).
    struct WriteSyncResult {
        int write = 0;
        int sync = 0;
    };
    asio::awaitable<WriteSyncResult> write_then_datasync(Submit k, int fd, const std::byte* buf,
                                                         size_t len, uint64_t offset);

    // Tests: every CQE reaped from now on is appended here (null: stop recording).
    void set_completion_trace(std::vector<CompletionRecord>* trace) { trace_ = trace; }

  private:
    struct Ring;
    struct Op;
    template <class Handler>
    struct HandlerOp;
    struct OpResult {
        int res[2] = {0, 0};
    };

    // Prepares the SQEs of one operation (1 or 2 linked ones) on ring `k`; returns false when
    // it could not (the operation then completes with -EBUSY).
    enum class Direction : uint8_t { Read, Write };
    using Clock = std::chrono::steady_clock;
    asio::awaitable<int> transfer(Submit k, Direction d, int fd, std::byte* buf, size_t len,
                                  uint64_t offset);
    template <class Prep>
    asio::awaitable<OpResult> run_op(Submit k, unsigned nsqe, Prep prep);
    void start_op(Op* op, Submit k, unsigned nsqe, void* prep_ctx,
                  bool (*prep)(void*, Engine&, Ring&, io_uring_sqe**));
    // The personality id of `who` on ring `r` (0: the submitter's own credentials, i.e. the
    // daemon's), registering it on first use; -errno when the kernel refused to register it.
    int personality_for(Ring& r, const vfs::UnixIdentity* who);
    Ring* ring_for(RingKind k);
    RingKind kind_for(RingKind k) const;
    // Fixed buffer index for [p, p + len) on this ring, registering new slabs first; -1: none.
    int fixed_index(Ring& r, const void* p, size_t len);
    void schedule_submit();
    void submit_all();
    void arm_wait();
    void on_eventfd();
    void schedule_poll();
    void reap(Ring& r);
    void complete(Op* op, unsigned slot, int res);
    bool setup_ring(RingKind k);

    asio::any_io_executor ex_;
    EngineOptions opts_;
    std::unique_ptr<BufferPool> own_buffers_;  // when EngineOptions::buffers is null
    std::unique_ptr<Ring> rings_[kRingKinds];
    int eventfd_ = -1;
    std::unique_ptr<asio::posix::stream_descriptor> efd_stream_;
    bool wait_armed_ = false;
    bool submit_posted_ = false;
    bool poll_posted_ = false;
    size_t outstanding_signalled_ = 0;  // operations on rings that signal the eventfd
    std::shared_ptr<bool> alive_;       // posted tasks check it (the engine may be gone)
    std::vector<CompletionRecord>* trace_ = nullptr;
    EngineStats stats_;
    std::shared_ptr<PipePool> pipes_;
    Clock::time_point inline_paused_until_{};

    // Operations without a ring (blocking-pool system calls).
    template <class F>
    asio::awaitable<int> fallback(const vfs::UnixIdentity* who, F f);
};

// An operation waiting for its CQE(s). user_data of an SQE is the Op's address with the slot
// (0 or 1) in the low bit.
struct Engine::Op {
    void (*fire)(Op*, OpResult) = nullptr;  // resumes the waiter and frees the op
    void (*destroy)(Op*) = nullptr;         // frees the op without resuming (shutdown)
    Engine* engine = nullptr;
    OpResult result;
    uint8_t opcode[2] = {0, 0};
    uint8_t pending = 0;  // CQEs still to come
    RingKind ring = RingKind::Normal;
};

template <class Handler>
struct Engine::HandlerOp final : Op {
    explicit HandlerOp(Handler&& h) : handler(std::move(h)) {
        fire = &do_fire;
        destroy = &do_destroy;
    }
    Handler handler;
    using Alloc = asio::recycling_allocator<HandlerOp>;

    static HandlerOp* make(Handler&& h) {
        Alloc a;
        HandlerOp* p = a.allocate(1);
        return new (p) HandlerOp(std::move(h));
    }
    static void free(HandlerOp* p) {
        p->~HandlerOp();
        Alloc a;
        a.deallocate(p, 1);
    }
    static void do_fire(Op* base, OpResult r) {
        auto* self = static_cast<HandlerOp*>(base);
        Handler h = std::move(self->handler);
        auto ex = asio::get_associated_executor(h, self->engine->ex_);
        free(self);
        // On the loop's own thread this resumes the coroutine right here.
        asio::dispatch(ex, [h = std::move(h), r]() mutable { std::move(h)(r); });
    }
    static void do_destroy(Op* base) { free(static_cast<HandlerOp*>(base)); }
};

template <class Prep>
asio::awaitable<Engine::OpResult> Engine::run_op(Submit k, unsigned nsqe, Prep prep) {
    auto init = [this, k, nsqe, &prep](auto handler) {
        using H = decltype(handler);
        auto* op = HandlerOp<H>::make(std::move(handler));
        op->engine = this;
        start_op(op, k, nsqe, &prep, [](void* ctx, Engine& e, Ring& r, io_uring_sqe** sqes) {
            return (*static_cast<Prep*>(ctx))(e, r, sqes);
        });
    };
    co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(OpResult)>(
        init, asio::use_awaitable);
}

template <class F>
asio::awaitable<int> Engine::fallback(const vfs::UnixIdentity* who, F f) {
    ++stats_.fallback_ops;
    if (!opts_.blocking_pool) co_return as_user(who, f);
    auto home = ex_;
    // Bound to the pool, or the coroutine would resume on the loop and run f() there.
    co_await asio::post(*opts_.blocking_pool,
                        asio::bind_executor(*opts_.blocking_pool, asio::use_awaitable));
    int r = as_user(who, f);
    co_await asio::post(home, asio::use_awaitable);
    co_return r;
}

}  // namespace daxsmbd::server::io
