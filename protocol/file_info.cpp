#include "protocol/file_info.h"

#include <algorithm>

namespace daxsmbd::protocol {

namespace {

// A SET_INFO buffer shorter than the class is STATUS_INFO_LENGTH_MISMATCH (MS-FSCC 2.4 error
// tables); a longer one is accepted, as Windows does.
Result<ByteReader> fixed_reader(Bytes data, size_t size) {
    if (data.size() < size) return Error(NtStatus::InfoLengthMismatch);
    return ByteReader(data);
}

Result<int64_t> i64(ByteReader& r) {
    DAX_TRY(auto v, r.u64());
    return int64_t(v);
}

// Length-prefixed UTF-16 name: FileNameLength(4) then FileName.
void write_name32(ByteWriter& w, std::string_view name) {
    size_t len_pos = w.size();
    w.u32(0);
    size_t start = w.size();
    utf8_to_utf16le(name, w);
    w.patch_u32(len_pos, uint32_t(w.size() - start));
}

Result<std::string> read_name(ByteReader& r, uint32_t length) {
    DAX_TRY(auto raw, r.bytes(length));
    return utf16le_to_utf8(raw);
}

}  // namespace

Result<std::vector<Bytes>> split_entry_chain(Bytes buffer, size_t min_entry_size,
                                             size_t alignment) {
    std::vector<Bytes> out;
    size_t pos = 0;
    while (pos < buffer.size() || out.empty()) {
        size_t remaining = buffer.size() - pos;
        if (remaining < std::max<size_t>(min_entry_size, 4))
            return Error(NtStatus::InvalidParameter);
        uint32_t next = load_le32(buffer.data() + pos);
        if (next == 0) {
            out.push_back(buffer.subspan(pos));
            break;
        }
        if (next < min_entry_size || next > remaining || next % alignment != 0)
            return Error(NtStatus::InvalidParameter);
        out.push_back(buffer.subspan(pos, next));
        pos += next;
        if (pos == buffer.size()) return Error(NtStatus::InvalidParameter);  // dangling Next
    }
    return out;
}

// ---- fixed classes -----------------------------------------------------------------------

void FileBasicInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(creation_time));
    w.u64(uint64_t(last_access_time));
    w.u64(uint64_t(last_write_time));
    w.u64(uint64_t(change_time));
    w.u32(file_attributes);
    w.u32(0);  // Reserved
}
Result<FileBasicInfo> FileBasicInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileBasicInfo v;
    DAX_TRY(v.creation_time, i64(r));
    DAX_TRY(v.last_access_time, i64(r));
    DAX_TRY(v.last_write_time, i64(r));
    DAX_TRY(v.change_time, i64(r));
    DAX_TRY(v.file_attributes, r.u32());
    return v;
}

void FileStandardInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(allocation_size));
    w.u64(uint64_t(end_of_file));
    w.u32(number_of_links);
    w.u8(delete_pending ? 1 : 0);
    w.u8(directory ? 1 : 0);
    w.u16(0);  // Reserved
}
Result<FileStandardInfo> FileStandardInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileStandardInfo v;
    DAX_TRY(v.allocation_size, i64(r));
    DAX_TRY(v.end_of_file, i64(r));
    DAX_TRY(v.number_of_links, r.u32());
    DAX_TRY(auto dp, r.u8());
    DAX_TRY(auto dir, r.u8());
    v.delete_pending = dp != 0;
    v.directory = dir != 0;
    return v;
}

void FileInternalInfo::encode(ByteWriter& w) const {
    w.u64(index_number);
}
Result<FileInternalInfo> FileInternalInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileInternalInfo v;
    DAX_TRY(v.index_number, r.u64());
    return v;
}

void FileEaInfo::encode(ByteWriter& w) const {
    w.u32(ea_size);
}
Result<FileEaInfo> FileEaInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileEaInfo v;
    DAX_TRY(v.ea_size, r.u32());
    return v;
}

void FileAccessInfo::encode(ByteWriter& w) const {
    w.u32(access_flags);
}
Result<FileAccessInfo> FileAccessInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileAccessInfo v;
    DAX_TRY(v.access_flags, r.u32());
    return v;
}

void FilePositionInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(current_byte_offset));
}
Result<FilePositionInfo> FilePositionInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FilePositionInfo v;
    DAX_TRY(v.current_byte_offset, i64(r));
    return v;
}

void FileModeInfo::encode(ByteWriter& w) const {
    w.u32(mode);
}
Result<FileModeInfo> FileModeInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileModeInfo v;
    DAX_TRY(v.mode, r.u32());
    return v;
}

