// Directory entries (protocol/dir_info.h): field offsets of each class against MS-FSCC 2.4.8,
// 2.4.10, 2.4.15, 2.4.22, 2.4.24, 2.4.33, 8-byte alignment, NextEntryOffset chaining and the
// OutputBufferLength limit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/dir_info.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

namespace k = file_info_class;

DirEntry entry(std::string name, uint64_t id) {
    DirEntry e;
    e.file_index = 0;
    e.creation_time = 0x1000 + int64_t(id);
    e.last_access_time = 0x2000 + int64_t(id);
    e.last_write_time = 0x3000 + int64_t(id);
    e.change_time = 0x4000 + int64_t(id);
    e.end_of_file = 100 * int64_t(id);
    e.allocation_size = 4096;
    e.file_attributes = file_attributes::kArchive;
    e.ea_size = 0;
    e.file_id = 0xF00D0000 + id;
    e.name = std::move(name);
    e.short_name = "";
    return e;
}

struct Layout {
    uint8_t cls;
    size_t name_offset;
    int ea_offset;       // -1 when the class has no EaSize
    int short_name_len;  // offset of ShortNameLength, -1 when none
    int file_id_offset;  // -1 when none
};

const Layout kLayouts[] = {
    {k::kFileDirectoryInformation, 64, -1, -1, -1},
    {k::kFileFullDirectoryInformation, 68, 64, -1, -1},
    {k::kFileBothDirectoryInformation, 94, 64, 68, -1},
    {k::kFileIdBothDirectoryInformation, 104, 64, 68, 96},
    {k::kFileIdFullDirectoryInformation, 80, 64, -1, 72},
};

}  // namespace

TEST(DirInfoTest, SupportedClasses) {
    for (const auto& l : kLayouts) {
        EXPECT_TRUE(DirectoryInfoWriter::supported(l.cls));
        EXPECT_EQ(DirectoryInfoWriter::fixed_size(l.cls), l.name_offset);
    }
    EXPECT_TRUE(DirectoryInfoWriter::supported(k::kFileNamesInformation));
    EXPECT_EQ(DirectoryInfoWriter::fixed_size(k::kFileNamesInformation), 12u);
    EXPECT_FALSE(DirectoryInfoWriter::supported(k::kFileBasicInformation));
    EXPECT_FALSE(DirectoryInfoWriter::supported(k::kFileIdExtdDirectoryInformation));
    EXPECT_EQ(DirectoryInfoWriter::check_class(k::kFileStandardInformation).status(),
              NtStatus::InvalidInfoClass);
    EXPECT_TRUE(DirectoryInfoWriter::check_class(k::kFileNamesInformation).ok());
    DirectoryInfoWriter bad(k::kFileBasicInformation, 65536);
    EXPECT_FALSE(bad.append(entry("x", 1)));
    EXPECT_EQ(DirectoryInfoWriter::parse(k::kFileBasicInformation, {}).status(),
              NtStatus::InvalidInfoClass);
}

TEST(DirInfoTest, FieldOffsetsAlignmentAndChaining) {
    for (const auto& l : kLayouts) {
        SCOPED_TRACE(int(l.cls));
        DirectoryInfoWriter w(l.cls, 65536);
        auto a = entry(".", 1);
        auto b = entry("long-name.dat", 2);
        b.ea_size = 0x33;
        b.short_name = "LONG-N~1.DAT";
        ASSERT_TRUE(w.append(a));
        ASSERT_TRUE(w.append(b));
        Bytes buf = w.bytes();
        // Entry 1: fixed + 2 bytes of name, padded to 8.
        size_t first = (l.name_offset + 2 + 7) & ~size_t(7);
        EXPECT_EQ(load_le32(buf.data()), first);
        EXPECT_EQ(first % 8, 0u);
        const std::byte* e = buf.data() + first;
        EXPECT_EQ(load_le32(e), 0u);                        // last entry
        EXPECT_EQ(buf.size(), first + l.name_offset + 26);  // no padding after the last entry
        EXPECT_EQ(load_le32(e + 4), 0u);                    // FileIndex
        EXPECT_EQ(load_le64(e + 8), 0x1002u);               // CreationTime
        EXPECT_EQ(load_le64(e + 16), 0x2002u);              // LastAccessTime
        EXPECT_EQ(load_le64(e + 24), 0x3002u);              // LastWriteTime
        EXPECT_EQ(load_le64(e + 32), 0x4002u);              // ChangeTime
        EXPECT_EQ(load_le64(e + 40), 200u);                 // EndOfFile
        EXPECT_EQ(load_le64(e + 48), 4096u);                // AllocationSize
        EXPECT_EQ(load_le32(e + 56), file_attributes::kArchive);
        EXPECT_EQ(load_le32(e + 60), 26u);             // FileNameLength
        EXPECT_EQ(load_le16(e + l.name_offset), 'l');  // FileName
        if (l.ea_offset >= 0) {
            EXPECT_EQ(load_le32(e + l.ea_offset), 0x33u);
        }
        if (l.short_name_len >= 0) {
            EXPECT_EQ(uint8_t(e[l.short_name_len]), 24);          // ShortNameLength
            EXPECT_EQ(load_le16(e + l.short_name_len + 2), 'L');  // ShortName at 70
        }
        if (l.file_id_offset >= 0) {
            EXPECT_EQ(load_le64(e + l.file_id_offset), 0xF00D0002u);
        }
        auto back = DirectoryInfoWriter::parse(l.cls, buf);
        ASSERT_TRUE(back.ok()) << status_name(back.status());
        ASSERT_EQ(back->size(), 2u);
        EXPECT_EQ((*back)[1].name, "long-name.dat");
        EXPECT_EQ((*back)[1].end_of_file, 200);
        if (l.short_name_len >= 0) {
            EXPECT_EQ((*back)[1].short_name, "LONG-N~1.DAT");
        }
        if (l.file_id_offset >= 0) {
            EXPECT_EQ((*back)[1].file_id, 0xF00D0002u);
        }
        if (l.cls == k::kFileIdBothDirectoryInformation) {
            EXPECT_EQ((*back)[1], b);
        }
    }
}

