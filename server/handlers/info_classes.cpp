#include "server/handlers/info_classes.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "auth/access_check.h"
#include "protocol/access_mask.h"
#include "protocol/query_info.h"
#include "protocol/security_descriptor.h"
#include "protocol/sid.h"
#include "server/errno_status.h"
#include "server/vfs/ea.h"
#include "server/vfs/open.h"
#include "server/vfs/path.h"

namespace daxsmbd::server::handlers::info {

using namespace protocol;
namespace fic = protocol::file_info_class;
namespace fsc = protocol::fs_info_class;

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
    if (out.empty()) out = "_";
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

// EaSize of one listed entry (MS-FSCC 2.4.8): its EA list size, 0 when it cannot be read.
uint32_t entry_ea_size(const vfs::ShareRoot& root, const std::string& dir_rel,
                       const vfs::DirEntry& e) {
    if (!root.supports_user_xattrs()) return 0;
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
        uint32_t ea = want_ea ? entry_ea_size(*req.root, cursor.dir_rel(), *next) : 0;
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

// ---- Helpers of SET_INFO -----------------------------------------------------------------

Result<bool> directory_is_empty(const vfs::ShareRoot& root, std::string_view rel) {
    DAX_TRY(auto fd, vfs::open_beneath(root, rel, O_RDONLY | O_DIRECTORY));
    DIR* d = ::fdopendir(fd.get());
    if (!d) return Error(errno_to_status(errno));
    fd.release();  // owned by d now
    bool empty = true;
    int err = 0;
    for (;;) {
        errno = 0;
        struct dirent* e = ::readdir(d);
        if (!e) {
            err = errno;
            break;
        }
        std::string_view n = e->d_name;
        if (n == "." || n == "..") continue;
        empty = false;
        break;
    }
    ::closedir(d);
    if (err) return Error(errno_to_status(err));
    return empty;
}

Status set_allocation(int fd, int64_t allocation_size) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return Error(errno_to_status(errno));
    const off_t size = st.st_size;
    if (allocation_size < size) {
        // Truncating also frees the blocks past the new end of file.
        if (::ftruncate(fd, allocation_size) != 0) return Error(errno_to_status(errno));
        return {};
    }
    const int64_t allocated = int64_t(st.st_blocks) * 512;
    if (allocation_size > allocated) {
        if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, allocation_size) != 0) {
            // A file system that cannot reserve space: the size is already right, and
            // Windows' allocation is a promise Linux cannot make there (as Samba's default
            // "strict allocate = no").
            if (errno == EOPNOTSUPP || errno == ENOSYS) return {};
            return Error(errno_to_status(errno));
        }
    } else if (allocation_size < allocated) {
        // Release what an earlier reservation holds past the end of file: a truncate to the
        // current size drops every block beyond it (ext4 and XFS do not punch holes past the
        // end of file), then the smaller reservation is made again. Failing to release changes
        // no visible size, so those errors are not reported.
        if (::ftruncate(fd, size) != 0) return Error(errno_to_status(errno));
        if (allocation_size > size) (void)::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, allocation_size);
    }
    return {};
}

namespace {

// A rename / link target: where it resolves on disk and how the client spelled its last name.
struct Target {
    vfs::ResolvedPath rp;
    std::string rel;  // parent on disk + the client's spelling of the final name
};

Result<Target> resolve_target(const vfs::ShareRoot& root, std::string_view client_name) {
    // '/' separates components as in CREATE (create.h: Samba and ksmbd accept it).
    std::string spelled_name(client_name);
    std::replace(spelled_name.begin(), spelled_name.end(), '/', '\\');
    std::string_view name = spelled_name;
    // MS-FSA rejects a leading '\' from a remote client; Samba and Windows clients' names are
    // relative to the share root either way, so one is tolerated.
    if (!name.empty() && name.front() == '\\') name.remove_prefix(1);
    if (name.empty()) return Error(NtStatus::ObjectNameInvalid);
    // A stream target (":new", "file:stream"): daxsmbd stores no named streams.
    if (name.front() == ':') return Error(NtStatus::NotSupported);
    DAX_TRY(auto sp, vfs::parse_smb_path(name));
    if (sp.has_stream() || !sp.stream_type.empty()) return Error(NtStatus::NotSupported);
    if (sp.is_root()) return Error(NtStatus::ObjectNameInvalid);
    Target t;
    DAX_TRY(t.rp, vfs::resolve_path(root, sp));
    const std::string& spelled = sp.components.back();
    t.rel = t.rp.parent.empty() ? spelled : t.rp.parent + "/" + spelled;
    return t;
}

// Facts about an existing target name, without following a symlink in the final component.
Result<vfs::FileInfo> target_info(const vfs::ShareRoot& root, const std::string& rel) {
    DAX_TRY(auto parent, vfs::open_parent_beneath(root, rel));
    return vfs::query_info_at(parent.dir.get(), parent.name);
}

// MS-FSA 2.1.5.15.12 / 2.1.5.15.7: may an existing other file be replaced?
Status check_replaceable(FileTable& files, const vfs::FileInfo& t) {
    if (t.is_directory) return Error(NtStatus::AccessDenied);  // a directory is never replaced
    if (t.file_attributes & vfs::kAttrReadonly) return Error(NtStatus::AccessDenied);
    FileKey tk{t.device, t.file_id};
    if (files.delete_pending(tk)) return Error(NtStatus::DeletePending);
    if (files.open_count(tk) > 0) return Error(NtStatus::AccessDenied);  // no oplocks to break yet
    return {};
}

// MS-FSA 2.1.5.15.12 / 2.1.5.15.7 open the destination directory for FILE_ADD_FILE (a file) or
// FILE_ADD_SUBDIRECTORY (a directory) before anything else; Windows shares only read and write
// with that open (MS-FSA <185>/<183>), so an open of the directory that holds DELETE access or
// does not share writing makes the rename fail with SHARING_VIOLATION (smbtorture smb2.rename
// share_delete_and_delete_access, no_share_delete_*), and a delete-pending directory with
// DELETE_PENDING.
Status check_destination_dir(const vfs::ShareRoot& root, FileTable& files,
                             const std::string& dir_rel, bool is_directory) {
    DAX_TRY(auto fd, vfs::open_beneath(root, dir_rel, O_PATH | O_DIRECTORY));
    DAX_TRY(auto fi, vfs::query_info(fd.get()));
    constexpr uint32_t kShareReadWrite = 0x1 | 0x2;  // FILE_SHARE_READ | FILE_SHARE_WRITE
    ShareMode want{is_directory ? access_mask::kFileAddSubdirectory : access_mask::kFileAddFile,
                   kShareReadWrite};
    return files.check(FileKey{fi.device, fi.file_id}, want);
}

std::mutex& rename_mutex() {
    static std::mutex mu;
    return mu;
}

}  // namespace

