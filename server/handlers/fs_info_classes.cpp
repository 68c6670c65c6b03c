// File-system information classes (info_classes.h): which SMB2_0_INFO_FILESYSTEM classes
// QUERY_INFO and SET_INFO serve (MS-SMB2 3.3.5.20.2, 3.3.5.21.2) and their MS-FSCC 2.5
// encodings from the facts of the share's volume.
#include "protocol/query_info.h"
#include "server/handlers/info_classes.h"

namespace daxsmbd::server::handlers::info {

using namespace protocol;
namespace fsc = protocol::fs_info_class;

ClassSupport query_fs_class_support(uint8_t c) {
    switch (c) {
        case fsc::kFileFsVolumeInformation:
        case fsc::kFileFsSizeInformation:
        case fsc::kFileFsDeviceInformation:
        case fsc::kFileFsAttributeInformation:
        case fsc::kFileFsControlInformation:
        case fsc::kFileFsFullSizeInformation:
        case fsc::kFileFsObjectIdInformation:
        case fsc::kFileFsSectorSizeInformation:
            return ClassSupport::Supported;
        // MS-FSCC 2.5 classes that are not queryable over SMB2 (MS-SMB2 3.3.5.20.2).
        case fsc::kFileFsLabelInformation:
        case fsc::kFileFsDriverPathInformation:
        case fsc::kFileFsVolumeFlagsInformation:
            return ClassSupport::NotSupported;
        default:
            return ClassSupport::Invalid;
    }
}

ClassSupport set_fs_class_support(uint8_t c) {
    switch (c) {
        case fsc::kFileFsLabelInformation:
        case fsc::kFileFsControlInformation:
        case fsc::kFileFsObjectIdInformation:
            return ClassSupport::NotSupported;
        default:
            return ClassSupport::Invalid;
    }
}

size_t query_fs_min_output(uint8_t c) {
    switch (c) {
        case fsc::kFileFsVolumeInformation:
            return 24;  // sizeof(FILE_FS_VOLUME_INFORMATION)
        case fsc::kFileFsAttributeInformation:
            return 16;  // sizeof(FILE_FS_ATTRIBUTE_INFORMATION)
        case fsc::kFileFsControlInformation:
            return 48;  // MS-FSCC 2.5.2
        default:
            return fs_info_query_min_size(c).value_or(0);
    }
}

// ---- File system information -------------------------------------------------------------

uint32_t fs_attributes(const VolumeFacts& v) {
    namespace fa = fs_attributes;
    // Linux file systems keep the case of names, store Unicode (UTF-8), have hard links and
    // sparse files (holes); EAs live in user xattrs when the file system has them.
    uint32_t a = fa::kCasePreservedNames | fa::kUnicodeOnDisk | fa::kSupportsHardLinks |
                 fa::kSupportsSparseFiles;
    if (v.case_sensitive) a |= fa::kCaseSensitiveSearch;
    if (v.user_xattrs) a |= fa::kSupportsExtendedAttributes;
    if (v.read_only) a |= fa::kReadOnlyVolume;
    return a;
}

Guid volume_object_id(uint32_t serial, std::string_view share_path) {
    // Two FNV-1a 64 hashes (different offset bases) over serial + path: stable, and different
    // for different shares of one file system.
    auto fnv = [&](uint64_t h) {
        auto mix = [&](uint8_t b) {
            h ^= b;
            h *= 0x100000001B3ull;
        };
        for (int i = 0; i < 4; ++i)
            mix(uint8_t(serial >> (8 * i)));
        for (char c : share_path)
            mix(uint8_t(c));
        return h;
    };
    Guid g{};
    store_le64(g.data(), fnv(0xCBF29CE484222325ull));
    store_le64(g.data() + 8, fnv(0x84222325CBF29CE4ull));
    return g;
}

ByteVector encode_fs_info(uint8_t c, const VolumeFacts& v) {
    ByteVector out;
    ByteWriter w(out);
    switch (c) {
        case fsc::kFileFsVolumeInformation: {
            FileFsVolumeInfo i;
            i.volume_creation_time = v.creation_time;
            i.volume_serial_number = v.serial;
            i.supports_objects = false;
            i.volume_label = v.label;
            i.encode(w);
            break;
        }
        case fsc::kFileFsSizeInformation: {
            FileFsSizeInfo i;
            i.total_allocation_units = int64_t(v.space.total_units);
            i.available_allocation_units = int64_t(v.space.caller_available_units);
            i.sectors_per_allocation_unit = v.space.sectors_per_unit;
            i.bytes_per_sector = v.space.bytes_per_sector;
            i.encode(w);
            break;
        }
        case fsc::kFileFsDeviceInformation: {
            FileFsDeviceInfo i;
            i.device_type = device_type::kDisk;
            i.characteristics = device_characteristics::kDeviceIsMounted;
            if (v.read_only) i.characteristics |= device_characteristics::kReadOnlyDevice;
            i.encode(w);
            break;
        }
        case fsc::kFileFsAttributeInformation: {
            FileFsAttributeInfo i;
            i.file_system_attributes = fs_attributes(v);
            i.maximum_component_name_length = int32_t(v.max_name_length);
            i.file_system_name = "NTFS";
            i.encode(w);
            break;
        }
        case fsc::kFileFsControlInformation:
            // MS-FSCC 2.5.2 with quotas off: no free-space filtering, the default quota
            // threshold and limit "no limit" (-1), no FILE_VC_* flag set.
            w.u64(0);      // FreeSpaceStartFiltering
            w.u64(0);      // FreeSpaceThreshold
            w.u64(0);      // FreeSpaceStopFiltering
            w.u64(~0ull);  // DefaultQuotaThreshold
            w.u64(~0ull);  // DefaultQuotaLimit
            w.u32(0);      // FileSystemControlFlags
            w.u32(0);      // Padding
            break;
        case fsc::kFileFsFullSizeInformation: {
            FileFsFullSizeInfo i;
            i.total_allocation_units = int64_t(v.space.total_units);
            i.caller_available_allocation_units = int64_t(v.space.caller_available_units);
            i.actual_available_allocation_units = int64_t(v.space.actual_available_units);
            i.sectors_per_allocation_unit = v.space.sectors_per_unit;
            i.bytes_per_sector = v.space.bytes_per_sector;
            i.encode(w);
            break;
        }
        case fsc::kFileFsObjectIdInformation: {
            FileFsObjectIdInfo i;
            i.object_id = v.object_id;
            i.encode(w);
            break;
        }
        case fsc::kFileFsSectorSizeInformation: {
            FileFsSectorSizeInfo i;
            i.logical_bytes_per_sector = v.space.bytes_per_sector;
            i.physical_bytes_per_sector_for_atomicity = v.space.bytes_per_sector;
            i.physical_bytes_per_sector_for_performance = v.space.bytes_per_sector;
            i.file_system_effective_physical_bytes_per_sector_for_atomicity =
                v.space.bytes_per_sector;
            i.flags =
                sector_size_flags::kAlignedDevice | sector_size_flags::kPartitionAlignedOnDevice;
            i.encode(w);
            break;
        }
        default:
            break;
    }
    return out;
}

VolumeFacts volume_facts(const vfs::ShareRoot& root, const vfs::FsSpace& space,
                         std::string_view share_name, bool share_read_only) {
    VolumeFacts v;
    v.label = std::string(share_name);
    v.serial = root.volume_serial();
    v.creation_time = root.volume_creation_time();
    v.space = space;
    v.max_name_length = root.max_name_length();
    v.case_sensitive = root.case_sensitive();
    v.read_only = share_read_only || root.read_only();
    v.user_xattrs = root.supports_user_xattrs();
    v.object_id = volume_object_id(v.serial, root.path());
    return v;
}

}  // namespace daxsmbd::server::handlers::info
