#include "server/vfs/fs_credentials.h"

#include <execinfo.h>

#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "server/log.h"

namespace daxsmbd::server::vfs {

namespace {

// NGROUPS_MAX of Linux (65536) would make every switch copy a huge list; Samba and the NFS
// server also use a bounded list. Accounts with more groups keep the first ones.
constexpr size_t kMaxGroups = 1024;

std::atomic<uint64_t> g_next_serial{1};

struct Creds {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
};

// What the daemon's threads start with (every thread inherits the process's credentials).
const Creds& daemon_creds() {
    static const Creds c = [] {
        Creds d;
        d.uid = ::geteuid();
        d.gid = ::getegid();
        const long n = ::syscall(SYS_getgroups, 0, nullptr);
        if (n > 0) {
            d.groups.resize(size_t(n));
            const long got = ::syscall(SYS_getgroups, n, d.groups.data());
            d.groups.resize(got > 0 ? size_t(got) : 0);
        }
        std::sort(d.groups.begin(), d.groups.end());
        return d;
    }();
    return c;
}

// The identity this thread's guards asked for (nullptr: the daemon's own) and the credentials
// its kernel task has now.
thread_local const UnixIdentity* tl_current = nullptr;
thread_local uid_t tl_uid = 0;
thread_local gid_t tl_gid = 0;
thread_local std::vector<gid_t> tl_groups;

// Credential changes this thread made (each gives the thread a new kernel cred).
thread_local uint64_t tl_switches = 0;
thread_local bool tl_keep = false;

void count_switch() {
    ++tl_switches;
    if (tl_keep && tl_switches == 1) {
        // A bug: the thread drives SMB Direct, whose kernel files now refuse it.
        log_error("credentials switched on an event loop thread; SMB Direct fails on it:");
        void* frames[32];
        int n = ::backtrace(frames, 32);
        ::backtrace_symbols_fd(frames, n, 2);
    }
}

[[noreturn]] void switch_failed(const char* call, uid_t uid, gid_t gid, int err) {
    log_error("cannot switch file-system credentials (", call, " for uid ", uid, " gid ", gid,
              "): ", std::strerror(err), "; stopping rather than acting with the daemon's rights");
    std::abort();
}

// Makes the calling thread's file-system credentials uid/gid/groups. Raw system calls: they
// change this thread only (see the header). setfsuid/setfsgid report no error, only the id that
// was in force before: with CAP_SETUID/CAP_SETGID (credentials_switchable()) a switch cannot be
// refused, and each call checks that the id in force is the one this thread last set, which
// catches a switch that did not happen (or one made behind this file's back) at the next call.
// No extra query call: on a machine where a system call costs a microsecond, each one counts.
void apply(uid_t uid, gid_t gid, const std::vector<gid_t>& groups) {
    if (tl_uid == uid && tl_gid == gid && tl_groups == groups) return;
    if (!credentials_switchable()) return;
    count_switch();
    // Groups and gid first: the fsuid change may drop capabilities, though none of these
    // calls needs a file capability.
    if (tl_groups != groups) {
        if (::syscall(SYS_setgroups, groups.size(), groups.data()) != 0)
            switch_failed("setgroups", uid, gid, errno);
        tl_groups = groups;
    }
    if (tl_gid != gid) {
        if (gid_t(::syscall(SYS_setfsgid, gid)) != tl_gid)
            switch_failed("setfsgid", uid, gid, EPERM);
        tl_gid = gid;
    }
    if (tl_uid != uid) {
        if (uid_t(::syscall(SYS_setfsuid, uid)) != tl_uid)
            switch_failed("setfsuid", uid, gid, EPERM);
        tl_uid = uid;
    }
}

// This thread's record starts as what every thread of the daemon starts with.
void ensure_initialised() {
    static thread_local bool initialised = false;
    if (initialised) return;
    const Creds& d = daemon_creds();
    tl_uid = d.uid;
    tl_gid = d.gid;
    tl_groups = d.groups;
    initialised = true;
}

void apply_identity(const UnixIdentity* who) {
    ensure_initialised();
    if (who == nullptr) {
        const Creds& d = daemon_creds();
        apply(d.uid, d.gid, d.groups);
    } else {
        apply(who->uid, who->gid, who->groups);
    }
}

bool has_capability(int cap) {
    __user_cap_header_struct hdr{};
    hdr.version = _LINUX_CAPABILITY_VERSION_3;
    hdr.pid = 0;
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &hdr, data) != 0) return false;
    return (data[cap / 32].effective & (1u << (cap % 32))) != 0;
}

