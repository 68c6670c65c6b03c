#include "server/notify/watcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <cstring>

#include "protocol/change_notify.h"
#include "server/errno_status.h"
#include "server/log.h"
#include "server/vfs/open.h"

namespace daxsmbd::server::notify {

namespace cf = protocol::completion_filter;
namespace fa = protocol::file_action;

namespace {

constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY |
                           IN_ATTRIB | IN_ONLYDIR | IN_EXCL_UNLINK;
constexpr int kMaxDepth = 64;

constexpr uint32_t kModifyFilter = cf::kLastWrite | cf::kSize | cf::kStreamWrite | cf::kStreamSize;
constexpr uint32_t kAttribFilter =
    cf::kAttributes | cf::kLastWrite | cf::kLastAccess | cf::kCreation | cf::kEa | cf::kSecurity;

std::string join(const std::string& prefix, std::string_view name) {
    if (prefix.empty()) return std::string(name);
    std::string s = prefix;
    s += '/';
    s += name;
    return s;
}

// FILE_NOTIFY_INFORMATION names use '\' (MS-FSCC 2.7.1: relative to the watched directory).
std::string wire_name(const std::string& rel) {
    std::string s = rel;
    std::replace(s.begin(), s.end(), '/', '\\');
    return s;
}

bool is_prefix_of(const std::string& dir, const std::string& path) {
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                           path[dir.size()] == '/');
}

}  // namespace

Result<std::unique_ptr<Watcher>> Watcher::create() {
    int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) {
        log_error("notify: inotify_init1 failed: ", std::strerror(errno));
        return Error(NtStatus::InsufficientResources);
    }
    return std::unique_ptr<Watcher>(new Watcher(fd));
}

Watcher::Watcher(int fd) : fd_(fd), stream_(io_, fd), buf_(64 * 1024) {
    start_read();
    thread_ = std::thread([this] { io_.run(); });
}

Watcher::~Watcher() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
    boost::system::error_code ec;
    stream_.close(ec);  // closes fd_
    for (auto& [e, w] : entries_)
        if (w.root_fd >= 0) ::close(w.root_fd);
}

void Watcher::start_read() {
    stream_.async_read_some(asio::buffer(buf_),
                            [this](const boost::system::error_code& ec, size_t n) {
                                if (ec == asio::error::operation_aborted) return;
                                if (ec) {
                                    log_error("notify: reading inotify events: ", ec.message());
                                    return;
                                }
                                process(buf_.data(), n);
                                start_read();
                            });
}

size_t Watcher::watch_count() const {
    std::lock_guard lk(mu_);
    return dirs_.size();
}

bool Watcher::add_one(const NotifyEntry* entry, int fd, const std::string& prefix) {
    {
        std::lock_guard lk(mu_);
        auto e = entries_.find(entry);
        if (e == entries_.end() || e->second.watches >= kMaxWatchesPerEntry) return false;
    }
    // The descriptor's /proc link names the directory itself whatever its path is now and
    // without resolving anything inside the share again.
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    int wd = ::inotify_add_watch(fd_, path.c_str(), kMask);
    if (wd < 0) {
        log_info("notify: cannot watch '", prefix, "': ", std::strerror(errno));
        return false;
    }
    std::lock_guard lk(mu_);
    auto e = entries_.find(entry);
    if (e == entries_.end()) return false;  // unwatched meanwhile
    auto& subs = dirs_[wd].subs;
    for (const auto& s : subs)
        if (s.entry == entry) return true;  // already watched (hard to reach: a loop of renames)
    subs.push_back(Sub{entry, prefix});
    ++e->second.watches;
    return true;
}

