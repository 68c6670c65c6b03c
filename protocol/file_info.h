// File information classes (MS-FSCC 2.4) and file attributes (MS-FSCC 2.6): the value structs the
// QUERY_INFO / SET_INFO handlers fill or read, with their wire encoders and decoders, plus the
// NextEntryOffset chaining shared by every list-shaped class (directory entries, streams, EAs,
// change notifications).
//
// Times are FILETIME (100 ns since 1601, MS-FSCC 2.1.1) kept as the raw signed 64-bit wire value;
// sizes that MS-FSCC calls "64-bit signed integer" are int64_t. Names are UTF-8 here and UTF-16LE
// on the wire.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::protocol {

// MS-FSCC 2.6.
namespace file_attributes {
constexpr uint32_t kReadonly = 0x00000001;
constexpr uint32_t kHidden = 0x00000002;
constexpr uint32_t kSystem = 0x00000004;
constexpr uint32_t kDirectory = 0x00000010;
constexpr uint32_t kArchive = 0x00000020;
constexpr uint32_t kNormal = 0x00000080;
constexpr uint32_t kTemporary = 0x00000100;
constexpr uint32_t kSparseFile = 0x00000200;
constexpr uint32_t kReparsePoint = 0x00000400;
constexpr uint32_t kCompressed = 0x00000800;
constexpr uint32_t kOffline = 0x00001000;
constexpr uint32_t kNotContentIndexed = 0x00002000;
constexpr uint32_t kEncrypted = 0x00004000;
constexpr uint32_t kIntegrityStream = 0x00008000;
constexpr uint32_t kNoScrubData = 0x00020000;
constexpr uint32_t kRecallOnOpen = 0x00040000;
constexpr uint32_t kPinned = 0x00080000;
constexpr uint32_t kUnpinned = 0x00100000;
constexpr uint32_t kRecallOnDataAccess = 0x00400000;
}  // namespace file_attributes

// FILE_INFORMATION_CLASS levels (MS-FSCC 2.4 table).
namespace file_info_class {
constexpr uint8_t kFileDirectoryInformation = 1;
constexpr uint8_t kFileFullDirectoryInformation = 2;
constexpr uint8_t kFileBothDirectoryInformation = 3;
constexpr uint8_t kFileBasicInformation = 4;
constexpr uint8_t kFileStandardInformation = 5;
constexpr uint8_t kFileInternalInformation = 6;
constexpr uint8_t kFileEaInformation = 7;
constexpr uint8_t kFileAccessInformation = 8;
constexpr uint8_t kFileNameInformation = 9;
constexpr uint8_t kFileRenameInformation = 10;
constexpr uint8_t kFileLinkInformation = 11;
constexpr uint8_t kFileNamesInformation = 12;
constexpr uint8_t kFileDispositionInformation = 13;
constexpr uint8_t kFilePositionInformation = 14;
constexpr uint8_t kFileFullEaInformation = 15;
constexpr uint8_t kFileModeInformation = 16;
constexpr uint8_t kFileAlignmentInformation = 17;
constexpr uint8_t kFileAllInformation = 18;
constexpr uint8_t kFileAllocationInformation = 19;
constexpr uint8_t kFileEndOfFileInformation = 20;
constexpr uint8_t kFileAlternateNameInformation = 21;
constexpr uint8_t kFileStreamInformation = 22;
constexpr uint8_t kFilePipeInformation = 23;
constexpr uint8_t kFilePipeLocalInformation = 24;
constexpr uint8_t kFilePipeRemoteInformation = 25;
constexpr uint8_t kFileCompressionInformation = 28;
constexpr uint8_t kFileObjectIdInformation = 29;
constexpr uint8_t kFileQuotaInformation = 32;
constexpr uint8_t kFileReparsePointInformation = 33;
constexpr uint8_t kFileNetworkOpenInformation = 34;
constexpr uint8_t kFileAttributeTagInformation = 35;
constexpr uint8_t kFileIdBothDirectoryInformation = 37;
constexpr uint8_t kFileIdFullDirectoryInformation = 38;
constexpr uint8_t kFileValidDataLengthInformation = 39;
constexpr uint8_t kFileShortNameInformation = 40;
constexpr uint8_t kFileNormalizedNameInformation = 48;
constexpr uint8_t kFileIdInformation = 59;
constexpr uint8_t kFileIdExtdDirectoryInformation = 60;
constexpr uint8_t kFileDispositionInformationEx = 64;
constexpr uint8_t kFileRenameInformationEx = 65;
constexpr uint8_t kFileId64ExtdDirectoryInformation = 78;
constexpr uint8_t kFileId64ExtdBothDirectoryInformation = 79;
constexpr uint8_t kFileIdAllExtdDirectoryInformation = 80;
constexpr uint8_t kFileIdAllExtdBothDirectoryInformation = 81;
}  // namespace file_info_class

