#include "dax/detect.h"

#include <fcntl.h>
#include <linux/mman.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace daxsmbd::dax {

std::string_view to_string(DaxMode mode) {
    switch (mode) {
        case DaxMode::Off:
            return "off";
        case DaxMode::Auto:
            return "auto";
        case DaxMode::On:
            return "on";
    }
    return "?";
}

std::optional<DaxMode> parse_dax_mode(std::string_view t) {
    if (t == "auto") return DaxMode::Auto;
    if (t == "on" || t == "yes" || t == "true") return DaxMode::On;
    if (t == "off" || t == "no" || t == "false") return DaxMode::Off;
    return std::nullopt;
}

namespace {

int open_probe_file(int dir_fd) {
    int fd = ::openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
    std::random_device rd;
    for (int attempt = 0; attempt < 8; ++attempt) {
        std::string name = ".daxsmbd-probe-" + std::to_string(rd());
        fd = ::openat(dir_fd, name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0) {
            ::unlinkat(dir_fd, name.c_str(), 0);
            return fd;
        }
        if (errno != EEXIST) return -1;
    }
    return -1;
}

}  // namespace

bool maps_with_map_sync(int fd, bool writable) {
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    void* p = ::mmap(nullptr, page, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                     MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    if (p == MAP_FAILED) return false;
    ::munmap(p, page);
    return true;
}

DetectResult detect_dax(int dir_fd) {
    DetectResult r;
    int fd = open_probe_file(dir_fd);
    if (fd < 0) {
        r.detail = std::string("cannot create a probe file: ") + std::strerror(errno);
        return r;
    }
    const long page = ::sysconf(_SC_PAGESIZE);
    struct statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0 &&
        (stx.stx_attributes_mask & STATX_ATTR_DAX))
        r.statx_dax = stx.stx_attributes & STATX_ATTR_DAX;
    if (::ftruncate(fd, page) != 0) {
        r.detail = std::string("cannot size the probe file: ") + std::strerror(errno);
        ::close(fd);
        return r;
    }
    r.map_sync = maps_with_map_sync(fd, true);
    if (!r.map_sync) r.detail = std::string("MAP_SYNC mapping refused: ") + std::strerror(errno);
    ::close(fd);
    return r;
}

DaxDecision decide(DaxMode mode, const DetectResult& d) {
    DaxDecision out;
    if (mode == DaxMode::Off) return out;
    if (d.map_sync) {
        out.use_dax = true;
        return out;
    }
    if (mode == DaxMode::On)
        out.error = "dax = on, but the file system is not DAX-capable (" + d.detail + ")";
    return out;
}

}  // namespace daxsmbd::dax
