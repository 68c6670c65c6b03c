#include "server/health/device_health.h"

#include <algorithm>

#include "server/log.h"

namespace daxsmbd::server::health {

namespace {

// "[a], [b]": the shares on a device, for log lines.
std::string share_list(const DeviceHealthMonitor::Device& d) {
    std::string out;
    for (const auto& s : d.shares)
        out += (out.empty() ? "[" : ", [") + s + "]";
    return out;
}

}  // namespace

void DeviceHealthMonitor::set_shares(
    const std::vector<std::pair<std::string, std::string>>& shares) {
    std::vector<Device> next;
    for (const auto& [name, path] : shares) {
        std::string why;
        auto dev = block_device_of(path, &why);
        if (!dev) {
            log_debug("share [", name, "]: no device health: ", why);
            continue;
        }
        auto it = std::find_if(next.begin(), next.end(),
                               [&](const Device& d) { return d.device.name == dev->name; });
        if (it == next.end()) {
            next.push_back(Device{*dev, {}, std::nullopt, std::nullopt, {}, 0});
            it = next.end() - 1;
        }
        it->shares.push_back(name);
    }
    std::lock_guard lk(mu_);
    // A device still in use keeps what was read of it.
    for (auto& d : next) {
        auto old = std::find_if(devices_.begin(), devices_.end(),
                                [&](const Device& o) { return o.device.name == d.device.name; });
        if (old == devices_.end()) continue;
        d.smart = old->smart;
        d.pmem = old->pmem;
        d.error = old->error;
        d.read_failures = old->read_failures;
    }
    devices_ = std::move(next);
}

void DeviceHealthMonitor::report(Device& d, const SmartLog& now) {
    const bool was = d.smart && d.smart->needs_attention();
    const bool same = was && d.smart->critical_warning == now.critical_warning &&
                      d.smart->available_spare == now.available_spare;
    if (!now.needs_attention() || same) return;
    log_error("WARNING: device ", d.device.node, " (", share_list(d), "): NVMe critical warning 0x",
              std::hex, unsigned(now.critical_warning), std::dec, " (",
              describe_critical_warning(now.critical_warning), "), available spare ",
              unsigned(now.available_spare), "% (threshold ",
              unsigned(now.available_spare_threshold), "%), ", unsigned(now.percentage_used),
              "% of its life used, ", now.media_errors, " media errors");
}

void DeviceHealthMonitor::report(Device& d, const PmemHealth& now) {
    const bool was = d.pmem && d.pmem->needs_attention();
    if (!now.needs_attention() || (was && *d.pmem == now)) return;
    log_error("WARNING: device ", d.device.node, " (", share_list(d), "): persistent memory ",
              now.describe());
}

void DeviceHealthMonitor::poll_device(const BlockDevice& dev) {
    std::string why;
    std::optional<SmartLog> smart;
    std::optional<PmemHealth> pmem;
    if (dev.nvme)
        smart = read_smart_log(dev.node, &why);
    else
        pmem = read_pmem_health(dev.sysfs_dir, dev.nd_region, &why);
    std::lock_guard lk(mu_);
    auto it = std::find_if(devices_.begin(), devices_.end(),
                           [&](const Device& d) { return d.device.name == dev.name; });
    if (it == devices_.end()) return;  // a reload took it away meanwhile
    if (!smart && !pmem) {
        if (it->error != why) log_error("device health of ", dev.node, ": ", why);
        it->error = why;
        ++it->read_failures;
        return;
    }
    if (smart) {
        report(*it, *smart);
        it->smart = smart;
    } else {
        report(*it, *pmem);
        it->pmem = pmem;
    }
    it->error.clear();
}

void DeviceHealthMonitor::poll_once() {
    std::vector<BlockDevice> todo;
    {
        std::lock_guard lk(mu_);
        for (const auto& d : devices_)
            if (d.device.nvme || d.device.pmem()) todo.push_back(d.device);
    }
    // The reads run without the lock: a scrape must not wait for a slow device.
    for (const auto& dev : todo)
        poll_device(dev);
}

void DeviceHealthMonitor::start(std::chrono::seconds interval) {
    stop();
    {
        std::lock_guard lk(mu_);
        stopping_ = false;
    }
    thread_ = std::thread([this, interval] { run(interval); });
}

void DeviceHealthMonitor::run(std::chrono::seconds interval) {
    std::unique_lock lk(mu_);
    while (!stopping_) {
        lk.unlock();
        poll_once();
        lk.lock();
        wake_.wait_for(lk, interval, [this] { return stopping_; });
    }
}

void DeviceHealthMonitor::stop() {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::vector<DeviceHealthMonitor::Device> DeviceHealthMonitor::snapshot() const {
    std::lock_guard lk(mu_);
    return devices_;
}

}  // namespace daxsmbd::server::health
