// Health of persistent memory under a DAX share (README "Device health"), as the kernel's
// libnvdimm exposes it in sysfs (Documentation/ABI/testing/sysfs-bus-nfit, sysfs-bus-papr-pmem,
// block/genhd.c):
//   - /sys/block/pmemN/badblocks: the known-poisoned ranges of the namespace, "SECTOR COUNT"
//     per line in 512-byte sectors (filled by address range scrub and machine checks); a read
//     of them fails, a DAX mapping of them raises SIGBUS;
//   - the region (regionN, an ancestor of the block device): `read_only`, and `mappingK` =
//     "nmemM,offset,length,position" naming the DIMMs that back it;
//   - each DIMM nmemM: the firmware's health flags in nfit/flags (ACPI NFIT memory device
//     state: save_fail, restore_fail, flush_fail, not_armed, smart_event, map_fail, and
//     smart_notify = health events enabled) or papr/flags (PowerPC: not_armed, flush_fail,
//     restore_fail, save_fail, smart_notify = a health event, encrypted, scrubbed, locked), and
//     nfit/dirty_shutdown (the unsafe shutdown count) where the DIMM family reports it.
//
// The parsers are pure (unit-tested and fuzzed); reading needs only sysfs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace daxsmbd::server::health {

struct BadBlocks {
    uint64_t ranges = 0;
    uint64_t sectors = 0;  // 512-byte sectors, saturating
    bool operator==(const BadBlocks&) const = default;
};

// Decodes a badblocks attribute ("SECTOR COUNT\n" per line; empty = none). nullopt when a line
// is not two decimal numbers.
std::optional<BadBlocks> parse_badblocks(std::string_view text);

// The words of a flags attribute ("save_fail not_armed \n" -> {save_fail, not_armed}).
std::vector<std::string> parse_flag_words(std::string_view text);

// Which of `flags` mean the DIMM cannot be trusted to keep data, for the attribute family
// `source` ("nfit" or "papr": smart_notify is a capability in one, an event in the other).
std::vector<std::string> failure_flags(std::string_view source,
                                       const std::vector<std::string>& flags);

struct Nvdimm {
    std::string name;    // nmem0
    std::string id;      // nfit/id (vendor-serial), may be empty
    std::string source;  // "nfit", "papr", or empty when the DIMM has no flags attribute
    std::vector<std::string> flags;
    std::vector<std::string> failures;  // failure_flags(source, flags)
    std::optional<uint64_t> dirty_shutdowns;
    bool operator==(const Nvdimm&) const = default;
};

struct PmemHealth {
    std::string region;  // region0
    bool read_only = false;
    BadBlocks badblocks;  // of the share's namespace (the block device)
    std::vector<Nvdimm> dimms;

    // Bad blocks, a read-only region, or a failure flag on a DIMM.
    bool needs_attention() const;
    // "2 bad ranges (16 sectors), region0 read-only, nmem0: save_fail not_armed"; "healthy".
    std::string describe() const;
    bool operator==(const PmemHealth&) const = default;
};

// The libnvdimm region above the block device at sysfs path `device_dir` (a canonical
// /sys/devices/.../ndbusN/regionM/.../block/pmemK), or empty when it is not persistent memory.
std::string nd_region_of(const std::string& device_dir);

// Reads the health of the pmem block device at `device_dir` whose region is `region_dir`.
// nullopt with `why` when the badblocks attribute cannot be read or does not decode.
std::optional<PmemHealth> read_pmem_health(const std::string& device_dir,
                                           const std::string& region_dir, std::string* why);

}  // namespace daxsmbd::server::health
