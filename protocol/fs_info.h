// File system information classes (MS-FSCC 2.5): QUERY_INFO with InfoType FILESYSTEM.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace fs_info_class {  // FS_INFORMATION_CLASS levels (MS-FSCC 2.5 table)
constexpr uint8_t kFileFsVolumeInformation = 1;
constexpr uint8_t kFileFsLabelInformation = 2;
constexpr uint8_t kFileFsSizeInformation = 3;
constexpr uint8_t kFileFsDeviceInformation = 4;
constexpr uint8_t kFileFsAttributeInformation = 5;
constexpr uint8_t kFileFsControlInformation = 6;
constexpr uint8_t kFileFsFullSizeInformation = 7;
constexpr uint8_t kFileFsObjectIdInformation = 8;
constexpr uint8_t kFileFsDriverPathInformation = 9;
constexpr uint8_t kFileFsVolumeFlagsInformation = 10;
constexpr uint8_t kFileFsSectorSizeInformation = 11;
}  // namespace fs_info_class

namespace fs_attributes {  // FILE_FS_ATTRIBUTE_INFORMATION.FileSystemAttributes (MS-FSCC 2.5.1)
constexpr uint32_t kCaseSensitiveSearch = 0x00000001;
constexpr uint32_t kCasePreservedNames = 0x00000002;
constexpr uint32_t kUnicodeOnDisk = 0x00000004;
constexpr uint32_t kPersistentAcls = 0x00000008;
constexpr uint32_t kFileCompression = 0x00000010;
constexpr uint32_t kVolumeQuotas = 0x00000020;
constexpr uint32_t kSupportsSparseFiles = 0x00000040;
constexpr uint32_t kSupportsReparsePoints = 0x00000080;
constexpr uint32_t kSupportsRemoteStorage = 0x00000100;
constexpr uint32_t kReturnsCleanupResultInfo = 0x00000200;
constexpr uint32_t kSupportsPosixUnlinkRename = 0x00000400;
constexpr uint32_t kVolumeIsCompressed = 0x00008000;
constexpr uint32_t kSupportsObjectIds = 0x00010000;
constexpr uint32_t kSupportsEncryption = 0x00020000;
constexpr uint32_t kNamedStreams = 0x00040000;
constexpr uint32_t kReadOnlyVolume = 0x00080000;
constexpr uint32_t kSequentialWriteOnce = 0x00100000;
constexpr uint32_t kSupportsTransactions = 0x00200000;
constexpr uint32_t kSupportsHardLinks = 0x00400000;
constexpr uint32_t kSupportsExtendedAttributes = 0x00800000;
constexpr uint32_t kSupportsOpenByFileId = 0x01000000;
constexpr uint32_t kSupportsUsnJournal = 0x02000000;
constexpr uint32_t kSupportIntegrityStreams = 0x04000000;
constexpr uint32_t kSupportsBlockRefcounting = 0x08000000;
constexpr uint32_t kSupportsSparseVdl = 0x10000000;
}  // namespace fs_attributes

namespace device_type {  // FILE_FS_DEVICE_INFORMATION.DeviceType (MS-FSCC 2.5.10)
constexpr uint32_t kCdRom = 0x00000002;
constexpr uint32_t kDisk = 0x00000007;
}  // namespace device_type

namespace device_characteristics {
constexpr uint32_t kRemovableMedia = 0x00000001;
constexpr uint32_t kReadOnlyDevice = 0x00000002;
constexpr uint32_t kFloppyDiskette = 0x00000004;
constexpr uint32_t kWriteOnceMedia = 0x00000008;
constexpr uint32_t kRemoteDevice = 0x00000010;
constexpr uint32_t kDeviceIsMounted = 0x00000020;
constexpr uint32_t kVirtualVolume = 0x00000040;
constexpr uint32_t kDeviceSecureOpen = 0x00000100;
}  // namespace device_characteristics

namespace sector_size_flags {  // FILE_FS_SECTOR_SIZE_INFORMATION.Flags (MS-FSCC 2.5.7)
constexpr uint32_t kAlignedDevice = 0x00000001;
constexpr uint32_t kPartitionAlignedOnDevice = 0x00000002;
constexpr uint32_t kNoSeekPenalty = 0x00000004;
constexpr uint32_t kTrimEnabled = 0x00000008;
constexpr uint32_t kOffsetUnknown = 0xFFFFFFFF;  // SSINFO_OFFSET_UNKNOWN
}  // namespace sector_size_flags

