// File information classes (protocol/file_info.h): layouts of MS-FSCC 2.4.x, the SET decoders'
// errors (STATUS_INFO_LENGTH_MISMATCH below the class size) and the NextEntryOffset chaining.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/file_info.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

template <class T>
ByteVector encode(const T& x) {
    ByteVector v;
    ByteWriter w(v);
    x.encode(w);
    return v;
}

// Every fixed-size SET decoder: shorter than kSize is STATUS_INFO_LENGTH_MISMATCH.
template <class T>
void expect_short_rejected() {
    ByteVector full(T::kSize);
    ASSERT_TRUE(T::decode(full).ok());
    for (size_t n = 0; n < T::kSize; ++n)
        EXPECT_EQ(T::decode(Bytes(full).first(n)).status(), NtStatus::InfoLengthMismatch) << n;
}

}  // namespace

TEST(FileInfoTest, BasicGoldenAndSpecialTimes) {
    FileBasicInfo b{1, file_time::kStopUpdating, file_time::kResumeUpdating, file_time::kNoChange,
                    file_attributes::kHidden | file_attributes::kArchive};
    auto v = encode(b);
    EXPECT_EQ(v, hex("0100000000000000 ffffffffffffffff feffffffffffffff 0000000000000000"
                     "22000000 00000000"));
    auto back = FileBasicInfo::decode(v);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, b);  // -1 / -2 / 0 kept raw for the handler
    expect_short_rejected<FileBasicInfo>();
}

TEST(FileInfoTest, StandardAndNetworkOpenGolden) {
    FileStandardInfo s{8192, 5000, 2, true, false};
    EXPECT_EQ(encode(s), hex("0020000000000000 8813000000000000 02000000 01 00 0000"));
    EXPECT_EQ(*FileStandardInfo::decode(encode(s)), s);
    expect_short_rejected<FileStandardInfo>();

    FileNetworkOpenInfo n{1, 2, 3, 4, 4096, 10, file_attributes::kDirectory};
    auto v = encode(n);
    ASSERT_EQ(v.size(), FileNetworkOpenInfo::kSize);
    EXPECT_EQ(load_le64(v.data() + 32), 4096u);  // AllocationSize
    EXPECT_EQ(load_le64(v.data() + 40), 10u);    // EndOfFile
    EXPECT_EQ(load_le32(v.data() + 48), 0x10u);  // FileAttributes
    EXPECT_EQ(*FileNetworkOpenInfo::decode(v), n);
}

TEST(FileInfoTest, AllInformationSizeAndOffsets) {
    FileAllInfo a;
    a.basic = {11, 12, 13, 14, file_attributes::kReadonly};
    a.standard = {4096, 100, 1, false, true};
    a.internal.index_number = 0x1122334455667788;
    a.ea.ea_size = 0x21;
    a.access.access_flags = 0x001F01FF;
    a.position.current_byte_offset = 0x42;
    a.mode.mode = file_mode::kSynchronousIoNonalert;
    a.alignment.alignment_requirement = file_alignment::kLong;
    a.name.file_name = "\\dir\\f";
    auto v = encode(a);
    // MS-FSCC 2.4.2: Basic 40 + Standard 24 + Internal 8 + Ea 4 + Access 4 + Position 8 +
    // Mode 4 + Alignment 4 = 96, then FileNameLength(4) and the name.
    ASSERT_EQ(v.size(), FileAllInfo::kFixedSize + 12);
    EXPECT_EQ(load_le64(v.data() + 0), 11u);                   // CreationTime
    EXPECT_EQ(load_le32(v.data() + 32), 1u);                   // FileAttributes
    EXPECT_EQ(load_le64(v.data() + 40), 4096u);                // AllocationSize
    EXPECT_EQ(load_le64(v.data() + 48), 100u);                 // EndOfFile
    EXPECT_EQ(load_le32(v.data() + 56), 1u);                   // NumberOfLinks
    EXPECT_EQ(v[60], std::byte{0});                            // DeletePending
    EXPECT_EQ(v[61], std::byte{1});                            // Directory
    EXPECT_EQ(load_le64(v.data() + 64), 0x1122334455667788u);  // IndexNumber
    EXPECT_EQ(load_le32(v.data() + 72), 0x21u);                // EaSize
    EXPECT_EQ(load_le32(v.data() + 76), 0x001F01FFu);          // AccessFlags
    EXPECT_EQ(load_le64(v.data() + 80), 0x42u);                // CurrentByteOffset
    EXPECT_EQ(load_le32(v.data() + 88), 0x20u);                // Mode
    EXPECT_EQ(load_le32(v.data() + 92), 3u);                   // AlignmentRequirement
    EXPECT_EQ(load_le32(v.data() + 96), 12u);                  // FileNameLength
    EXPECT_EQ(load_le16(v.data() + 100), '\\');                // FileName
    auto back = FileAllInfo::decode(v);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, a);
    EXPECT_EQ(FileAllInfo::decode(Bytes(v).first(99)).status(), NtStatus::InfoLengthMismatch);
    EXPECT_EQ(FileAllInfo::decode(Bytes(v).first(101)).status(), NtStatus::InvalidParameter);
}

