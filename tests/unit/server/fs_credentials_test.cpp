// Per-thread file-system credentials (server/vfs/fs_credentials.h) and the io_uring
// personalities built on them (server/io/uring_engine.h). These need root (CAP_SETUID,
// CAP_SETGID, as the daemon has); elsewhere they are skipped. The uids and gids used have no
// account: nothing on the machine is assumed to exist.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"  // see create.cpp
#endif

#include "server/vfs/fs_credentials.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "server/io/uring_engine.h"
#include "tests/unit/server/engine_runner.h"

namespace daxsmbd::server::vfs {
namespace {

constexpr uid_t kUser = 61001;
constexpr gid_t kGroup = 61001;
constexpr gid_t kOtherGroup = 61077;

std::shared_ptr<UnixIdentity> identity(uid_t uid, gid_t gid, std::vector<gid_t> groups = {}) {
    auto id = std::make_shared<UnixIdentity>();
    id->uid = uid;
    id->gid = gid;
    id->groups = std::move(groups);
    static uint64_t serial = 1u << 20;
    id->serial = ++serial;
    return id;
}

// The fsuid of the calling thread (setfsuid with an invalid id changes nothing and returns it).
uid_t thread_fsuid() {
    return uid_t(::syscall(SYS_setfsuid, uid_t(-1)));
}

class FsCredentialsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!credentials_switchable()) GTEST_SKIP() << "needs CAP_SETUID and CAP_SETGID (root)";
        char tmpl[] = "/tmp/daxsmbd-creds-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        ASSERT_EQ(::chmod(dir_.c_str(), 01777), 0);
    }
    void TearDown() override {
        if (!dir_.empty()) std::filesystem::remove_all(dir_);
    }
    std::string path(const std::string& name) const { return dir_ + "/" + name; }
    void make_file(const std::string& name, mode_t mode, uid_t uid = 0, gid_t gid = 0) {
        std::ofstream(path(name)) << "content";
        ASSERT_EQ(::chown(path(name).c_str(), uid, gid), 0);
        ASSERT_EQ(::chmod(path(name).c_str(), mode), 0);
    }
    void make_file_as_fsuid() {
        int fd = ::open(path("by-fsuid").c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        ASSERT_GE(fd, 0) << std::strerror(errno);
        ::close(fd);
    }
    static int open_errno(const std::string& p, int flags) {
        int fd = ::open(p.c_str(), flags | O_CLOEXEC);
        if (fd < 0) return errno;
        ::close(fd);
        return 0;
    }
    std::string dir_;
};

