// DeviceHealthMonitor: the health of the block devices under the shares, read periodically on a
// thread of its own (never on an event loop: an NVMe admin command can take milliseconds, a
// sick device seconds) and published as metrics (server/metrics/server_metrics.cpp). A
// critical warning bit, or the available spare falling below its threshold, is logged when it
// appears and when it changes; so are bad blocks, a read-only region or a DIMM failure flag on
// persistent memory.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/health/nvme_health.h"
#include "server/health/pmem_health.h"

namespace daxsmbd::server::health {

class DeviceHealthMonitor {
  public:
    struct Device {
        BlockDevice device;
        std::vector<std::string> shares;  // the shares on it
        std::optional<SmartLog> smart;    // the last log page read (NVMe only)
        std::optional<PmemHealth> pmem;   // the last sysfs read (persistent memory only)
        std::string error;                // why the last read failed, if it did
        uint64_t read_failures = 0;
    };

    DeviceHealthMonitor() = default;
    ~DeviceHealthMonitor() { stop(); }
    DeviceHealthMonitor(const DeviceHealthMonitor&) = delete;
    DeviceHealthMonitor& operator=(const DeviceHealthMonitor&) = delete;

    // The shares to watch, {name, path}; their devices are looked up now (and again after a
    // reload calls this with the new list).
    void set_shares(const std::vector<std::pair<std::string, std::string>>& shares);
    // Reads every device now, then every `interval` on the monitor's thread.
    void start(std::chrono::seconds interval);
    void stop();
    // One round of reads (the thread's work; tests call it directly).
    void poll_once();
    std::vector<Device> snapshot() const;

  private:
    void run(std::chrono::seconds interval);
    // Logs a device whose health needs attention, once per distinct state.
    void report(Device& d, const SmartLog& now);
    void report(Device& d, const PmemHealth& now);
    // Reads one device's health and stores it (or the failure) into devices_.
    void poll_device(const BlockDevice& dev);

    mutable std::mutex mu_;
    std::vector<Device> devices_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace daxsmbd::server::health
