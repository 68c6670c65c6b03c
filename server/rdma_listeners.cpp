// "server smb transports = rdma": one SMB Direct listener per address of an RDMA device
// (MS-SMBD 2.1: port 445 in the RDMA CM port space for InfiniBand and RoCE; 5445 for iWARP,
// whose port space is TCP's), restricted to "interfaces" when that is set.
#include <fcntl.h>
#include <rdma/rdma_cma.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "server/log.h"
#include "server/server.h"
#include "server/smbd_transport.h"
#include "server/vfs/share_root.h"
#include "smbdirect/verbs_provider.h"

namespace daxsmbd::server {

namespace {

constexpr uint16_t kSmbDirectPort = 445;
constexpr uint16_t kSmbDirectIwarpPort = 5445;

// Whether RDMA can reach a DAX share's file mappings directly, probed with a scratch file on
// the share: Linux refuses long-term pins of fsdax pages (a plain registration fails with
// EOPNOTSUPP), so only an On-Demand-Paging registration can cover them. `*direct`: it did.
std::string probe_rdma_into_pmem(smbdirect::ProtectionDomain& pd, int share_root, bool* direct) {
    *direct = false;
    constexpr size_t kProbe = 2u << 20;
    int fd = ::openat(share_root, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return std::string("bounce (no scratch file for the probe: ") + strerror(errno) + ")";
    std::string result;
    if (::posix_fallocate(fd, 0, kProbe) != 0) {
        ::close(fd);
        return "bounce (no space for the probe)";
    }
    void* m =
        ::mmap(nullptr, kProbe, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    if (m == MAP_FAILED) {
        ::close(fd);
        return std::string("bounce (MAP_SYNC mapping refused: ") + strerror(errno) + ")";
    }
    std::string pinned_why, odp_why;
    auto pinned = pd.register_memory(m, kProbe, smbdirect::access::kLocalWrite, &pinned_why);
    std::unique_ptr<smbdirect::MemoryRegion> odp;
    if (pd.on_demand_paging())
        odp = pd.register_memory(
            m, kProbe, smbdirect::access::kLocalWrite | smbdirect::access::kOnDemand, &odp_why);
    else
        odp_why = pd.device_name() + " has no On-Demand Paging";
    // Only ODP: a pinned registration that works here (a device or kernel that allows it)
    // would hold the pages for good, which truncation and the map cache cannot live with.
    if (odp) {
        *direct = true;
        result = "direct (ODP on " + pd.device_name() + ")";
    } else {
        result = "bounce (ODP registration refused: " + odp_why +
                 "; pinned: " + (pinned ? std::string("works") : pinned_why) + ")";
    }
    pinned.reset();
    odp.reset();
    ::munmap(m, kProbe);
    ::close(fd);
    return result;
}

}  // namespace

void Server::probe_dax_shares(smbdirect::VerbsDomains& domains, const std::string& device) {
    int n = 0;
    ibv_context** devs = rdma_get_devices(&n);
    std::shared_ptr<smbdirect::VerbsDomain> pd;
    std::string why;
    for (int i = 0; devs && i < n; ++i)
        if (device == ibv_get_device_name(devs[i]->device)) pd = domains.get(devs[i], &why);
    if (devs) rdma_free_devices(devs);
    for (auto& s : shares_) {
        if (!s->dax) continue;
        bool direct = false;
        std::string mode = pd ? probe_rdma_into_pmem(*pd, s->root->fd(), &direct)
                              : "bounce (" + device + ": " + why + ")";
        if (direct && !s->config.rdma_into_pmem_direct) {
            direct = false;
            mode = "bounce (rdma into pmem = bounce)";
        }
        // Any device that registers the mappings turns placement on: a connection on one that
        // cannot goes through pool buffers (SmbdTransport::push_kinds).
        s->rdma_direct = s->rdma_direct || direct;
        log_info("share [", s->config.name, "]: RDMA into pmem on ", device, ": ", mode);
    }
}

void Server::open_rdma_listeners() {
    auto found = smbdirect::rdma_interfaces();
    const auto& only = config_.global.interfaces;
    smbdirect::SmbdConfig sc;
    sc.max_read_write_size = config_.global.max_io_size;
    sc.max_fragmented_recv_size =
        std::min<uint32_t>(sc.max_fragmented_recv_size, uint32_t(limits_.max_message_size));
    size_t opened = 0;
    // One protection domain per device for every listener: the buffer pool registers with
    // each device once.
    auto domains = std::make_shared<smbdirect::VerbsDomains>();
    std::vector<std::string> probed;
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
            [](const std::string& s) { log_info("SMB Direct: ", s); }, domains);
        if (!requests) {
            log_error("SMB Direct: cannot listen on ", ifc.address, " port ", port, " (",
                      ifc.device, "): ", why);
            continue;
        }
        log_info("listening on ", ifc.address, " port ", port, " (SMB Direct, ", ifc.device, " on ",
                 ifc.netdev, ifc.iwarp ? ", iWARP" : "", ")");
        // Listening again after the device went away: the same address and port, on the
        // first loop as now; refused quietly until an RDMA device has the address again.
        asio::io_context& home = *loops_[0];
        auto relisten = [&home, addr, port, domains]() {
            std::string ignored;
            return std::unique_ptr<smbdirect::ConnectionRequests>(
                smbdirect::VerbsConnectionRequests::listen(
                    home, addr, port, smbdirect::QueuePairRequest{}, &ignored,
                    [](const std::string& s) { log_info("SMB Direct: ", s); }, domains));
        };
        listeners_.push_back(std::make_unique<SmbdListener>(
            std::move(requests), sc, smbd_counters, buffers, rdma_memory,
            ifc.address + ":" + std::to_string(port), relisten));
        {
            std::lock_guard lk(rdma_mu_);
            rdma_addresses_.emplace_back(ifc.address, ifc.link_speed_bps);
        }
        ++opened;
        if (std::find(probed.begin(), probed.end(), ifc.device) == probed.end()) {
            probed.push_back(ifc.device);
            probe_dax_shares(*domains, ifc.device);
        }
    }
    if (!opened)
        log_error("server smb transports = rdma, but no RDMA device has a usable IP address",
                  only.empty() ? "" : " among 'interfaces'", ": SMB Direct is off");
}

}  // namespace daxsmbd::server
