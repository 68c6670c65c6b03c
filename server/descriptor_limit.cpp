#include "descriptor_limit.h"

#include <algorithm>

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

}  // namespace daxsmbd::server
