#include "server/state/handle_journal.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace daxsmbd::server {
namespace {

namespace fs = std::filesystem;

struct TempDir {
    std::string path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "handle-journal.XXXXXX").string();
        EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
        path = tmpl;
    }
    ~TempDir() { fs::remove_all(path); }
};

PersistentHandle handle(uint64_t id, std::string path) {
    PersistentHandle h;
    h.persistent_id = id;
    h.path = std::move(path);
    h.inode = 1000 + id;
    h.granted_access = 0x12019F;
    h.share_access = 7;
    h.create_options = 0x40;
    h.create_guid[0] = std::byte(id);
    h.client_guid[15] = std::byte(0xAB);
    h.owner = "WORKGROUP\\alice";
    h.timeout_ms = 120'000;
    h.oplock = 0xFF;
    h.lease_key = protocol::Guid{std::byte(1), std::byte(2)};
    h.lease_state = 7;
    h.lease_epoch = 3;
    h.lease_version = 2;
    h.app_instance_id = protocol::Guid{std::byte(9)};
    h.app_instance_version = AppInstanceVersion{2, 0x10};
    h.locks = {LockRange{0, 100, true}, LockRange{4096, 1, false}, LockRange{0, 0, false}};
    return h;
}

HandleJournal::Options file_log() {
    return {};
}
HandleJournal::Options mapped_log() {
    HandleJournal::Options o;
    o.pmem = dax::FlushKind::Clflush;
    o.require_sync = false;  // an ordinary file system here
    o.pmem_log_bytes = 4096;
    return o;
}

class HandleJournalTest : public ::testing::TestWithParam<bool> {
  protected:
    HandleJournal::Options options() const { return GetParam() ? mapped_log() : file_log(); }
    TempDir dir;
};

TEST(HandleJournalCodec, HandleRoundTripsAndTruncationIsRefused) {
    auto h = handle(0x1234'0000'0001ull, "dir/file.txt");
    auto bytes = encode_persistent_handle(h);
    auto back = decode_persistent_handle(bytes);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, h);
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_FALSE(decode_persistent_handle(protocol::Bytes(bytes.data(), n)).ok()) << n;
}

// Records of the first format (no app instance version, no locks) still decode, as what an
// earlier release journaled before its restart.
TEST(HandleJournalCodec, FirstFormatPayloadDecodesWithoutVersionAndLocks) {
    auto h = handle(5, "old.dat");
    h.app_instance_version.reset();
    h.locks.clear();
    auto bytes = encode_persistent_handle(h);
    ASSERT_EQ(bytes[0], std::byte(2));
    // Version 2 appended: u8 0 (no app instance version) and u32 0 (no locks).
    bytes.resize(bytes.size() - 5);
    bytes[0] = std::byte(1);
    auto back = decode_persistent_handle(bytes);
    ASSERT_TRUE(back.ok()) << status_name(back.status());
    EXPECT_EQ(*back, h);
    bytes[0] = std::byte(3);  // an unknown format
    EXPECT_FALSE(decode_persistent_handle(bytes).ok());
}

TEST(HandleJournalCodec, LockCountBeyondThePayloadAndInvalidRangesAreRefused) {
    auto h = handle(6, "f");
    h.locks = {LockRange{10, 5, true}};
    auto bytes = encode_persistent_handle(h);
    const size_t count_at = bytes.size() - 17 - 4;
    auto huge = bytes;
    protocol::store_le32(huge.data() + count_at, 0x10000000u);
    EXPECT_FALSE(decode_persistent_handle(huge).ok());
    // A range whose last byte lies past 2^64 - 1 (MS-FSA 2.1.5.8) is no lock.
    auto past = bytes;
    protocol::store_le64(past.data() + count_at + 4, UINT64_MAX);
    EXPECT_FALSE(decode_persistent_handle(past).ok());
    auto flag = bytes;
    flag.back() = std::byte(2);
    EXPECT_FALSE(decode_persistent_handle(flag).ok());
}

