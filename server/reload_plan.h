// What a configuration reload (SIGHUP, daxsmbd-admin reload) changes: the running shares and
// [global] parameters compared with a newly parsed configuration. Pure, so that every rule is
// unit-tested without a server; Server::reload applies the plan.
//
// The rules (README "Reloading the configuration"):
//   - a share that is new is added, one that is gone is removed (its tree connects end:
//     STATUS_NETWORK_NAME_DELETED), one whose settings differ is replaced for new tree
//     connects (the existing ones keep the settings they connected with);
//   - continuously available shares (old or new settings) change only at a restart: their
//     persistent handles and journal belong to the running server;
//   - of [global], "log level" applies at once; every other parameter that differs is named as
//     needing a restart and keeps its running value.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/config.h"

namespace daxsmbd::server {

struct ReloadPlan {
    std::vector<ShareConfig> added;
    std::vector<ShareConfig> changed;  // the new settings
    std::vector<std::string> removed;  // share names as the running server has them
    // What the new configuration asks for and only a restart gives, one line each
    // ("[global] 'smb ports' = 1445 (running: 445)", "share [ca]: ...").
    std::vector<std::string> restart_needed;
    std::optional<unsigned> log_level;  // the new level, when it differs

    bool changes_nothing() const {
        return added.empty() && changed.empty() && removed.empty() && !log_level;
    }
};

// What Server::reload did: applied, or refused with the reason (and then nothing changed);
// one line per change made and per change that needs a restart.
struct ReloadOutcome {
    bool applied = false;
    std::string error;
    std::vector<std::string> lines;
};

// `running_globals`: the [global] parameters the server started with; `running_shares`: the
// shares it serves now (IPC$ excluded); `running_log_level`: the level in force; `next`: the
// configuration to reload (its log level already overridden by -d when the daemon has one).
ReloadPlan plan_reload(const std::map<std::string, GlobalSetting>& running_globals,
                       const std::vector<ShareConfig>& running_shares, unsigned running_log_level,
                       const Config& next);

// The share settings that differ between `a` and `b`, as configuration key names ("path",
// "read only", ...), for the log line of a changed share.
std::vector<std::string> changed_share_keys(const ShareConfig& a, const ShareConfig& b);

}  // namespace daxsmbd::server
