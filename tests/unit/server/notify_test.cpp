// CHANGE_NOTIFY machinery: the ChangeNotifyEntry rules of MS-FSA 2.1.4.1 / 2.1.5.11 and the
// inotify watcher against a real directory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "protocol/change_notify.h"
#include "protocol/notify_info.h"
#include "server/notify/notify_entry.h"
#include "server/notify/watcher.h"

namespace daxsmbd::server::notify {
namespace {

using namespace std::chrono_literals;
namespace cf = protocol::completion_filter;
namespace fa = protocol::file_action;
using protocol::FileNotifyInformation;

constexpr uint32_t kName = cf::kFileName | cf::kDirName;

TEST(NotifyEntry, FilterDecidesWhatIsKept) {
    NotifyEntry e(cf::kFileName, false, 1000);
    e.report(fa::kAdded, "dir", cf::kDirName);  // not asked for
    e.report(fa::kModified, "a", cf::kAttributes | cf::kLastWrite);
    EXPECT_EQ(e.pending_changes(), 0u);
    e.report(fa::kAdded, "a.txt", cf::kFileName);
    EXPECT_EQ(e.pending_changes(), 1u);
    // A filter without valid bits never matches anything (MS-SMB2 3.3.5.19).
    NotifyEntry none(0xFFFFF000, false, 1000);
    none.report(fa::kAdded, "x", cf::kFileName);
    EXPECT_EQ(none.pending_changes(), 0u);
}

TEST(NotifyEntry, BufferedChangesGoToTheNextRequestInOrder) {
    NotifyEntry e(cf::kAll, false, 1000);
    e.report(fa::kAdded, "test0.txt", cf::kFileName);
    e.report(fa::kRemoved, "test0.txt", cf::kFileName);
    e.report(fa::kRenamedOldName, "a", cf::kFileName);
    e.report(fa::kRenamedNewName, "b", cf::kFileName);
    auto id = e.add_waiter({});
    auto c = e.try_complete(id, 1000);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->status, NtStatus::Success);
    const std::vector<FileNotifyInformation> want{{fa::kAdded, "test0.txt"},
                                                  {fa::kRemoved, "test0.txt"},
                                                  {fa::kRenamedOldName, "a"},
                                                  {fa::kRenamedNewName, "b"}};
    EXPECT_EQ(c->changes, want);
    EXPECT_EQ(e.pending_changes(), 0u);
    EXPECT_EQ(e.waiters(), 0u);
    // Nothing left: the next request has to wait.
    auto id2 = e.add_waiter({});
    EXPECT_FALSE(e.try_complete(id2, 1000));
}

TEST(NotifyEntry, RepeatedModifiedIsReportedOnce) {
    NotifyEntry e(cf::kAll, false, 1000);
    e.report(fa::kAdded, "f", cf::kFileName);
    e.report(fa::kModified, "f", cf::kLastWrite);
    e.report(fa::kModified, "f", cf::kAttributes);
    e.report(fa::kModified, "g", cf::kAttributes);
    e.report(fa::kModified, "f", cf::kAttributes);
    EXPECT_EQ(e.pending_changes(), 4u);
}

TEST(NotifyEntry, TooSmallBufferIsEnumDirAndConsumesTheChanges) {
    NotifyEntry e(cf::kAll, false, 65536);
    e.report(fa::kAdded, "smb2-notify01.dat", cf::kFileName);
    // 12 + 34 bytes of name = 48 bytes on the wire.
    std::array<FileNotifyInformation, 1> one{{{fa::kAdded, "smb2-notify01.dat"}}};
    ASSERT_EQ(protocol::notify_information_size(one), 48u);
    auto id = e.add_waiter({});
    auto c = e.try_complete(id, 47);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->status, NtStatus::NotifyEnumDir);
    EXPECT_TRUE(c->changes.empty());
    EXPECT_EQ(e.pending_changes(), 0u);
    // Exactly the size fits.
    e.report(fa::kAdded, "smb2-notify01.dat", cf::kFileName);
    auto c2 = e.try_complete(e.add_waiter({}), 48);
    ASSERT_TRUE(c2);
    EXPECT_EQ(c2->status, NtStatus::Success);
    EXPECT_EQ(c2->changes.size(), 1u);
}

TEST(NotifyEntry, FirstRequestBufferLimitsAllLaterOnes) {
    // smbtorture smb2.notify.valid-req: "if the first notify returns NOTIFY_ENUM_DIR, all do".
    NotifyEntry e(cf::kAll, false, 1);
    e.report(fa::kAdded, "x", cf::kFileName);
    auto c = e.try_complete(e.add_waiter({}), 65536);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->status, NtStatus::NotifyEnumDir);
    e.report(fa::kAdded, "y", cf::kFileName);
    auto c2 = e.try_complete(e.add_waiter({}), 65536);
    ASSERT_TRUE(c2);
    EXPECT_EQ(c2->status, NtStatus::NotifyEnumDir);
}

