#include "server/control/commands.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>
#include <string_view>

#include "server/cluster/cluster_node.h"
#include "server/control/status_report.h"
#include "server/server.h"

namespace daxsmbd::server::control {

namespace {

// An id as status prints it: a session's in hex (0x1d), a connection's in decimal; either way.
std::optional<uint64_t> parse_id(std::string_view s) {
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s.remove_prefix(2);
        base = 16;
    }
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v == 0) return std::nullopt;
    return v;
}

}  // namespace

std::vector<Command> server_commands(Server& server, std::function<Reply()> reload) {
    std::vector<Command> commands;
    commands.push_back({"status", 0, 0, "status", [&server](const std::vector<std::string>&) {
                            return Reply{true, format_status(collect_status(server))};
                        }});
    commands.push_back({"close-session", 1, 1, "close-session ID (as status shows it, 0x...)",
                        [&server](const std::vector<std::string>& args) {
                            auto id = parse_id(args[0]);
                            if (!id) return Reply{false, "'" + args[0] + "' is not a session id"};
                            auto user = server.close_session(*id);
                            if (!user) return Reply{false, "no session " + args[0]};
                            return Reply{true, "closed session " + args[0] + " of " + *user + "\n"};
                        }});
    commands.push_back(
        {"debug-connection", 2, 2, "debug-connection ID on|off",
         [&server](const std::vector<std::string>& args) {
             auto id = parse_id(args[0]);
             if (!id) return Reply{false, "'" + args[0] + "' is not a connection id"};
             if (args[1] != "on" && args[1] != "off")
                 return Reply{false, "usage: debug-connection ID on|off"};
             if (!server.trace_connection(*id, args[1] == "on"))
                 return Reply{false, "no connection " + args[0]};
             return Reply{true, "connection " + args[0] + ": request lines " + args[1] + "\n"};
         }});
    commands.push_back(
        {"cluster", 1, 3, "cluster status | cluster move SHARE NODE",
         [&server](const std::vector<std::string>& args) {
             const bool status = args[0] == "status" && args.size() == 1;
             const bool move = args[0] == "move" && args.size() == 3;
             if (!status && !move)
                 return Reply{false, "usage: cluster status | cluster move SHARE NODE"};
             cluster::ClusterNode* node = server.cluster_node();
             if (!node) return Reply{false, "no cluster: 'cluster etcd endpoints' is not set"};
             if (status) return Reply{true, cluster::format_status(node->status())};
             // The leader, the old owner and the new one each act within milliseconds of the
             // previous step; two lease TTLs cover an election on the way.
             const auto ttl = std::chrono::seconds(std::max(2u, node->status().lease_ttl_s));
             auto r = node->move_share(args[1], args[2], 2 * ttl + std::chrono::seconds(5));
             return Reply{r.ok, r.message};
         }});
    if (reload)
        commands.push_back({"reload", 0, 0, "reload",
                            [reload](const std::vector<std::string>&) { return reload(); }});
    return commands;
}

}  // namespace daxsmbd::server::control
