// Who a file-system call runs as (architecture.md "Identity and access").
//
// The daemon runs as root; every file-system operation it makes for a session runs with that
// session's Unix identity (uid, primary gid, supplementary groups), so that the kernel's
// permission checks apply per user and new files belong to their creator, as Samba
// (become_user) and ksmbd (override_creds) do:
//   - synchronous calls (the blocking pool, the few on an event loop) switch the calling
//     thread's file-system credentials for their duration with FsCredentials, a scope guard;
//   - io_uring requests carry a personality registered with the user's credentials
//     (io::Engine, uring_engine.h).
// Credentials are per thread in Linux, but glibc's setgroups() (like its setuid family) is
// applied to every thread of the process (the nptl "setxid" broadcast). So this file makes the
// raw system calls: setfsuid/setfsgid change only what file-system checks and new files use,
// and the raw setgroups only the calling thread. When fsuid leaves 0 the kernel drops the file
// capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, ...) from the thread's effective set
// and gives them back when it returns to 0 (capabilities(7), "Effect of user ID changes"), so an
// operation as a user gets no root override, and the daemon's own calls (AsDaemon) keep theirs.
//
// A daemon started without CAP_SETUID/CAP_SETGID (not as root) cannot switch: every operation
// then runs as the daemon's own user, which start() logs once (credentials_switchable()).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "protocol/result.h"

namespace daxsmbd::server::vfs {

struct UnixIdentity {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  // supplementary groups, sorted, without duplicates
    std::string account;        // the passwd name, for log lines ("" when there is none)
    // A number of its own per distinct identity of this process (the io_uring personality
    // cache's key); 0 for identities not made by resolve_unix_identity().
    uint64_t serial = 0;

    bool is_root() const { return uid == 0; }
    bool same_credentials(const UnixIdentity& o) const {
        return uid == o.uid && gid == o.gid && groups == o.groups;
    }
};

// The identity of uid with primary group gid: the supplementary groups of the passwd account of
// uid (getgrouplist), or none when uid has no account. The same credentials give the same
// identity (serial included) while anything holds it. Blocking (NSS): call it off the loops.
std::shared_ptr<const UnixIdentity> resolve_unix_identity(uid_t uid, gid_t gid);
// The identity of the passwd account `name` (its uid, primary gid and groups); an error
// (NoSuchUser) when there is no such account.
Result<std::shared_ptr<const UnixIdentity>> resolve_unix_account(const std::string& name);

// True when this process may switch its threads' credentials (it holds CAP_SETUID and
// CAP_SETGID, normally by running as root). Checked once.
bool credentials_switchable();

// The identity the calling thread's file-system calls run as now (nullptr: the daemon's own).
const UnixIdentity* current_fs_identity();

// Scope guard: the calling thread's file-system credentials are `who`'s from construction to
// destruction, then what they were before (guards nest). Never held across a co_await: a
// coroutine may resume on another thread, and the loop runs other connections meanwhile.
// Switching is skipped when the thread already runs with the same credentials. A failed switch
// (only possible when the kernel refuses what a root process may do) aborts the process rather
// than letting the call run with the daemon's rights.
class [[nodiscard]] FsCredentials {
  public:
    explicit FsCredentials(const UnixIdentity* who);
    explicit FsCredentials(const UnixIdentity& who) : FsCredentials(&who) {}
    ~FsCredentials();
    FsCredentials(const FsCredentials&) = delete;
    FsCredentials& operator=(const FsCredentials&) = delete;

  private:
    const UnixIdentity* previous_;
};

// For the blocking pool's threads: the calling thread runs with `who`'s credentials from here
// on, and keeps them after the scope ends, so that the next job of the same user needs no system
// call (Samba's smbd switches the same lazy way). Only for threads where every job starts with a
// guard of its own: the blocking pool, whose jobs are RequestContext::blocking calls (this),
// the io engine's fallback calls (FsCredentials) and the daemon's own jobs (AsDaemon).
class [[nodiscard]] StickyFsCredentials {
  public:
    explicit StickyFsCredentials(const UnixIdentity* who);
    ~StickyFsCredentials();
    StickyFsCredentials(const StickyFsCredentials&) = delete;
    StickyFsCredentials& operator=(const StickyFsCredentials&) = delete;

  private:
    const UnixIdentity* previous_;
};

// Only the fsuid of `who` (null: nothing changes) for the scope: for a system call on a
// descriptor that is already open, where the uid is all the kernel looks at (a write by someone
// without CAP_FSETID clears set-user-ID bits; groups only decide whether a set-group-ID bit
// stays, which without them errs towards clearing it). Two system calls instead of six: the
// inline buffered writes of the io engine.
class [[nodiscard]] FsUidOnly {
  public:
    explicit FsUidOnly(const UnixIdentity* who);
    ~FsUidOnly();
    FsUidOnly(const FsUidOnly&) = delete;
    FsUidOnly& operator=(const FsUidOnly&) = delete;

  private:
    bool switched_ = false;
    uid_t saved_ = 0;
};

// How often the calling thread changed its credentials so far. Each change gives the thread a
// new kernel credential, and the kernel's RDMA files (uverbs, rdma_cm) refuse a thread whose
// credential is not the one they were opened with: the event loops, which drive SMB Direct,
// must never switch (io::EngineOptions).
uint64_t credential_switches_on_this_thread();
// Marks the calling thread as one that must keep its credentials: a switch on it is logged as
// the error it is, with a backtrace.
void keep_credentials_on_this_thread();

// The daemon's own uid (root), as an identity for FsUidOnly.
const UnixIdentity& daemon_identity();

// Scope guard for the few calls the daemon makes with its own rights inside an operation of a
// user, after its own access check allowed them: the NT security descriptor store, and what
// the README's "Identity" section lists. Only the fsuid goes back to the daemon's (two system
// calls; with it the kernel gives back the file capabilities, so groups do not matter): nothing
// may be created under it (a new file would get the user's gid). current_fs_identity() stays
// the user's.
class [[nodiscard]] AsDaemon {
  public:
    AsDaemon() : guard_(&daemon_identity()) {}

  private:
    FsUidOnly guard_;
};

}  // namespace daxsmbd::server::vfs
