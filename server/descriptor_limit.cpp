#include "descriptor_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace daxsmbd::server {

namespace {
constexpr std::uint64_t kReservedDescriptors = 1024;
}  // namespace

std::uint64_t descriptors_wanted(unsigned max_connections) {
    return std::uint64_t{max_connections} * 2 + kReservedDescriptors;
}

DescriptorLimits choose_descriptor_limits(std::uint64_t wanted, DescriptorLimits current,
                                          std::uint64_t nr_open, bool is_root) {
    DescriptorLimits chosen = current;
    if (is_root && wanted > current.hard)
        chosen.hard = std::max(current.hard, std::min(wanted, nr_open));
    chosen.soft = std::max(current.soft, std::min(wanted, chosen.hard));
    return chosen;
}

namespace {
std::uint64_t read_nr_open() {
    std::ifstream in("/proc/sys/fs/nr_open");
    std::uint64_t v = 0;
    if (in >> v && v > 0) return v;
    return 1048576;  // the kernel's default fs.nr_open
}
}  // namespace

std::string raise_descriptor_limit(unsigned max_connections) {
    rlimit cur{};
    if (getrlimit(RLIMIT_NOFILE, &cur) != 0)
        return std::string("descriptor limit: getrlimit failed: ") + std::strerror(errno);
    const std::uint64_t wanted = descriptors_wanted(max_connections);
    const DescriptorLimits current{cur.rlim_cur, cur.rlim_max};
    const DescriptorLimits chosen =
        choose_descriptor_limits(wanted, current, read_nr_open(), geteuid() == 0);
    std::string note;
    if (chosen.soft != current.soft || chosen.hard != current.hard) {
        rlimit next{static_cast<rlim_t>(chosen.soft), static_cast<rlim_t>(chosen.hard)};
        if (setrlimit(RLIMIT_NOFILE, &next) == 0) {
            cur = next;
        } else {
            // Root without CAP_SYS_RESOURCE (a container) may not raise the hard limit: still
            // take the soft limit up to the hard one.
            note = std::string(" (raising the hard limit failed: ") + std::strerror(errno) + ")";
            next.rlim_max = cur.rlim_max;
            next.rlim_cur = std::min<rlim_t>(next.rlim_cur, cur.rlim_max);
            if (next.rlim_cur > cur.rlim_cur && setrlimit(RLIMIT_NOFILE, &next) == 0) cur = next;
        }
    }
    std::string line = "descriptor limit: " + std::to_string(cur.rlim_cur) + " (hard " +
                       std::to_string(cur.rlim_max) + "), wanted " + std::to_string(wanted) +
                       " for max connections total = " + std::to_string(max_connections) + note;
    if (cur.rlim_cur < wanted)
        line += "; WARNING: fewer descriptors than max connections total needs";
    return line;
}

}  // namespace daxsmbd::server
