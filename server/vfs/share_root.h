// ShareRoot: the open root directory of one share. Every path of the share is resolved from this
// descriptor with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) (architecture.md, "Data
// paths"), so nothing a client sends can name a file outside it.
//
// Also remembers what the file-system information queries need (MS-FSCC 2.5): the device, the
// file system's type and limits, and whether user xattrs (DOS attributes, EAs) work there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "protocol/result.h"
#include "server/vfs/unique_fd.h"

namespace daxsmbd::server::vfs {

struct ShareOptions {
    // "case sensitive" share option: false (default) = a name that does not exist with the
    // exact case is looked up case-insensitively in its directory (see path.h).
    bool case_sensitive = false;
    // A name in the share's root that belongs to the server, not to clients (the persistent
    // handle journal's directory): not listed, and a path through it is refused (ACCESS_DENIED).
    // Compared ignoring case. Empty: none.
    std::string reserved_root_name;
};

// Space numbers for FileFsSizeInformation / FileFsFullSizeInformation (MS-FSCC 2.5.8, 2.5.4),
// already in allocation units as those structures count them.
struct FsSpace {
    uint64_t total_units = 0;  // TotalAllocationUnits
    uint64_t caller_available_units =
        0;  // AvailableAllocationUnits / CallerAvailable... (f_bavail)
    uint64_t actual_available_units = 0;  // ActualAvailableAllocationUnits (f_bfree)
    uint32_t sectors_per_unit = 1;        // SectorsPerAllocationUnit
    uint32_t bytes_per_sector = 512;      // BytesPerSector
    uint64_t bytes_per_unit() const { return uint64_t(sectors_per_unit) * bytes_per_sector; }
};

// statvfs of the file system that holds `fd`, converted to FsSpace: 512-byte sectors and
// f_frsize-sized units when f_frsize is a multiple of 512 (every Linux disk file system);
// otherwise one "sector" of f_frsize bytes per unit.
Result<FsSpace> query_fs_space(int fd);

// FsSpace from raw statvfs numbers (split out so the conversion is testable).
FsSpace fs_space_from(uint64_t frsize, uint64_t blocks, uint64_t bfree, uint64_t bavail);

class ShareRoot {
  public:
    // Opens `path` (an absolute directory path from the configuration; symlinks in it are the
    // administrator's choice and are followed) and snapshots the file-system facts below.
    static Result<ShareRoot> open(const std::string& path, ShareOptions options = {});

    ShareRoot(ShareRoot&&) = default;
    ShareRoot& operator=(ShareRoot&&) = default;

    // O_RDONLY | O_DIRECTORY descriptor of the root: usable as dirfd of *at() calls, with
    // fstatfs and with fgetxattr. Never read it with getdents (its offset is shared).
    int fd() const { return fd_.get(); }
    const std::string& path() const { return path_; }
    bool case_sensitive() const { return options_.case_sensitive; }
    const ShareOptions& options() const { return options_; }

    // st_dev and inode of the root directory. (st_dev, inode) identifies a file within this
    // share; a share can span several mounts, so st_dev alone does not name "the" volume.
    dev_t device() const { return dev_; }
    uint64_t root_inode() const { return root_ino_; }

    // VolumeSerialNumber for FileFsVolumeInformation (MS-FSCC 2.5.9): the 64-bit st_dev folded
    // to 32 bits (low word XOR high word). Stable as long as the device number is, i.e. across
    // restarts on the same machine; not across machines of a cluster.
    uint32_t volume_serial() const { return volume_serial_; }
    // VolumeCreationTime (FILETIME): birth time of the root directory when the file system
    // records it, else the earlier of its mtime and ctime.
    int64_t volume_creation_time() const { return volume_creation_time_; }

    // statfs snapshot taken at open().
    uint64_t fs_magic() const { return fs_magic_; }  // f_type (e.g. 0xEF53 for ext2/3/4)
    const std::string& fs_type_name() const { return fs_type_name_; }  // "ext4", "xfs", ...
    uint32_t max_name_length() const { return max_name_length_; }      // f_namelen, bytes
    uint32_t block_size() const { return block_size_; }                // f_bsize
    bool read_only() const { return read_only_; }                      // ST_RDONLY mount
    // True when user.* extended attributes can be stored under the root (probed at open()).
    // When false, DOS attributes / creation times / EAs cannot persist (see metadata.h, ea.h).
    bool supports_user_xattrs() const { return user_xattrs_; }

    // Current free space (statvfs now; not cached).
    Result<FsSpace> space() const { return query_fs_space(fd()); }

  private:
    ShareRoot() = default;

    UniqueFd fd_;
    std::string path_;
    ShareOptions options_;
    dev_t dev_ = 0;
    uint64_t root_ino_ = 0;
    uint32_t volume_serial_ = 0;
    int64_t volume_creation_time_ = 0;
    uint64_t fs_magic_ = 0;
    std::string fs_type_name_;
    uint32_t max_name_length_ = 255;
    uint32_t block_size_ = 4096;
    bool read_only_ = false;
    bool user_xattrs_ = false;
};

// Name of a Linux file system from its statfs f_type magic ("ext4" for the shared ext2/3/4
// magic); "unknown" for magics not in the table.
std::string fs_type_name_from_magic(uint64_t magic);

}  // namespace daxsmbd::server::vfs