// Special FILE_BASIC_INFORMATION time values on SET (MS-FSCC 2.4.7). The decoder keeps the raw
// value; the handler decides what each means.
namespace file_time {
constexpr int64_t kNoChange = 0;         // leave this time alone
constexpr int64_t kStopUpdating = -1;    // and stop updating it for this handle
constexpr int64_t kResumeUpdating = -2;  // resume automatic updates for this handle
}  // namespace file_time

// FILE_MODE_INFORMATION.Mode bits (MS-FSCC 2.4.31).
namespace file_mode {
constexpr uint32_t kWriteThrough = 0x00000002;
constexpr uint32_t kSequentialOnly = 0x00000004;
constexpr uint32_t kNoIntermediateBuffering = 0x00000008;
constexpr uint32_t kSynchronousIoAlert = 0x00000010;
constexpr uint32_t kSynchronousIoNonalert = 0x00000020;
constexpr uint32_t kDeleteOnClose = 0x00001000;
}  // namespace file_mode

// FILE_ALIGNMENT_INFORMATION values (MS-FSCC 2.4.3).
namespace file_alignment {
constexpr uint32_t kByte = 0x00000000;
constexpr uint32_t kWord = 0x00000001;
constexpr uint32_t kLong = 0x00000003;
constexpr uint32_t kQuad = 0x00000007;
constexpr uint32_t kOcta = 0x0000000F;
constexpr uint32_t k512Byte = 0x000001FF;
}  // namespace file_alignment

// FILE_DISPOSITION_INFORMATION_EX.Flags (MS-FSCC 2.4.12).
namespace file_disposition_ex {
constexpr uint32_t kDoNotDelete = 0x00000000;
constexpr uint32_t kDelete = 0x00000001;
constexpr uint32_t kPosixSemantics = 0x00000002;
constexpr uint32_t kForceImageSectionCheck = 0x00000004;
constexpr uint32_t kOnClose = 0x00000008;
constexpr uint32_t kIgnoreReadonlyAttribute = 0x00000010;
}  // namespace file_disposition_ex

// FILE_FULL_EA_INFORMATION.Flags (MS-FSCC 2.4.16).
constexpr uint8_t kFileNeedEa = 0x80;

// ---------------------------------------------------------------------------------------------
// NextEntryOffset chains.

// Appends entries that begin with a 4-byte NextEntryOffset (MS-FSCC list layout): every entry
// starts `alignment`-aligned relative to the first one (padding zeroed), the previous entry's
// NextEntryOffset is patched to point at the new one, the last entry keeps 0 and gets no trailing
// padding. An entry that would end more than `limit` bytes after the chain start is rolled back,
// so a listing can stop cleanly at OutputBufferLength and resume with that entry next time.
class EntryChain {
  public:
    EntryChain(ByteWriter& w, size_t alignment, size_t limit)
        : w_(w), start_(w.size()), alignment_(alignment), limit_(limit) {}

    // `write_entry(ByteWriter&)` appends one whole entry, NextEntryOffset included (as 0).
    template <class F>
    bool append(F&& write_entry) {
        size_t saved = w_.size();
        if (count_ > 0) pad_to_alignment();
        size_t entry = w_.size();
        write_entry(w_);
        if (w_.size() - start_ > limit_) {
            w_.vector().resize(saved);
            return false;
        }
        if (count_ > 0) w_.patch_u32(last_, uint32_t(entry - last_));
        last_ = entry;
        ++count_;
        return true;
    }
    size_t count() const { return count_; }
    size_t bytes() const { return w_.size() - start_; }

