#include "server/io/splice_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "server/log.h"

namespace daxsmbd::server::io {

namespace {

size_t page_size() {
    static const size_t p = [] {
        long v = ::sysconf(_SC_PAGESIZE);
        return v > 0 ? size_t(v) : size_t(4096);
    }();
    return p;
}

void close_pair(int r, int w) {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
}

}  // namespace

SplicePipe& SplicePipe::operator=(SplicePipe&& o) noexcept {
    if (this == &o) return *this;
    reset();
    pool_ = std::move(o.pool_);
    read_fd_ = o.read_fd_;
    write_fd_ = o.write_fd_;
    capacity_ = o.capacity_;
    bytes_ = o.bytes_;
    o.read_fd_ = o.write_fd_ = -1;
    o.capacity_ = o.bytes_ = 0;
    return *this;
}

bool SplicePipe::copy_out(PoolBuffer& out) {
    if (out.capacity() < bytes_) return false;
    size_t got = 0;
    while (bytes_ > 0) {
        const ssize_t n = ::read(read_fd_, out.data() + got, bytes_);
        if (n > 0) {
            got += size_t(n);
            bytes_ -= size_t(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        // The bytes were accounted as in the pipe: anything else is a broken pipe.
        out.reset();
        return false;
    }
    out.set_size(got);
    return true;
}

void SplicePipe::reset() {
    if (read_fd_ < 0) return;
    if (pool_) {
        pool_->give_back(*this);
    } else {
        close_pair(read_fd_, write_fd_);
    }
    pool_.reset();
    read_fd_ = write_fd_ = -1;
    capacity_ = bytes_ = 0;
}

std::shared_ptr<PipePool> PipePool::make(const char* name) {
    return std::shared_ptr<PipePool>(new PipePool(name));
}

PipePool::~PipePool() {
    for (auto& p : idle_)
        close_pair(p.read_fd, p.write_fd);
}

size_t PipePool::pipe_bytes_for(uint64_t offset, size_t len) {
    const size_t pg = page_size();
    const size_t first = size_t(offset % pg);
    return (first + len + pg - 1) / pg * pg;
}

SplicePipe PipePool::acquire(uint64_t offset, size_t len) {
    SplicePipe p;
    const size_t need = pipe_bytes_for(offset, len);
    if (need > kCapacity) return p;
    std::unique_lock lk(mu_);
    if (in_use_ >= kMaxInUse) return p;
    if (!idle_.empty()) {
        Idle i = idle_.back();
        idle_.pop_back();
        ++in_use_;
        lk.unlock();
        p.pool_ = shared_from_this();
        p.read_fd_ = i.read_fd;
        p.write_fd_ = i.write_fd;
        p.capacity_ = i.capacity;
        return p;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now < refused_until_) return p;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        refused_until_ = now + kRetryAfter;
        log_info(name_, ": pipe2 for spliced READs failed (", std::strerror(errno),
                 "); READs copy for ", kRetryAfter.count(), " s");
        return p;
    }
    const int got = ::fcntl(fds[1], F_SETPIPE_SZ, int(kCapacity));
    if (got < 0 || size_t(got) < kCapacity) {
        // pipe-max-size below kCapacity, or an unprivileged user past pipe-user-pages-soft.
        refused_until_ = now + kRetryAfter;
        log_info(name_, ": pipe for spliced READs not resizable to ", kCapacity, " bytes (",
                 got < 0 ? std::strerror(errno) : "got less",
                 "; see /proc/sys/fs/pipe-max-size); READs copy for ", kRetryAfter.count(), " s");
        close_pair(fds[0], fds[1]);
        return p;
    }
    ++in_use_;
    lk.unlock();
    p.pool_ = shared_from_this();
    p.read_fd_ = fds[0];
    p.write_fd_ = fds[1];
    p.capacity_ = size_t(got);
    return p;
}

void PipePool::give_back(SplicePipe& p) {
    std::lock_guard lk(mu_);
    --in_use_;
    if (p.bytes_ == 0 && idle_.size() < kMaxIdle) {
        idle_.push_back({p.read_fd_, p.write_fd_, p.capacity_});
        return;
    }
    close_pair(p.read_fd_, p.write_fd_);
}

size_t PipePool::idle() const {
    std::lock_guard lk(mu_);
    return idle_.size();
}

size_t PipePool::in_use() const {
    std::lock_guard lk(mu_);
    return in_use_;
}

}  // namespace daxsmbd::server::io