void FileAlignmentInfo::encode(ByteWriter& w) const {
    w.u32(alignment_requirement);
}
Result<FileAlignmentInfo> FileAlignmentInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileAlignmentInfo v;
    DAX_TRY(v.alignment_requirement, r.u32());
    return v;
}

void FileCompressionInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(compressed_file_size));
    w.u16(compression_format);
    w.u8(compression_unit_shift);
    w.u8(chunk_shift);
    w.u8(cluster_shift);
    w.zeros(3);  // Reserved
}
Result<FileCompressionInfo> FileCompressionInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileCompressionInfo v;
    DAX_TRY(v.compressed_file_size, i64(r));
    DAX_TRY(v.compression_format, r.u16());
    DAX_TRY(v.compression_unit_shift, r.u8());
    DAX_TRY(v.chunk_shift, r.u8());
    DAX_TRY(v.cluster_shift, r.u8());
    return v;
}

void FileNetworkOpenInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(creation_time));
    w.u64(uint64_t(last_access_time));
    w.u64(uint64_t(last_write_time));
    w.u64(uint64_t(change_time));
    w.u64(uint64_t(allocation_size));
    w.u64(uint64_t(end_of_file));
    w.u32(file_attributes);
    w.u32(0);  // Reserved
}
Result<FileNetworkOpenInfo> FileNetworkOpenInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileNetworkOpenInfo v;
    DAX_TRY(v.creation_time, i64(r));
    DAX_TRY(v.last_access_time, i64(r));
    DAX_TRY(v.last_write_time, i64(r));
    DAX_TRY(v.change_time, i64(r));
    DAX_TRY(v.allocation_size, i64(r));
    DAX_TRY(v.end_of_file, i64(r));
    DAX_TRY(v.file_attributes, r.u32());
    return v;
}

void FileAttributeTagInfo::encode(ByteWriter& w) const {
    w.u32(file_attributes);
    w.u32(reparse_tag);
}
Result<FileAttributeTagInfo> FileAttributeTagInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileAttributeTagInfo v;
    DAX_TRY(v.file_attributes, r.u32());
    DAX_TRY(v.reparse_tag, r.u32());
    return v;
}

void FileIdInfo::encode(ByteWriter& w) const {
    w.u64(volume_serial_number);
    w.bytes(file_id);
}
Result<FileIdInfo> FileIdInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    FileIdInfo v;
    DAX_TRY(v.volume_serial_number, r.u64());
    DAX_TRY(v.file_id, r.array<16>());
    return v;
}

void FileDispositionInfo::encode(ByteWriter& w) const {
    w.u8(delete_pending ? 1 : 0);
}
Result<FileDispositionInfo> FileDispositionInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    DAX_TRY(auto b, r.u8());
    return FileDispositionInfo{b != 0};
}

void FileDispositionInfoEx::encode(ByteWriter& w) const {
    w.u32(flags);
}
Result<FileDispositionInfoEx> FileDispositionInfoEx::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    DAX_TRY(auto f, r.u32());
    return FileDispositionInfoEx{f};
}

void FileAllocationInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(allocation_size));
}
Result<FileAllocationInfo> FileAllocationInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    DAX_TRY(auto v, i64(r));
    return FileAllocationInfo{v};
}

void FileEndOfFileInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(end_of_file));
}
Result<FileEndOfFileInfo> FileEndOfFileInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    DAX_TRY(auto v, i64(r));
    return FileEndOfFileInfo{v};
}

void FileValidDataLengthInfo::encode(ByteWriter& w) const {
    w.u64(uint64_t(valid_data_length));
}
Result<FileValidDataLengthInfo> FileValidDataLengthInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kSize));
    DAX_TRY(auto v, i64(r));
    return FileValidDataLengthInfo{v};
}

// ---- variable classes ----------------------------------------------------------------------

void FileNameInfo::encode(ByteWriter& w) const {
    write_name32(w, file_name);
}
Result<FileNameInfo> FileNameInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kFixedSize));
    DAX_TRY(auto len, r.u32());
    DAX_TRY(auto name, read_name(r, len));
    return FileNameInfo{std::move(name)};
}

