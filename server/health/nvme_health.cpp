#include "server/health/nvme_health.h"

#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "server/health/pmem_health.h"

namespace daxsmbd::server::health {

namespace fs = std::filesystem;

namespace {

uint64_t le(std::span<const std::byte> p, size_t off, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
        v |= uint64_t(std::to_integer<uint8_t>(p[off + i])) << (8 * i);
    return v;
}

// A 128-bit little-endian counter, saturated to 64 bits.
uint64_t le128(std::span<const std::byte> p, size_t off) {
    if (le(p, off + 8, 8) != 0) return UINT64_MAX;
    return le(p, off, 8);
}

}  // namespace

bool SmartLog::needs_attention() const {
    return critical_warning != 0 ||
           (available_spare_threshold != 0 && available_spare < available_spare_threshold);
}

std::optional<SmartLog> parse_smart_log(std::span<const std::byte> page) {
    if (page.size() < kSmartLogSize) return std::nullopt;
    // Byte offsets: NVM Express Base Specification 2.0, Figure 207.
    SmartLog s;
    s.critical_warning = uint8_t(le(page, 0, 1));
    s.temperature_kelvin = uint16_t(le(page, 1, 2));
    s.available_spare = uint8_t(le(page, 3, 1));
    s.available_spare_threshold = uint8_t(le(page, 4, 1));
    s.percentage_used = uint8_t(le(page, 5, 1));
    s.data_units_read = le128(page, 32);
    s.data_units_written = le128(page, 48);
    s.host_read_commands = le128(page, 64);
    s.host_write_commands = le128(page, 80);
    s.controller_busy_minutes = le128(page, 96);
    s.power_cycles = le128(page, 112);
    s.power_on_hours = le128(page, 128);
    s.unsafe_shutdowns = le128(page, 144);
    s.media_errors = le128(page, 160);
    s.error_log_entries = le128(page, 176);
    return s;
}

std::string describe_critical_warning(uint8_t bits) {
    static constexpr const char* kNames[] = {
        "spare below threshold",         "temperature out of range",
        "reliability degraded",          "media read-only",
        "volatile memory backup failed", "persistent memory region read-only",
    };
    std::string out;
    for (unsigned b = 0; b < 8; ++b) {
        if (!(bits & (1u << b))) continue;
        if (!out.empty()) out += ", ";
        out += b < std::size(kNames) ? kNames[b] : "bit " + std::to_string(b);
    }
    return out.empty() ? "none" : out;
}

std::optional<BlockDevice> block_device_of(const std::string& path, std::string* why,
                                           const std::string& sysfs_root) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        *why = path + ": " + std::strerror(errno);
        return std::nullopt;
    }
    const unsigned maj = major(st.st_dev), min = minor(st.st_dev);
    const fs::path link =
        fs::path(sysfs_root) / "dev/block" / (std::to_string(maj) + ":" + std::to_string(min));
    std::error_code ec;
    fs::path dev = fs::canonical(link, ec);
    if (ec) {
        *why = "no block device (device " + std::to_string(maj) + ":" + std::to_string(min) +
               " is not in " + link.parent_path().string() + ")";
        return std::nullopt;
    }
    BlockDevice out;
    if (fs::exists(dev / "partition")) {
        out.partition = dev.filename().string();
        dev = dev.parent_path();
    }
    out.name = dev.filename().string();
    std::string devname = out.name;
    std::ifstream uevent(dev / "uevent");
    for (std::string line; std::getline(uevent, line);)
        if (line.rfind("DEVNAME=", 0) == 0) devname = line.substr(8);
    out.node = "/dev/" + devname;
    // An NVMe namespace's parent is its controller (class nvme), e.g.
    // /sys/devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1, or with native multipath its
    // subsystem (/sys/devices/virtual/nvme-subsystem/nvme-subsys0/nvme0n1); both nodes take
    // admin commands.
    const std::string grandparent = dev.parent_path().parent_path().filename().string();
    out.nvme = grandparent == "nvme" || grandparent == "nvme-subsystem";
    out.sysfs_dir = dev.string();
    out.nd_region = nd_region_of(out.sysfs_dir);
    return out;
}

std::optional<SmartLog> read_smart_log(const std::string& node, std::string* why) {
    int fd = ::open(node.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *why = node + ": " + std::strerror(errno);
        return std::nullopt;
    }
    std::array<std::byte, kSmartLogSize> page{};
    nvme_admin_cmd cmd{};
    cmd.opcode = 0x02;       // Get Log Page
    cmd.nsid = 0xFFFFFFFFu;  // the controller, not one namespace
    cmd.addr = reinterpret_cast<uint64_t>(page.data());
    cmd.data_len = uint32_t(page.size());
    // CDW10: Log Page Identifier 02h, NUMDL = dwords - 1 (0's based).
    cmd.cdw10 = 0x02u | (uint32_t(page.size() / 4 - 1) << 16);
    cmd.timeout_ms = 5000;
    int rc = ::ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
    const int err = errno;
    ::close(fd);
    if (rc < 0) {
        *why = node + ": NVME_IOCTL_ADMIN_CMD: " + std::strerror(err);
        return std::nullopt;
    }
    if (rc > 0) {  // the NVMe status field of the completion
        *why = node + ": Get Log Page failed with NVMe status 0x" + [rc] {
            char b[16];
            std::snprintf(b, sizeof b, "%x", unsigned(rc));
            return std::string(b);
        }();
        return std::nullopt;
    }
    return parse_smart_log(page);
}

}  // namespace daxsmbd::server::health
