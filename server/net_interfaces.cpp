#include "server/net_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace daxsmbd::server {

namespace {

uint64_t link_speed_bps(const char* name) {
    std::ifstream f(std::string("/sys/class/net/") + name + "/speed");
    long long mbps = 0;
    if (f >> mbps && mbps > 0) return uint64_t(mbps) * 1000000u;
    return 1000000000u;
}

}  // namespace

std::vector<protocol::NetworkInterfaceInfo> query_network_interfaces(
    const std::vector<std::string>& listen_addresses) {
    using protocol::NetworkInterfaceInfo;
    std::vector<NetworkInterfaceInfo> others, loopback;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return {};
    for (ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
        if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP)) continue;
        NetworkInterfaceInfo e;
        char text[INET6_ADDRSTRLEN] = {};
        if (ifa->ifa_addr->sa_family == AF_INET) {
            const auto* sin = reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr);
            e.family = protocol::sockaddr_family::kInterNetwork;
            std::memcpy(e.address.data(), &sin->sin_addr, 4);
            inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text);
        } else if (ifa->ifa_addr->sa_family == AF_INET6) {
            const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr);
            if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr)) continue;
            e.family = protocol::sockaddr_family::kInterNetworkV6;
            std::memcpy(e.address.data(), &sin6->sin6_addr, 16);
            inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof text);
        } else {
            continue;
        }
        if (!listen_addresses.empty() && std::find(listen_addresses.begin(), listen_addresses.end(),
                                                   std::string(text)) == listen_addresses.end())
            continue;
        e.if_index = if_nametoindex(ifa->ifa_name);
        if (e.if_index == 0) continue;  // MS-SMB2 2.2.32.5: IfIndex is never 0
        e.link_speed = link_speed_bps(ifa->ifa_name);
        ((ifa->ifa_flags & IFF_LOOPBACK) ? loopback : others).push_back(e);
    }
    freeifaddrs(list);
    if (!listen_addresses.empty()) {
        others.insert(others.end(), loopback.begin(), loopback.end());
        return others;
    }
    return others.empty() ? loopback : others;
}

}  // namespace daxsmbd::server
