// File system information classes (protocol/fs_info.h), against MS-FSCC 2.5.x.
#include <gtest/gtest.h>

#include <string>

#include "protocol/fs_info.h"
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

}  // namespace

TEST(FsInfoTest, VolumeGoldenAndLabelCut) {
    FileFsVolumeInfo v{0x01d9000000000000, 0xCAFEBABE, false, "data"};
    EXPECT_EQ(encode(v), hex("000000000000d901 bebafeca 08000000 00 00 6400610074006100"));
    EXPECT_EQ(*FileFsVolumeInfo::decode(encode(v)), v);
    FileFsVolumeInfo longer{0, 1, true, std::string(40, 'L')};
    auto bytes = encode(longer);
    EXPECT_EQ(load_le32(bytes.data() + 12), 64u);  // 32 characters at most (MS-FSCC 2.5.9)
    EXPECT_EQ(bytes.size(), FileFsVolumeInfo::kFixedSize + 64);
    EXPECT_EQ(FileFsVolumeInfo::decode(Bytes(bytes).first(17)).status(),
              NtStatus::InfoLengthMismatch);
}

TEST(FsInfoTest, SizeFullSizeDeviceGolden) {
    FileFsSizeInfo s{1000, 250, 8, 512};
    EXPECT_EQ(encode(s), hex("e803000000000000 fa00000000000000 08000000 00020000"));
    EXPECT_EQ(*FileFsSizeInfo::decode(encode(s)), s);
    FileFsFullSizeInfo f{1000, 200, 250, 8, 512};
    EXPECT_EQ(encode(f),
              hex("e803000000000000 c800000000000000 fa00000000000000 08000000 00020000"));
    EXPECT_EQ(*FileFsFullSizeInfo::decode(encode(f)), f);
    FileFsDeviceInfo d{device_type::kDisk, device_characteristics::kDeviceIsMounted};
    EXPECT_EQ(encode(d), hex("07000000 20000000"));
    EXPECT_EQ(FileFsFullSizeInfo::decode(ByteVector(31)).status(), NtStatus::InfoLengthMismatch);
}

TEST(FsInfoTest, AttributeGolden) {
    FileFsAttributeInfo a{fs_attributes::kCaseSensitiveSearch | fs_attributes::kCasePreservedNames |
                              fs_attributes::kUnicodeOnDisk | fs_attributes::kPersistentAcls |
                              fs_attributes::kSupportsSparseFiles | fs_attributes::kNamedStreams,
                          255, "NTFS"};
    EXPECT_EQ(encode(a), hex("4f000400 ff000000 08000000 4e00540046005300"));
    EXPECT_EQ(*FileFsAttributeInfo::decode(encode(a)), a);
    EXPECT_EQ(FileFsAttributeInfo::decode(hex("00000000 ff000000 08000000 4e00")).status(),
              NtStatus::InvalidParameter);
}

TEST(FsInfoTest, SectorSizeAndObjectId) {
    FileFsSectorSizeInfo s;
    s.flags = sector_size_flags::kAlignedDevice | sector_size_flags::kPartitionAlignedOnDevice |
              sector_size_flags::kNoSeekPenalty;
    s.physical_bytes_per_sector_for_atomicity = 4096;
    auto v = encode(s);
    EXPECT_EQ(v, hex("00020000 00100000 00020000 00020000 07000000 00000000 00000000"));
    EXPECT_EQ(*FileFsSectorSizeInfo::decode(v), s);
    FileFsObjectIdInfo o;
    o.object_id[0] = std::byte{1};
    o.extended_info[47] = std::byte{2};
    auto ov = encode(o);
    ASSERT_EQ(ov.size(), 64u);
    EXPECT_EQ(ov[63], std::byte{2});
    EXPECT_EQ(*FileFsObjectIdInfo::decode(ov), o);
}

TEST(FsInfoTest, MinSizeTable) {
    namespace k = fs_info_class;
    EXPECT_EQ(fs_info_query_min_size(k::kFileFsVolumeInformation), 18u);
    EXPECT_EQ(fs_info_query_min_size(k::kFileFsSizeInformation), 24u);
    EXPECT_EQ(fs_info_query_min_size(k::kFileFsDeviceInformation), 8u);
    EXPECT_EQ(fs_info_query_min_size(k::kFileFsAttributeInformation), 12u);
    EXPECT_EQ(fs_info_query_min_size(k::kFileFsFullSizeInformation), 32u);
    EXPECT_EQ(fs_info_query_min_size(k::kFileFsObjectIdInformation), 64u);
    EXPECT_EQ(fs_info_query_min_size(k::kFileFsSectorSizeInformation), 28u);
    EXPECT_FALSE(fs_info_query_min_size(k::kFileFsLabelInformation).has_value());
    EXPECT_FALSE(fs_info_query_min_size(k::kFileFsDriverPathInformation).has_value());
}