struct FileFsVolumeInfo {  // MS-FSCC 2.5.9
    static constexpr size_t kFixedSize = 18;
    int64_t volume_creation_time = 0;
    uint32_t volume_serial_number = 0;
    bool supports_objects = false;
    std::string volume_label;  // at most 32 characters go on the wire (MS-FSCC 2.5.9)
    void encode(ByteWriter& w) const;
    static Result<FileFsVolumeInfo> decode(Bytes data);
    bool operator==(const FileFsVolumeInfo&) const = default;
};

struct FileFsSizeInfo {  // MS-FSCC 2.5.8
    static constexpr size_t kSize = 24;
    int64_t total_allocation_units = 0;
    int64_t available_allocation_units = 0;
    uint32_t sectors_per_allocation_unit = 0;
    uint32_t bytes_per_sector = 0;
    void encode(ByteWriter& w) const;
    static Result<FileFsSizeInfo> decode(Bytes data);
    bool operator==(const FileFsSizeInfo&) const = default;
};

struct FileFsDeviceInfo {  // MS-FSCC 2.5.10
    static constexpr size_t kSize = 8;
    uint32_t device_type = device_type::kDisk;
    uint32_t characteristics = 0;
    void encode(ByteWriter& w) const;
    static Result<FileFsDeviceInfo> decode(Bytes data);
    bool operator==(const FileFsDeviceInfo&) const = default;
};

struct FileFsAttributeInfo {  // MS-FSCC 2.5.1
    static constexpr size_t kFixedSize = 12;
    uint32_t file_system_attributes = 0;
    int32_t maximum_component_name_length = 255;
    std::string file_system_name;  // e.g. "NTFS"
    void encode(ByteWriter& w) const;
    static Result<FileFsAttributeInfo> decode(Bytes data);
    bool operator==(const FileFsAttributeInfo&) const = default;
};

struct FileFsFullSizeInfo {  // MS-FSCC 2.5.4
    static constexpr size_t kSize = 32;
    int64_t total_allocation_units = 0;
    int64_t caller_available_allocation_units = 0;
    int64_t actual_available_allocation_units = 0;
    uint32_t sectors_per_allocation_unit = 0;
    uint32_t bytes_per_sector = 0;
    void encode(ByteWriter& w) const;
    static Result<FileFsFullSizeInfo> decode(Bytes data);
    bool operator==(const FileFsFullSizeInfo&) const = default;
};

struct FileFsObjectIdInfo {  // MS-FSCC 2.5.6 (query and set)
    static constexpr size_t kSize = 64;
    Guid object_id{};
    std::array<std::byte, 48> extended_info{};
    void encode(ByteWriter& w) const;
    static Result<FileFsObjectIdInfo> decode(Bytes data);
    bool operator==(const FileFsObjectIdInfo&) const = default;
};

struct FileFsSectorSizeInfo {  // MS-FSCC 2.5.7
    static constexpr size_t kSize = 28;
    uint32_t logical_bytes_per_sector = 512;
    uint32_t physical_bytes_per_sector_for_atomicity = 512;
    uint32_t physical_bytes_per_sector_for_performance = 512;
    uint32_t file_system_effective_physical_bytes_per_sector_for_atomicity = 512;
    uint32_t flags = 0;
    uint32_t byte_offset_for_sector_alignment = 0;
    uint32_t byte_offset_for_partition_alignment = 0;
    void encode(ByteWriter& w) const;
    static Result<FileFsSectorSizeInfo> decode(Bytes data);
    bool operator==(const FileFsSectorSizeInfo&) const = default;
};

// Minimum OutputBufferLength of a file system class this codec encodes (below it:
// STATUS_INFO_LENGTH_MISMATCH), or nullopt for a class not queryable here
// (STATUS_INVALID_INFO_CLASS).
std::optional<size_t> fs_info_query_min_size(uint8_t fs_class);

}  // namespace daxsmbd::protocol
