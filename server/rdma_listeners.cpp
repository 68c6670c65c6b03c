// "server smb transports = rdma": one SMB Direct listener per address of an RDMA device
// (MS-SMBD 2.1: port 445 in the RDMA CM port space for InfiniBand and RoCE; 5445 for iWARP,
// whose port space is TCP's), restricted to "interfaces" when that is set.
#include <algorithm>

#include "server/log.h"
#include "server/server.h"
#include "server/smbd_transport.h"
#include "smbdirect/verbs_provider.h"

namespace daxsmbd::server {

namespace {

constexpr uint16_t kSmbDirectPort = 445;
constexpr uint16_t kSmbDirectIwarpPort = 5445;

}  // namespace

void Server::open_rdma_listeners() {
    auto found = smbdirect::rdma_interfaces();
    const auto& only = config_.global.interfaces;
    smbdirect::SmbdConfig sc;
    sc.max_read_write_size = config_.global.max_io_size;
    sc.max_fragmented_recv_size =
        std::min<uint32_t>(sc.max_fragmented_recv_size, uint32_t(limits_.max_message_size));
    size_t opened = 0;
    for (const auto& ifc : found) {
        if (!only.empty() && std::find(only.begin(), only.end(), ifc.address) == only.end())
            continue;
        boost::system::error_code ec;
        auto addr = asio::ip::make_address(ifc.address, ec);
        if (ec) continue;
        if (addr.is_v6() && addr.to_v6().is_link_local()) continue;
        const uint16_t port = ifc.iwarp ? kSmbDirectIwarpPort : kSmbDirectPort;
        std::string why;
        auto requests = smbdirect::VerbsConnectionRequests::listen(
            *loops_[0], addr, port, smbdirect::QueuePairRequest{}, &why,
            [](const std::string& s) { log_info("SMB Direct: ", s); });
        if (!requests) {
            log_error("SMB Direct: cannot listen on ", ifc.address, " port ", port, " (",
                      ifc.device, "): ", why);
            continue;
        }
        log_info("listening on ", ifc.address, " port ", port, " (SMB Direct, ", ifc.device, " on ",
                 ifc.netdev, ifc.iwarp ? ", iWARP" : "", ")");
        listeners_.push_back(
            std::make_unique<SmbdListener>(std::move(requests), sc, smbd_counters, buffers,
                                           rdma_memory, ifc.address + ":" + std::to_string(port)));
        {
            std::lock_guard lk(rdma_mu_);
            rdma_addresses_.emplace_back(ifc.address, ifc.link_speed_bps);
        }
        ++opened;
    }
    if (!opened)
        log_error("server smb transports = rdma, but no RDMA device has a usable IP address",
                  only.empty() ? "" : " among 'interfaces'", ": SMB Direct is off");
}

}  // namespace daxsmbd::server