void FileAllInfo::encode(ByteWriter& w) const {
    basic.encode(w);
    standard.encode(w);
    internal.encode(w);
    ea.encode(w);
    access.encode(w);
    position.encode(w);
    mode.encode(w);
    alignment.encode(w);
    name.encode(w);
}
Result<FileAllInfo> FileAllInfo::decode(Bytes data) {
    if (data.size() < kFixedSize) return Error(NtStatus::InfoLengthMismatch);
    FileAllInfo v;
    size_t off = 0;
    auto next = [&](size_t n) {
        auto s = data.subspan(off, n);
        off += n;
        return s;
    };
    DAX_TRY(v.basic, FileBasicInfo::decode(next(FileBasicInfo::kSize)));
    DAX_TRY(v.standard, FileStandardInfo::decode(next(FileStandardInfo::kSize)));
    DAX_TRY(v.internal, FileInternalInfo::decode(next(FileInternalInfo::kSize)));
    DAX_TRY(v.ea, FileEaInfo::decode(next(FileEaInfo::kSize)));
    DAX_TRY(v.access, FileAccessInfo::decode(next(FileAccessInfo::kSize)));
    DAX_TRY(v.position, FilePositionInfo::decode(next(FilePositionInfo::kSize)));
    DAX_TRY(v.mode, FileModeInfo::decode(next(FileModeInfo::kSize)));
    DAX_TRY(v.alignment, FileAlignmentInfo::decode(next(FileAlignmentInfo::kSize)));
    ByteReader r(data.subspan(off));
    DAX_TRY(auto len, r.u32());
    DAX_TRY(v.name.file_name, read_name(r, len));
    return v;
}

void FileRenameInfo::encode(ByteWriter& w) const {
    w.u8(replace_if_exists ? 1 : 0);
    w.zeros(7);  // Reserved
    w.u64(root_directory);
    write_name32(w, file_name);
}
Result<FileRenameInfo> FileRenameInfo::decode(Bytes data) {
    DAX_TRY(auto r, fixed_reader(data, kFixedSize));
    FileRenameInfo v;
    DAX_TRY(auto replace, r.u8());
    v.replace_if_exists = replace != 0;
    DAX_CHECK(r.skip(7));
    DAX_TRY(v.root_directory, r.u64());
    DAX_TRY(auto len, r.u32());
    DAX_TRY(v.file_name, read_name(r, len));
    return v;
}

size_t FileStreamInfo::encode(ByteWriter& w, size_t limit) const {
    EntryChain chain(w, 8, limit);  // MS-FSCC 2.4.49: entries 8-byte aligned
    for (const auto& s : streams) {
        bool ok = chain.append([&](ByteWriter& ew) {
            ew.u32(0);  // NextEntryOffset, patched by the chain
            size_t len_pos = ew.size();
            ew.u32(0);
            ew.u64(uint64_t(s.size));
            ew.u64(uint64_t(s.allocation_size));
            size_t start = ew.size();
            utf8_to_utf16le(s.name, ew);
            ew.patch_u32(len_pos, uint32_t(ew.size() - start));
        });
        if (!ok) break;
    }
    return chain.count();
}
Result<FileStreamInfo> FileStreamInfo::decode(Bytes data) {
    FileStreamInfo v;
    if (data.empty()) return v;
    DAX_TRY(auto entries, split_entry_chain(data, kEntryFixedSize, 8));
    for (Bytes e : entries) {
        ByteReader r(e);
        DAX_CHECK(r.skip(4));
        StreamEntry s;
        DAX_TRY(auto len, r.u32());
        DAX_TRY(s.size, i64(r));
        DAX_TRY(s.allocation_size, i64(r));
        DAX_TRY(s.name, read_name(r, len));
        v.streams.push_back(std::move(s));
    }
    return v;
}

size_t FileFullEaInfo::encode(ByteWriter& w, size_t limit) const {
    EntryChain chain(w, 4, limit);  // MS-FSCC 2.4.16: entries 4-byte aligned
    for (const auto& e : entries) {
        size_t name_len = std::min<size_t>(e.name.size(), 255);
        size_t value_len = std::min<size_t>(e.value.size(), 65535);
        bool ok = chain.append([&](ByteWriter& ew) {
            ew.u32(0);
            ew.u8(e.flags);
            ew.u8(uint8_t(name_len));
            ew.u16(uint16_t(value_len));
            ew.bytes(as_bytes(e.name.data(), name_len));
            ew.u8(0);  // EaName terminator
            ew.bytes(Bytes(e.value).first(value_len));
        });
        if (!ok) break;
    }
    return chain.count();
}
Result<FileFullEaInfo> FileFullEaInfo::decode(Bytes data) {
    FileFullEaInfo v;
    if (data.empty()) return v;
    DAX_TRY(auto entries, split_entry_chain(data, kEntryFixedSize, 4));
    for (Bytes e : entries) {
        ByteReader r(e);
        DAX_CHECK(r.skip(4));
        FullEaEntry ea;
        DAX_TRY(ea.flags, r.u8());
        DAX_TRY(auto name_len, r.u8());
        DAX_TRY(auto value_len, r.u16());
        DAX_TRY(auto name, r.bytes(name_len));
        DAX_TRY(auto nul, r.u8());
        if (nul != 0) return Error(NtStatus::InvalidParameter);
        DAX_TRY(auto value, r.bytes(value_len));
        ea.name.assign(reinterpret_cast<const char*>(name.data()), name.size());
        ea.value.assign(value.begin(), value.end());
        v.entries.push_back(std::move(ea));
    }
    return v;
}