TEST(DirInfoTest, NamesInformationLayout) {
    DirectoryInfoWriter w(k::kFileNamesInformation, 65536);
    ASSERT_TRUE(w.append(entry("abc", 1)));
    ASSERT_TRUE(w.append(entry("de", 2)));
    Bytes buf = w.bytes();
    // 12 + 6 = 18 -> next at 24; the second is 12 + 4 = 16 bytes.
    EXPECT_EQ(load_le32(buf.data()), 24u);
    EXPECT_EQ(load_le32(buf.data() + 8), 6u);
    EXPECT_EQ(load_le16(buf.data() + 12), 'a');
    EXPECT_EQ(load_le32(buf.data() + 24), 0u);
    EXPECT_EQ(load_le32(buf.data() + 32), 4u);
    EXPECT_EQ(buf.size(), 24u + 16u);
    auto back = DirectoryInfoWriter::parse(k::kFileNamesInformation, buf);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ((*back)[0].name, "abc");
    EXPECT_EQ((*back)[1].name, "de");
}

TEST(DirInfoTest, LimitKeepsTheEntryThatDoesNotFit) {
    // FileDirectoryInformation: "a" = 66 bytes -> padded 72; the second ends at 72 + 66 = 138.
    DirectoryInfoWriter w(k::kFileDirectoryInformation, 137);
    ASSERT_TRUE(w.append(entry("a", 1)));
    EXPECT_FALSE(w.append(entry("b", 2)));
    EXPECT_EQ(w.count(), 1u);
    EXPECT_EQ(w.bytes().size(), 66u);            // no padding left behind
    EXPECT_EQ(load_le32(w.bytes().data()), 0u);  // still the last entry
    DirectoryInfoWriter exact(k::kFileDirectoryInformation, 138);
    ASSERT_TRUE(exact.append(entry("a", 1)));
    EXPECT_TRUE(exact.append(entry("b", 2)));
    DirectoryInfoWriter tiny(k::kFileDirectoryInformation, 65);
    EXPECT_FALSE(tiny.append(entry("a", 1)));
    EXPECT_TRUE(tiny.empty());
}

TEST(DirInfoTest, LongShortNameIsNotSent) {
    DirectoryInfoWriter w(k::kFileBothDirectoryInformation, 65536);
    auto e = entry("x", 1);
    e.short_name = "THIS-IS-TOO-LONG.TXT";  // 20 characters cannot be an 8.3 name
    ASSERT_TRUE(w.append(e));
    EXPECT_EQ(uint8_t(w.bytes()[68]), 0);
}

TEST(DirInfoTest, ParseRejectsMalformedBuffers) {
    DirectoryInfoWriter w(k::kFileFullDirectoryInformation, 65536);
    ASSERT_TRUE(w.append(entry("name", 1)));
    ByteVector buf(w.bytes().begin(), w.bytes().end());
    for (size_t n = 1; n < buf.size(); ++n)
        EXPECT_EQ(DirectoryInfoWriter::parse(k::kFileFullDirectoryInformation, Bytes(buf).first(n))
                      .status(),
                  NtStatus::InvalidParameter)
            << n;
    store_le32(buf.data(), 4);  // NextEntryOffset inside the entry
    EXPECT_EQ(DirectoryInfoWriter::parse(k::kFileFullDirectoryInformation, buf).status(),
              NtStatus::InvalidParameter);
}