void Watcher::add_tree(const NotifyEntry* entry, int fd, const std::string& prefix, bool recurse,
                       int depth) {
    if (!add_one(entry, fd, prefix) || !recurse || depth >= kMaxDepth) return;
    int list_fd = vfs::openat2_beneath(fd, ".", O_RDONLY | O_DIRECTORY);
    if (list_fd < 0) return;
    DIR* d = ::fdopendir(list_fd);
    if (!d) {
        ::close(list_fd);
        return;
    }
    std::vector<std::string> subdirs;
    while (struct dirent* de = ::readdir(d)) {
        std::string_view name = de->d_name;
        if (name == "." || name == "..") continue;
        bool dir = de->d_type == DT_DIR;
        if (de->d_type == DT_UNKNOWN) {
            struct stat st;
            dir = ::fstatat(::dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  S_ISDIR(st.st_mode);
        }
        if (dir) subdirs.emplace_back(name);
    }
    for (const auto& name : subdirs) {
        // O_NOFOLLOW: a symlink to a directory is not part of the tree (Windows does not follow
        // reparse points for WATCH_TREE either).
        int sub =
            vfs::openat2_beneath(::dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (sub < 0) continue;
        add_tree(entry, sub, join(prefix, name), true, depth + 1);
        ::close(sub);
    }
    ::closedir(d);
}

Status Watcher::watch(const std::shared_ptr<NotifyEntry>& entry, int dirfd) {
    int root = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (root < 0) return Error(errno_to_status(errno));
    {
        std::lock_guard lk(mu_);
        auto& w = entries_[entry.get()];
        if (w.root_fd >= 0) {  // watched already
            ::close(root);
            return {};
        }
        w.entry = entry;
        w.root_fd = root;
        w.recursive = entry->watch_tree();
    }
    add_tree(entry.get(), root, "", entry->watch_tree(), 0);
    return {};
}

void Watcher::remove_sub_locked(int wd, const NotifyEntry* entry, const std::string& prefix) {
    auto d = dirs_.find(wd);
    if (d == dirs_.end()) return;
    auto& subs = d->second.subs;
    auto n = std::erase_if(subs, [&](const Sub& s) {
        return s.entry == entry && (prefix.empty() || s.prefix == prefix);
    });
    if (auto e = entries_.find(entry); e != entries_.end())
        e->second.watches -= std::min(n, e->second.watches);
    if (subs.empty()) {
        ::inotify_rm_watch(fd_, wd);
        dirs_.erase(d);
    }
}

void Watcher::unwatch(const NotifyEntry* entry) {
    std::lock_guard lk(mu_);
    for (auto it = dirs_.begin(); it != dirs_.end();) {
        auto& subs = it->second.subs;
        std::erase_if(subs, [&](const Sub& s) { return s.entry == entry; });
        if (subs.empty()) {
            ::inotify_rm_watch(fd_, it->first);
            it = dirs_.erase(it);
        } else {
            ++it;
        }
    }
    auto e = entries_.find(entry);
    if (e != entries_.end()) {
        if (e->second.root_fd >= 0) ::close(e->second.root_fd);
        entries_.erase(e);
    }
}

void Watcher::drop_prefix_locked(const NotifyEntry* entry, const std::string& rel) {
    for (auto it = dirs_.begin(); it != dirs_.end();) {
        auto& subs = it->second.subs;
        auto n = std::erase_if(
            subs, [&](const Sub& s) { return s.entry == entry && is_prefix_of(rel, s.prefix); });
        if (n) {
            if (auto e = entries_.find(entry); e != entries_.end())
                e->second.watches -= std::min(n, e->second.watches);
        }
        if (subs.empty()) {
            ::inotify_rm_watch(fd_, it->first);
            it = dirs_.erase(it);
        } else {
            ++it;
        }
    }
}

void Watcher::rename_prefix_locked(const NotifyEntry* entry, const std::string& from,
                                   const std::string& to) {
    for (auto& [wd, dir] : dirs_)
        for (auto& s : dir.subs)
            if (s.entry == entry && is_prefix_of(from, s.prefix))
                s.prefix = to + s.prefix.substr(from.size());
}

void Watcher::watch_new_subdir(const NotifyEntry* entry, const std::string& rel) {
    int root;
    {
        std::lock_guard lk(mu_);
        auto e = entries_.find(entry);
        if (e == entries_.end() || !e->second.recursive) return;
        root = e->second.root_fd;
    }
    int fd = vfs::openat2_beneath(root, rel.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (fd < 0) return;  // gone again, or a symlink
    add_tree(entry, fd, rel, true, int(std::count(rel.begin(), rel.end(), '/')) + 1);
    ::close(fd);
}

void Watcher::emit(std::vector<Report>& out, const Dir& dir, const std::string& name,
                   uint32_t action, uint32_t filter) {
    for (const auto& s : dir.subs) {
        auto e = entries_.find(s.entry);
        if (e == entries_.end()) continue;
        auto entry = e->second.entry.lock();
        if (!entry) continue;
        out.push_back(Report{std::move(entry), action, wire_name(join(s.prefix, name)), filter});
    }
}

void Watcher::process(const char* buf, size_t len) {
    std::vector<Report> reports;
    // Directories that appeared inside a recursive watch, watched once the table is unlocked.
    std::vector<std::pair<const NotifyEntry*, std::string>> new_dirs;
    bool overflow = false;
    {
        std::lock_guard lk(mu_);
        size_t off = 0;
        while (off + sizeof(struct inotify_event) <= len) {
            const auto* ev = reinterpret_cast<const struct inotify_event*>(buf + off);
            const size_t size = sizeof(struct inotify_event) + ev->len;
            if (off + size > len) break;
            off += size;
            if (ev->mask & IN_Q_OVERFLOW) {
                overflow = true;
                continue;
            }
            auto d = dirs_.find(ev->wd);
            if (d == dirs_.end()) continue;
            if (ev->mask & IN_IGNORED) {  // the directory is gone (or unwatched)
                for (const auto& s : d->second.subs)
                    if (auto e = entries_.find(s.entry); e != entries_.end() && e->second.watches)
                        --e->second.watches;
                dirs_.erase(d);
                continue;
            }
            if (ev->len == 0) continue;  // about the directory itself: its parent reports it
            const std::string name(ev->name);
            const bool is_dir = ev->mask & IN_ISDIR;
            const uint32_t name_filter = is_dir ? cf::kDirName : cf::kFileName;
            Dir& dir = d->second;
            const uint32_t prev_mask = dir.last_mask;
            const bool same_as_prev = dir.last_name == name;
            dir.last_mask = ev->mask;
            dir.last_name = name;

            if (ev->mask & IN_CREATE) {
                emit(reports, dir, name, fa::kAdded, name_filter);
                if (is_dir)
                    for (const auto& s : dir.subs)
                        new_dirs.emplace_back(s.entry, join(s.prefix, name));
            } else if (ev->mask & IN_DELETE) {
                emit(reports, dir, name, fa::kRemoved, name_filter);
            } else if (ev->mask & IN_MOVED_FROM) {
                // The matching IN_MOVED_TO, if any, is the next event (inotify queues both
                // halves of a rename together).
                const struct inotify_event* to = nullptr;
                if (off + sizeof(struct inotify_event) <= len) {
                    const auto* next = reinterpret_cast<const struct inotify_event*>(buf + off);
                    if ((next->mask & IN_MOVED_TO) && next->cookie == ev->cookie &&
                        off + sizeof(struct inotify_event) + next->len <= len)
                        to = next;
                }
                if (to && to->wd == ev->wd) {
                    off += sizeof(struct inotify_event) + to->len;
                    const std::string new_name(to->name);
                    emit(reports, dir, name, fa::kRenamedOldName, name_filter);
                    emit(reports, dir, new_name, fa::kRenamedNewName, name_filter);
                    if (is_dir)
                        for (const auto& s : dir.subs)
                            rename_prefix_locked(s.entry, join(s.prefix, name),
                                                 join(s.prefix, new_name));
                    dir.last_mask = to->mask;
                    dir.last_name = new_name;
                } else {
                    emit(reports, dir, name, fa::kRemoved, name_filter);
                    if (is_dir)
                        for (const auto& s : dir.subs)
                            drop_prefix_locked(s.entry, join(s.prefix, name));
                    // `to` (another directory) is processed as an IN_MOVED_TO of its own.
                }
            } else if (ev->mask & IN_MOVED_TO) {
                emit(reports, dir, name, fa::kAdded, name_filter);
                if (is_dir)
                    for (const auto& s : dir.subs)
                        new_dirs.emplace_back(s.entry, join(s.prefix, name));
            } else if (ev->mask & IN_MODIFY) {
                emit(reports, dir, name, fa::kModified, kModifyFilter);
            } else if (ev->mask & IN_ATTRIB) {
                // The CREATE of this name storing its DOS attributes: part of the creation.
                if ((prev_mask & IN_CREATE) && same_as_prev) continue;
                emit(reports, dir, name, fa::kModified, kAttribFilter);
            }
        }
    }
    if (overflow) {
        std::vector<std::shared_ptr<NotifyEntry>> all;
        {
            std::lock_guard lk(mu_);
            for (auto& [p, w] : entries_)
                if (auto e = w.entry.lock()) all.push_back(std::move(e));
        }
        for (auto& e : all)
            e->report_overflow();
    }
    for (auto& r : reports)
        r.entry->report(r.action, std::move(r.name), r.filter);
    for (auto& [entry, rel] : new_dirs)
        watch_new_subdir(entry, rel);
}

}  // namespace daxsmbd::server::notify