Result<std::string> rename_file(const vfs::ShareRoot& root, FileTable& files, const FileKey& key,
                                bool is_directory, std::string_view from_rel,
                                std::string_view new_name, bool replace_if_exists) {
    std::lock_guard lk(rename_mutex());
    DAX_TRY(auto t, resolve_target(root, new_name));
    if (from_rel.empty()) return Error(NtStatus::AccessDenied);  // the share root
    DAX_CHECK(check_destination_dir(root, files, t.rp.parent, is_directory));
    // MS-FSA 2.1.5.15.12: Open.Link.IsDeleted.
    if (files.delete_pending(key)) return Error(NtStatus::AccessDenied);
    const std::string from(from_rel);
    if (!t.rp.exists) {
        DAX_CHECK(vfs::rename_beneath(root, from, t.rel, false));
        return t.rel;
    }
    DAX_TRY(auto ti, target_info(root, t.rp.rel));
    const bool same_file = ti.device == key.device && ti.file_id == key.inode;
    if (same_file && t.rp.rel == from) {
        if (t.rel == from) return from;  // exactly its own name: nothing to do
        // The same link in another case: give it the new spelling.
        DAX_CHECK(vfs::rename_beneath(root, from, t.rel, true));
        return t.rel;
    }
    if (same_file) {
        // Another hard link of the same file: the file ends up reachable under the target
        // name only (MS-FSA: the source link is removed, the target link stays).
        DAX_CHECK(vfs::unlink_beneath(root, from));
        return t.rp.rel;
    }
    if (!replace_if_exists) return Error(NtStatus::ObjectNameCollision);
    DAX_CHECK(check_replaceable(files, ti));
    DAX_CHECK(vfs::rename_beneath(root, from, t.rp.rel, true));
    files.file_unlinked(FileKey{ti.device, ti.file_id});  // the replaced file lost this name
    // Keep the client's spelling of the replaced name; if that fails the file keeps the old
    // spelling, which names it just as well on a case-insensitive share.
    if (t.rel != t.rp.rel && vfs::rename_beneath(root, t.rp.rel, t.rel, false)) return t.rel;
    return t.rp.rel;
}

Status link_file(const vfs::ShareRoot& root, FileTable& files, const FileKey& key,
                 std::string_view from_rel, std::string_view new_name, bool replace_if_exists) {
    std::lock_guard lk(rename_mutex());
    DAX_TRY(auto t, resolve_target(root, new_name));
    DAX_CHECK(check_destination_dir(root, files, t.rp.parent, false));
    if (files.delete_pending(key)) return Error(NtStatus::AccessDenied);  // Open.Link.IsDeleted
    if (t.rp.exists) {
        DAX_TRY(auto ti, target_info(root, t.rp.rel));
        if (!replace_if_exists) return Error(NtStatus::ObjectNameCollision);
        if (ti.device == key.device && ti.file_id == key.inode) return {};  // already a link
        DAX_CHECK(check_replaceable(files, ti));
        DAX_CHECK(vfs::unlink_beneath(root, t.rp.rel));
        files.file_unlinked(FileKey{ti.device, ti.file_id});
    }
    DAX_TRY(auto src, vfs::open_parent_beneath(root, from_rel));
    DAX_TRY(auto dst, vfs::open_parent_beneath(root, t.rel));
    // Both names are resolved from openat2-checked parents; linkat never follows a symlink in
    // the final source name with flags 0.
    if (::linkat(src.dir.get(), src.name.c_str(), dst.dir.get(), dst.name.c_str(), 0) != 0) {
        if (errno == EXDEV) return Error(kStatusNotSameDevice);
        return Error(errno_to_status(errno));
    }
    return {};
}

}  // namespace daxsmbd::server::handlers::info
