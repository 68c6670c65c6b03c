// NT security descriptors of files; see security_info.h for what is stored and enforced.
#include "server/handlers/security_info.h"

#include <fcntl.h>

#include "auth/sd_inherit.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "protocol/access_mask.h"
#include "server/errno_status.h"
#include "server/handlers/info_classes.h"
#include "server/log.h"
#include "server/state/session.h"
#include "server/vfs/open.h"
#include "server/vfs/security_store.h"

namespace daxsmbd::server::handlers::security {

using namespace protocol;
namespace am = protocol::access_mask;
namespace wk = auth::well_known_sid;

namespace {

Result<info::PosixOwner> posix_owner(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return Error(errno_to_status(errno));
    return info::PosixOwner{st.st_uid, st.st_gid, st.st_mode & 07777};
}

}  // namespace

auth::AccessToken token_of(const Session& s) {
    auth::AccessToken t;
    const uid_t uid = s.identity ? s.identity->uid : uid_t(-1);
    const gid_t gid = s.identity ? s.identity->gid : gid_t(-1);
    t.user = wk::unix_user(uid);
    t.primary_group = wk::unix_group(gid);
    // The supplementary groups, as the kernel's checks see them.
    if (s.identity)
        for (gid_t g : s.identity->groups)
            if (g != gid) t.groups.push_back(wk::unix_group(g));
    t.groups.push_back(wk::everyone());
    if (s.is_guest || s.is_anonymous)
        t.groups.push_back(wk::builtin_guests());
    else
        t.groups.push_back(wk::authenticated_users());
    return t;
}

Result<SecurityDescriptor> effective_descriptor(int fd) {
    DAX_TRY(auto stored, vfs::read_security_descriptor(fd));
    if (stored) return std::move(*stored);
    DAX_TRY(auto owner, posix_owner(fd));
    return info::posix_security_descriptor(owner);
}

Result<ByteVector> query_descriptor(int fd, uint32_t secinfo) {
    DAX_TRY(auto sd, effective_descriptor(fd));
    return select_security_parts(sd, secinfo).serialize();
}

Status set_descriptor(int fd, Bytes buffer, uint32_t secinfo) {
    DAX_TRY(auto given, SecurityDescriptor::parse(buffer));
    // Generic rights in an ACE that applies to this object only are stored mapped to the file
    // rights they stand for, as Windows does (smbtorture smb2.acls.CREATOR: GENERIC_READ is read
    // back as FILE_GENERIC_READ); inheritable ACEs keep them for the children (MS-DTYP 2.5.3.4).
    if (given.dacl_present() && given.dacl)
        for (protocol::Ace& a : given.dacl->aces)
            if (a.sid && !(a.flags & (protocol::ace_flags::kObjectInherit |
                                      protocol::ace_flags::kContainerInherit |
                                      protocol::ace_flags::kInheritOnly)))
                a.mask = protocol::map_generic_file(a.mask);
    DAX_TRY(auto current, effective_descriptor(fd));
    DAX_TRY(auto merged, merge_security_parts(current, given, secinfo));
    return vfs::write_security_descriptor(fd, merged);
}

SecurityDescriptor complete_create_descriptor(const SecurityDescriptor& given,
                                              const auth::AccessToken& token, mode_t mode) {
    SecurityDescriptor sd = given;
    if (!sd.owner) {
        sd.owner = token.new_object_owner();
        sd.control |= sd_control::kOwnerDefaulted;
    }
    if (!sd.group) {
        sd.group = token.primary_group;
        sd.control |= sd_control::kGroupDefaulted;
    }
    if (!sd.dacl_present()) {
        sd.clear_dacl();
        sd.set_dacl(info::posix_dacl(*sd.owner, *sd.group, mode));
        sd.control |= sd_control::kDaclDefaulted;
    }
    return sd;
}

Result<std::optional<SecurityDescriptor>> parent_descriptor(const vfs::ShareRoot& root,
                                                            const std::string& parent_rel) {
    DAX_TRY(auto dir, vfs::open_beneath(root, parent_rel, O_PATH | O_DIRECTORY));
    auto stored = vfs::read_security_descriptor(dir.get());
    if (!stored) {
        log_info("stored security descriptor of '", parent_rel, "' unreadable (",
                 status_name(stored.status()), "): create refused");
        return Error(NtStatus::AccessDenied);
    }
    return std::move(*stored);
}

Status store_new_object_descriptor(int fd, const SecurityDescriptor* parent,
                                   const SecurityDescriptor* creator,
                                   const auth::AccessToken* token, bool is_directory) {
    const bool inherits = parent != nullptr && auth::has_inheritable_aces(*parent, is_directory);
    if (creator == nullptr && !inherits) return {};
    DAX_TRY(auto owner, posix_owner(fd));
    auth::AccessToken file_owner;
    if (token == nullptr) {
        file_owner.user = wk::unix_user(owner.uid);
        file_owner.primary_group = wk::unix_group(owner.gid);
        token = &file_owner;
    }
    auth::NewObjectSecurity made = auth::inherit_security_descriptor(inherits ? parent : nullptr,
                                                                     creator, *token, is_directory);
    // Without a DACL from either: the mode bits' (the token's default DACL of Windows).
    return vfs::write_security_descriptor(fd,
                                          complete_create_descriptor(made.sd, *token, owner.mode));
}

Result<std::optional<uint32_t>> stored_access(const vfs::ShareRoot& root,
                                              const std::string& parent_rel, bool is_root, int fd,
                                              const auth::AccessToken& token) {
    auto stored = vfs::read_security_descriptor(fd);
    if (!stored) {
        // Fail closed: a descriptor that cannot be read must not become "no restriction".
        log_info("stored security descriptor unreadable (", status_name(stored.status()),
                 "): access denied");
        return std::optional<uint32_t>(0);
    }
    if (!*stored) return std::optional<uint32_t>();
    uint32_t allowed = auth::granted_access(**stored, token);
    // MS-FSA 2.1.5.1.2.1: DELETE is also granted by FILE_DELETE_CHILD on the parent, and
    // FILE_READ_ATTRIBUTES by FILE_LIST_DIRECTORY on it (a name one can list, one can stat:
    // smbtorture smb2.acls.GENERIC/OWNER). A parent without a stored descriptor grants both (the
    // kernel's check of its mode bits as the user decides the rest).
    if (!is_root && (~allowed & (am::kDelete | am::kFileReadAttributes))) {
        auto parent = vfs::open_beneath(root, parent_rel, O_PATH | O_DIRECTORY);
        if (parent) {
            auto psd = vfs::read_security_descriptor(parent->get());
            if (psd) {
                const uint32_t p = *psd ? auth::granted_access(**psd, token) : ~0u;
                if (p & am::kFileDeleteChild) allowed |= am::kDelete;
                if (p & am::kFileListDirectory) allowed |= am::kFileReadAttributes;
            }
        }
    }
    return std::optional<uint32_t>(allowed);
}

}  // namespace daxsmbd::server::handlers::security
