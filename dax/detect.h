// Is a directory on a file system where persistent memory can be mapped with MAP_SYNC?
// The answer for a share ("dax = auto | on | off").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace daxsmbd::dax {

enum class DaxMode { Off, Auto, On };

std::string_view to_string(DaxMode mode);
std::optional<DaxMode> parse_dax_mode(std::string_view text);  // auto, on, off (yes/no too)

struct DetectResult {
    bool map_sync = false;   // a MAP_SHARED_VALIDATE|MAP_SYNC mapping of a file there succeeded
    bool statx_dax = false;  // STATX_ATTR_DAX was set on the probe file (a hint only)
    std::string detail;      // why not, for the log
};

// Maps the first page of `fd` with MAP_SHARED_VALIDATE | MAP_SYNC (read-write when `writable`)
// at an address of the kernel's choosing, and unmaps it: true when the kernel accepts (the file
// is on a DAX file system and the kernel has MAP_SYNC); false with errno set otherwise. No
// MAP_FIXED, so a refusal leaves no trace in the address space.
bool maps_with_map_sync(int fd, bool writable);

// Creates an unnamed temporary file in `dir_fd` (O_TMPFILE; a named one, unlinked at once, where
// O_TMPFILE is not supported), sizes it to one page and tries the MAP_SYNC mapping. The answer is
// the mapping's, not the statx flag's: DAX without MAP_SYNC is not durable by cache flush.
DetectResult detect_dax(int dir_fd);

// The decision for a share: whether to use DAX, or an error message when `mode` is On and the
// file system cannot do it (the share must not start).
struct DaxDecision {
    bool use_dax = false;
    std::string error;  // non-empty: refuse the share
};
DaxDecision decide(DaxMode mode, const DetectResult& detected);

}  // namespace daxsmbd::dax