// Identities in use, by credentials: the sessions of one user share one identity (and so one
// io_uring personality per ring) while any of them lives; a changed group list is a new one.
struct IdentityKey {
    uid_t uid;
    gid_t gid;
    std::vector<gid_t> groups;
    std::string account;
    bool operator<(const IdentityKey& o) const {
        return std::tie(uid, gid, groups, account) < std::tie(o.uid, o.gid, o.groups, o.account);
    }
};
std::mutex g_identities_mu;
std::map<IdentityKey, std::weak_ptr<const UnixIdentity>> g_identities;

std::shared_ptr<const UnixIdentity> make_identity(uid_t uid, gid_t gid, std::vector<gid_t> groups,
                                                  std::string account) {
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    if (groups.size() > kMaxGroups) groups.resize(kMaxGroups);
    IdentityKey key{uid, gid, groups, account};
    std::lock_guard lk(g_identities_mu);
    if (auto it = g_identities.find(key); it != g_identities.end())
        if (auto live = it->second.lock()) return live;
    // Forget the ones no session holds any more, so the table stays as small as the users.
    std::erase_if(g_identities, [](const auto& e) { return e.second.expired(); });
    auto id = std::make_shared<UnixIdentity>();
    id->uid = uid;
    id->gid = gid;
    id->groups = std::move(groups);
    id->account = std::move(account);
    id->serial = g_next_serial.fetch_add(1, std::memory_order_relaxed);
    g_identities[std::move(key)] = id;
    return id;
}

// getgrouplist for `name` with primary group `gid`, growing the buffer as it asks.
std::vector<gid_t> groups_of(const char* name, gid_t gid) {
    int n = 32;
    std::vector<gid_t> out(static_cast<size_t>(n));
    for (int tries = 0; tries < 4; ++tries) {
        int want = n;
        if (::getgrouplist(name, gid, out.data(), &want) >= 0) {
            out.resize(size_t(want));
            return out;
        }
        n = std::max(want, n * 2);
        out.resize(size_t(n));
    }
    return {gid};
}

}  // namespace

const UnixIdentity& daemon_identity() {
    static const UnixIdentity d = [] {
        UnixIdentity id;
        id.uid = daemon_creds().uid;
        id.gid = daemon_creds().gid;
        id.groups = daemon_creds().groups;
        id.account = "(daemon)";
        return id;
    }();
    return d;
}

bool credentials_switchable() {
    static const bool ok = has_capability(CAP_SETUID) && has_capability(CAP_SETGID);
    return ok;
}

const UnixIdentity* current_fs_identity() {
    return tl_current;
}

std::shared_ptr<const UnixIdentity> resolve_unix_identity(uid_t uid, gid_t gid) {
    passwd pw{};
    passwd* found = nullptr;
    std::vector<char> buf(16384);
    std::vector<gid_t> groups;
    std::string account;
    if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
        account = found->pw_name;
        groups = groups_of(found->pw_name, gid);
    } else {
        groups = {gid};
    }
    return make_identity(uid, gid, std::move(groups), std::move(account));
}

Result<std::shared_ptr<const UnixIdentity>> resolve_unix_account(const std::string& name) {
    passwd pw{};
    passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
        return Error(NtStatus::NoSuchUser);
    return std::shared_ptr<const UnixIdentity>(make_identity(
        found->pw_uid, found->pw_gid, groups_of(found->pw_name, found->pw_gid), found->pw_name));
}

FsCredentials::FsCredentials(const UnixIdentity* who) : previous_(tl_current) {
    apply_identity(who);
    tl_current = who;
}

FsCredentials::~FsCredentials() {
    apply_identity(previous_);
    tl_current = previous_;
}

StickyFsCredentials::StickyFsCredentials(const UnixIdentity* who) : previous_(tl_current) {
    apply_identity(who);
    tl_current = who;
}

StickyFsCredentials::~StickyFsCredentials() {
    // The kernel credentials stay; the next guard compares against them (tl_uid, ...).
    tl_current = previous_;
}

FsUidOnly::FsUidOnly(const UnixIdentity* who) {
    if (who == nullptr || !credentials_switchable()) return;
    ensure_initialised();
    if (tl_uid == who->uid) return;
    count_switch();
    if (uid_t(::syscall(SYS_setfsuid, who->uid)) != tl_uid)
        switch_failed("setfsuid", who->uid, tl_gid, EPERM);
    saved_ = tl_uid;
    tl_uid = who->uid;
    switched_ = true;
}

FsUidOnly::~FsUidOnly() {
    if (!switched_) return;
    if (uid_t(::syscall(SYS_setfsuid, saved_)) != tl_uid)
        switch_failed("setfsuid", saved_, tl_gid, EPERM);
    tl_uid = saved_;
}

uint64_t credential_switches_on_this_thread() { return tl_switches; }

void keep_credentials_on_this_thread() { tl_keep = true; }

}  // namespace daxsmbd::server::vfs
