#include "server/io/uring_engine.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "server/buffer_pool.h"
#include "server/log.h"

namespace daxsmbd::server::io {

namespace {

const char* kind_name(RingKind k) {
    switch (k) {
        case RingKind::Normal:
            return "normal";
        case RingKind::SqPoll:
            return "sqpoll";
        case RingKind::Polled:
            return "iopoll";
    }
    return "?";
}

// Reads and writes are capped at 1 GiB per SQE (the result is an int); callers continue.
constexpr size_t kMaxPerSqe = size_t(1) << 30;

}  // namespace

struct Engine::Ring {
    io_uring ring{};
    RingKind kind = RingKind::Normal;
    // Registered personalities by identity serial (fs_credentials.h).
    std::unordered_map<uint64_t, uint16_t> personalities;
    bool fixed_ok = false;
    size_t registered_slabs = 0;
    size_t outstanding = 0;
    bool initialised = false;
    ~Ring() {
        if (initialised) io_uring_queue_exit(&ring);
    }
};

Engine::Engine(asio::any_io_executor ex, EngineOptions opts)
    : ex_(std::move(ex)),
      opts_(opts),
      alive_(std::make_shared<bool>(true)),
      pipes_(PipePool::make(opts.name)) {
    if (!opts_.buffers) {
        own_buffers_ = std::make_unique<BufferPool>();
        opts_.buffers = own_buffers_.get();
    }
    if (opts_.force_no_ring) return;
    eventfd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (eventfd_ < 0) {
        log_error(opts_.name, ": eventfd: ", std::strerror(errno),
                  "; file I/O runs on the blocking pool");
        return;
    }
    efd_stream_ = std::make_unique<asio::posix::stream_descriptor>(ex_, eventfd_);
    if (!setup_ring(RingKind::Normal)) return;
    if (opts_.sqpoll) setup_ring(RingKind::SqPoll);
    if (opts_.iopoll) setup_ring(RingKind::Polled);
}

bool Engine::setup_ring(RingKind k) {
    auto r = std::make_unique<Ring>();
    r->kind = k;
    io_uring_params p{};
    p.flags = IORING_SETUP_CLAMP;
    if (k == RingKind::SqPoll) {
        p.flags |= IORING_SETUP_SQPOLL;
        p.sq_thread_idle = opts_.sqpoll_idle_ms;
        if (opts_.sqpoll_attach_fd >= 0) {
            p.flags |= IORING_SETUP_ATTACH_WQ;
            p.wq_fd = uint32_t(opts_.sqpoll_attach_fd);
        }
    } else if (k == RingKind::Polled) {
        p.flags |= IORING_SETUP_IOPOLL;
    }
    int ret = io_uring_queue_init_params(opts_.entries, &r->ring, &p);
    if (ret < 0) {
        if (k == RingKind::Normal)
            log_error(opts_.name, ": io_uring unavailable (", std::strerror(-ret),
                      "); file I/O runs as system calls on the blocking pool");
        else
            log_info(opts_.name, ": io_uring ", kind_name(k), " ring refused by the kernel (",
                     std::strerror(-ret), "); its I/O uses the normal ring");
        return false;  // io_uring_queue_init_params leaves nothing to tear down
    }
    r->initialised = true;
    // The polled ring is reaped by polling, never by the eventfd.
    if (k != RingKind::Polled) {
        ret = io_uring_register_eventfd(&r->ring, eventfd_);
        if (ret < 0) {
            log_error(opts_.name, ": io_uring_register_eventfd: ", std::strerror(-ret));
            if (k == RingKind::Normal) {
                log_error(opts_.name, ": file I/O runs as system calls on the blocking pool");
            }
            return false;
        }
    }
    if (opts_.register_buffers) {
        ret = io_uring_register_buffers_sparse(&r->ring, unsigned(BufferPool::kMaxSlabs));
        if (ret < 0)
            log_info(opts_.name, ": ", kind_name(k), " ring: no fixed buffers (",
                     std::strerror(-ret), "); reads and writes pin pages per request");
        else
            r->fixed_ok = true;
    }
    log_debug(opts_.name, ": io_uring ", kind_name(k), " ring ready (", p.sq_entries, " entries",
              r->fixed_ok ? ", fixed buffers" : "", ")");
    rings_[size_t(k)] = std::move(r);
    return true;
}

Engine::~Engine() {
    *alive_ = false;
    // The kernel may still be reading into or writing from buffers of outstanding operations:
    // wait for each CQE (file I/O finishes; it cannot be abandoned), then free the operations
    // without resuming their coroutines (the loop has stopped).
    for (auto& rp : rings_) {
        if (!rp) continue;
        Ring& r = *rp;
        io_uring_submit(&r.ring);
        while (r.outstanding > 0) {
            io_uring_cqe* cqe = nullptr;
            int ret = r.kind == RingKind::Polled ? io_uring_get_events(&r.ring)
                                                 : io_uring_wait_cqe(&r.ring, &cqe);
            if (ret < 0 && ret != -EINTR && ret != -EAGAIN) break;
            while (io_uring_peek_cqe(&r.ring, &cqe) == 0 && cqe) {
                auto tag = uintptr_t(io_uring_cqe_get_data(cqe));
                io_uring_cqe_seen(&r.ring, cqe);
                auto* op = reinterpret_cast<Op*>(tag & ~uintptr_t(1));
                if (op && --op->pending == 0) {
                    --r.outstanding;
                    op->destroy(op);
                }
            }
        }
    }
    for (auto& r : rings_)
        r.reset();
    if (efd_stream_) {
        boost::system::error_code ec;
        efd_stream_->close(ec);  // closes eventfd_
    } else if (eventfd_ >= 0) {
        ::close(eventfd_);
    }
}

int Engine::sqpoll_fd() const {
    auto& r = rings_[size_t(RingKind::SqPoll)];
    return r ? r->ring.ring_fd : -1;
}

bool Engine::fixed_buffers(RingKind k) const {
    auto& r = rings_[size_t(k)];
    return r && r->fixed_ok;
}

RingKind Engine::kind_for(RingKind k) const {
    return rings_[size_t(k)] ? k : RingKind::Normal;
}

Engine::Ring* Engine::ring_for(RingKind k) {
    return rings_[size_t(kind_for(k))].get();
}

int Engine::fixed_index(Ring& r, const void* p, size_t len) {
    if (!r.fixed_ok) return -1;
    auto& pool = *opts_.buffers;
    int slab = pool.slab_of(p, len);
    if (slab < 0) return -1;
    if (size_t(slab) >= r.registered_slabs) {
        // Register every slab the pool has handed out since the last time, in one call.
        const size_t have = pool.slab_count();
        std::vector<iovec> iov;
        for (size_t i = r.registered_slabs; i < have; ++i)
            iov.push_back({pool.slab_base(i), BufferPool::kSlabSize});
        int ret = io_uring_register_buffers_update_tag(&r.ring, unsigned(r.registered_slabs),
                                                       iov.data(), nullptr, unsigned(iov.size()));
        if (ret < 0) {
            log_info(opts_.name, ": ", kind_name(r.kind),
                     " ring: registering buffer slabs failed (", std::strerror(-ret),
                     "); plain reads and writes from now on");
            r.fixed_ok = false;
            return -1;
        }
        r.registered_slabs = have;
    }
    ++stats_.fixed_buffer_ops;
    return slab;
}

// Registered personalities per ring before the cache starts over (each is a reference to a
// credentials object in the kernel; distinct identities are few: users times group changes).
constexpr size_t kMaxPersonalities = 4096;

int Engine::personality_for(Ring& r, const vfs::UnixIdentity* who) {
    if (who == nullptr || !vfs::credentials_switchable()) return 0;
    if (auto it = r.personalities.find(who->serial); it != r.personalities.end()) return it->second;
    if (r.personalities.size() >= kMaxPersonalities) {
        // Requests already submitted hold their own reference to their credentials.
        for (const auto& [serial, id] : r.personalities)
            io_uring_unregister_personality(&r.ring, id);
        r.personalities.clear();
    }
    int id = -EINVAL;
    {
        // The kernel records the calling thread's credentials as they are now: those of a
        // short-lived thread that switches to `who`, so that the loop's own never change
        // (vfs::credential_switches_on_this_thread: SMB Direct needs them unchanged).
        std::thread registrar([&] {
            vfs::FsCredentials as(who);
            id = io_uring_register_personality(&r.ring);
        });
        registrar.join();
    }
    if (id < 0) {
        log_error(opts_.name, ": ", kind_name(r.kind), " ring: registering the credentials of uid ",
                  who->uid, " failed (", std::strerror(-id), "); its I/O fails");
        return id;
    }
    r.personalities.emplace(who->serial, uint16_t(id));
    return id;
}

void Engine::start_op(Op* op, Submit sub, unsigned nsqe, void* prep_ctx,
                      bool (*prep)(void*, Engine&, Ring&, io_uring_sqe**)) {
    Ring& r = *ring_for(sub.ring);
    op->ring = r.kind;
    const int personality = personality_for(r, sub.as);
    if (personality < 0) {
        op->result.res[0] = op->result.res[1] = personality;
        asio::post(ex_, [op] { op->fire(op, op->result); });
        return;
    }
    if (io_uring_sq_space_left(&r.ring) < nsqe) {
        // The queue filled up within one loop iteration: hand it over now.
        int ret = io_uring_submit(&r.ring);
        if (ret > 0) {
            ++stats_.submit_calls;
            stats_.sqes += unsigned(ret);
        }
        if (r.kind == RingKind::SqPoll) io_uring_sqring_wait(&r.ring);
    }
    io_uring_sqe* sqes[2] = {nullptr, nullptr};
    for (unsigned i = 0; i < nsqe; ++i)
        sqes[i] = io_uring_get_sqe(&r.ring);
    if (!sqes[0] || (nsqe == 2 && !sqes[1])) {
        // Cannot happen after the submit above for a normal ring; never leave a half-taken
        // pair in the queue.
        for (auto* s : sqes)
            if (s) io_uring_prep_nop(s), io_uring_sqe_set_data(s, nullptr);
        op->result.res[0] = op->result.res[1] = -EBUSY;
        asio::post(ex_, [op] { op->fire(op, op->result); });
        schedule_submit();
        return;
    }
    prep(prep_ctx, *this, r, sqes);
    for (unsigned i = 0; i < nsqe; ++i) {
        sqes[i]->personality = uint16_t(personality);
        op->opcode[i] = sqes[i]->opcode;
        io_uring_sqe_set_data(sqes[i], reinterpret_cast<void*>(uintptr_t(op) | i));
    }
    op->pending = uint8_t(nsqe);
    ++r.outstanding;
    if (r.kind == RingKind::Polled) {
        ++stats_.polled_ops;
    } else {
        ++outstanding_signalled_;
    }
    schedule_submit();
    if (r.kind == RingKind::Polled) schedule_poll();
    // The eventfd wait is armed by submit_all, once the operation is in the kernel and did not
    // complete during the submission itself.
}

void Engine::schedule_submit() {
    if (submit_posted_) return;
    submit_posted_ = true;
    asio::post(ex_, [this, alive = alive_] {
        if (!*alive) return;
        submit_posted_ = false;
        submit_all();
    });
}

void Engine::submit_all() {
    for (auto& rp : rings_) {
        if (!rp || io_uring_sq_ready(&rp->ring) == 0) continue;
        // Many operations complete inside io_uring_enter (a read from the page cache, a write
        // on a file system with non-blocking buffered writes): take their CQEs right here
        // instead of through the eventfd, which would cost an epoll wake-up, a read of the
        // eventfd and a trip through the loop per request. The eventfd is switched off around
        // the submission (IORING_CQ_EVENTFD_DISABLED, a flag in the shared CQ ring, no system
        // call) and back on before the reap, so a CQE posted in between is reaped here and any
        // later one signals.
        const bool signalled = rp->kind != RingKind::Polled;
        if (signalled) io_uring_cq_eventfd_toggle(&rp->ring, false);
        int ret = io_uring_submit(&rp->ring);
        if (signalled) {
            io_uring_cq_eventfd_toggle(&rp->ring, true);
            reap(*rp);
        }
        if (ret > 0) {
            ++stats_.submit_calls;
            stats_.sqes += unsigned(ret);
        } else if (ret < 0) {
            // EAGAIN/EBUSY: the kernel is short of resources or the CQ overflowed; the SQEs
            // stay queued and go with the next attempt, after the loop reaped completions.
            if (ret != -EAGAIN && ret != -EBUSY && ret != -EINTR)
                log_error(opts_.name, ": io_uring_submit: ", std::strerror(-ret));
            schedule_submit();
        }
    }
    if (outstanding_signalled_ == 0 && wait_armed_) {
        // Everything armed for completed during submissions: drop the wait, so an io_context
        // without other work runs out of work (a wait armed for an operation that a reap
        // here finished would otherwise stay pending forever).
        boost::system::error_code ec;
        efd_stream_->cancel(ec);
    }
    arm_wait();
}

void Engine::arm_wait() {
    if (wait_armed_ || outstanding_signalled_ == 0 || !efd_stream_) return;
    wait_armed_ = true;
    efd_stream_->async_wait(asio::posix::descriptor_base::wait_read,
                            [this, alive = alive_](const boost::system::error_code& ec) {
                                if (!*alive) return;
                                wait_armed_ = false;
                                // Cancelled by submit_all when it went idle: operations
                                // started since then need the wait again.
                                if (ec == asio::error::operation_aborted) return arm_wait();
                                if (ec) return;
                                on_eventfd();
                            });
}

void Engine::on_eventfd() {
    uint64_t count = 0;
    // Reset the counter before reaping: a CQE posted after this read signals again.
    [[maybe_unused]] ssize_t n = ::read(eventfd_, &count, sizeof count);
    for (RingKind k : {RingKind::Normal, RingKind::SqPoll})
        if (auto* r = rings_[size_t(k)].get()) reap(*r);
    arm_wait();
}

void Engine::schedule_poll() {
    auto* r = rings_[size_t(RingKind::Polled)].get();
    if (poll_posted_ || !r || r->outstanding == 0) return;
    poll_posted_ = true;
    asio::post(ex_, [this, alive = alive_] {
        if (!*alive) return;
        poll_posted_ = false;
        auto* pr = rings_[size_t(RingKind::Polled)].get();
        // One non-blocking pass over the device's poll queues (io_uring_enter GETEVENTS with
        // min_complete 0), then what completed.
        io_uring_get_events(&pr->ring);
        reap(*pr);
        schedule_poll();
    });
}

void Engine::reap(Ring& r) {
    constexpr unsigned kBatch = 64;
    for (;;) {
        io_uring_cqe* cqes[kBatch];
        unsigned n = io_uring_peek_batch_cqe(&r.ring, cqes, kBatch);
        if (n == 0) return;
        struct Done {
            Op* op;
            unsigned slot;
            int res;
        } done[kBatch];
        for (unsigned i = 0; i < n; ++i) {
            auto tag = uintptr_t(io_uring_cqe_get_data(cqes[i]));
            done[i] = {reinterpret_cast<Op*>(tag & ~uintptr_t(1)), unsigned(tag & 1), cqes[i]->res};
        }
        // Free the CQ slots before resuming anybody: a resumed coroutine may start new I/O.
        io_uring_cq_advance(&r.ring, n);
        for (unsigned i = 0; i < n; ++i) {
            if (!done[i].op) continue;  // a NOP filler
            if (trace_) trace_->push_back({done[i].op->opcode[done[i].slot], done[i].res});
            complete(done[i].op, done[i].slot, done[i].res);
        }
    }
}

void Engine::complete(Op* op, unsigned slot, int res) {
    op->result.res[slot] = res;
    if (--op->pending > 0) return;
    Ring& r = *rings_[size_t(op->ring)];
    --r.outstanding;
    if (op->ring != RingKind::Polled) --outstanding_signalled_;
    op->fire(op, op->result);
}

// ---------------------------------------------------------------------------------- operations

asio::awaitable<int> Engine::transfer(Submit k, Direction d, int fd, std::byte* buf, size_t len,
                                      uint64_t offset) {
    len = std::min(len, kMaxPerSqe);
    if (!uring_available())
        co_return co_await fallback(k.as, [d, fd, buf, len, offset] {
            ssize_t n = d == Direction::Read ? ::pread(fd, buf, len, off_t(offset))
                                             : ::pwrite(fd, buf, len, off_t(offset));
            return n < 0 ? -errno : int(n);
        });
    auto prep = [d, fd, buf, len, offset](Engine& e, Ring& r, io_uring_sqe** s) {
        int idx = e.fixed_index(r, buf, len);
        if (d == Direction::Read && idx >= 0)
            io_uring_prep_read_fixed(s[0], fd, buf, unsigned(len), offset, idx);
        else if (d == Direction::Read)
            io_uring_prep_read(s[0], fd, buf, unsigned(len), offset);
        else if (idx >= 0)
            io_uring_prep_write_fixed(s[0], fd, buf, unsigned(len), offset, idx);
        else
            io_uring_prep_write(s[0], fd, buf, unsigned(len), offset);
        return true;
    };
    OpResult r = co_await run_op(k, 1, prep);
    co_return r.res[0];
}

asio::awaitable<int> Engine::read(Submit k, int fd, std::byte* buf, size_t len, uint64_t offset) {
    return transfer(k, Direction::Read, fd, buf, len, offset);
}

asio::awaitable<int> Engine::write(Submit k, int fd, const std::byte* buf, size_t len,
                                   uint64_t offset) {
    // The kernel only reads from `buf`; one prep serves both directions.
    return transfer(k, Direction::Write, fd, const_cast<std::byte*>(buf), len, offset);
}

bool Engine::inline_writes_paused() const {
    return inline_paused_until_ != Clock::time_point{} && Clock::now() < inline_paused_until_;
}

asio::awaitable<int> Engine::write_small_buffered(Submit k, int fd, const std::byte* buf,
                                                  size_t len, uint64_t offset) {
    // A buffered write the file system cannot do without blocking (ext4 answers
    // pwritev2(RWF_NOWAIT) with EOPNOTSUPP) is punted by io_uring to an io-wq worker thread:
    // a wake-up there and an eventfd wake-up back, several times the CPU of copying a few KiB
    // into the page cache. So small ones are written here, on the loop. The page cache copy
    // only waits when the kernel throttles dirty pages; a write that took that long pauses
    // the inline path for a while, so a loop under write-back pressure stalls once per pause,
    // not on every write.
    if (k.ring == RingKind::Polled || inline_writes_paused())
        co_return co_await write(k, fd, buf, len, offset);
    // A user's write would switch the loop's credentials, which an SMB Direct server's loops
    // must keep (vfs::credential_switches_on_this_thread): through the ring, as the user.
    if (opts_.keep_loop_credentials && k.as && vfs::credentials_switchable() &&
        k.as->uid != vfs::daemon_identity().uid)
        co_return co_await write(k, fd, buf, len, offset);
    // Waiting is told from being preempted (a busy machine) by the thread's voluntary context
    // switches: only a write that slept (dirty throttling, a lock, a page to read) pauses the
    // inline path. The second getrusage runs only after a slow write.
    struct rusage before {};
    ::getrusage(RUSAGE_THREAD, &before);
    const auto t0 = Clock::now();
    int res;
    {
        // As the user: what a write decides by credentials (clearing set-user-ID bits) is
        // decided for them, as on the ring; the fsuid is all an open descriptor's write needs.
        vfs::FsUidOnly as(k.as);
        ssize_t n = ::pwrite(fd, buf, len, off_t(offset));
        res = n < 0 ? -errno : int(n);
    }
    const auto t1 = Clock::now();
    ++stats_.inline_writes;
    if (t1 - t0 > kInlineStall) {
        struct rusage after {};
        ::getrusage(RUSAGE_THREAD, &after);
        if (after.ru_nvcsw != before.ru_nvcsw) {
            ++stats_.inline_write_stalls;
            inline_paused_until_ = t1 + kInlinePause;
            log_info(opts_.name, ": a ", len, "-byte buffered write blocked the loop for ",
                     std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count(),
                     " us (write-back throttling?); small writes go through io_uring for ",
                     std::chrono::duration_cast<std::chrono::milliseconds>(kInlinePause).count(),
                     " ms");
        }
    }
    co_return res;
}

asio::awaitable<int> Engine::fsync(Submit k, int fd, bool datasync) {
    if (!uring_available())
        co_return co_await fallback(k.as, [fd, datasync] {
            int rc = datasync ? ::fdatasync(fd) : ::fsync(fd);
            return rc == 0 ? 0 : -errno;
        });
    // The kernel refuses fsync on an IOPOLL ring.
    if (k.ring == RingKind::Polled) k.ring = RingKind::Normal;
    auto prep = [fd, datasync](Engine&, Ring&, io_uring_sqe** s) {
        io_uring_prep_fsync(s[0], fd, datasync ? IORING_FSYNC_DATASYNC : 0);
        return true;
    };
    OpResult r = co_await run_op(k, 1, prep);
    co_return r.res[0];
}

asio::awaitable<int> Engine::splice_to_pipe(Submit k, int fd, uint64_t offset, int pipe_write_fd,
                                            size_t len) {
    len = std::min(len, kMaxPerSqe);
    ++stats_.splices;
    if (!uring_available())
        co_return co_await fallback(k.as, [fd, offset, pipe_write_fd, len] {
            loff_t off = loff_t(offset);
            ssize_t n = ::splice(fd, &off, pipe_write_fd, nullptr, len, SPLICE_F_NONBLOCK);
            return n < 0 ? -errno : int(n);
        });
    // Only O_DIRECT reads and writes may go to the IOPOLL ring.
    if (k.ring == RingKind::Polled) k.ring = RingKind::Normal;
    auto prep = [fd, offset, pipe_write_fd, len](Engine&, Ring&, io_uring_sqe** s) {
        io_uring_prep_splice(s[0], fd, int64_t(offset), pipe_write_fd, -1, unsigned(len),
                             SPLICE_F_NONBLOCK);
        return true;
    };
    OpResult r = co_await run_op(k, 1, prep);
    co_return r.res[0];
}

asio::awaitable<Engine::WriteSyncResult> Engine::write_then_datasync(Submit k, int fd,
                                                                     const std::byte* buf,
                                                                     size_t len, uint64_t offset) {
    WriteSyncResult out;
    len = std::min(len, kMaxPerSqe);
    if (!uring_available() || kind_for(k.ring) == RingKind::Polled) {
        // No link across rings: the write on the polled ring, then the fsync on the normal one.
        out.write = co_await write(k, fd, buf, len, offset);
        out.sync =
            out.write >= 0 && size_t(out.write) == len ? co_await fsync(k, fd, true) : -ECANCELED;
        co_return out;
    }
    auto prep = [fd, buf, len, offset](Engine& e, Ring& r, io_uring_sqe** s) {
        int idx = e.fixed_index(r, buf, len);
        if (idx >= 0)
            io_uring_prep_write_fixed(s[0], fd, buf, unsigned(len), offset, idx);
        else
            io_uring_prep_write(s[0], fd, buf, unsigned(len), offset);
        // The fsync starts only after the write completed in full (a short write breaks the
        // link and cancels it).
        s[0]->flags |= IOSQE_IO_LINK;
        io_uring_prep_fsync(s[1], fd, IORING_FSYNC_DATASYNC);
        return true;
    };
    OpResult r = co_await run_op(k, 2, prep);
    out.write = r.res[0];
    out.sync = r.res[1];
    co_return out;
}

}  // namespace daxsmbd::server::io
