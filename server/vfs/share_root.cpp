#include "server/vfs/share_root.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstdint>

#include "server/errno_status.h"
#include "server/vfs/metadata.h"
#include "server/vfs/xattr_util.h"

namespace daxsmbd::server::vfs {

std::string fs_type_name_from_magic(uint64_t magic) {
    switch (magic) {
        case EXT4_SUPER_MAGIC:  // shared by ext2, ext3 and ext4
            return "ext4";
        case XFS_SUPER_MAGIC:
            return "xfs";
        case BTRFS_SUPER_MAGIC:
            return "btrfs";
        case TMPFS_MAGIC:
            return "tmpfs";
        case RAMFS_MAGIC:
            return "ramfs";
        case F2FS_SUPER_MAGIC:
            return "f2fs";
        case OVERLAYFS_SUPER_MAGIC:
            return "overlay";
        case FUSE_SUPER_MAGIC:
            return "fuse";
        case EXFAT_SUPER_MAGIC:
            return "exfat";
        case MSDOS_SUPER_MAGIC:
            return "vfat";
        case NFS_SUPER_MAGIC:
            return "nfs";
        case CIFS_SUPER_MAGIC:
        case SMB2_SUPER_MAGIC:
            return "cifs";
        case CEPH_SUPER_MAGIC:
            return "ceph";
        case SQUASHFS_MAGIC:
            return "squashfs";
        case ISOFS_SUPER_MAGIC:
            return "iso9660";
        case UDF_SUPER_MAGIC:
            return "udf";
        case 0x2FC12FC1:  // ZFS (out-of-tree, no <linux/magic.h> entry)
            return "zfs";
        case 0x7366746E:  // ntfs3
            return "ntfs";
        case 0xCA451A4E:  // bcachefs
            return "bcachefs";
        default:
            return "unknown";
    }
}

FsSpace fs_space_from(uint64_t frsize, uint64_t blocks, uint64_t bfree, uint64_t bavail) {
    FsSpace s;
    s.total_units = blocks;
    s.actual_available_units = bfree;
    s.caller_available_units = bavail;
    if (frsize >= 512 && frsize % 512 == 0 && frsize / 512 <= UINT32_MAX) {
        s.bytes_per_sector = 512;
        s.sectors_per_unit = static_cast<uint32_t>(frsize / 512);
    } else {
        s.bytes_per_sector =
            frsize == 0 || frsize > UINT32_MAX ? 512 : static_cast<uint32_t>(frsize);
        s.sectors_per_unit = 1;
    }
    return s;
}

Result<FsSpace> query_fs_space(int fd) {
    struct statvfs sv {};
    if (::fstatvfs(fd, &sv) != 0) return Error(errno_to_status(errno));
    return fs_space_from(sv.f_frsize, sv.f_blocks, sv.f_bfree, sv.f_bavail);
}

Result<ShareRoot> ShareRoot::open(const std::string& path, ShareOptions options) {
    ShareRoot r;
    r.fd_.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!r.fd_) return Error(errno_to_status(errno));
    r.path_ = path;
    r.options_ = options;

    struct statx st {};
    if (::statx(r.fd(), "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &st) != 0)
        return Error(errno_to_status(errno));
    r.dev_ = makedev(st.stx_dev_major, st.stx_dev_minor);
    r.root_ino_ = st.stx_ino;
    const auto dev64 = static_cast<uint64_t>(r.dev_);
    r.volume_serial_ = static_cast<uint32_t>(dev64 ^ (dev64 >> 32));
    r.volume_creation_time_ = file_info_from(st, std::nullopt).creation_time;

    struct statfs sf {};
    if (::fstatfs(r.fd(), &sf) != 0) return Error(errno_to_status(errno));
    r.fs_magic_ = static_cast<uint64_t>(sf.f_type) & 0xFFFFFFFFu;
    r.fs_type_name_ = fs_type_name_from_magic(r.fs_magic_);
    r.max_name_length_ = static_cast<uint32_t>(sf.f_namelen);
    r.block_size_ = static_cast<uint32_t>(sf.f_bsize);
    r.read_only_ = (sf.f_flags & ST_RDONLY) != 0;

    // A lookup of an attribute that does not exist tells whether user xattrs work here:
    // ENODATA = supported (just absent), ENOTSUP = not supported by this file system.
    long probe = detail::fd_getxattr(r.fd(), "user.daxsmbd.probe", nullptr, 0);
    r.user_xattrs_ = probe >= 0 || probe == -ENODATA || probe == -ERANGE;
    return r;
}

}  // namespace daxsmbd::server::vfs