TEST(HandleJournalCodec, ScanStopsAtATornOrCorruptRecord) {
    auto a = frame_journal_record(1, encode_persistent_handle(handle(1, "a")));
    auto b = frame_journal_record(1, encode_persistent_handle(handle(2, "b")));
    protocol::ByteVector image = a;
    image.insert(image.end(), b.begin(), b.end());
    EXPECT_EQ(scan_journal(image).records.size(), 2u);
    // Torn: the second record is cut short.
    auto torn = image;
    torn.resize(a.size() + b.size() - 3);
    auto s = scan_journal(torn);
    EXPECT_EQ(s.records.size(), 1u);
    EXPECT_EQ(s.end, a.size());
    // A flipped bit in the second payload.
    auto bad = image;
    bad[a.size() + 20] ^= std::byte(1);
    EXPECT_EQ(scan_journal(bad).records.size(), 1u);
    // A flipped bit in the first record's length field stops the scan before it.
    bad = image;
    bad[8] ^= std::byte(1);
    EXPECT_EQ(scan_journal(bad).records.size(), 0u);
}

TEST_P(HandleJournalTest, HandlesSurviveAReopenAndRemovalsStick) {
    {
        auto j = HandleJournal::open(dir.path, options());
        ASSERT_TRUE(j.ok());
        EXPECT_TRUE((*j)->handles().empty());
        ASSERT_TRUE((*j)->put(handle(1, "a")).ok());
        ASSERT_TRUE((*j)->put(handle(2, "b")).ok());
        ASSERT_TRUE((*j)->put(handle(3, "c")).ok());
        (*j)->remove(2);
        auto changed = handle(1, "a");
        changed.lease_state = 1;  // a later state of the same handle replaces the first
        ASSERT_TRUE((*j)->put(changed).ok());
        // No close, no flush on destruction needed: the records are on the volume already.
    }
    auto j = HandleJournal::open(dir.path, options());
    ASSERT_TRUE(j.ok());
    auto hs = (*j)->handles();
    ASSERT_EQ(hs.size(), 2u);
    EXPECT_EQ(hs[0].persistent_id, 1u);
    EXPECT_EQ(hs[0].lease_state, 1u);
    EXPECT_EQ(hs[1], handle(3, "c"));
}

TEST_P(HandleJournalTest, ManyHandlesOutgrowTheFirstLogAndAreAllKept) {
    {
        auto j = HandleJournal::open(dir.path, options());
        ASSERT_TRUE(j.ok());
        for (uint64_t i = 1; i <= 300; ++i)
            ASSERT_TRUE((*j)->put(handle(i, "file-" + std::to_string(i))).ok());
        for (uint64_t i = 1; i <= 300; i += 2)
            (*j)->remove(i);
        EXPECT_EQ((*j)->size(), 150u);
    }
    auto j = HandleJournal::open(dir.path, options());
    ASSERT_TRUE(j.ok());
    auto hs = (*j)->handles();
    ASSERT_EQ(hs.size(), 150u);
    for (const auto& h : hs)
        EXPECT_EQ(h, handle(h.persistent_id, "file-" + std::to_string(h.persistent_id)));
}

TEST_P(HandleJournalTest, AGarbageTailFromACrashIsIgnored) {
    std::string log;
    {
        auto j = HandleJournal::open(dir.path, options());
        ASSERT_TRUE(j.ok());
        ASSERT_TRUE((*j)->put(handle(1, "a")).ok());
        log = (*j)->log_path();
    }
    // What a write torn by a crash leaves: a record header with nothing behind it.
    if (!GetParam()) {
        std::ofstream f(log, std::ios::app | std::ios::binary);
        f.write("PHJ1\x01\0\0\0\xff\0\0\0", 12);
    }
    auto j = HandleJournal::open(dir.path, options());
    ASSERT_TRUE(j.ok());
    ASSERT_EQ((*j)->handles().size(), 1u);
    ASSERT_TRUE((*j)->put(handle(2, "b")).ok());
    j->reset();
    auto again = HandleJournal::open(dir.path, options());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->handles().size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(FileAndMapped, HandleJournalTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Mapped" : "File"; });

}  // namespace
}  // namespace daxsmbd::server
