// The srvsvc data of a running server (MS-SRVS): its shares and its identity, read from the
// Server at every call so that a configuration reload shows at once.
#pragma once

#include <vector>

#include "protocol/srvsvc.h"
#include "server/state/share.h"

namespace daxsmbd::server {
class Server;
}

namespace daxsmbd::server::rpcpipe {

// The srvsvc view of one share: IPC$ is STYPE_IPC | STYPE_SPECIAL (MS-SRVS 2.2.2.4), every other
// share a disk tree whose path is shown the way Windows clients expect ("C:\srv\data").
protocol::rpc::ShareInfo share_info_of(const Share& share);

// Shares in enumeration order: IPC$ first (listed like Windows and Samba do, as a special share),
// then the configured shares that are browseable ("browseable = no" hides a share from
// NetrShareEnum; MS-SRVS 3.1.4.8 leaves the choice of listed shares to the server).
std::vector<protocol::rpc::ShareInfo> enumerable_shares(
    const std::vector<std::shared_ptr<Share>>& shares);

class ServerSrvsvcProvider final : public protocol::rpc::SrvsvcProvider {
  public:
    explicit ServerSrvsvcProvider(Server& server) : server_(server) {}
    std::vector<protocol::rpc::ShareInfo> shares() const override;
    protocol::rpc::ServerInfo server_info() const override;

  private:
    Server& server_;
};

}  // namespace daxsmbd::server::rpcpipe