TEST(FileInfoTest, SmallFixedClasses) {
    EXPECT_EQ(encode(FileInternalInfo{0x0102030405060708}), hex("0807060504030201"));
    EXPECT_EQ(encode(FileEaInfo{0}), hex("00000000"));
    EXPECT_EQ(encode(FileAccessInfo{0x00120089}), hex("89001200"));
    EXPECT_EQ(encode(FilePositionInfo{512}), hex("0002000000000000"));
    EXPECT_EQ(encode(FileModeInfo{file_mode::kWriteThrough}), hex("02000000"));
    EXPECT_EQ(encode(FileAlignmentInfo{}), hex("00000000"));
    EXPECT_EQ(encode(FileAttributeTagInfo{file_attributes::kReparsePoint, 0xA000000C}),
              hex("00040000 0c0000a0"));
    FileCompressionInfo c{123, 2, 16, 12, 9};
    EXPECT_EQ(encode(c), hex("7b00000000000000 0200 10 0c 09 000000"));
    EXPECT_EQ(*FileCompressionInfo::decode(encode(c)), c);
    FileIdInfo id;
    id.volume_serial_number = 0xAABB;
    id.file_id[0] = std::byte{0x77};
    auto v = encode(id);
    ASSERT_EQ(v.size(), 24u);
    EXPECT_EQ(v[8], std::byte{0x77});
    EXPECT_EQ(*FileIdInfo::decode(v), id);
    expect_short_rejected<FileInternalInfo>();
    expect_short_rejected<FileIdInfo>();
    expect_short_rejected<FileCompressionInfo>();
}

TEST(FileInfoTest, SetDecoders) {
    EXPECT_TRUE(FileDispositionInfo::decode(hex("01"))->delete_pending);
    EXPECT_FALSE(FileDispositionInfo::decode(hex("00"))->delete_pending);
    EXPECT_EQ(FileDispositionInfoEx::decode(hex("13000000"))->flags,
              file_disposition_ex::kDelete | file_disposition_ex::kPosixSemantics |
                  file_disposition_ex::kIgnoreReadonlyAttribute);
    EXPECT_EQ(FileAllocationInfo::decode(hex("0000100000000000"))->allocation_size, 1 << 20);
    EXPECT_EQ(FileEndOfFileInfo::decode(hex("ffffffffffffffff"))->end_of_file, -1);
    EXPECT_EQ(FileValidDataLengthInfo::decode(hex("0010000000000000"))->valid_data_length, 4096);
    EXPECT_EQ(FilePositionInfo::decode(hex("0800000000000000"))->current_byte_offset, 8);
    EXPECT_EQ(FileModeInfo::decode(hex("04000000"))->mode, file_mode::kSequentialOnly);
    // Longer buffers are accepted (only shorter ones mismatch).
    EXPECT_TRUE(FileEndOfFileInfo::decode(ByteVector(16)).ok());
    expect_short_rejected<FileDispositionInfo>();
    expect_short_rejected<FileDispositionInfoEx>();
    expect_short_rejected<FileAllocationInfo>();
    expect_short_rejected<FileEndOfFileInfo>();
    expect_short_rejected<FileValidDataLengthInfo>();
    expect_short_rejected<FilePositionInfo>();
    expect_short_rejected<FileModeInfo>();
}

TEST(FileInfoTest, RenameAndLink) {
    FileRenameInfo r{false, 0, "new name.txt"};
    auto v = encode(r);
    ASSERT_EQ(v.size(), 20u + 24u);
    EXPECT_EQ(ByteVector(v.begin(), v.begin() + 20),
              hex("00 00000000000000 0000000000000000 18000000"));
    EXPECT_EQ(*FileRenameInfo::decode(v), r);
    for (size_t n = 0; n < 20; ++n)
        EXPECT_EQ(FileRenameInfo::decode(Bytes(v).first(n)).status(), NtStatus::InfoLengthMismatch);
    for (size_t n = 20; n < v.size(); ++n)
        EXPECT_EQ(FileRenameInfo::decode(Bytes(v).first(n)).status(), NtStatus::InvalidParameter);
    auto odd = hex("01 00000000000000 0000000000000000 03000000 610062");
    EXPECT_EQ(FileRenameInfo::decode(odd).status(), NtStatus::ObjectNameInvalid);
    FileLinkInfo link{true, 0, "hard"};
    EXPECT_EQ(FileLinkInfo::decode(encode(link))->file_name, "hard");
}

TEST(FileInfoTest, NameClasses) {
    FileNameInfo n{"\\share\\x"};
    auto v = encode(n);
    EXPECT_EQ(load_le32(v.data()), 16u);
    EXPECT_EQ(*FileNameInfo::decode(v), n);
    EXPECT_EQ(FileShortNameInfo::decode(hex("0400")).status(), NtStatus::InfoLengthMismatch);
    EXPECT_EQ(FileShortNameInfo::decode(hex("04000000 4100")).status(), NtStatus::InvalidParameter);
}

