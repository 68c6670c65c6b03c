#include "server/reload_plan.h"

#include <cctype>
#include <set>

namespace daxsmbd::server {

namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(uint8_t(a[i])) != std::tolower(uint8_t(b[i]))) return false;
    return true;
}

// The running shares are no Config (they come from the Share objects): Config::find_share's rule.
const ShareConfig* find_share(const std::vector<ShareConfig>& shares, std::string_view name) {
    for (const auto& s : shares)
        if (iequals(s.name, name)) return &s;
    return nullptr;
}

// "[global] 'smb ports' = 1445 (running: 445)": what a restart would change.
std::string global_line(const GlobalSetting* running, const GlobalSetting* next) {
    const std::string& name = next ? next->key : running->key;
    std::string line = "[global] '" + name + "' = ";
    line += next ? "'" + next->value + "'" : "(default)";
    line += " (running: ";
    line += running ? "'" + running->value + "'" : "(default)";
    line += ")";
    return line;
}

void plan_globals(const std::map<std::string, GlobalSetting>& running, const Config& next,
                  ReloadPlan& plan) {
    std::set<std::string> keys;
    for (const auto& [k, v] : running)
        keys.insert(k);
    for (const auto& [k, v] : next.global_settings)
        keys.insert(k);
    for (const auto& k : keys) {
        if (k == "loglevel") continue;  // compared by value (-d overrides it)
        auto r = running.find(k);
        auto n = next.global_settings.find(k);
        const GlobalSetting* rs = r == running.end() ? nullptr : &r->second;
        const GlobalSetting* ns = n == next.global_settings.end() ? nullptr : &n->second;
        if (rs && ns && *rs == *ns) continue;
        plan.restart_needed.push_back(global_line(rs, ns));
    }
}

}  // namespace

std::vector<std::string> changed_share_keys(const ShareConfig& a, const ShareConfig& b) {
    std::vector<std::string> out;
    auto cmp = [&out](bool differs, const char* key) {
        if (differs) out.push_back(key);
    };
    cmp(a.path != b.path, "path");
    cmp(a.read_only != b.read_only, "read only");
    cmp(a.valid_users != b.valid_users, "valid users");
    cmp(a.browseable != b.browseable, "browseable");
    cmp(a.comment != b.comment, "comment");
    cmp(a.case_sensitive != b.case_sensitive, "case sensitive");
    cmp(a.store_dos_attributes != b.store_dos_attributes, "store dos attributes");
    cmp(a.guest_ok != b.guest_ok, "guest ok");
    cmp(a.identity_remoting != b.identity_remoting, "identity remoting");
    cmp(a.identity_remoting_principals != b.identity_remoting_principals,
        "identity remoting principals");
    cmp(a.dax != b.dax, "dax");
    cmp(a.dax_flush != b.dax_flush, "dax flush");
    cmp(a.dax_prefault != b.dax_prefault, "dax prefault");
    cmp(a.rdma_into_pmem_direct != b.rdma_into_pmem_direct, "rdma into pmem");
    cmp(a.encrypt != b.encrypt, "smb encrypt");
    cmp(a.direct_io != b.direct_io, "direct io");
    cmp(a.io_poll != b.io_poll, "io poll");
    cmp(a.io_sqpoll != b.io_sqpoll, "io sqpoll");
    cmp(a.aio_write_size != b.aio_write_size, "aio write size");
    cmp(a.use_sendfile != b.use_sendfile, "use sendfile");
    cmp(a.continuous_availability != b.continuous_availability, "continuous availability");
    cmp(a.scale_out != b.scale_out, "scale out");
    cmp(a.asymmetric != b.asymmetric, "asymmetric");
    // Only the spelling of the name: shares are found case-insensitively.
    cmp(a.name != b.name, "name");
    return out;
}

ReloadPlan plan_reload(const std::map<std::string, GlobalSetting>& running_globals,
                       const std::vector<ShareConfig>& running_shares, unsigned running_log_level,
                       const Config& next) {
    ReloadPlan plan;
    plan_globals(running_globals, next, plan);
    if (next.global.log_level != running_log_level) plan.log_level = next.global.log_level;

    for (const auto& n : next.shares) {
        const ShareConfig* r = find_share(running_shares, n.name);
        if (r && *r == n) continue;
        if (n.continuous_availability || (r && r->continuous_availability)) {
            plan.restart_needed.push_back(
                "share [" + n.name + "]: " + (r ? "changed" : "added") +
                ", continuously available shares change only at a restart");
            continue;
        }
        (r ? plan.changed : plan.added).push_back(n);
    }
    for (const auto& r : running_shares) {
        if (next.find_share(r.name)) continue;
        if (r.continuous_availability) {
            plan.restart_needed.push_back(
                "share [" + r.name +
                "]: removed, continuously available shares change only at a restart");
            continue;
        }
        plan.removed.push_back(r.name);
    }
    return plan;
}

}  // namespace daxsmbd::server