  private:
    void pad_to_alignment() {
        size_t off = w_.size() - start_;
        w_.zeros((alignment_ - off % alignment_) % alignment_);
    }
    ByteWriter& w_;
    size_t start_;
    size_t alignment_;
    size_t limit_;
    size_t last_ = 0;
    size_t count_ = 0;
};

// Splits a NextEntryOffset chain into its entries (the last one runs to the end of `buffer`).
// Fails with STATUS_INVALID_PARAMETER when an entry is shorter than `min_entry_size`, a
// NextEntryOffset points outside the buffer or is not a multiple of `alignment`.
Result<std::vector<Bytes>> split_entry_chain(Bytes buffer, size_t min_entry_size, size_t alignment);

// ---------------------------------------------------------------------------------------------
// Fixed-size classes. kSize is the wire size: a QUERY_INFO whose OutputBufferLength is below it
// gets STATUS_INFO_LENGTH_MISMATCH, and decode() of a shorter SET_INFO buffer fails the same way.

struct FileBasicInfo {  // MS-FSCC 2.4.7
    static constexpr size_t kSize = 40;
    int64_t creation_time = 0;
    int64_t last_access_time = 0;
    int64_t last_write_time = 0;
    int64_t change_time = 0;
    uint32_t file_attributes = 0;
    void encode(ByteWriter& w) const;
    static Result<FileBasicInfo> decode(Bytes data);
    bool operator==(const FileBasicInfo&) const = default;
};

struct FileStandardInfo {  // MS-FSCC 2.4.47
    static constexpr size_t kSize = 24;
    int64_t allocation_size = 0;
    int64_t end_of_file = 0;
    uint32_t number_of_links = 1;
    bool delete_pending = false;
    bool directory = false;
    void encode(ByteWriter& w) const;
    static Result<FileStandardInfo> decode(Bytes data);
    bool operator==(const FileStandardInfo&) const = default;
};

struct FileInternalInfo {  // MS-FSCC 2.4.27
    static constexpr size_t kSize = 8;
    uint64_t index_number = 0;  // the 64-bit file ID (MS-FSCC 2.1.9)
    void encode(ByteWriter& w) const;
    static Result<FileInternalInfo> decode(Bytes data);
    bool operator==(const FileInternalInfo&) const = default;
};

struct FileEaInfo {  // MS-FSCC 2.4.13
    static constexpr size_t kSize = 4;
    uint32_t ea_size = 0;
    void encode(ByteWriter& w) const;
    static Result<FileEaInfo> decode(Bytes data);
    bool operator==(const FileEaInfo&) const = default;
};

struct FileAccessInfo {  // MS-FSCC 2.4.1
    static constexpr size_t kSize = 4;
    uint32_t access_flags = 0;
    void encode(ByteWriter& w) const;
    static Result<FileAccessInfo> decode(Bytes data);
    bool operator==(const FileAccessInfo&) const = default;
};

struct FilePositionInfo {  // MS-FSCC 2.4.40 (query and set)
    static constexpr size_t kSize = 8;
    int64_t current_byte_offset = 0;
    void encode(ByteWriter& w) const;
    static Result<FilePositionInfo> decode(Bytes data);
    bool operator==(const FilePositionInfo&) const = default;
};

struct FileModeInfo {  // MS-FSCC 2.4.31 (query and set); bits in file_mode::
    static constexpr size_t kSize = 4;
    uint32_t mode = 0;
    void encode(ByteWriter& w) const;
    static Result<FileModeInfo> decode(Bytes data);
    bool operator==(const FileModeInfo&) const = default;
};

struct FileAlignmentInfo {  // MS-FSCC 2.4.3
    static constexpr size_t kSize = 4;
    uint32_t alignment_requirement = file_alignment::kByte;
    void encode(ByteWriter& w) const;
    static Result<FileAlignmentInfo> decode(Bytes data);
    bool operator==(const FileAlignmentInfo&) const = default;
};

struct FileCompressionInfo {  // MS-FSCC 2.4.9
    static constexpr size_t kSize = 16;
    int64_t compressed_file_size = 0;
    uint16_t compression_format = 0;  // COMPRESSION_FORMAT_NONE
    uint8_t compression_unit_shift = 0;
    uint8_t chunk_shift = 0;
    uint8_t cluster_shift = 0;
    void encode(ByteWriter& w) const;
    static Result<FileCompressionInfo> decode(Bytes data);
    bool operator==(const FileCompressionInfo&) const = default;
};

