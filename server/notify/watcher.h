// The inotify side of CHANGE_NOTIFY: turns Linux inotify events into MS-FSA 2.1.4.1 change
// reports (FILE_ACTION_* + FILE_NOTIFY_CHANGE_* filter bits) for the NotifyEntries watching a
// directory, with WATCH_TREE implemented by watching every directory below the open one.
//
// One inotify descriptor per Watcher, read through an asio::posix::stream_descriptor on the
// Watcher's own thread and io_context: tree walks for new subdirectories (openat, readdir) run
// there and never on a connection's loop. Completions reach the waiting requests through the
// NotifyEntry wake callbacks, which post to the request's own loop.
//
// Mapping (inotify(7) -> MS-SMB2 2.2.35 / MS-FSCC 2.7.1):
//   IN_CREATE                ADDED     FILE_NAME, or DIR_NAME for a directory
//   IN_DELETE                REMOVED   FILE_NAME / DIR_NAME
//   IN_MOVED_FROM + IN_MOVED_TO in the same directory (same cookie)
//                            RENAMED_OLD_NAME + RENAMED_NEW_NAME   FILE_NAME / DIR_NAME
//   a move between two directories: REMOVED in the old one, ADDED in the new one (what Windows
//   reports, smbtorture smb2.notify.rec); a move out of or into the watched tree likewise
//   IN_MODIFY                MODIFIED  LAST_WRITE | SIZE (and STREAM_WRITE | STREAM_SIZE)
//   IN_ATTRIB                MODIFIED  ATTRIBUTES | LAST_WRITE | LAST_ACCESS | CREATION | EA |
//                            SECURITY (inotify cannot tell which of the metadata changed: DOS
//                            attributes, EAs and security descriptors are xattrs here, times
//                            are utimensat). An IN_ATTRIB right after the IN_CREATE of the same
//                            name is the CREATE setting the new file's DOS attributes and is
//                            part of the creation: Windows reports only ADDED for it.
//   IN_Q_OVERFLOW            every entry: NOTIFY_ENUM_DIR
// Last-access changes are not watched (IN_ACCESS would fire on every read).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "protocol/result.h"
#include "server/notify/notify_entry.h"

namespace daxsmbd::server::notify {

namespace asio = boost::asio;

class Watcher {
  public:
    // Starts the watcher thread. Fails (InsufficientResources) when no inotify instance can be
    // created; CHANGE_NOTIFY then answers NOT_SUPPORTED (MS-SMB2 3.3.5.19).
    static Result<std::unique_ptr<Watcher>> create();
    ~Watcher();
    Watcher(const Watcher&) = delete;
    Watcher& operator=(const Watcher&) = delete;

    // Starts watching directory `dirfd` (any descriptor of it, O_PATH included) for `entry`,
    // and for a WATCH_TREE entry every directory beneath it (symlinks are not followed; at most
    // kMaxWatchesPerEntry directories). Blocking (walks the tree): run it on the blocking pool.
    Status watch(const std::shared_ptr<NotifyEntry>& entry, int dirfd);
    // Stops every watch of `entry` (its open is closed). Safe from any thread.
    void unwatch(const NotifyEntry* entry);

    static constexpr size_t kMaxWatchesPerEntry = 4096;

    // For tests: directories currently watched.
    size_t watch_count() const;

  private:
    struct Sub {
        const NotifyEntry* entry = nullptr;
        std::string prefix;  // path of this directory below the entry's root, '/' separated
    };
    struct Dir {
        std::vector<Sub> subs;
        // Last raw event seen in this directory, to recognise IN_CREATE + IN_ATTRIB pairs.
        uint32_t last_mask = 0;
        std::string last_name;
    };
    struct EntryWatch {
        std::weak_ptr<NotifyEntry> entry;
        int root_fd = -1;  // the watched directory, for opening new subdirectories beneath it
        size_t watches = 0;
        bool recursive = false;
    };
    struct Report {
        std::shared_ptr<NotifyEntry> entry;
        uint32_t action;
        std::string name;
        uint32_t filter;
    };

    Watcher(int fd);
    void start_read();
    void process(const char* buf, size_t len);
    // Adds a watch for directory `fd` (below entry's root at `prefix`) and, when `recurse`, for
    // the directories beneath it. Takes mu_ only around the table updates.
    void add_tree(const NotifyEntry* entry, int fd, const std::string& prefix, bool recurse,
                  int depth);
    bool add_one(const NotifyEntry* entry, int fd, const std::string& prefix);
    // Subdirectory `rel` (below the entry's root) appeared inside the watched tree.
    void watch_new_subdir(const NotifyEntry* entry, const std::string& rel);
    void drop_prefix_locked(const NotifyEntry* entry, const std::string& rel);
    void rename_prefix_locked(const NotifyEntry* entry, const std::string& from,
                              const std::string& to);
    void remove_sub_locked(int wd, const NotifyEntry* entry, const std::string& prefix);
    void emit(std::vector<Report>& out, const Dir& dir, const std::string& name, uint32_t action,
              uint32_t filter);

    int fd_;
    asio::io_context io_;
    asio::posix::stream_descriptor stream_;
    std::thread thread_;
    std::vector<char> buf_;

    mutable std::mutex mu_;
    std::unordered_map<int, Dir> dirs_;  // by inotify watch descriptor
    std::unordered_map<const NotifyEntry*, EntryWatch> entries_;
};

}  // namespace daxsmbd::server::notify
