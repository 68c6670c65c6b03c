// The server's network interfaces as FSCTL_QUERY_NETWORK_INTERFACE_INFO reports them (MS-SMB2
// 3.3.5.15.11): what a multichannel client may open further channels to.
#pragma once

#include <string>
#include <vector>

#include "protocol/ioctl.h"

namespace daxsmbd::server {

// The up interfaces' IPv4 and IPv6 addresses (IPv6 link-local ones left out: a client cannot
// reach them without a scope). With `listen_addresses` ("interfaces") given, only those; else
// every address but loopback, or the loopback ones when there is nothing else. Link speed from
// /sys/class/net/<name>/speed, 1 Gb/s when the kernel does not know it (Samba's default).
// Blocking (getifaddrs, sysfs): call it off the event loop.
std::vector<protocol::NetworkInterfaceInfo> query_network_interfaces(
    const std::vector<std::string>& listen_addresses);

}  // namespace daxsmbd::server
