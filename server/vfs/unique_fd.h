// UniqueFd: sole owner of a file descriptor; closes it when destroyed. Move-only.
#pragma once

#include <unistd.h>

#include <utility>

namespace daxsmbd::server::vfs {

class UniqueFd {
  public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    ~UniqueFd() { reset(); }

    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    explicit operator bool() const { return valid(); }

    // Gives up ownership without closing.
    int release() { return std::exchange(fd_, -1); }

    // Closes the current descriptor (if any) and takes `fd`. close() errors are ignored on
    // purpose: on Linux the descriptor is gone either way, and retrying close() after EINTR
    // could close a descriptor another thread has just been given.
    void reset(int fd = -1) {
        int old = std::exchange(fd_, fd);
        if (old >= 0) ::close(old);
    }

  private:
    int fd_ = -1;
};

}  // namespace daxsmbd::server::vfs
