// File information classes (info_classes.h): which SMB2_0_INFO_FILE classes QUERY_INFO and
// SET_INFO serve (MS-SMB2 3.3.5.20.1, 3.3.5.21.1), the translation of vfs::FileInfo into the
// MS-FSCC 2.4 structures, short names, the file mode, and the security descriptor derived from
// the POSIX owner and mode.
#include <algorithm>

#include "auth/access_check.h"
#include "protocol/access_mask.h"
#include "protocol/query_info.h"
#include "protocol/security_descriptor.h"
#include "protocol/sid.h"
#include "server/handlers/info_classes.h"

namespace daxsmbd::server::handlers::info {

using namespace protocol;
namespace fic = protocol::file_info_class;

// ---- Information classes -----------------------------------------------------------------

namespace {

// Highest FILE_INFORMATION_CLASS value MS-FSCC 2.4 documents
// (FileIdAllExtdBothDirectoryInformation); everything from 1 up to it counts as "documented".
constexpr uint8_t kLastDocumentedFileClass = fic::kFileIdAllExtdBothDirectoryInformation;

// Classes MS-FSCC 2.4 marks "Set" besides the ones set_info.cpp applies: FilePipeInformation,
// FileMailslotSetInformation (27), FileObjectIdInformation, FileMoveClusterInformation (31),
// FileQuotaInformation, FileTrackingInformation (36), FileSfioReserveInformation (44),
// FileRenameInformationEx, FileCaseSensitiveInformation (71), FileLinkInformationEx (72).
bool settable_elsewhere(uint8_t c) {
    switch (c) {
        case fic::kFilePipeInformation:
        case 27:
        case fic::kFileObjectIdInformation:
        case 31:
        case fic::kFileQuotaInformation:
        case 36:
        case 44:
        case fic::kFileRenameInformationEx:
        case 71:
        case 72:
            return true;
        default:
            return false;
    }
}

}  // namespace

ClassSupport query_file_class_support(uint8_t c) {
    switch (c) {
        // MS-SMB2 2.2.37: the file classes a server answers (the pipe ones excepted).
        case fic::kFileAccessInformation:
        case fic::kFileAlignmentInformation:
        case fic::kFileAllInformation:
        case fic::kFileAlternateNameInformation:
        case fic::kFileAttributeTagInformation:
        case fic::kFileBasicInformation:
        case fic::kFileCompressionInformation:
        case fic::kFileEaInformation:
        case fic::kFileFullEaInformation:
        case fic::kFileIdInformation:
        case fic::kFileInternalInformation:
        case fic::kFileModeInformation:
        case fic::kFileNetworkOpenInformation:
        case fic::kFileNormalizedNameInformation:
        case fic::kFilePositionInformation:
        case fic::kFileStandardInformation:
        case fic::kFileStreamInformation:
            return ClassSupport::Supported;
        default:
            return c >= 1 && c <= kLastDocumentedFileClass ? ClassSupport::NotSupported
                                                           : ClassSupport::Invalid;
    }
}

ClassSupport set_file_class_support(uint8_t c) {
    switch (c) {
        case fic::kFileBasicInformation:
        case fic::kFileRenameInformation:
        case fic::kFileLinkInformation:
        case fic::kFileDispositionInformation:
        case fic::kFilePositionInformation:
        case fic::kFileFullEaInformation:
        case fic::kFileModeInformation:
        case fic::kFileAllocationInformation:
        case fic::kFileEndOfFileInformation:
        case fic::kFileValidDataLengthInformation:
        case fic::kFileShortNameInformation:
        case fic::kFileDispositionInformationEx:
            return ClassSupport::Supported;
        default:
            // MS-SMB2 3.3.5.21.1: settable classes not served are NOT_SUPPORTED, classes that
            // are query-only or unknown INVALID_INFO_CLASS.
            return settable_elsewhere(c) ? ClassSupport::NotSupported : ClassSupport::Invalid;
    }
}

size_t query_file_min_output(uint8_t c) {
    switch (c) {
        case fic::kFileAllInformation:
            return 104;  // sizeof(FILE_ALL_INFORMATION): 100 + one WCHAR, 8-aligned
        case fic::kFileNormalizedNameInformation:
        case fic::kFileAlternateNameInformation:
            return 8;  // sizeof(FILE_NAME_INFORMATION)
        case fic::kFileStreamInformation:
            return 32;  // sizeof(FILE_STREAM_INFORMATION)
        case fic::kFileFullEaInformation:
            return 0;  // answered per entry (BUFFER_TOO_SMALL / BUFFER_OVERFLOW)
        default:
            return file_info_query_min_size(c).value_or(0);
    }
}

NtStatus fit_output(ByteVector& data, uint32_t output_buffer_length) {
    if (data.size() <= output_buffer_length) return NtStatus::Success;
    data.resize(output_buffer_length);
    return NtStatus::BufferOverflow;
}

// ---- File information --------------------------------------------------------------------

FileBasicInfo basic_info(const vfs::FileInfo& fi) {
    FileBasicInfo b;
    b.creation_time = fi.creation_time;
    b.last_access_time = fi.last_access_time;
    b.last_write_time = fi.last_write_time;
    b.change_time = fi.change_time;
    b.file_attributes = fi.file_attributes;
    return b;
}

FileStandardInfo standard_info(const vfs::FileInfo& fi, bool delete_pending) {
    FileStandardInfo s;
    s.allocation_size = int64_t(fi.allocation_size);
    s.end_of_file = int64_t(fi.end_of_file);
    uint32_t links = fi.is_directory ? 1 : fi.nlink;
    // MS-FSA 2.1.5.12.27: a delete-pending link is not counted.
    if (delete_pending && links > 0) --links;
    s.number_of_links = links;
    s.delete_pending = delete_pending;
    s.directory = fi.is_directory;
    return s;
}

FileNetworkOpenInfo network_open_info(const vfs::FileInfo& fi) {
    FileNetworkOpenInfo n;
    n.creation_time = fi.creation_time;
    n.last_access_time = fi.last_access_time;
    n.last_write_time = fi.last_write_time;
    n.change_time = fi.change_time;
    n.allocation_size = int64_t(fi.allocation_size);
    n.end_of_file = int64_t(fi.end_of_file);
    n.file_attributes = fi.file_attributes;
    return n;
}

FileIdInfo file_id_info(const vfs::FileInfo& fi, uint32_t volume_serial) {
    FileIdInfo v;
    v.volume_serial_number = volume_serial;
    store_le64(v.file_id.data(), fi.file_id);
    store_le64(v.file_id.data() + 8, fi.device);
    return v;
}

FileStreamInfo stream_info(const vfs::FileInfo& fi) {
    FileStreamInfo s;
    if (!fi.is_directory)
        s.streams.push_back(
            StreamEntry{"::$DATA", int64_t(fi.end_of_file), int64_t(fi.allocation_size)});
    return s;
}

std::string windows_path(std::string_view rel, bool leading_backslash) {
    std::string out;
    out.reserve(rel.size() + 1);
    if (leading_backslash) out.push_back('\\');
    for (char c : rel)
        out.push_back(c == '/' ? '\\' : c);
    return out;
}

namespace {

// Characters an 8.3 name may hold besides letters and digits (MS-FSCC 2.1.5.2.1).
bool legal_short_char(char c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'()-@^_`{}~").find(c) != std::string_view::npos;
}

char upper_ascii(char c) {
    return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c;
}

// The legal characters of `part`, upper-cased, at most `max` of them.
std::string short_part(std::string_view part, size_t max) {
    std::string out;
    for (char c : part) {
        if (out.size() == max) break;
        if (legal_short_char(c)) out.push_back(upper_ascii(c));
    }
    return out;
}

}  // namespace

std::string short_name(std::string_view long_name) {
    if (long_name.empty() || long_name == "." || long_name == "..") return std::string(long_name);
    const size_t dot = long_name.rfind('.');
    const bool has_ext = dot != std::string_view::npos && dot != 0;
    std::string_view base = has_ext ? long_name.substr(0, dot) : long_name;
    std::string_view ext = has_ext ? long_name.substr(dot + 1) : std::string_view();
    auto all_legal = [](std::string_view p) {
        return std::all_of(p.begin(), p.end(), legal_short_char);
    };
    // Already an 8.3 name: itself, in upper case (NTFS's DOS name of such a file).
    if (!base.empty() && base.size() <= 8 && ext.size() <= 3 && all_legal(base) && all_legal(ext) &&
        !(has_ext && ext.empty())) {
        std::string out;
        for (char c : long_name)
            out.push_back(upper_ascii(c));
        return out;
    }
    // Otherwise a name computed from the long name alone, as Samba's hash mangling does (no
    // per-directory "~1" numbering, which would need state): up to two characters of the name,
    // then base-36 digits of a hash of the whole upper-cased name, '~' and one more digit, and the
    // first three legal characters of the extension. Two names in one directory collide with a
    // probability of about 1 in 36^5.
    uint32_t h = 2166136261u;  // FNV-1a
    for (char c : long_name) {
        h ^= uint8_t(upper_ascii(c));
        h *= 16777619u;
    }
    static constexpr char kDigits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    std::string out = short_part(base, 2);
    // push_back, not `out = "_"`: GCC 12 reports a false -Wrestrict for the assignment here.
    if (out.empty()) out.push_back('_');
    while (out.size() < 6) {
        out.push_back(kDigits[h % 36]);
        h /= 36;
    }
    out.push_back('~');
    out.push_back(kDigits[h % 36]);
    std::string e = short_part(ext, 3);
    if (!e.empty()) out += "." + e;
    return out;
}

uint32_t mode_from_create_options(uint32_t create_options) {
    return create_options & (file_mode::kWriteThrough | file_mode::kSequentialOnly |
                             file_mode::kNoIntermediateBuffering | file_mode::kSynchronousIoAlert |
                             file_mode::kSynchronousIoNonalert | file_mode::kDeleteOnClose);
}

Result<uint32_t> apply_mode(uint32_t open_mode, uint32_t requested) {
    constexpr uint32_t kSync = file_mode::kSynchronousIoAlert | file_mode::kSynchronousIoNonalert;
    constexpr uint32_t kAllowed = file_mode::kWriteThrough | file_mode::kSequentialOnly | kSync;
    // MS-FSA 2.1.5.15.8, the STATUS_INVALID_PARAMETER conditions.
    if (requested & ~kAllowed) return Error(NtStatus::InvalidParameter);
    if ((requested & kSync) && !(open_mode & kSync)) return Error(NtStatus::InvalidParameter);
    if ((open_mode & kSync) && !(requested & kSync)) return Error(NtStatus::InvalidParameter);
    if ((requested & kSync) == kSync) return Error(NtStatus::InvalidParameter);
    uint32_t mode = open_mode;
    if (!(open_mode & file_mode::kNoIntermediateBuffering))
        mode = (mode & ~file_mode::kWriteThrough) | (requested & file_mode::kWriteThrough);
    mode = (mode & ~file_mode::kSequentialOnly) | (requested & file_mode::kSequentialOnly);
    if (open_mode & kSync) mode = (mode & ~kSync) | (requested & kSync);
    return mode;
}

// ---- Security descriptor -----------------------------------------------------------------

uint32_t posix_bits_to_access(unsigned rwx) {
    namespace am = access_mask;
    rwx &= 7;
    if (rwx == 7) return am::kFileAllAccess;
    uint32_t m = 0;
    if (rwx & 4) m |= am::kFileGenericRead;
    if (rwx & 2) m |= am::kFileGenericWrite;
    if (rwx & 1) m |= am::kFileGenericExecute;
    return m;
}

Acl posix_dacl(const Sid& owner, const Sid& group, mode_t mode) {
    Acl acl;
    auto ace = [&](const Sid& sid, unsigned rwx) {
        uint32_t mask = posix_bits_to_access(rwx);
        if (mask != 0) acl.aces.push_back(Ace::allowed(sid, mask));  // a class without rights: none
    };
    ace(owner, (mode >> 6) & 7);
    ace(group, (mode >> 3) & 7);
    ace(auth::well_known_sid::everyone(), mode & 7);
    return acl;
}

SecurityDescriptor posix_security_descriptor(const PosixOwner& owner) {
    SecurityDescriptor sd;
    sd.owner = auth::well_known_sid::unix_user(owner.uid);
    sd.group = auth::well_known_sid::unix_group(owner.gid);
    sd.set_dacl(posix_dacl(*sd.owner, *sd.group, owner.mode));
    return sd;
}

ByteVector synthetic_security_descriptor(const PosixOwner& owner, uint32_t secinfo) {
    // Three ACEs with short SIDs never exceed the format's sizes.
    auto bytes = select_security_parts(posix_security_descriptor(owner), secinfo).serialize();
    return bytes ? std::move(*bytes) : ByteVector();
}

}  // namespace daxsmbd::server::handlers::info
