#include "server/rpcpipe/srvsvc_provider.h"

#include "server/server.h"

namespace daxsmbd::server::rpcpipe {

using namespace protocol::rpc;

ShareInfo share_info_of(const Share& share) {
    ShareInfo info;
    info.name = share.config.name;
    info.comment = share.config.comment;
    if (share.is_ipc) {
        info.type = stype::kIpc | stype::kSpecial;
    } else {
        info.type = stype::kDiskTree;
        // shi2_path is a local path in Windows form (MS-SRVS 2.2.4.24); Samba shows the Unix
        // path as "C:\dir\sub" as well.
        std::string path = "C:";
        for (char c : share.config.path)
            path += c == '/' ? '\\' : c;
        if (path == "C:") path += '\\';
        info.path = std::move(path);
    }
    return info;
}

std::vector<ShareInfo> enumerable_shares(const std::vector<std::shared_ptr<Share>>& shares) {
    std::vector<ShareInfo> out;
    for (const auto& s : shares)
        if (s && s->is_ipc) out.push_back(share_info_of(*s));
    for (const auto& s : shares)
        if (s && !s->is_ipc && s->config.browseable) out.push_back(share_info_of(*s));
    return out;
}

std::vector<ShareInfo> ServerSrvsvcProvider::shares() const {
    return enumerable_shares(server_.shares());
}

ServerInfo ServerSrvsvcProvider::server_info() const {
    ServerInfo info;
    info.name = server_.netbios_name();
    info.comment = server_.config().global.server_string;
    return info;
}

}  // namespace daxsmbd::server::rpcpipe
