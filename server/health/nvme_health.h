// Device health of the shares' block devices (README "Metrics", "Device health"): the block
// device under a share, and for NVMe devices the SMART / Health Information log page (NVM
// Express Base Specification 2.0, 5.16.1.3, Log Identifier 02h) read through the kernel's admin
// passthrough ioctl (NVME_IOCTL_ADMIN_CMD, Get Log Page, opcode 02h).
//
// The parser is pure (unit-tested and fuzzed); reading needs the device node and root.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace daxsmbd::server::health {

// The SMART / Health Information log page: 512 bytes.
inline constexpr size_t kSmartLogSize = 512;

// Critical Warning bits (byte 0).
namespace critical_warning {
inline constexpr uint8_t kSpareBelowThreshold = 1u << 0;
inline constexpr uint8_t kTemperature = 1u << 1;  // above an over- or below an under-threshold
inline constexpr uint8_t kReliabilityDegraded = 1u << 2;  // media or internal errors
inline constexpr uint8_t kReadOnly = 1u << 3;             // media placed in read-only mode
inline constexpr uint8_t kVolatileBackupFailed = 1u << 4;
inline constexpr uint8_t kPmrReadOnly = 1u << 5;  // persistent memory region read-only
}  // namespace critical_warning

// The fields daxsmbd publishes. The 128-bit counters saturate at 2^64 - 1.
struct SmartLog {
    uint8_t critical_warning = 0;
    uint16_t temperature_kelvin = 0;  // Composite Temperature
    uint8_t available_spare = 0;      // percent
    uint8_t available_spare_threshold = 0;
    uint8_t percentage_used = 0;      // of the vendor's life estimate; may exceed 100
    uint64_t data_units_read = 0;     // thousands of 512-byte units
    uint64_t data_units_written = 0;  // thousands of 512-byte units
    uint64_t host_read_commands = 0;
    uint64_t host_write_commands = 0;
    uint64_t controller_busy_minutes = 0;
    uint64_t power_cycles = 0;
    uint64_t power_on_hours = 0;
    uint64_t unsafe_shutdowns = 0;
    uint64_t media_errors = 0;  // Media and Data Integrity Errors
    uint64_t error_log_entries = 0;

    // A warning bit is set, or the spare is below its threshold (a device that reports a
    // threshold of 0 has none).
    bool needs_attention() const;
};

// Decodes a log page; nullopt when `page` is shorter than kSmartLogSize.
std::optional<SmartLog> parse_smart_log(std::span<const std::byte> page);

// "spare below threshold, read-only" for the set bits (bits this version does not know are
// named by number); "none" for 0.
std::string describe_critical_warning(uint8_t bits);

// The block device a file system path lives on, as sysfs knows it.
struct BlockDevice {
    std::string name;       // "nvme0n1" (a partition's whole disk: nvme0n1p2 -> nvme0n1)
    std::string partition;  // "nvme0n1p2", or empty
    std::string node;       // "/dev/nvme0n1"
    bool nvme = false;      // an NVMe namespace (its controller answers admin commands)
    std::string sysfs_dir;  // its canonical /sys/devices/... directory
    std::string nd_region;  // persistent memory: the libnvdimm region above it (pmem_health.h)
    bool pmem() const { return !nd_region.empty(); }
};

// The device under `path` (stat's st_dev, then /sys/dev/block/MAJ:MIN); nullopt with `why` for
// file systems without one (tmpfs, overlay, network) or when sysfs is not there.
std::optional<BlockDevice> block_device_of(const std::string& path, std::string* why,
                                           const std::string& sysfs_root = "/sys");

// Reads the SMART / Health log page of NVMe device node `node` (Get Log Page, NSID
// FFFFFFFFh: the controller as a whole). nullopt with `why` on failure.
std::optional<SmartLog> read_smart_log(const std::string& node, std::string* why);

}  // namespace daxsmbd::server::health
