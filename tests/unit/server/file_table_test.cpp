// FileTable: the share-access check of MS-FSA 2.1.5.1.2.2, delete-pending and delete-on-close
// bookkeeping, and FileRegistration deleting the file at the last close.
#include "server/state/file_table.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "server/vfs/metadata.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server {
namespace {

namespace am = protocol::access_mask;
namespace sa = protocol::share_access;

constexpr uint32_t R = am::kFileReadData;
constexpr uint32_t W = am::kFileWriteData;
constexpr uint32_t D = am::kDelete;
constexpr uint32_t kNone = 0;

ShareMode mode(uint32_t access, uint32_t share) {
    return ShareMode{access, share};
}

// ---- MS-FSA 2.1.5.1.2.2 -------------------------------------------------------------------

TEST(SharingConflict, ReadersThatShareReadCoexist) {
    EXPECT_FALSE(sharing_conflict(mode(R, sa::kRead), mode(R, sa::kRead)));
}

TEST(SharingConflict, WriterNeedsExistingToShareWrite) {
    EXPECT_TRUE(sharing_conflict(mode(R, sa::kRead), mode(W, sa::kAll)));
    EXPECT_FALSE(sharing_conflict(mode(R, sa::kRead | sa::kWrite), mode(W, sa::kAll)));
}

TEST(SharingConflict, NewOpenMustShareWhatExistingUses) {
    // The existing open writes; the new reader does not share write.
    EXPECT_TRUE(sharing_conflict(mode(W, sa::kAll), mode(R, sa::kRead)));
    EXPECT_FALSE(sharing_conflict(mode(W, sa::kAll), mode(R, sa::kRead | sa::kWrite)));
    // The existing open may delete; the new open must share delete.
    EXPECT_TRUE(sharing_conflict(mode(D, sa::kAll), mode(R, sa::kRead | sa::kWrite)));
    EXPECT_FALSE(sharing_conflict(mode(D, sa::kAll), mode(R, sa::kAll)));
}

TEST(SharingConflict, DeleteNeedsShareDelete) {
    EXPECT_TRUE(sharing_conflict(mode(R, sa::kRead | sa::kWrite), mode(D, sa::kAll)));
    EXPECT_FALSE(sharing_conflict(mode(R, sa::kAll), mode(D, sa::kAll)));
}

TEST(SharingConflict, ExecuteCountsAsReadAndAppendAsWrite) {
    EXPECT_TRUE(sharing_conflict(mode(R, kNone), mode(am::kFileExecute, sa::kAll)));
    EXPECT_TRUE(sharing_conflict(mode(R, sa::kRead), mode(am::kFileAppendData, sa::kAll)));
    EXPECT_TRUE(sharing_conflict(mode(am::kFileAppendData, sa::kAll), mode(R, sa::kRead)));
}

TEST(SharingConflict, OpensWithoutDataRightsNeverConflict) {
    const uint32_t attrs = am::kFileReadAttributes | am::kReadControl | am::kSynchronize |
                           am::kFileWriteAttributes | am::kFileReadEa | am::kFileWriteEa;
    // An exclusive data open does not stop an attributes-only open, nor the reverse.
    EXPECT_FALSE(sharing_conflict(mode(R | W | D, kNone), mode(attrs, kNone)));
    EXPECT_FALSE(sharing_conflict(mode(attrs, kNone), mode(R | W | D, kNone)));
}

// The whole 3x8 x 3x8 matrix of smbtorture's deny tests, written as the rule a reader checks by
// hand: conflict exactly when one side uses (R / W / D) what the other side does not share.
TEST(SharingConflict, FullMatrixIsSymmetricAndMatchesTheRule) {
    const uint32_t accesses[] = {R, W, D, R | W, R | W | D};
    int conflicts = 0, total = 0;
    for (uint32_t a1 : accesses)
        for (uint32_t s1 = 0; s1 < 8; ++s1)
            for (uint32_t a2 : accesses)
                for (uint32_t s2 = 0; s2 < 8; ++s2) {
                    bool c = sharing_conflict(mode(a1, s1), mode(a2, s2));
                    EXPECT_EQ(c, sharing_conflict(mode(a2, s2), mode(a1, s1)));
                    bool r_bad = ((a1 & R) && !(s2 & sa::kRead)) || ((a2 & R) && !(s1 & sa::kRead));
                    bool w_bad =
                        ((a1 & W) && !(s2 & sa::kWrite)) || ((a2 & W) && !(s1 & sa::kWrite));
                    bool d_bad =
                        ((a1 & D) && !(s2 & sa::kDelete)) || ((a2 & D) && !(s1 & sa::kDelete));
                    EXPECT_EQ(c, r_bad || w_bad || d_bad)
                        << std::hex << a1 << "/" << s1 << " vs " << a2 << "/" << s2;
                    conflicts += c;
                    ++total;
                }
    // Sanity: share-all on both sides never conflicts, so neither extreme is universal.
    EXPECT_GT(conflicts, 0);
    EXPECT_LT(conflicts, total);
}

// ---- FileTable bookkeeping -------------------------------------------------------------------

TEST(FileTable, AddChecksSharingAgainstLiveOpens) {
    FileTable t;
    FileKey k{1, 100};
    auto a = t.add(k, mode(R, sa::kRead), false, "f");
    ASSERT_TRUE(a);
    auto b = t.add(k, mode(W, sa::kAll), false, "f");
    EXPECT_EQ(b.status(), NtStatus::SharingViolation);
    EXPECT_EQ(t.open_count(k), 1u);
    // Another file is unaffected.
    EXPECT_TRUE(t.add(FileKey{1, 101}, mode(W, kNone), false, "g"));
    // Once the reader leaves, the writer gets in.
    EXPECT_FALSE(t.remove(k, *a, nullptr));
    EXPECT_EQ(t.open_count(k), 0u);
    EXPECT_TRUE(t.add(k, mode(W, kNone), false, "f"));
}

TEST(FileTable, SameInodeOnAnotherDeviceIsAnotherFile) {
    FileTable t;
    ASSERT_TRUE(t.add(FileKey{1, 7}, mode(W, kNone), false, "a"));
    EXPECT_TRUE(t.add(FileKey{2, 7}, mode(W, kNone), false, "a"));
    EXPECT_EQ(t.file_count(), 2u);
}

TEST(FileTable, DeletePendingRefusesNewOpensAndDeletesAtLastClose) {
    FileTable t;
    FileKey k{1, 5};
    auto a = t.add(k, mode(D, sa::kAll), false, "dir/file");
    auto b = t.add(k, mode(R, sa::kAll), false, "dir/file");
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(t.set_delete_pending(k, true));
    EXPECT_TRUE(t.delete_pending(k));
    EXPECT_EQ(t.add(k, mode(am::kFileReadAttributes, sa::kAll), false, "x").status(),
              NtStatus::DeletePending);
    EXPECT_EQ(t.check(k, mode(R, sa::kAll)).status(), NtStatus::DeletePending);

    std::vector<std::string> deleted;
    auto deleter = [&](const std::string& p) { deleted.push_back(p); };
    EXPECT_FALSE(t.remove(k, *a, deleter));
    EXPECT_TRUE(deleted.empty());
    EXPECT_TRUE(t.remove(k, *b, deleter));
    ASSERT_EQ(deleted.size(), 1u);
    EXPECT_EQ(deleted[0], "dir/file");
    // Entry gone: the name can be opened again (a new file would have a new inode anyway).
    EXPECT_FALSE(t.delete_pending(k));
    EXPECT_EQ(t.file_count(), 0u);
}

TEST(FileTable, ClearingDeletePendingKeepsTheFile) {
    FileTable t;
    FileKey k{1, 6};
    auto a = t.add(k, mode(D, sa::kAll), false, "f");
    ASSERT_TRUE(a);
    ASSERT_TRUE(t.set_delete_pending(k, true));
    ASSERT_TRUE(t.set_delete_pending(k, false));
    bool called = false;
    EXPECT_FALSE(t.remove(k, *a, [&](const std::string&) { called = true; }));
    EXPECT_FALSE(called);
}

TEST(FileTable, DeleteOnCloseOpenMarksTheFileWhenItCloses) {
    FileTable t;
    FileKey k{3, 9};
    auto doc = t.add(k, mode(D, sa::kAll), true, "f");
    auto other = t.add(k, mode(R, sa::kAll), false, "f");
    ASSERT_TRUE(doc && other);
    // MS-FSA: FILE_DELETE_ON_CLOSE takes effect when its open closes, not at create.
    EXPECT_FALSE(t.delete_pending(k));
    EXPECT_TRUE(t.add(k, mode(R, sa::kAll), false, "f"));
    int deletions = 0;
    auto deleter = [&](const std::string&) { ++deletions; };
    EXPECT_FALSE(t.remove(k, *doc, deleter));
    EXPECT_TRUE(t.delete_pending(k));
    EXPECT_EQ(t.add(k, mode(R, sa::kAll), false, "f").status(), NtStatus::DeletePending);
    EXPECT_EQ(t.open_count(k), 2u);
}

TEST(FileTable, DeleteOnCloseCanBeWithdrawnPerOpen) {
    FileTable t;
    FileKey k{3, 10};
    auto doc = t.add(k, mode(D, sa::kAll), true, "f");
    ASSERT_TRUE(doc);
    ASSERT_TRUE(t.set_delete_on_close(k, *doc, false));
    bool called = false;
    EXPECT_FALSE(t.remove(k, *doc, [&](const std::string&) { called = true; }));
    EXPECT_FALSE(called);
    EXPECT_EQ(t.set_delete_on_close(k, *doc, true).status(), NtStatus::ObjectNameNotFound);
}

TEST(FileTable, RenamedFileIsDeletedUnderItsNewPath) {
    FileTable t;
    FileKey k{1, 11};
    auto a = t.add(k, mode(D, sa::kAll), true, "old");
    ASSERT_TRUE(a);
    t.set_path(k, "sub/new");
    EXPECT_EQ(t.path(k), "sub/new");
    std::string got;
    EXPECT_TRUE(t.remove(k, *a, [&](const std::string& p) { got = p; }));
    EXPECT_EQ(got, "sub/new");
}

TEST(FileTable, UnknownTokensAndKeysAreHarmless) {
    FileTable t;
    FileKey k{1, 12};
    EXPECT_FALSE(t.remove(k, 42, nullptr));
    EXPECT_EQ(t.set_delete_pending(k, true).status(), NtStatus::ObjectNameNotFound);
    auto a = t.add(k, mode(R, sa::kAll), false, "f");
    ASSERT_TRUE(a);
    EXPECT_FALSE(t.remove(k, *a + 1000, nullptr));
    EXPECT_EQ(t.open_count(k), 1u);
}

// ---- FileRegistration on a real directory ------------------------------------------------------

class TempShare : public ::testing::Test {
  protected:
    void SetUp() override {
        char tmpl[] = "/tmp/daxsmbd-ft-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        auto r = vfs::ShareRoot::open(dir_);
        ASSERT_TRUE(r);
        root_ = std::make_shared<vfs::ShareRoot>(std::move(*r));
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    void touch(const std::string& rel) { std::ofstream(dir_ + "/" + rel) << "x"; }
    FileKey key_of(const std::string& rel) {
        struct stat st {};
        EXPECT_EQ(::stat((dir_ + "/" + rel).c_str(), &st), 0);
        return FileKey{uint64_t(st.st_dev), uint64_t(st.st_ino)};
    }
    bool exists(const std::string& rel) { return std::filesystem::exists(dir_ + "/" + rel); }

    std::string dir_;
    std::shared_ptr<vfs::ShareRoot> root_;
};

TEST_F(TempShare, LastReleaseDeletesADeletePendingFile) {
    touch("victim");
    FileTable t;
    FileKey k = key_of("victim");
    auto a = t.add(k, mode(D, sa::kAll), true, "victim");
    auto b = t.add(k, mode(R, sa::kAll), false, "victim");
    ASSERT_TRUE(a && b);
    FileRegistration ra(t, k, *a, root_);
    {
        FileRegistration rb(t, k, *b, root_);
        EXPECT_FALSE(ra.release());
        EXPECT_FALSE(ra.release());  // idempotent
        EXPECT_TRUE(exists("victim"));
    }  // rb destroyed: last open
    EXPECT_FALSE(exists("victim"));
    EXPECT_EQ(t.file_count(), 0u);
}

// The unlink listeners (the DAX map cache) hear of the delete at the last close, once; a removed
// listener hears nothing.
TEST_F(TempShare, UnlinkListenersHearTheDeleteAtTheLastClose) {
    touch("gone");
    touch("kept");
    FileTable t;
    std::vector<FileKey> heard, heard_by_removed;
    t.add_unlink_listener([&](const FileKey& k) { heard.push_back(k); });
    const uint64_t removed =
        t.add_unlink_listener([&](const FileKey& k) { heard_by_removed.push_back(k); });
    t.remove_unlink_listener(removed);
    const FileKey gone = key_of("gone"), kept = key_of("kept");
    auto a = t.add(gone, mode(D, sa::kAll), true, "gone");
    auto b = t.add(kept, mode(D, sa::kAll), false, "kept");
    ASSERT_TRUE(a && b);
    FileRegistration ra(t, gone, *a, root_);
    FileRegistration rb(t, kept, *b, root_);
    EXPECT_TRUE(ra.release());
    EXPECT_FALSE(rb.release());
    EXPECT_FALSE(ra.release());
    EXPECT_FALSE(exists("gone"));
    EXPECT_EQ(heard, std::vector<FileKey>{gone});
    EXPECT_TRUE(heard_by_removed.empty());
}

TEST_F(TempShare, DeletesEmptyDirectories) {
    std::filesystem::create_directory(dir_ + "/d");
    FileTable t;
    FileKey k = key_of("d");
    auto a = t.add(k, mode(D, sa::kAll), true, "d");
    ASSERT_TRUE(a);
    FileRegistration r(t, k, *a, root_);
    EXPECT_TRUE(r.release());
    EXPECT_FALSE(exists("d"));
}

TEST_F(TempShare, AFileThatReplacedTheNameIsNotDeleted) {
    touch("name");
    FileTable t;
    FileKey k = key_of("name");
    auto a = t.add(k, mode(D, sa::kAll), true, "name");
    ASSERT_TRUE(a);
    // Someone outside SMB replaces the file under the same name.
    touch("other");
    std::filesystem::rename(dir_ + "/other", dir_ + "/name");
    FileRegistration r(t, k, *a, root_);
    r.release();
    EXPECT_TRUE(exists("name"));
    EXPECT_EQ(delete_if_same_file(*root_, k, "name").status(), NtStatus::ObjectNameNotFound);
}

TEST_F(TempShare, TheShareRootIsNeverDeleted) {
    FileTable t;
    FileKey k = key_of("");
    EXPECT_EQ(delete_if_same_file(*root_, k, "").status(), NtStatus::AccessDenied);
    EXPECT_TRUE(std::filesystem::exists(dir_));
}

}  // namespace
}  // namespace daxsmbd::server
