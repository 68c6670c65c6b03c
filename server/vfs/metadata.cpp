#include "server/vfs/metadata.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "protocol/bytes.h"
#include "server/errno_status.h"
#include "server/vfs/fs_credentials.h"
#include "server/vfs/xattr_util.h"

namespace daxsmbd::server::vfs {

namespace {

constexpr int64_t kTicksPerSecond = 10000000;
// How far the kernel's coarse clock (which stamps ctime) may run behind the fine wall clock that
// anchors a client-set ChangeTime: one tick at HZ=100, in FILETIME units.
constexpr int64_t kCoarseTick = kTicksPerSecond / 100;

int64_t to_filetime(int64_t sec, int64_t nsec) {
    // Seconds representable without overflowing int64 once scaled to 100-ns ticks.
    constexpr int64_t kMaxSec =
        (std::numeric_limits<int64_t>::max() - kFiletimeUnixEpoch) / kTicksPerSecond - 1;
    constexpr int64_t kMinSec = -(kFiletimeUnixEpoch / kTicksPerSecond);
    if (sec < kMinSec) return 0;
    if (sec > kMaxSec) return std::numeric_limits<int64_t>::max();
    int64_t ft = kFiletimeUnixEpoch + sec * kTicksPerSecond + nsec / 100;
    return ft < 0 ? 0 : ft;
}

int statx_fd(int fd, const char* name, int flags, struct statx& st) {
    unsigned mask = STATX_BASIC_STATS | STATX_BTIME;
    if (::statx(fd, name, flags | AT_STATX_SYNC_AS_STAT | AT_NO_AUTOMOUNT, mask, &st) != 0)
        return errno;
    return 0;
}

// Attribute bits Linux itself says, for a file without the xattr.
uint32_t attributes_from_mode(const struct statx& st) {
    if (!S_ISDIR(st.stx_mode) && (st.stx_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0)
        return kAttrReadonly;
    return 0;
}

std::optional<DosXattr> decode_buf(const std::byte* buf, long n) {
    if (n < 0) return std::nullopt;
    return decode_dos_xattr({buf, static_cast<size_t>(n)});
}

}  // namespace

int64_t timespec_to_filetime(const struct timespec& ts) {
    return to_filetime(ts.tv_sec, ts.tv_nsec);
}

int64_t statx_ts_to_filetime(const struct statx_timestamp& ts) {
    return to_filetime(ts.tv_sec, ts.tv_nsec);
}

struct timespec filetime_to_timespec(int64_t ft) {
    if (ft < 0) ft = 0;
    int64_t rel = ft - kFiletimeUnixEpoch;
    int64_t sec = rel / kTicksPerSecond;
    int64_t rem = rel % kTicksPerSecond;
    if (rem < 0) {  // before 1970: floor towards -inf so that tv_nsec stays in [0, 1e9)
        rem += kTicksPerSecond;
        sec -= 1;
    }
    struct timespec ts {};
    ts.tv_sec = static_cast<time_t>(sec);
    ts.tv_nsec = static_cast<long>(rem * 100);
    return ts;
}

std::vector<std::byte> encode_dos_xattr(const DosXattr& x) {
    std::vector<std::byte> out(x.change_time > 0 ? 28 : 12);
    protocol::store_le32(out.data(), x.attributes);
    protocol::store_le64(out.data() + 4, static_cast<uint64_t>(x.creation_time));
    if (x.change_time > 0) {
        protocol::store_le64(out.data() + 12, static_cast<uint64_t>(x.change_time));
        protocol::store_le64(out.data() + 20, static_cast<uint64_t>(x.change_time_anchor));
    }
    return out;
}

std::optional<DosXattr> decode_dos_xattr(std::span<const std::byte> value) {
    if (value.size() < 12) return std::nullopt;
    DosXattr x;
    x.attributes = protocol::load_le32(value.data());
    x.creation_time = static_cast<int64_t>(protocol::load_le64(value.data() + 4));
    if (x.creation_time < 0) x.creation_time = 0;
    if (value.size() >= 28) {
        x.change_time = static_cast<int64_t>(protocol::load_le64(value.data() + 12));
        x.change_time_anchor = static_cast<int64_t>(protocol::load_le64(value.data() + 20));
        if (x.change_time < 0 || x.change_time_anchor <= 0)
            x.change_time = x.change_time_anchor = 0;
    }
    return x;
}

// The DOS attributes are the server's metadata, read and written with the daemon's rights
// (fs_credentials.h) once the caller's own checks allowed the operation (FILE_READ_ATTRIBUTES /
// FILE_WRITE_ATTRIBUTES on the open): a user.* xattr needs read or write permission on the file
// itself, which would otherwise make the attributes a user sees depend on the mode bits, as Samba
// does (become_root around its DOS attribute store).
std::optional<DosXattr> read_dos_xattr(int fd) {
    std::byte buf[64];
    AsDaemon as_daemon;
    return decode_buf(buf, detail::fd_getxattr(fd, kDosXattrName, buf, sizeof buf));
}

Status write_dos_xattr(int fd, const DosXattr& x) {
    auto v = encode_dos_xattr(x);
    AsDaemon as_daemon;
    long r = detail::fd_setxattr(fd, kDosXattrName, v.data(), v.size(), 0);
    if (r < 0) {
        int err = static_cast<int>(-r);
        if (err == ENOTSUP || err == EPERM) return {};  // degrade: not persisted (see header)
        return Error(errno_to_status(err));
    }
    return {};
}

FileInfo file_info_from(const struct statx& st, const std::optional<DosXattr>& dos) {
    FileInfo fi;
    fi.file_id = st.stx_ino;
    fi.device = makedev(st.stx_dev_major, st.stx_dev_minor);
    fi.nlink = st.stx_nlink;
    fi.is_directory = S_ISDIR(st.stx_mode);
    fi.is_symlink = S_ISLNK(st.stx_mode);
    fi.last_access_time = statx_ts_to_filetime(st.stx_atime);
    fi.last_write_time = statx_ts_to_filetime(st.stx_mtime);
    fi.change_time = statx_ts_to_filetime(st.stx_ctime);
    // A client-set ChangeTime stands until the inode changes after it was set.
    if (dos && dos->change_time > 0 && fi.change_time <= dos->change_time_anchor + kCoarseTick)
        fi.change_time = dos->change_time;
    if (dos && dos->creation_time > 0) {
        fi.creation_time = dos->creation_time;
    } else if ((st.stx_mask & STATX_BTIME) &&
               (st.stx_btime.tv_sec != 0 || st.stx_btime.tv_nsec != 0)) {
        fi.creation_time = statx_ts_to_filetime(st.stx_btime);
    } else {
        fi.creation_time = std::min(fi.last_write_time, fi.change_time);
    }
    if (!fi.is_directory) {
        fi.end_of_file = st.stx_size;
        fi.allocation_size = st.stx_blocks * 512;
    }
    uint32_t attrs = dos ? (dos->attributes & kStoredAttributes) : attributes_from_mode(st);
    if (fi.is_directory) attrs = (attrs & ~kAttrTemporary) | kAttrDirectory;
    fi.file_attributes = attrs == 0 ? kAttrNormal : attrs;
    return fi;
}

Result<FileInfo> query_info(int fd) {
    struct statx st {};
    if (int err = statx_fd(fd, "", AT_EMPTY_PATH, st)) return Error(errno_to_status(err));
    std::optional<DosXattr> dos;
    if (S_ISREG(st.stx_mode) || S_ISDIR(st.stx_mode)) dos = read_dos_xattr(fd);
    return file_info_from(st, dos);
}

Result<FileInfo> query_info_at(int dirfd, const std::string& name) {
    struct statx st {};
    if (int err = statx_fd(dirfd, name.c_str(), AT_SYMLINK_NOFOLLOW, st))
        return Error(errno_to_status(err));
    std::optional<DosXattr> dos;
    if (S_ISREG(st.stx_mode) || S_ISDIR(st.stx_mode)) {
        std::byte buf[64];
        AsDaemon as_daemon;
        dos = decode_buf(buf,
                         detail::at_lgetxattr(dirfd, name.c_str(), kDosXattrName, buf, sizeof buf));
    }
    return file_info_from(st, dos);
}

Status set_basic_info(int fd, const BasicInfoUpdate& u) {
    // MS-FSA 2.1.5.15.2: times below -2 are invalid.
    for (int64_t t : {u.creation_time, u.last_access_time, u.last_write_time, u.change_time})
        if (t < -2) return Error(NtStatus::InvalidParameter);

    struct statx st {};
    if (int err = statx_fd(fd, "", AT_EMPTY_PATH, st)) return Error(errno_to_status(err));
    const bool is_dir = S_ISDIR(st.stx_mode);
    if ((u.file_attributes & kAttrDirectory) && !is_dir) return Error(NtStatus::InvalidParameter);
    if ((u.file_attributes & kAttrTemporary) && is_dir) return Error(NtStatus::InvalidParameter);

    if (u.last_access_time > 0 || u.last_write_time > 0) {
        struct timespec ts[2];
        ts[0].tv_sec = ts[1].tv_sec = 0;
        ts[0].tv_nsec = ts[1].tv_nsec = UTIME_OMIT;
        if (u.last_access_time > 0) ts[0] = filetime_to_timespec(u.last_access_time);
        if (u.last_write_time > 0) ts[1] = filetime_to_timespec(u.last_write_time);
        // Setting explicit times takes ownership (utimensat(2)); the caller checked
        // FILE_WRITE_ATTRIBUTES, so the daemon sets them (Samba: become_root when the user may
        // write the file).
        AsDaemon as_daemon;
        int rc = ::futimens(fd, ts);
        if (rc != 0 && errno == EBADF)  // O_PATH descriptor
            rc = ::utimensat(AT_FDCWD, detail::proc_fd_path(fd).c_str(), ts, 0);
        if (rc != 0) return Error(errno_to_status(errno));
    }

    if (u.creation_time > 0 || u.file_attributes != 0 || u.change_time > 0) {
        DosXattr x;
        if (auto old = read_dos_xattr(fd)) {
            x = *old;
        } else {
            x.attributes = attributes_from_mode(st);
        }
        if (u.file_attributes != 0) {
            uint32_t valid = kSettableAttributes;
            if (u.is_share_root) valid &= ~(kAttrHidden | kAttrSystem);
            x.attributes = (x.attributes & ~valid) | (u.file_attributes & valid);
        }
        if (u.creation_time > 0) x.creation_time = u.creation_time;
        if (u.change_time > 0) {
            // The anchor is read before the write: the ctime the write itself stamps is at
            // most one coarse tick past it (see file_info_from).
            struct timespec now {};
            ::clock_gettime(CLOCK_REALTIME, &now);
            x.change_time = u.change_time;
            x.change_time_anchor = timespec_to_filetime(now);
        }
        DAX_CHECK(write_dos_xattr(fd, x));
    }
    return {};
}

}  // namespace daxsmbd::server::vfs
