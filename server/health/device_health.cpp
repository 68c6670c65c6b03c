#include "server/health/device_health.h"

#include <algorithm>

#include "server/log.h"

namespace daxsmbd::server::health {

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
            next.push_back(Device{*dev, {}, std::nullopt, {}, 0});
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
    std::string shares;
    for (const auto& s : d.shares)
        shares += (shares.empty() ? "[" : ", [") + s + "]";
    log_error("WARNING: device ", d.device.node, " (", shares, "): NVMe critical warning 0x",
              std::hex, unsigned(now.critical_warning), std::dec, " (",
              describe_critical_warning(now.critical_warning), "), available spare ",
              unsigned(now.available_spare), "% (threshold ",
              unsigned(now.available_spare_threshold), "%), ", unsigned(now.percentage_used),
              "% of its life used, ", now.media_errors, " media errors");
}

void DeviceHealthMonitor::poll_once() {
    std::vector<BlockDevice> todo;
    {
        std::lock_guard lk(mu_);
        for (const auto& d : devices_)
            if (d.device.nvme) todo.push_back(d.device);
    }
    // The reads run without the lock: a scrape must not wait for a slow device.
    for (const auto& dev : todo) {
        std::string why;
        auto smart = read_smart_log(dev.node, &why);
        std::lock_guard lk(mu_);
        auto it = std::find_if(devices_.begin(), devices_.end(),
                               [&](const Device& d) { return d.device.name == dev.name; });
        if (it == devices_.end()) continue;  // a reload took it away meanwhile
        if (!smart) {
            if (it->error != why) log_error("device health of ", dev.node, ": ", why);
            it->error = why;
            ++it->read_failures;
            continue;
        }
        report(*it, *smart);
        it->smart = smart;
        it->error.clear();
    }
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