TEST(NotifyEntry, OverflowWhileNobodyWaits) {
    NotifyEntry e(cf::kAll, false, 100);
    for (int i = 0; i < 10; ++i)
        e.report(fa::kAdded, "file" + std::to_string(i), cf::kFileName);
    auto c = e.try_complete(e.add_waiter({}), 100);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->status, NtStatus::NotifyEnumDir);
    // After the overflow was reported, new changes are kept again.
    e.report(fa::kAdded, "z", cf::kFileName);
    auto c2 = e.try_complete(e.add_waiter({}), 100);
    ASSERT_TRUE(c2);
    EXPECT_EQ(c2->status, NtStatus::Success);
    // An inotify queue overflow does the same.
    e.report_overflow();
    auto c3 = e.try_complete(e.add_waiter({}), 100);
    ASSERT_TRUE(c3);
    EXPECT_EQ(c3->status, NtStatus::NotifyEnumDir);
}

TEST(NotifyEntry, RequestsCompleteInFifoOrderAndAreWoken) {
    // smbtorture smb2.notify.double: two requests, one change each.
    NotifyEntry e(kName, true, 1000);
    int woken1 = 0, woken2 = 0;
    auto r1 = e.add_waiter([&] { ++woken1; });
    auto r2 = e.add_waiter([&] { ++woken2; });
    EXPECT_FALSE(e.try_complete(r1, 1000));
    e.report(fa::kAdded, "subdir-name", cf::kDirName);
    EXPECT_EQ(woken1, 1);
    EXPECT_EQ(woken2, 0);
    EXPECT_FALSE(e.try_complete(r2, 1000));  // not the oldest
    auto c1 = e.try_complete(r1, 1000);
    ASSERT_TRUE(c1);
    ASSERT_EQ(c1->changes.size(), 1u);
    EXPECT_EQ(c1->changes[0].file_name, "subdir-name");
    e.report(fa::kAdded, "subdir-name2", cf::kDirName);
    EXPECT_EQ(woken2, 1);
    auto c2 = e.try_complete(r2, 1000);
    ASSERT_TRUE(c2);
    EXPECT_EQ(c2->changes[0].file_name, "subdir-name2");
}

TEST(NotifyEntry, CancelPassesChangesToTheNextWaiter) {
    NotifyEntry e(kName, false, 1000);
    int woken2 = 0;
    auto r1 = e.add_waiter({});
    auto r2 = e.add_waiter([&] { ++woken2; });
    e.report(fa::kAdded, "a", cf::kFileName);
    e.remove_waiter(r1);
    EXPECT_EQ(woken2, 1);
    auto c = e.try_complete(r2, 1000);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->changes.size(), 1u);
}

TEST(NotifyEntry, CloseCompletesEveryWaiterWithCleanup) {
    NotifyEntry e(kName, false, 1000);
    int woken = 0;
    auto r1 = e.add_waiter([&] { ++woken; });
    auto r2 = e.add_waiter([&] { ++woken; });
    e.report(fa::kAdded, "a", cf::kFileName);
    e.close(NtStatus::NotifyCleanup);
    EXPECT_EQ(woken, 3);  // the report woke the first, the close both
    EXPECT_TRUE(e.closed());
    auto c2 = e.try_complete(r2, 1000);
    ASSERT_TRUE(c2);
    EXPECT_EQ(c2->status, NtStatus::NotifyCleanup);
    auto c1 = e.try_complete(r1, 1000);
    ASSERT_TRUE(c1);
    EXPECT_EQ(c1->status, NtStatus::NotifyCleanup);
    EXPECT_TRUE(c1->changes.empty());
    // Later reports are ignored.
    e.report(fa::kAdded, "b", cf::kFileName);
    EXPECT_EQ(e.pending_changes(), 0u);
}

// ---- the inotify watcher ----

class WatcherTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/daxsmbd-notify-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        fd_ = ::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT_GE(fd_, 0);
        auto w = Watcher::create();
        ASSERT_TRUE(w);
        watcher_ = std::move(*w);
    }
    void TearDown() override {
        watcher_.reset();
        if (fd_ >= 0) ::close(fd_);
        std::filesystem::remove_all(dir_);
    }
    std::string path(const std::string& rel) const { return dir_ + "/" + rel; }

    // Waits until `e` holds at least `n` changes (the watcher runs on its own thread), then
    // takes them.
    std::vector<FileNotifyInformation> take(NotifyEntry& e, size_t n) {
        for (int i = 0; i < 500 && e.pending_changes() < n; ++i)
            std::this_thread::sleep_for(10ms);
        // Give a straggler the chance to show up, to catch changes that should not be there.
        std::this_thread::sleep_for(50ms);
        auto c = e.try_complete(e.add_waiter({}), 65536);
        if (!c) return {};
        EXPECT_EQ(c->status, NtStatus::Success);
        return c->changes;
    }

    std::string dir_;
    int fd_ = -1;
    std::unique_ptr<Watcher> watcher_;
};