TEST_F(FsCredentialsTest, FilesCreatedUnderTheGuardBelongToTheUser) {
    auto bob = identity(kUser, kGroup);
    {
        FsCredentials as(*bob);
        EXPECT_EQ(current_fs_identity(), bob.get());
        int fd = ::open(path("new").c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        ASSERT_GE(fd, 0) << std::strerror(errno);
        ::close(fd);
        ASSERT_EQ(::mkdir(path("newdir").c_str(), 0755), 0);
    }
    EXPECT_EQ(current_fs_identity(), nullptr);
    struct stat st {};
    ASSERT_EQ(::stat(path("new").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kUser);
    EXPECT_EQ(st.st_gid, kGroup);
    ASSERT_EQ(::stat(path("newdir").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kUser);
}

TEST_F(FsCredentialsTest, PermissionsApplyToTheUserAndTheDaemonGetsItsRightsBack) {
    make_file("root-only", 0600);
    auto bob = identity(kUser, kGroup);
    {
        FsCredentials as(*bob);
        // No CAP_DAC_OVERRIDE while the fsuid is not 0.
        EXPECT_EQ(open_errno(path("root-only"), O_RDONLY), EACCES);
        {
            AsDaemon daemon;
            EXPECT_EQ(open_errno(path("root-only"), O_RDONLY), 0);
        }
        EXPECT_EQ(open_errno(path("root-only"), O_RDONLY), EACCES);
    }
    EXPECT_EQ(open_errno(path("root-only"), O_RDONLY), 0);
}

TEST_F(FsCredentialsTest, SupplementaryGroupsGiveTheGroupsRights) {
    make_file("group-readable", 0040, 0, kOtherGroup);
    auto outsider = identity(kUser, kGroup);
    auto member = identity(kUser, kGroup, {kGroup, kOtherGroup});
    {
        FsCredentials as(*outsider);
        EXPECT_EQ(open_errno(path("group-readable"), O_RDONLY), EACCES);
    }
    {
        FsCredentials as(*member);
        EXPECT_EQ(open_errno(path("group-readable"), O_RDONLY), 0);
        EXPECT_EQ(open_errno(path("group-readable"), O_WRONLY), EACCES);
    }
}

// Another thread (started before the switch: a new thread copies its creator's credentials)
// keeps the daemon's.
TEST_F(FsCredentialsTest, OnlyTheCallingThreadSwitches) {
    auto bob = identity(kUser, kGroup);
    std::promise<void> switched;
    uid_t other = 12345;
    std::thread t([&, ready = switched.get_future()]() mutable {
        ready.wait();
        other = thread_fsuid();
    });
    {
        FsCredentials as(*bob);
        EXPECT_EQ(thread_fsuid(), kUser);
        switched.set_value();
        t.join();
    }
    EXPECT_EQ(other, 0u);
}

TEST_F(FsCredentialsTest, NestedGuardsRestoreInOrder) {
    auto bob = identity(kUser, kGroup);
    auto carol = identity(kUser + 1, kGroup + 1);
    {
        FsCredentials a(*bob);
        {
            FsCredentials b(*carol);
            EXPECT_EQ(thread_fsuid(), kUser + 1);
        }
        EXPECT_EQ(thread_fsuid(), kUser);
        EXPECT_EQ(current_fs_identity(), bob.get());
    }
    EXPECT_EQ(thread_fsuid(), 0u);
}

// The blocking pool's guard keeps the user's credentials after its scope (the next call of the
// same user needs no system call); the next guard of anyone else, the daemon included, switches.
TEST_F(FsCredentialsTest, StickyCredentialsStayUntilTheNextGuard) {
    auto bob = identity(kUser, kGroup);
    make_file("root-only", 0600);
    {
        StickyFsCredentials as(bob.get());
        EXPECT_EQ(current_fs_identity(), bob.get());
    }
    EXPECT_EQ(current_fs_identity(), nullptr);
    EXPECT_EQ(thread_fsuid(), kUser) << "still bob's";
    {
        AsDaemon daemon;
        EXPECT_EQ(thread_fsuid(), 0u);
        EXPECT_EQ(open_errno(path("root-only"), O_RDONLY), 0);
    }
    EXPECT_EQ(thread_fsuid(), kUser) << "AsDaemon restores what its scope began with";
    {
        StickyFsCredentials as(bob.get());
        EXPECT_EQ(open_errno(path("root-only"), O_RDONLY), EACCES);
    }
    { StickyFsCredentials as(nullptr); }
    EXPECT_EQ(thread_fsuid(), 0u);
}

TEST_F(FsCredentialsTest, FsUidOnlySwitchesTheUidAndRestoresIt) {
    auto bob = identity(kUser, kGroup);
    {
        FsUidOnly as(bob.get());
        EXPECT_EQ(thread_fsuid(), kUser);
        make_file_as_fsuid();
    }
    EXPECT_EQ(thread_fsuid(), 0u);
    { FsUidOnly nobody(nullptr); }
    EXPECT_EQ(thread_fsuid(), 0u);
    struct stat st {};
    ASSERT_EQ(::stat(path("by-fsuid").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kUser);
}

TEST_F(FsCredentialsTest, ResolvedIdentityOfAnUnknownUidHasItsPrimaryGroupOnly) {
    auto id = resolve_unix_identity(kUser, kGroup);
    EXPECT_EQ(id->uid, kUser);
    EXPECT_EQ(id->gid, kGroup);
    EXPECT_EQ(id->groups, std::vector<gid_t>{kGroup});
    EXPECT_TRUE(id->account.empty());
    // The same credentials: the same identity while it is held (one personality per ring).
    EXPECT_EQ(id->serial, resolve_unix_identity(kUser, kGroup)->serial);
    EXPECT_EQ(id.get(), resolve_unix_identity(kUser, kGroup).get());
    EXPECT_NE(id->serial, resolve_unix_identity(kUser, kGroup + 1)->serial);
    const uint64_t held = id->serial;
    id.reset();
    EXPECT_NE(resolve_unix_identity(kUser, kGroup)->serial, held) << "not kept once unused";
    EXPECT_FALSE(resolve_unix_account("dxt-no-such-account-here"));
    auto root = resolve_unix_account("root");
    ASSERT_TRUE(root);
    EXPECT_TRUE((*root)->is_root());
}

// A write by someone without CAP_FSETID clears the set-user-ID bit (write(2)): proof of whose
// credentials the kernel used for a write through the ring and for an inline write.
TEST_F(FsCredentialsTest, RingAndInlineWritesRunWithTheUsersCredentials) {
    auto bob = identity(kUser, kGroup);
    for (const bool inline_write : {false, true}) {
        for (const bool as_bob : {false, true}) {
            SCOPED_TRACE(std::string(inline_write ? "inline" : "ring") +
                         (as_bob ? " as bob" : " as the daemon"));
            make_file("setuid", 04777);
            int fd = ::open(path("setuid").c_str(), O_RDWR | O_CLOEXEC);
            ASSERT_GE(fd, 0);
            io::EngineOptions opts;
            opts.register_buffers = false;
            int res = -1;
            io::test_support::run_engine(opts, [&](io::Engine& e) -> boost::asio::awaitable<void> {
                const char data[] = "x";
                const io::Submit sub(io::RingKind::Normal, as_bob ? bob.get() : nullptr);
                res = inline_write ? co_await e.write_small_buffered(
                                         sub, fd, reinterpret_cast<const std::byte*>(data), 1, 0)
                                   : co_await e.write(
                                         sub, fd, reinterpret_cast<const std::byte*>(data), 1, 0);
            });
            EXPECT_EQ(res, 1);
            struct stat st {};
            ASSERT_EQ(::fstat(fd, &st), 0);
            ::close(fd);
            EXPECT_EQ((st.st_mode & S_ISUID) != 0, !as_bob);
            EXPECT_EQ(thread_fsuid(), 0u);
            ::unlink(path("setuid").c_str());
        }
    }
}

}  // namespace
}  // namespace daxsmbd::server::vfs
