// Server::reload and Server::end_share_trees: a configuration read anew applied to the running
// server (server/reload_plan.h has the rules).
#include "server/cluster/cluster_node.h"
#include "server/log.h"
#include "server/server.h"
#include "server/vfs/case_fold.h"

namespace daxsmbd::server {

namespace {

bool same_share(const Share& s, std::string_view name) {
    return !s.is_ipc && vfs::equal_ignore_case(s.config.name, name);
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items)
        out += (out.empty() ? "" : ", ") + i;
    return out;
}

}  // namespace

size_t Server::end_share_trees(std::string_view name) {
    size_t ended = 0;
    for (const auto& s : sessions.all()) {
        std::vector<uint32_t> tids;
        {
            std::lock_guard lk(s->mu);
            for (auto it = s->trees.begin(); it != s->trees.end();) {
                if (it->second->share && same_share(*it->second->share, name)) {
                    tids.push_back(it->first);
                    it = s->trees.erase(it);
                } else {
                    ++it;
                }
            }
        }
        if (tids.empty()) continue;
        ended += tids.size();
        const uint64_t sid = s->id;
        opens.remove_if([sid, &tids](const Open& o) {
            return o.session_id == sid &&
                   std::find(tids.begin(), tids.end(), o.tree_id) != tids.end();
        });
    }
    // Durable opens whose connection is gone have no session; their share is gone too.
    opens.remove_if([name](const Open& o) {
        return o.durable.disconnected && !o.durable.persistent &&
               vfs::equal_ignore_case(o.durable.share, name);
    });
    return ended;
}

bool Server::open_reloaded_shares(const ReloadPlan& plan, std::vector<std::shared_ptr<Share>>& out,
                                  std::string* error) {
    for (const auto* list : {&plan.added, &plan.changed})
        for (const auto& sc : *list) {
            auto s = open_share(sc, error);
            if (!s) return false;
            // The io_uring rings are set up at start (server/io/uring_engine.h); without them
            // the share's I/O takes the normal ring.
            if (sc.io_sqpoll && !engine_sqpoll_)
                log_info("share [", sc.name, "]: io sqpoll = yes takes effect at the next restart");
            if (s->io_poll_usable && !engine_iopoll_)
                log_info("share [", sc.name, "]: io poll = yes takes effect at the next restart");
            out.push_back(std::move(s));
        }
    return true;
}

ReloadOutcome Server::reload(const Config& next) {
    std::lock_guard reload_lock(reload_mu_);
    ReloadOutcome outcome;
    std::vector<ShareConfig> running;
    for (const auto& s : shares())
        if (!s->is_ipc) running.push_back(s->config);
    const ReloadPlan plan =
        plan_reload(config_.global_settings, running, unsigned(g_log_level), next);

    std::vector<std::shared_ptr<Share>> fresh;
    if (!open_reloaded_shares(plan, fresh, &outcome.error)) return outcome;
    for (auto& s : fresh) {
        s->metrics_index = metrics.share_slot(s->config.name);
        if (s->metrics_index == SIZE_MAX)
            log_info("share [", s->config.name, "]: no metrics slot left; its I/O is not counted");
    }
    {
        std::lock_guard lk(shares_mu_);
        for (auto& s : fresh) {
            auto it = std::find_if(shares_.begin(), shares_.end(), [&](const auto& old) {
                return same_share(*old, s->config.name);
            });
            if (it != shares_.end()) {
                outcome.lines.push_back("share [" + s->config.name + "] changed (" +
                                        join(changed_share_keys((*it)->config, s->config)) +
                                        "): new tree connects use the new settings");
                *it = s;
            } else {
                outcome.lines.push_back("share [" + s->config.name + "] added (path " +
                                        s->config.path + ")");
                shares_.push_back(s);
            }
        }
        for (const auto& name : plan.removed)
            std::erase_if(shares_, [&](const auto& s) {
                if (!same_share(*s, name)) return false;
                metrics.retire_share(s->metrics_index);
                return true;
            });
    }
    for (const auto& name : plan.removed) {
        const size_t trees = end_share_trees(name);
        outcome.lines.push_back("share [" + name + "] removed (" + std::to_string(trees) +
                                " tree connects ended)");
    }
    if (!fresh.empty() || !plan.removed.empty()) device_health.set_shares(share_paths());
    if (cluster_ && (!fresh.empty() || !plan.removed.empty())) {
        // Scale-out shares added (or turned scale-out) are claimed now, removed ones released.
        std::vector<std::string> scale_out;
        for (const auto& s : shares())
            if (!s->is_ipc && s->config.scale_out) scale_out.push_back(s->config.name);
        cluster_->set_shares(std::move(scale_out));
    }
    if (plan.log_level) {
        outcome.lines.push_back("log level " + std::to_string(g_log_level) + " -> " +
                                std::to_string(*plan.log_level));
        g_log_level = int(*plan.log_level);
    }
    for (const auto& r : plan.restart_needed)
        outcome.lines.push_back("needs a restart: " + r);
    if (plan.changes_nothing() && plan.restart_needed.empty())
        outcome.lines.push_back("nothing changed");
    outcome.applied = true;
    return outcome;
}

}  // namespace daxsmbd::server
