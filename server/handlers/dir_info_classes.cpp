// Directory listing (info_classes.h): one QUERY_DIRECTORY output buffer filled from a
// directory cursor (MS-FSA 2.1.5.6.3) in the class the client asked for.
#include <fcntl.h>

#include "server/handlers/info_classes.h"
#include "server/vfs/ea.h"
#include "server/vfs/open.h"

namespace daxsmbd::server::handlers::info {

using namespace protocol;
namespace fic = protocol::file_info_class;

DirEntry dir_entry(const vfs::DirEntry& e, uint32_t ea_size) {
    DirEntry d;
    d.file_index = 0;  // NTFS gives no position (MS-FSCC 2.4.10)
    d.creation_time = e.info.creation_time;
    d.last_access_time = e.info.last_access_time;
    d.last_write_time = e.info.last_write_time;
    d.change_time = e.info.change_time;
    d.end_of_file = int64_t(e.info.end_of_file);
    d.allocation_size = int64_t(e.info.allocation_size);
    d.file_attributes = e.info.file_attributes;
    d.ea_size = ea_size;
    d.file_id = e.info.file_id;
    d.name = e.name;
    return d;
}

// ---- Directory enumeration ---------------------------------------------------------------

Status check_pattern(std::string_view pattern) {
    for (char c : pattern)
        if (c == '\\' || c == '/' || c == ':' || c == '\0')
            return Error(NtStatus::ObjectNameInvalid);
    return {};
}

namespace {

bool carries_ea_size(uint8_t c) {
    return c == fic::kFileFullDirectoryInformation || c == fic::kFileBothDirectoryInformation ||
           c == fic::kFileIdFullDirectoryInformation || c == fic::kFileIdBothDirectoryInformation;
}

// EaSize of one listed entry (MS-FSCC 2.4.8): its EA list size, 0 when it cannot be read. A
// plain entry is read through the listing's directory descriptor, without opening it; "." and
// "..", and a symlink (described by its target inside the share), are opened by path.
uint32_t entry_ea_size(const vfs::ShareRoot& root, const vfs::DirectoryCursor& cursor,
                       const vfs::DirEntry& e) {
    if (!root.supports_user_xattrs()) return 0;
    if (e.name != "." && e.name != ".." && !e.is_symlink) {
        auto size = vfs::ea_size_at(cursor.fd(), e.name);
        return size ? *size : 0;
    }
    const std::string& dir_rel = cursor.dir_rel();
    std::string rel;
    if (e.name == ".") {
        rel = dir_rel;
    } else if (e.name == "..") {
        auto slash = dir_rel.rfind('/');
        rel = slash == std::string::npos ? std::string() : dir_rel.substr(0, slash);
    } else {
        rel = dir_rel.empty() ? e.name : dir_rel + "/" + e.name;
    }
    auto fd = vfs::open_beneath(root, rel, O_PATH);
    if (!fd) return 0;
    auto size = vfs::ea_size(fd->get());
    return size ? *size : 0;
}

}  // namespace

Result<ByteVector> list_directory(vfs::DirectoryCursor& cursor, const ListRequest& req) {
    DAX_CHECK(DirectoryInfoWriter::check_class(req.info_class));
    // MS-FSA 2.1.5.6.3.x: a buffer that cannot hold the fixed part of one entry.
    if (req.output_buffer_length < DirectoryInfoWriter::fixed_size(req.info_class))
        return Error(NtStatus::InfoLengthMismatch);
    const bool want_ea = req.root && carries_ea_size(req.info_class);
    DirectoryInfoWriter out(req.info_class, req.output_buffer_length);
    for (;;) {
        if (req.return_single_entry && !out.empty()) break;
        DAX_TRY(auto next, cursor.next(req.pattern));
        if (!next) break;
        // A symlink leaving the share (or dangling) cannot be opened: do not list it.
        if (next->is_symlink && !next->symlink_followed) continue;
        uint32_t ea = want_ea ? entry_ea_size(*req.root, cursor, *next) : 0;
        if (!out.append(dir_entry(*next, ea))) {
            // Stays for the next QUERY_DIRECTORY; if nothing fits at all, the client has to
            // ask with a larger buffer (Samba: STATUS_INFO_LENGTH_MISMATCH).
            cursor.put_back(std::move(*next));
            if (out.empty()) return Error(NtStatus::InfoLengthMismatch);
            break;
        }
    }
    // MS-FSA 2.1.5.6.3: nothing returned.
    if (out.empty()) return Error(req.first_query ? NtStatus::NoSuchFile : NtStatus::NoMoreFiles);
    Bytes b = out.bytes();
    return ByteVector(b.begin(), b.end());
}

}  // namespace daxsmbd::server::handlers::info
