// rdma_interfaces(): which IP addresses an SMB Direct listener can serve, i.e. the addresses of
// the network interfaces that have an RDMA device on them, and how fast those links are (for
// the interface list of FSCTL_QUERY_NETWORK_INTERFACE_INFO, MS-SMB2 2.2.32.5).
//
// The netdev of a device port is found, in this order:
//   1. /sys/class/infiniband/<dev>/ports/<port>/gid_attrs/ndevs/<index>: RoCE, one file per GID
//      table entry naming the netdev the GID comes from (rxe, mlx5 in Ethernet mode);
//   2. /sys/class/infiniband/<dev>/parent: the soft devices that name their netdev there (rxe);
//   3. /sys/class/infiniband/<dev>/device/net/*: the netdevs of the same PCI function (hardware
//      iWARP RNICs, IPoIB);
//   4. iWARP: GID 0 is the netdev's MAC address (siw, and iWARP RNICs in general), matched
//      against /sys/class/net/*/address.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "smbdirect/verbs_provider.h"

namespace daxsmbd::smbdirect {

namespace {

namespace fs = std::filesystem;

// The first line of a sysfs file; empty when it cannot be read (sysfs returns EINVAL for the
// ndevs entries of unused GID slots).
std::string read_line(const fs::path& p) {
    std::ifstream in(p);
    std::string line;
    if (!in || !std::getline(in, line)) return {};
    while (!line.empty() && (line.back() == '\n' || line.back() == ' '))
        line.pop_back();
    return line;
}

bool is_netdev(const std::string& name) {
    std::error_code ec;
    return !name.empty() && fs::exists(fs::path("/sys/class/net") / name, ec);
}

std::set<std::string> netdevs_from_sysfs(const std::string& dev, unsigned port) {
    std::set<std::string> out;
    std::error_code ec;
    fs::path base = fs::path("/sys/class/infiniband") / dev;
    fs::path ndevs = base / "ports" / std::to_string(port) / "gid_attrs" / "ndevs";
    for (auto it = fs::directory_iterator(ndevs, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
        std::string name = read_line(it->path());
        if (is_netdev(name)) out.insert(name);
    }
    if (!out.empty()) return out;
    if (std::string parent = read_line(base / "parent"); is_netdev(parent)) {
        out.insert(parent);
        return out;
    }
    for (auto it = fs::directory_iterator(base / "device" / "net", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec))
        out.insert(it->path().filename().string());
    return out;
}

// iWARP devices put the netdev's MAC address in the first six bytes of GID 0.
std::set<std::string> netdevs_by_mac(ibv_context* ctx, unsigned port) {
    std::set<std::string> out;
    ibv_gid gid{};
    if (ibv_query_gid(ctx, uint8_t(port), 0, &gid)) return out;
    char mac[18];
    std::snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", gid.raw[0], gid.raw[1],
                  gid.raw[2], gid.raw[3], gid.raw[4], gid.raw[5]);
    if (std::strcmp(mac, "00:00:00:00:00:00") == 0) return out;
    std::error_code ec;
    for (auto it = fs::directory_iterator("/sys/class/net", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec))
        if (read_line(it->path() / "address") == mac) out.insert(it->path().filename().string());
    return out;
}

// ibv_port_attr::active_speed and active_width (IBTA PortInfo): bits per second of the link,
// 0 when not known.
uint64_t port_speed_bps(const ibv_port_attr& pa) {
    uint64_t lane_mbps = 0;
    switch (pa.active_speed) {
        case 1:
            lane_mbps = 2500;
            break;  // SDR
        case 2:
            lane_mbps = 5000;
            break;  // DDR
        case 4:
            lane_mbps = 10000;
            break;  // QDR
        case 8:
            lane_mbps = 10000;
            break;  // FDR10
        case 16:
            lane_mbps = 14000;
            break;  // FDR
        case 32:
            lane_mbps = 25000;
            break;  // EDR
        case 64:
            lane_mbps = 50000;
            break;  // HDR
        case 128:
            lane_mbps = 100000;
            break;  // NDR
        default:
            break;
    }
    uint64_t lanes = 0;
    switch (pa.active_width) {
        case 1:
            lanes = 1;
            break;
        case 2:
            lanes = 4;
            break;
        case 4:
            lanes = 8;
            break;
        case 8:
            lanes = 12;
            break;
        case 16:
            lanes = 2;
            break;
        default:
            break;
    }
    return lane_mbps * lanes * 1000000;
}

uint64_t netdev_speed_bps(const std::string& netdev) {
    std::string s = read_line(fs::path("/sys/class/net") / netdev / "speed");
    long mbps = s.empty() ? -1 : std::atol(s.c_str());
    return mbps > 0 ? uint64_t(mbps) * 1000000 : 0;
}

struct NetdevRdma {
    std::string device;
    bool iwarp = false;
    uint64_t speed_bps = 0;
};

void add_device_ports(ibv_device* dev, std::map<std::string, NetdevRdma>& by_netdev) {
    ibv_context* ctx = ibv_open_device(dev);
    if (!ctx) return;
    std::string name = ibv_get_device_name(dev);
    bool iwarp = dev->transport_type == IBV_TRANSPORT_IWARP || dev->node_type == IBV_NODE_RNIC;
    ibv_device_attr attr{};
    unsigned ports = ibv_query_device(ctx, &attr) == 0 ? attr.phys_port_cnt : 1;
    for (unsigned port = 1; port <= ports; ++port) {
        ibv_port_attr pa{};
        uint64_t speed = ibv_query_port(ctx, uint8_t(port), &pa) == 0 ? port_speed_bps(pa) : 0;
        auto netdevs = netdevs_from_sysfs(name, port);
        if (netdevs.empty() && iwarp) netdevs = netdevs_by_mac(ctx, port);
        for (const auto& nd : netdevs) {
            uint64_t bps = speed ? speed : netdev_speed_bps(nd);
            by_netdev.emplace(nd, NetdevRdma{name, iwarp, bps});
        }
    }
    ibv_close_device(ctx);
}

}  // namespace

std::vector<RdmaInterface> rdma_interfaces() {
    std::map<std::string, NetdevRdma> by_netdev;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    for (int i = 0; list && i < n; ++i)
        add_device_ports(list[i], by_netdev);
    if (list) ibv_free_device_list(list);
    std::vector<RdmaInterface> out;
    if (by_netdev.empty()) return out;
    ifaddrs* ifs = nullptr;
    if (getifaddrs(&ifs) != 0) return out;
    for (ifaddrs* ifa = ifs; ifa; ifa = ifa->ifa_next) {
        if (!ifa->ifa_addr || !ifa->ifa_name) continue;
        auto it = by_netdev.find(ifa->ifa_name);
        if (it == by_netdev.end()) continue;
        char buf[INET6_ADDRSTRLEN] = {};
        if (ifa->ifa_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ifa->ifa_addr)->sin_addr, buf,
                      sizeof(buf));
        else if (ifa->ifa_addr->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr)->sin6_addr, buf,
                      sizeof(buf));
        else
            continue;
        out.push_back(RdmaInterface{buf, it->first, it->second.device, it->second.iwarp,
                                    it->second.speed_bps});
    }
    freeifaddrs(ifs);
    return out;
}

}  // namespace daxsmbd::smbdirect
