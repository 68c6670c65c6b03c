#include "server/vfs/dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "server/errno_status.h"
#include "server/vfs/open.h"
#include "server/vfs/path.h"

namespace daxsmbd::server::vfs {

void DirectoryCursor::DirCloser::operator()(DIR* d) const {
    if (d != nullptr) ::closedir(d);
}

Result<DirectoryCursor> DirectoryCursor::open(const ShareRoot& root, std::string dir_rel) {
    DAX_TRY(UniqueFd fd, open_beneath(root, dir_rel, O_RDONLY | O_DIRECTORY));
    DIR* d = ::fdopendir(fd.get());
    if (d == nullptr) return Error(errno_to_status(errno));
    fd.release();  // owned by the DIR now
    DirectoryCursor c;
    c.root_ = &root;
    c.dir_rel_ = std::move(dir_rel);
    c.dir_.reset(d);
    return c;
}

void DirectoryCursor::put_back(DirEntry entry) {
    pending_ = std::move(entry);
}

void DirectoryCursor::rewind() {
    pending_.reset();
    phase_ = Phase::Dot;
    ::rewinddir(dir_.get());
}

Result<FileInfo> DirectoryCursor::info_of_dotdot() const {
    if (dir_rel_.empty()) return query_info(::dirfd(dir_.get()));  // the root's ".." is itself
    std::string_view parent, name;
    split_rel_path(dir_rel_, parent, name);
    const std::string parent_path = parent.empty() ? std::string(".") : std::string(parent);
    int fd = openat2_beneath(root_->fd(), parent_path.c_str(), O_PATH | O_DIRECTORY);
    if (fd < 0) return query_info(::dirfd(dir_.get()));  // renamed or gone: describe ourselves
    UniqueFd ufd(fd);
    return query_info(ufd.get());
}

std::optional<DirEntry> DirectoryCursor::describe(const char* name) const {
    const int dfd = ::dirfd(dir_.get());
    auto lst = query_info_at(dfd, name);
    if (!lst) return std::nullopt;  // vanished (or unreadable): skip it
    DirEntry e;
    e.name = name;
    e.info = *lst;
    e.is_symlink = lst->is_symlink;
    if (e.is_symlink) {
        std::string rel = dir_rel_.empty() ? e.name : dir_rel_ + "/" + e.name;
        int fd = openat2_beneath(root_->fd(), rel.c_str(), O_PATH);
        if (fd >= 0) {
            UniqueFd ufd(fd);
            if (auto target = query_info(ufd.get())) {
                e.info = *target;
                e.symlink_followed = true;
            }
        }
    }
    return e;
}

Result<std::optional<DirEntry>> DirectoryCursor::next(std::string_view pattern) {
    if (pending_) {
        std::optional<DirEntry> e = std::move(pending_);
        pending_.reset();
        return e;
    }
    const bool ci = !root_->case_sensitive();
    while (phase_ == Phase::Dot || phase_ == Phase::DotDot) {
        const bool dot = phase_ == Phase::Dot;
        phase_ = dot ? Phase::DotDot : Phase::Entries;
        const char* name = dot ? "." : "..";
        if (!wildcard_match(pattern, name, ci)) continue;
        DirEntry e;
        e.name = name;
        if (dot) {
            DAX_TRY(e.info, query_info(::dirfd(dir_.get())));
        } else {
            DAX_TRY(e.info, info_of_dotdot());
        }
        return std::optional<DirEntry>(std::move(e));
    }
    while (phase_ == Phase::Entries) {
        errno = 0;
        struct dirent* de = ::readdir(dir_.get());
        if (de == nullptr) {
            if (errno != 0) return Error(errno_to_status(errno));
            phase_ = Phase::End;
            break;
        }
        std::string_view name = de->d_name;
        if (name == "." || name == "..") continue;
        if (!is_representable_name(name)) continue;
        if (dir_rel_.empty() && is_reserved_root_name(*root_, name)) continue;
        if (!wildcard_match(pattern, name, ci)) continue;
        if (auto e = describe(de->d_name)) return std::optional<DirEntry>(std::move(*e));
    }
    return std::optional<DirEntry>();
}

}  // namespace daxsmbd::server::vfs