void FileGetEaInfo::encode(ByteWriter& w) const {
    EntryChain chain(w, 4, SIZE_MAX);  // MS-FSCC 2.4.16.1: 4-byte aligned
    for (const auto& n : names) {
        size_t len = std::min<size_t>(n.size(), 255);
        chain.append([&](ByteWriter& ew) {
            ew.u32(0);
            ew.u8(uint8_t(len));
            ew.bytes(as_bytes(n.data(), len));
            ew.u8(0);
        });
    }
}
Result<FileGetEaInfo> FileGetEaInfo::decode(Bytes data) {
    FileGetEaInfo v;
    if (data.empty()) return v;
    DAX_TRY(auto entries, split_entry_chain(data, 6, 4));  // Next(4) Len(1) NUL(1) at least
    for (Bytes e : entries) {
        ByteReader r(e);
        DAX_CHECK(r.skip(4));
        DAX_TRY(auto len, r.u8());
        DAX_TRY(auto name, r.bytes(len));
        DAX_TRY(auto nul, r.u8());
        if (nul != 0) return Error(NtStatus::InvalidParameter);
        v.names.emplace_back(reinterpret_cast<const char*>(name.data()), name.size());
    }
    return v;
}

// ---- size tables ---------------------------------------------------------------------------

std::optional<size_t> file_info_query_min_size(uint8_t c) {
    namespace k = file_info_class;
    switch (c) {
        case k::kFileAccessInformation:
            return FileAccessInfo::kSize;
        case k::kFileAlignmentInformation:
            return FileAlignmentInfo::kSize;
        case k::kFileAllInformation:
            return FileAllInfo::kFixedSize;
        case k::kFileAlternateNameInformation:
            return FileNameInfo::kFixedSize;
        case k::kFileAttributeTagInformation:
            return FileAttributeTagInfo::kSize;
        case k::kFileBasicInformation:
            return FileBasicInfo::kSize;
        case k::kFileCompressionInformation:
            return FileCompressionInfo::kSize;
        case k::kFileEaInformation:
            return FileEaInfo::kSize;
        // FileFullEaInformation answers STATUS_BUFFER_TOO_SMALL itself when the first EA does
        // not fit (MS-FSCC 2.4.16), so it has no fixed minimum here.
        case k::kFileFullEaInformation:
            return 0;
        case k::kFileIdInformation:
            return FileIdInfo::kSize;
        case k::kFileInternalInformation:
            return FileInternalInfo::kSize;
        case k::kFileModeInformation:
            return FileModeInfo::kSize;
        case k::kFileNetworkOpenInformation:
            return FileNetworkOpenInfo::kSize;
        case k::kFileNormalizedNameInformation:
            return FileNameInfo::kFixedSize;
        case k::kFilePositionInformation:
            return FilePositionInfo::kSize;
        case k::kFileStandardInformation:
            return FileStandardInfo::kSize;
        case k::kFileStreamInformation:
            return FileStreamInfo::kEntryFixedSize;
        default:
            return std::nullopt;
    }
}

std::optional<size_t> file_info_set_min_size(uint8_t c) {
    namespace k = file_info_class;
    switch (c) {
        case k::kFileAllocationInformation:
            return FileAllocationInfo::kSize;
        case k::kFileBasicInformation:
            return FileBasicInfo::kSize;
        case k::kFileDispositionInformation:
            return FileDispositionInfo::kSize;
        case k::kFileDispositionInformationEx:
            return FileDispositionInfoEx::kSize;
        case k::kFileEndOfFileInformation:
            return FileEndOfFileInfo::kSize;
        case k::kFileFullEaInformation:
            return FileFullEaInfo::kEntryFixedSize;
        case k::kFileLinkInformation:
            return FileRenameInfo::kFixedSize;
        case k::kFileModeInformation:
            return FileModeInfo::kSize;
        case k::kFilePositionInformation:
            return FilePositionInfo::kSize;
        case k::kFileRenameInformation:
            return FileRenameInfo::kFixedSize;
        case k::kFileShortNameInformation:
            return FileNameInfo::kFixedSize;
        case k::kFileValidDataLengthInformation:
            return FileValidDataLengthInfo::kSize;
        default:
            return std::nullopt;
    }
}

}  // namespace daxsmbd::protocol