TEST(FileInfoTest, StreamsAligned8WithLimit) {
    FileStreamInfo s;
    s.streams = {{"::$DATA", 100, 4096}, {":ads:$DATA", 3, 8}, {":x:$DATA", 0, 0}};
    ByteVector v;
    ByteWriter w(v);
    EXPECT_EQ(s.encode(w), 3u);
    // Entry 1: 24 + 14 = 38 -> next at 40; entry 2: 24 + 20 = 44 -> next at 40 + 48.
    EXPECT_EQ(load_le32(v.data()), 40u);
    EXPECT_EQ(load_le32(v.data() + 4), 14u);
    EXPECT_EQ(load_le64(v.data() + 8), 100u);
    EXPECT_EQ(load_le64(v.data() + 16), 4096u);
    EXPECT_EQ(load_le32(v.data() + 40), 48u);
    EXPECT_EQ(load_le32(v.data() + 88), 0u);
    EXPECT_EQ(v.size(), 88u + 24 + 16);
    auto back = FileStreamInfo::decode(v);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->streams, s.streams);
    // With a 100-byte limit only the first two fit; nothing of the third is written.
    ByteVector cut;
    ByteWriter cw(cut);
    EXPECT_EQ(s.encode(cw, 100), 2u);
    EXPECT_EQ(cut.size(), 84u);
    EXPECT_EQ(load_le32(cut.data() + 40), 0u);  // the new last entry ends the chain
}

TEST(FileInfoTest, FullEaListGoldenAndErrors) {
    FileFullEaInfo ea;
    ea.entries = {{0, "A", hex("01")}, {kFileNeedEa, "BC", {}}};
    auto v = encode(ea);
    // Entry 1: 8 + 1 + 1 + 1 = 11 -> next at 12; entry 2: 8 + 2 + 1 = 11.
    EXPECT_EQ(v, hex("0c000000 00 01 0100 41 00 01 00"
                     "00000000 80 02 0000 4243 00"));
    EXPECT_EQ(FileFullEaInfo::decode(v)->entries, ea.entries);
    // Missing NUL after the name.
    EXPECT_EQ(FileFullEaInfo::decode(hex("00000000 00 01 0000 41 41")).status(),
              NtStatus::InvalidParameter);
    // Value past the entry.
    EXPECT_EQ(FileFullEaInfo::decode(hex("00000000 00 01 0500 41 00 01")).status(),
              NtStatus::InvalidParameter);
    // NextEntryOffset not 4-aligned.
    EXPECT_EQ(FileFullEaInfo::decode(hex("0b000000 00 01 0000 41 00 00 00000000 00 01 0000 42 00"))
                  .status(),
              NtStatus::InvalidParameter);
    // Limit: only whole entries.
    ByteVector cut;
    ByteWriter cw(cut);
    EXPECT_EQ(ea.encode(cw, 20), 1u);
    EXPECT_EQ(cut.size(), 11u);
}

TEST(FileInfoTest, SplitEntryChain) {
    auto two = hex("08000000 aaaaaaaa 00000000 bbbb");
    auto r = split_entry_chain(two, 4, 8);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].size(), 8u);
    EXPECT_EQ((*r)[1].size(), 6u);
    EXPECT_EQ(split_entry_chain(two, 8, 8).status(), NtStatus::InvalidParameter);  // 2nd short
    EXPECT_EQ(split_entry_chain(hex("0e000000 0000000000000000 0000"), 4, 4).status(),
              NtStatus::InvalidParameter);  // Next not 4-aligned
    EXPECT_EQ(split_entry_chain(hex("08000000 00000000"), 4, 8).status(),
              NtStatus::InvalidParameter);  // Next points exactly at the end
    EXPECT_EQ(split_entry_chain(hex("000000"), 4, 8).status(), NtStatus::InvalidParameter);
}

TEST(FileInfoTest, MinSizeTables) {
    namespace k = file_info_class;
    EXPECT_EQ(file_info_query_min_size(k::kFileBasicInformation), 40u);
    EXPECT_EQ(file_info_query_min_size(k::kFileStandardInformation), 24u);
    EXPECT_EQ(file_info_query_min_size(k::kFileAllInformation), 100u);
    EXPECT_EQ(file_info_query_min_size(k::kFileNetworkOpenInformation), 56u);
    EXPECT_EQ(file_info_query_min_size(k::kFileIdInformation), 24u);
    EXPECT_FALSE(file_info_query_min_size(k::kFileRenameInformation).has_value());  // set-only
    EXPECT_FALSE(file_info_query_min_size(k::kFileDirectoryInformation).has_value());
    EXPECT_EQ(file_info_set_min_size(k::kFileRenameInformation), 20u);
    EXPECT_EQ(file_info_set_min_size(k::kFileDispositionInformation), 1u);
    EXPECT_EQ(file_info_set_min_size(k::kFileEndOfFileInformation), 8u);
    EXPECT_FALSE(file_info_set_min_size(k::kFileStandardInformation).has_value());  // query-only
    EXPECT_FALSE(file_info_set_min_size(0).has_value());
}
