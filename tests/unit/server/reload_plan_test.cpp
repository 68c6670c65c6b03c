// Tests of the reload rules (server/reload_plan.h): configurations parsed from text, as the
// daemon reads them, compared share by share and key by key.
#include "server/reload_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace daxsmbd::server {
namespace {

Config parse(const std::string& text) {
    auto r = Config::parse(text, "test.conf");
    if (auto* e = std::get_if<Config::ParseError>(&r)) ADD_FAILURE() << e->message;
    return std::get<Config>(std::move(r));
}

const char* kRunning =
    "[global]\n"
    "  smb ports = 445\n"
    "  log level = 1\n"
    "[data]\n"
    "  path = /srv/data\n"
    "  read only = no\n"
    "[old]\n"
    "  path = /srv/old\n"
    "[ca]\n"
    "  path = /srv/ca\n"
    "  continuous availability = yes\n";

ReloadPlan plan_against_running(const std::string& next_text) {
    const Config running = parse(kRunning);
    return plan_reload(running.global_settings, running.shares, running.global.log_level,
                       parse(next_text));
}

std::vector<std::string> names(const std::vector<ShareConfig>& v) {
    std::vector<std::string> out;
    for (const auto& s : v)
        out.push_back(s.name);
    return out;
}

TEST(ReloadPlan, SameTextChangesNothing) {
    auto plan = plan_against_running(kRunning);
    EXPECT_TRUE(plan.changes_nothing());
    EXPECT_TRUE(plan.restart_needed.empty());
}

TEST(ReloadPlan, SharesAddedRemovedAndChanged) {
    auto plan = plan_against_running(
        "[global]\n  smb ports = 445\n  log level = 1\n"
        "[DATA]\n  path = /srv/data\n  read only = yes\n"  // changed (and spelled otherwise)
        "[new]\n  path = /srv/new\n"
        "[ca]\n  path = /srv/ca\n  continuous availability = yes\n");
    EXPECT_EQ(names(plan.added), std::vector<std::string>{"new"});
    EXPECT_EQ(names(plan.changed), std::vector<std::string>{"DATA"});
    EXPECT_EQ(plan.removed, std::vector<std::string>{"old"});
    EXPECT_TRUE(plan.restart_needed.empty());
    EXPECT_EQ(changed_share_keys(parse(kRunning).shares[0], plan.changed[0]),
              (std::vector<std::string>{"read only", "name"}));
}

TEST(ReloadPlan, ContinuouslyAvailableSharesWaitForARestart) {
    auto plan = plan_against_running(
        "[global]\n  smb ports = 445\n  log level = 1\n"
        "[data]\n  path = /srv/data\n  read only = no\n"
        "[old]\n  path = /srv/old\n"
        "[ca]\n  path = /srv/ca2\n  continuous availability = yes\n"
        "[ca-new]\n  path = /srv/ca3\n  continuous availability = yes\n");
    EXPECT_TRUE(plan.changes_nothing());
    ASSERT_EQ(plan.restart_needed.size(), 2u);
    EXPECT_NE(plan.restart_needed[0].find("share [ca]: changed"), std::string::npos);
    EXPECT_NE(plan.restart_needed[1].find("share [ca-new]: added"), std::string::npos);

    // Removing it, or making a running share continuously available, waits too.
    plan = plan_against_running(
        "[global]\n  smb ports = 445\n"
        "[data]\n  path = /srv/data\n  read only = no\n  continuous availability = yes\n"
        "[old]\n  path = /srv/old\n");
    EXPECT_TRUE(plan.changed.empty());
    EXPECT_TRUE(plan.removed.empty());
    EXPECT_EQ(plan.restart_needed.size(), 2u);
}

TEST(ReloadPlan, LogLevelAppliesOtherGlobalsNeedARestart) {
    auto plan = plan_against_running(
        "[global]\n  smb ports = 1445\n  log level = 3\n  server signing = mandatory\n"
        "[data]\n  path = /srv/data\n  read only = no\n"
        "[old]\n  path = /srv/old\n"
        "[ca]\n  path = /srv/ca\n  continuous availability = yes\n");
    ASSERT_TRUE(plan.log_level);
    EXPECT_EQ(*plan.log_level, 3u);
    ASSERT_EQ(plan.restart_needed.size(), 2u);
    // By key, as written, with the running value.
    EXPECT_EQ(plan.restart_needed[0],
              "[global] 'server signing' = 'mandatory' (running: (default))");
    EXPECT_EQ(plan.restart_needed[1], "[global] 'smb ports' = '1445' (running: '445')");
}

TEST(ReloadPlan, SynonymsAndSpellingOfKeysAreTheSameSetting) {
    const Config running = parse("[global]\n  server smb encrypt = desired\n[d]\n  path = /d\n");
    auto plan = plan_reload(running.global_settings, running.shares, 1,
                            parse("[global]\n  SMB Encrypt = desired\n[d]\n  path = /d\n"));
    EXPECT_TRUE(plan.restart_needed.empty());
    EXPECT_TRUE(plan.changes_nothing());
}

}  // namespace
}  // namespace daxsmbd::server