struct FileNetworkOpenInfo {  // MS-FSCC 2.4.34
    static constexpr size_t kSize = 56;
    int64_t creation_time = 0;
    int64_t last_access_time = 0;
    int64_t last_write_time = 0;
    int64_t change_time = 0;
    int64_t allocation_size = 0;
    int64_t end_of_file = 0;
    uint32_t file_attributes = 0;
    void encode(ByteWriter& w) const;
    static Result<FileNetworkOpenInfo> decode(Bytes data);
    bool operator==(const FileNetworkOpenInfo&) const = default;
};

struct FileAttributeTagInfo {  // MS-FSCC 2.4.6
    static constexpr size_t kSize = 8;
    uint32_t file_attributes = 0;
    uint32_t reparse_tag = 0;
    void encode(ByteWriter& w) const;
    static Result<FileAttributeTagInfo> decode(Bytes data);
    bool operator==(const FileAttributeTagInfo&) const = default;
};

struct FileIdInfo {  // MS-FSCC 2.4.26
    static constexpr size_t kSize = 24;
    uint64_t volume_serial_number = 0;
    std::array<std::byte, 16> file_id{};  // 128-bit file ID (MS-FSCC 2.1.10)
    void encode(ByteWriter& w) const;
    static Result<FileIdInfo> decode(Bytes data);
    bool operator==(const FileIdInfo&) const = default;
};

// SET-only fixed classes.
struct FileDispositionInfo {  // MS-FSCC 2.4.11
    static constexpr size_t kSize = 1;
    bool delete_pending = false;
    void encode(ByteWriter& w) const;
    static Result<FileDispositionInfo> decode(Bytes data);
    bool operator==(const FileDispositionInfo&) const = default;
};

struct FileDispositionInfoEx {  // MS-FSCC 2.4.12; bits in file_disposition_ex::
    static constexpr size_t kSize = 4;
    uint32_t flags = 0;
    void encode(ByteWriter& w) const;
    static Result<FileDispositionInfoEx> decode(Bytes data);
    bool operator==(const FileDispositionInfoEx&) const = default;
};

struct FileAllocationInfo {  // MS-FSCC 2.4.4
    static constexpr size_t kSize = 8;
    int64_t allocation_size = 0;
    void encode(ByteWriter& w) const;
    static Result<FileAllocationInfo> decode(Bytes data);
    bool operator==(const FileAllocationInfo&) const = default;
};

struct FileEndOfFileInfo {  // MS-FSCC 2.4.14
    static constexpr size_t kSize = 8;
    int64_t end_of_file = 0;
    void encode(ByteWriter& w) const;
    static Result<FileEndOfFileInfo> decode(Bytes data);
    bool operator==(const FileEndOfFileInfo&) const = default;
};

struct FileValidDataLengthInfo {  // MS-FSCC 2.4.50
    static constexpr size_t kSize = 8;
    int64_t valid_data_length = 0;
    void encode(ByteWriter& w) const;
    static Result<FileValidDataLengthInfo> decode(Bytes data);
    bool operator==(const FileValidDataLengthInfo&) const = default;
};

// ---------------------------------------------------------------------------------------------
// Classes with a variable part. kFixedSize is the part before the variable data.
//
// For STATUS_BUFFER_OVERFLOW on a name class, encode in full and cut the bytes at
// OutputBufferLength: FileNameLength keeps the full length, as MS-FSA answers.

// FILE_NAME_INFORMATION (MS-FSCC 2.1.7): FileNameInformation, FileAlternateNameInformation,
// FileNormalizedNameInformation, and the SET of FileShortNameInformation (2.4.46).
struct FileNameInfo {
    static constexpr size_t kFixedSize = 4;
    std::string file_name;
    void encode(ByteWriter& w) const;
    static Result<FileNameInfo> decode(Bytes data);
    bool operator==(const FileNameInfo&) const = default;
};
using FileAlternateNameInfo = FileNameInfo;
using FileNormalizedNameInfo = FileNameInfo;
using FileShortNameInfo = FileNameInfo;

