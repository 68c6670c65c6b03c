// Directory enumeration entries (MS-FSCC 2.4.8, 2.4.10, 2.4.15, 2.4.22, 2.4.24, 2.4.33): the
// QUERY_DIRECTORY output buffer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/file_info.h"

namespace daxsmbd::protocol {

// One directory entry, whatever class it is sent as.
struct DirEntry {
    uint32_t file_index = 0;  // 0: the position is not fixed (MS-FSCC 2.4.10)
    int64_t creation_time = 0;
    int64_t last_access_time = 0;
    int64_t last_write_time = 0;
    int64_t change_time = 0;
    int64_t end_of_file = 0;
    int64_t allocation_size = 0;
    uint32_t file_attributes = 0;
    // EA size, or the reparse tag when file_attributes has kReparsePoint (MS-FSCC 2.4.8).
    uint32_t ea_size = 0;
    uint64_t file_id = 0;  // 64-bit file ID (MS-FSCC 2.1.9)
    std::string name;
    std::string short_name;  // 8.3 name or empty; at most 12 UTF-16 characters go on the wire
    bool operator==(const DirEntry&) const = default;
};

// Builds a QUERY_DIRECTORY output buffer of one information class, at most `limit` bytes
// (the request's OutputBufferLength): entries 8-byte aligned, NextEntryOffset chained, the last
// one 0 (MS-FSCC 2.4.x).
class DirectoryInfoWriter {
  public:
    // Classes the writer can encode: FileDirectoryInformation, FileFullDirectoryInformation,
    // FileBothDirectoryInformation, FileNamesInformation, FileIdBothDirectoryInformation,
    // FileIdFullDirectoryInformation.
    static bool supported(uint8_t info_class);
    // STATUS_INVALID_INFO_CLASS for an unsupported class (MS-SMB2 3.3.5.18).
    static Status check_class(uint8_t info_class);
    // Offset of FileName in an entry of `info_class` (the fixed part); 0 when unsupported.
    static size_t fixed_size(uint8_t info_class);

    DirectoryInfoWriter(uint8_t info_class, size_t limit);
    DirectoryInfoWriter(const DirectoryInfoWriter&) = delete;
    DirectoryInfoWriter& operator=(const DirectoryInfoWriter&) = delete;

    // Appends one entry; false (nothing written) when it does not fit in the limit, so the caller
    // keeps the entry for the next QUERY_DIRECTORY. Also false for an unsupported class.
    bool append(const DirEntry& e);

    size_t count() const { return chain_.count(); }
    bool empty() const { return count() == 0; }
    Bytes bytes() const { return buf_; }

    // Decodes a buffer of `info_class` entries (client side and tests). Entries shorter than
    // their class, names past their entry, bad chaining: STATUS_INVALID_PARAMETER;
    // unsupported class: STATUS_INVALID_INFO_CLASS.
    static Result<std::vector<DirEntry>> parse(uint8_t info_class, Bytes buffer);

  private:
    uint8_t class_;
    ByteVector buf_;
    ByteWriter w_;
    EntryChain chain_;
};

}  // namespace daxsmbd::protocol
