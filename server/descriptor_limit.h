// RLIMIT_NOFILE sizing: the descriptor limit the daemon asks for at start, from the limits
// in GlobalConfig, so the configured "max connections total" is reachable before the
// inherited soft limit refuses accept().
#pragma once

#include <cstdint>
#include <string>

namespace daxsmbd::server {

struct DescriptorLimits {
    std::uint64_t soft = 0;
    std::uint64_t hard = 0;
};

// Descriptors for max_connections sockets, each with one open file, plus a fixed reserve for
// listeners, logs, io_uring rings and share root directories.
std::uint64_t descriptors_wanted(unsigned max_connections);

// The limits to set: soft raised to wanted, bounded by the hard limit; root may also raise
// the hard limit, bounded by fs.nr_open. Never lowers either limit.
DescriptorLimits choose_descriptor_limits(std::uint64_t wanted, DescriptorLimits current,
                                          std::uint64_t nr_open, bool is_root);

// Applies choose_descriptor_limits to this process (getrlimit/setrlimit, fs.nr_open from
// /proc) and returns the line to log: what was wanted, what the process got, and a warning
// when the soft limit stays below what max_connections needs.
std::string raise_descriptor_limit(unsigned max_connections);

}  // namespace daxsmbd::server