TEST_F(WatcherTest, CreateWriteRenameDelete) {
    auto e = std::make_shared<NotifyEntry>(cf::kAll, false, 65536);
    ASSERT_TRUE(watcher_->watch(e, fd_));
    EXPECT_EQ(watcher_->watch_count(), 1u);

    int f = ::open(path("a.txt").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    ASSERT_GE(f, 0);
    // Setting the new file's metadata right away belongs to its creation (the CREATE handler
    // stores the DOS attributes): no MODIFIED for it.
    ASSERT_EQ(::fchmod(f, 0640), 0);
    auto changes = take(*e, 1);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0], (FileNotifyInformation{fa::kAdded, "a.txt"}));

    ASSERT_EQ(::write(f, "abc", 3), 3);
    ASSERT_EQ(::close(f), 0);
    changes = take(*e, 1);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0], (FileNotifyInformation{fa::kModified, "a.txt"}));

    ASSERT_EQ(::rename(path("a.txt").c_str(), path("b.txt").c_str()), 0);
    ASSERT_EQ(::mkdir(path("d").c_str(), 0755), 0);
    ASSERT_EQ(::unlink(path("b.txt").c_str()), 0);
    ASSERT_EQ(::rmdir(path("d").c_str()), 0);
    changes = take(*e, 5);
    const std::vector<FileNotifyInformation> want{{fa::kRenamedOldName, "a.txt"},
                                                  {fa::kRenamedNewName, "b.txt"},
                                                  {fa::kAdded, "d"},
                                                  {fa::kRemoved, "b.txt"},
                                                  {fa::kRemoved, "d"}};
    EXPECT_EQ(changes, want);
}

TEST_F(WatcherTest, FilterAndNonRecursiveWatch) {
    // Directory names only, and not below the watched directory.
    auto e = std::make_shared<NotifyEntry>(cf::kDirName, false, 65536);
    ASSERT_TRUE(watcher_->watch(e, fd_));
    ASSERT_EQ(::mkdir(path("sub").c_str(), 0755), 0);
    int f = ::open(path("file").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(f, 0);
    ::close(f);
    ASSERT_EQ(::mkdir(path("sub/deeper").c_str(), 0755), 0);
    auto changes = take(*e, 1);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0], (FileNotifyInformation{fa::kAdded, "sub"}));
}

TEST_F(WatcherTest, WatchTreeFollowsNewSubdirectoriesAndMoves) {
    ASSERT_EQ(::mkdir(path("old").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(path("old/inner").c_str(), 0755), 0);
    auto e = std::make_shared<NotifyEntry>(kName, true, 65536);
    ASSERT_TRUE(watcher_->watch(e, fd_));
    EXPECT_EQ(watcher_->watch_count(), 3u);  // root, old, old/inner

    int f = ::open(path("old/inner/x").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(f, 0);
    ::close(f);
    auto changes = take(*e, 1);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0], (FileNotifyInformation{fa::kAdded, "old\\inner\\x"}));

    // A new subdirectory is watched as soon as it appears.
    ASSERT_EQ(::mkdir(path("new").c_str(), 0755), 0);
    changes = take(*e, 1);
    ASSERT_EQ(changes.size(), 1u);
    for (int i = 0; i < 100 && watcher_->watch_count() < 4; ++i)
        std::this_thread::sleep_for(10ms);
    ASSERT_EQ(watcher_->watch_count(), 4u);
    f = ::open(path("new/y").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(f, 0);
    ::close(f);
    // Moving a file between two watched directories is REMOVED + ADDED (smbtorture
    // smb2.notify.rec), renaming a directory keeps its subtree watched under the new name.
    ASSERT_EQ(::rename(path("new/y").c_str(), path("old/inner/y").c_str()), 0);
    ASSERT_EQ(::rename(path("old").c_str(), path("renamed").c_str()), 0);
    f = ::open(path("renamed/inner/z").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(f, 0);
    ::close(f);
    changes = take(*e, 6);
    const std::vector<FileNotifyInformation> want{
        {fa::kAdded, "new\\y"},           {fa::kRemoved, "new\\y"},
        {fa::kAdded, "old\\inner\\y"},    {fa::kRenamedOldName, "old"},
        {fa::kRenamedNewName, "renamed"}, {fa::kAdded, "renamed\\inner\\z"}};
    EXPECT_EQ(changes, want);

    // Unwatching removes every watch of the entry.
    watcher_->unwatch(e.get());
    EXPECT_EQ(watcher_->watch_count(), 0u);
    f = ::open(path("late").c_str(), O_CREAT | O_WRONLY, 0644);
    ::close(f);
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(e->pending_changes(), 0u);
}

TEST_F(WatcherTest, TwoEntriesOnOneDirectoryShareTheWatch) {
    auto a = std::make_shared<NotifyEntry>(cf::kFileName, false, 65536);
    auto b = std::make_shared<NotifyEntry>(cf::kFileName, false, 65536);
    ASSERT_TRUE(watcher_->watch(a, fd_));
    ASSERT_TRUE(watcher_->watch(b, fd_));
    EXPECT_EQ(watcher_->watch_count(), 1u);
    watcher_->unwatch(a.get());
    EXPECT_EQ(watcher_->watch_count(), 1u);
    int f = ::open(path("f").c_str(), O_CREAT | O_WRONLY, 0644);
    ::close(f);
    auto changes = take(*b, 1);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(a->pending_changes(), 0u);
}

}  // namespace
}  // namespace daxsmbd::server::notify