struct FileAllInfo {                           // MS-FSCC 2.4.2
    static constexpr size_t kFixedSize = 100;  // NameInformation.FileName starts here
    static constexpr size_t kNameLengthOffset = 96;
    FileBasicInfo basic;
    FileStandardInfo standard;
    FileInternalInfo internal;
    FileEaInfo ea;
    FileAccessInfo access;
    FilePositionInfo position;
    FileModeInfo mode;
    FileAlignmentInfo alignment;
    FileNameInfo name;
    void encode(ByteWriter& w) const;
    static Result<FileAllInfo> decode(Bytes data);
    bool operator==(const FileAllInfo&) const = default;
};

// SMB2 form of FILE_RENAME_INFORMATION (MS-FSCC 2.4.42.2) and FILE_LINK_INFORMATION (2.4.28.2):
// ReplaceIfExists(1) Reserved(7) RootDirectory(8) FileNameLength(4) FileName.
struct FileRenameInfo {
    static constexpr size_t kFixedSize = 20;
    bool replace_if_exists = false;
    uint64_t root_directory = 0;  // MUST be 0 over SMB2; the handler rejects anything else
    std::string file_name;
    void encode(ByteWriter& w) const;
    // Shorter than 20 bytes: STATUS_INFO_LENGTH_MISMATCH; FileNameLength past the buffer:
    // STATUS_INVALID_PARAMETER; bad UTF-16: STATUS_OBJECT_NAME_INVALID.
    static Result<FileRenameInfo> decode(Bytes data);
    bool operator==(const FileRenameInfo&) const = default;
};
using FileLinkInfo = FileRenameInfo;

// FILE_STREAM_INFORMATION list (MS-FSCC 2.4.49), entries 8-byte aligned.
struct StreamEntry {
    std::string name;  // "::$DATA" for the default stream, ":name:$DATA" otherwise
    int64_t size = 0;
    int64_t allocation_size = 0;
    bool operator==(const StreamEntry&) const = default;
};
struct FileStreamInfo {
    static constexpr size_t kEntryFixedSize = 24;
    std::vector<StreamEntry> streams;
    // Writes whole entries while they fit in `limit` bytes; returns how many were written (fewer
    // than streams.size() means STATUS_BUFFER_OVERFLOW).
    size_t encode(ByteWriter& w, size_t limit = SIZE_MAX) const;
    static Result<FileStreamInfo> decode(Bytes data);
};

// FILE_FULL_EA_INFORMATION list (MS-FSCC 2.4.16), entries 4-byte aligned. Also the data of the
// "ExtA" create context.
struct FullEaEntry {
    uint8_t flags = 0;  // 0 or kFileNeedEa
    std::string name;   // ASCII, at most 255 bytes, stored without the NUL
    ByteVector value;   // at most 65535 bytes
    bool operator==(const FullEaEntry&) const = default;
};
struct FileFullEaInfo {
    static constexpr size_t kEntryFixedSize = 8;
    std::vector<FullEaEntry> entries;
    // Whole entries while they fit in `limit`; returns how many were written. Names longer than
    // 255 bytes and values longer than 65535 bytes cannot be represented: callers filter them.
    size_t encode(ByteWriter& w, size_t limit = SIZE_MAX) const;
    // Checks each entry's NextEntryOffset (4-aligned, inside the buffer), that name, NUL and value
    // fit inside the entry, and that the NUL is there: else STATUS_INVALID_PARAMETER.
    static Result<FileFullEaInfo> decode(Bytes data);
};

// FILE_GET_EA_INFORMATION list (MS-FSCC 2.4.16.1): the QUERY_INFO input naming the EAs wanted.
struct FileGetEaInfo {
    std::vector<std::string> names;
    void encode(ByteWriter& w) const;
    static Result<FileGetEaInfo> decode(Bytes data);
};

// Minimum QUERY_INFO OutputBufferLength for a file information class this codec encodes
// (the fixed part; MS-SMB2 3.3.5.20.1 answers STATUS_INFO_LENGTH_MISMATCH below it), or nullopt
// when the class is not queryable over SMB2 here (STATUS_INVALID_INFO_CLASS).
std::optional<size_t> file_info_query_min_size(uint8_t info_class);
// Minimum SET_INFO BufferLength for a settable class, or nullopt (STATUS_INVALID_INFO_CLASS).
std::optional<size_t> file_info_set_min_size(uint8_t info_class);

}  // namespace daxsmbd::protocol
