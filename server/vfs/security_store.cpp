#include "server/vfs/security_store.h"

#include <cerrno>

#include "server/errno_status.h"
#include "server/vfs/fs_credentials.h"
#include "server/vfs/xattr_util.h"

namespace daxsmbd::server::vfs {

using namespace protocol;

Result<ByteVector> encode_ntacl_xattr(const SecurityDescriptor& sd) {
    DAX_TRY(auto bytes, sd.serialize());
    ByteVector out;
    ByteWriter w(out);
    w.u16(kNtAclFormatVersion);
    w.u16(0);
    w.bytes(bytes);
    return out;
}

Result<SecurityDescriptor> decode_ntacl_xattr(Bytes value) {
    ByteReader r(value);
    auto version = r.u16();
    if (!version || *version != kNtAclFormatVersion || !r.skip(2))
        return Error(NtStatus::InvalidSecurityDescr);
    return SecurityDescriptor::parse(r.rest());
}

// The descriptor store belongs to the daemon: it is read and written with the daemon's rights
// (fs_credentials.h), the access check over it is the server's own (a user who may not read a
// file's data may still need its descriptor checked, or be granted READ_CONTROL by it).
Result<std::optional<SecurityDescriptor>> read_security_descriptor(int fd) {
    AsDaemon as_daemon;
    ByteVector buf;
    for (int attempt = 0; attempt < 4; ++attempt) {
        long n = detail::fd_getxattr(fd, kNtAclXattrName, nullptr, 0);
        // ENOENT only comes from the /proc fallback for O_PATH descriptors when /proc is not
        // mounted (xattr_util.h): no xattr of such a descriptor can be read then, the DOS
        // attributes degrade the same way, and refusing every open would make the share unusable.
        if (n == -ENODATA || n == -ENOTSUP || n == -ENOENT)
            return std::optional<SecurityDescriptor>();
        if (n < 0) return Error(errno_to_status(int(-n)));
        buf.resize(size_t(n));
        n = detail::fd_getxattr(fd, kNtAclXattrName, buf.data(), buf.size());
        if (n == -ERANGE) continue;  // grew between the two calls
        if (n == -ENODATA) return std::optional<SecurityDescriptor>();
        if (n < 0) return Error(errno_to_status(int(-n)));
        buf.resize(size_t(n));
        DAX_TRY(auto sd, decode_ntacl_xattr(buf));
        return std::optional<SecurityDescriptor>(std::move(sd));
    }
    return Error(NtStatus::UnexpectedIoError);
}

Status write_security_descriptor(int fd, const SecurityDescriptor& sd) {
    DAX_TRY(auto v, encode_ntacl_xattr(sd));
    AsDaemon as_daemon;
    long r = detail::fd_setxattr(fd, kNtAclXattrName, v.data(), v.size(), 0);
    if (r == -ENOTSUP) return Error(NtStatus::NotSupported);
    if (r < 0) return Error(errno_to_status(int(-r)));
    return {};
}

}  // namespace daxsmbd::server::vfs
