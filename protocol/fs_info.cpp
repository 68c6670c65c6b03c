#include "protocol/fs_info.h"

namespace daxsmbd::protocol {

namespace {
Result<ByteReader> fixed_reader(Bytes data, size_t size) {
    if (data.size() < size) return Error(NtStatus::InfoLengthMismatch);
    return ByteReader(data);
}
Result<int64_t> i64(ByteReader& r) {
    DAX_TRY(auto v, r.u64());
    return int64_t(v);
}
// MS-FSCC 2.5.9: a label longer than 32 characters is cut to its first 32.
constexpr size_t kMaxLabelBytes = 32 * 2;
}  // namespace

void FileFsVolumeInfo::encode(ByteWriter& w) const {
    auto label = utf8_to_utf16le(volume_label);
    if (label.size() > kMaxLabelBytes) {
        label.resize(kMaxLabelBytes);
        // Do not leave half a surrogate pair at the cut.
        uint16_t last = load_le16(label.data() + label.size() - 2);
        if (last >= 0xD800 && last <= 0xDBFF) label.resize(label.size() - 2);
    }
    w.u64(uint64_t(volume_creation_time));
    w.u32(volume_serial_number);
    w.u32(uint32_t(label.size()));
    w.u8(supports_objects ? 1 : 0);
    w.u8(0);  // Reserved
    w.bytes(label);
}
Result<FileFsVolumeInfo> FileFsVolumeInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kFixedSize));
    FileFsVolumeInfo v;
    DAX_TRY(v.volume_creation_time, i64(r));
    DAX_TRY(v.volume_serial_number, r.u32());
    DAX_TRY(auto len, r.u32());
    DAX_TRY(auto so, r.u8());
    v.supports_objects = so != 0;
    DAX_CHECK(r.skip(1));
    DAX_TRY(auto label, r.bytes(len));
    DAX_TRY(v.volume_label, utf16le_to_utf8(label));
    return v;
}

void FileFsSizeInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(total_allocation_units));
    w.u64(uint64_t(available_allocation_units));
    w.u32(sectors_per_allocation_unit);
    w.u32(bytes_per_sector);
}
Result<FileFsSizeInfo> FileFsSizeInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileFsSizeInfo v;
    DAX_TRY(v.total_allocation_units, i64(r));
    DAX_TRY(v.available_allocation_units, i64(r));
    DAX_TRY(v.sectors_per_allocation_unit, r.u32());
    DAX_TRY(v.bytes_per_sector, r.u32());
    return v;
}

void FileFsDeviceInfo::encode(ByteWriter& w) const {
    w.u32(device_type);
    w.u32(characteristics);
}
Result<FileFsDeviceInfo> FileFsDeviceInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileFsDeviceInfo v;
    DAX_TRY(v.device_type, r.u32());
    DAX_TRY(v.characteristics, r.u32());
    return v;
}

void FileFsAttributeInfo::encode(ByteWriter& w) const {
    w.u32(file_system_attributes);
    w.u32(uint32_t(maximum_component_name_length));
    size_t len_pos = w.size();
    w.u32(0);
    size_t start = w.size();
    utf8_to_utf16le(file_system_name, w);
    w.patch_u32(len_pos, uint32_t(w.size() - start));
}
Result<FileFsAttributeInfo> FileFsAttributeInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kFixedSize));
    FileFsAttributeInfo v;
    DAX_TRY(v.file_system_attributes, r.u32());
    DAX_TRY(auto max_len, r.u32());
    v.maximum_component_name_length = int32_t(max_len);
    DAX_TRY(auto len, r.u32());
    DAX_TRY(auto name, r.bytes(len));
    DAX_TRY(v.file_system_name, utf16le_to_utf8(name));
    return v;
}

void FileFsFullSizeInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(total_allocation_units));
    w.u64(uint64_t(caller_available_allocation_units));
    w.u64(uint64_t(actual_available_allocation_units));
    w.u32(sectors_per_allocation_unit);
    w.u32(bytes_per_sector);
}
Result<FileFsFullSizeInfo> FileFsFullSizeInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileFsFullSizeInfo v;
    DAX_TRY(v.total_allocation_units, i64(r));
    DAX_TRY(v.caller_available_allocation_units, i64(r));
    DAX_TRY(v.actual_available_allocation_units, i64(r));
    DAX_TRY(v.sectors_per_allocation_unit, r.u32());
    DAX_TRY(v.bytes_per_sector, r.u32());
    return v;
}

void FileFsObjectIdInfo::encode(ByteWriter& w) const {
    w.bytes(object_id);
    w.bytes(extended_info);
}
Result<FileFsObjectIdInfo> FileFsObjectIdInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileFsObjectIdInfo v;
    DAX_TRY(v.object_id, r.array<16>());
    DAX_TRY(v.extended_info, r.array<48>());
    return v;
}

void FileFsSectorSizeInfo::encode(ByteWriter& w) const {
    w.u32(logical_bytes_per_sector);
    w.u32(physical_bytes_per_sector_for_atomicity);
    w.u32(physical_bytes_per_sector_for_performance);
    w.u32(file_system_effective_physical_bytes_per_sector_for_atomicity);
    w.u32(flags);
    w.u32(byte_offset_for_sector_alignment);
    w.u32(byte_offset_for_partition_alignment);
}
Result<FileFsSectorSizeInfo> FileFsSectorSizeInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileFsSectorSizeInfo v;
    uint32_t* fields[] = {&v.logical_bytes_per_sector,
                          &v.physical_bytes_per_sector_for_atomicity,
                          &v.physical_bytes_per_sector_for_performance,
                          &v.file_system_effective_physical_bytes_per_sector_for_atomicity,
                          &v.flags,
                          &v.byte_offset_for_sector_alignment,
                          &v.byte_offset_for_partition_alignment};
    for (uint32_t* f : fields) {
        DAX_TRY(*f, r.u32());
    }
    return v;
}

std::optional<size_t> fs_info_query_min_size(uint8_t c) {
    namespace k = fs_info_class;
    switch (c) {
        case k::kFileFsVolumeInformation:
            return FileFsVolumeInfo::kFixedSize;
        case k::kFileFsSizeInformation:
            return FileFsSizeInfo::kSize;
        case k::kFileFsDeviceInformation:
            return FileFsDeviceInfo::kSize;
        case k::kFileFsAttributeInformation:
            return FileFsAttributeInfo::kFixedSize;
        case k::kFileFsFullSizeInformation:
            return FileFsFullSizeInfo::kSize;
        case k::kFileFsObjectIdInformation:
            return FileFsObjectIdInfo::kSize;
        case k::kFileFsSectorSizeInformation:
            return FileFsSectorSizeInfo::kSize;
        default:
            return std::nullopt;
    }
}

}  // namespace daxsmbd::protocol
