#include "protocol/dir_info.h"

namespace daxsmbd::protocol {

namespace {

namespace k = file_info_class;

// FileName offsets (MS-FSCC): 2.4.10 FILE_DIRECTORY_INFORMATION 64, 2.4.15 FULL 68,
// 2.4.8 BOTH 94, 2.4.22 ID_BOTH 104, 2.4.24 ID_FULL 80, 2.4.33 NAMES 12.
constexpr size_t kDirectoryFixed = 64;
constexpr size_t kFullFixed = 68;
constexpr size_t kBothFixed = 94;
constexpr size_t kIdBothFixed = 104;
constexpr size_t kIdFullFixed = 80;
constexpr size_t kNamesFixed = 12;
constexpr size_t kShortNameBytes = 24;

bool has_ea_size(uint8_t c) {
    return c == k::kFileFullDirectoryInformation || c == k::kFileBothDirectoryInformation ||
           c == k::kFileIdBothDirectoryInformation || c == k::kFileIdFullDirectoryInformation;
}
bool has_short_name(uint8_t c) {
    return c == k::kFileBothDirectoryInformation || c == k::kFileIdBothDirectoryInformation;
}

}  // namespace

bool DirectoryInfoWriter::supported(uint8_t c) {
    return fixed_size(c) != 0;
}

Status DirectoryInfoWriter::check_class(uint8_t c) {
    if (!supported(c)) return Error(NtStatus::InvalidInfoClass);
    return {};
}

size_t DirectoryInfoWriter::fixed_size(uint8_t c) {
    switch (c) {
        case k::kFileDirectoryInformation:
            return kDirectoryFixed;
        case k::kFileFullDirectoryInformation:
            return kFullFixed;
        case k::kFileBothDirectoryInformation:
            return kBothFixed;
        case k::kFileIdBothDirectoryInformation:
            return kIdBothFixed;
        case k::kFileIdFullDirectoryInformation:
            return kIdFullFixed;
        case k::kFileNamesInformation:
            return kNamesFixed;
        default:
            return 0;
    }
}

DirectoryInfoWriter::DirectoryInfoWriter(uint8_t info_class, size_t limit)
    : class_(info_class), w_(buf_), chain_(w_, 8, limit) {}

bool DirectoryInfoWriter::append(const DirEntry& e) {
    if (!supported(class_)) return false;
    return chain_.append([&](ByteWriter& w) {
        size_t start = w.size();
        w.u32(0);  // NextEntryOffset, patched by the chain
        w.u32(e.file_index);
        if (class_ == k::kFileNamesInformation) {
            w.u32(0);  // FileNameLength, patched below
        } else {
            w.u64(uint64_t(e.creation_time));
            w.u64(uint64_t(e.last_access_time));
            w.u64(uint64_t(e.last_write_time));
            w.u64(uint64_t(e.change_time));
            w.u64(uint64_t(e.end_of_file));
            w.u64(uint64_t(e.allocation_size));
            w.u32(e.file_attributes);
            w.u32(0);  // FileNameLength, patched below
            if (has_ea_size(class_)) w.u32(e.ea_size);
            if (has_short_name(class_)) {
                auto short_name = utf8_to_utf16le(e.short_name);
                if (short_name.size() > kShortNameBytes) short_name.clear();  // not an 8.3 name
                w.u8(uint8_t(short_name.size()));
                w.u8(0);  // Reserved
                w.bytes(short_name);
                w.zeros(kShortNameBytes - short_name.size());
            }
            if (class_ == k::kFileIdBothDirectoryInformation) {
                w.u16(0);  // Reserved2
                w.u64(e.file_id);
            } else if (class_ == k::kFileIdFullDirectoryInformation) {
                w.u32(0);  // Reserved
                w.u64(e.file_id);
            }
        }
        // FileNameLength is at 8 in FILE_NAMES_INFORMATION, at 60 in every other class.
        size_t name_len_pos = class_ == k::kFileNamesInformation ? start + 8 : start + 60;
        size_t name_start = w.size();
        utf8_to_utf16le(e.name, w);
        w.patch_u32(name_len_pos, uint32_t(w.size() - name_start));
    });
}

Result<std::vector<DirEntry>> DirectoryInfoWriter::parse(uint8_t c, Bytes buffer) {
    DAX_CHECK(check_class(c));
    std::vector<DirEntry> out;
    if (buffer.empty()) return out;
    size_t fixed = fixed_size(c);
    DAX_TRY(auto entries, split_entry_chain(buffer, fixed, 8));
    for (Bytes raw : entries) {
        ByteReader r(raw);
        DirEntry e;
        DAX_CHECK(r.skip(4));
        DAX_TRY(e.file_index, r.u32());
        uint32_t name_len = 0;
        if (c == k::kFileNamesInformation) {
            DAX_TRY(name_len, r.u32());
        } else {
            int64_t* fields[] = {&e.creation_time, &e.last_access_time, &e.last_write_time,
                                 &e.change_time,   &e.end_of_file,      &e.allocation_size};
            for (int64_t* f : fields) {
                DAX_TRY(auto x, r.u64());
                *f = int64_t(x);
            }
            DAX_TRY(e.file_attributes, r.u32());
            DAX_TRY(name_len, r.u32());
            if (has_ea_size(c)) {
                DAX_TRY(e.ea_size, r.u32());
            }
            if (has_short_name(c)) {
                DAX_TRY(auto short_len, r.u8());
                DAX_CHECK(r.skip(1));
                DAX_TRY(auto short_name, r.bytes(kShortNameBytes));
                if (short_len > kShortNameBytes) return Error(NtStatus::InvalidParameter);
                DAX_TRY(e.short_name, utf16le_to_utf8(short_name.first(short_len)));
            }
            if (c == k::kFileIdBothDirectoryInformation) {
                DAX_CHECK(r.skip(2));
                DAX_TRY(e.file_id, r.u64());
            } else if (c == k::kFileIdFullDirectoryInformation) {
                DAX_CHECK(r.skip(4));
                DAX_TRY(e.file_id, r.u64());
            }
        }
        DAX_TRY(auto name, r.bytes(name_len));
        DAX_TRY(e.name, utf16le_to_utf8(name));
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace daxsmbd::protocol
