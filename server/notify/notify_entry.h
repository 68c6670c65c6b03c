// CHANGE_NOTIFY state of one directory open: MS-FSA 2.1.1.8 ChangeNotifyEntry and the
// algorithms of 2.1.4.1 (reporting a change) and 2.1.5.11 / 2.1.5.11.1 (waiting for one).
//
// The first CHANGE_NOTIFY on an open creates the entry; its CompletionFilter, WatchTree and
// OutputBufferLength stay for the life of the open (smbtorture smb2.notify.mask-change: "once the
// mask is set on a directory it seems to be fixed until the fnum is closed"), and changes that
// happen while no request is pending are kept for the next one, up to that first buffer length.
//
// Threads: report()/report_overflow()/close() come from the inotify watcher's thread, the
// request side from the connection's loop; a mutex guards everything. Wake callbacks run
// outside the mutex and must only post to the waiting request's loop.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "protocol/notify_info.h"
#include "protocol/status.h"

namespace daxsmbd::server::notify {

// What a CHANGE_NOTIFY request completes with.
struct Completion {
    // Success with `changes`; NotifyEnumDir (they did not fit, or too many to keep, MS-FSA
    // 2.1.5.11.1); NotifyCleanup (the handle was closed); DeletePending (the watched directory
    // was deleted, MS-FSA 2.1.5.11).
    NtStatus status = NtStatus::Success;
    std::vector<protocol::FileNotifyInformation> changes;
};

class NotifyEntry {
  public:
    using WaiterId = uint64_t;

    NotifyEntry(uint32_t completion_filter, bool watch_tree, uint32_t buffer_length)
        : filter_(completion_filter), watch_tree_(watch_tree), buffer_length_(buffer_length) {}
    NotifyEntry(const NotifyEntry&) = delete;
    NotifyEntry& operator=(const NotifyEntry&) = delete;

    uint32_t completion_filter() const { return filter_; }
    bool watch_tree() const { return watch_tree_; }
    uint32_t buffer_length() const { return buffer_length_; }

    // MS-FSA 2.1.4.1: records a change when `filter_match` (the FILE_NOTIFY_CHANGE_* bits the
    // change stands for) meets the entry's filter. `name` is relative to the watched directory,
    // '\' separated. A MODIFIED identical to the last kept change is not repeated (one
    // operation often touches several attributes). When the kept changes would no longer fit the
    // entry's buffer they are dropped for one NOTIFY_ENUM_DIR. Wakes the oldest waiting request.
    void report(uint32_t action, std::string name, uint32_t filter_match);
    // Changes were lost (inotify queue overflow): the next request gets NOTIFY_ENUM_DIR.
    void report_overflow();
    // The open is gone (NotifyCleanup) or its directory deleted (DeletePending): every pending
    // and later request completes with `why`.
    void close(NtStatus why);
    bool closed() const;

    // Requests, oldest first (MS-FSA 2.1.5.11.1: several requests on one open complete in FIFO
    // order). `wake` is called when this waiter may now complete.
    WaiterId add_waiter(std::function<void()> wake);
    // When `id` is the oldest waiter and there is something to report, removes it and returns
    // its completion for a response of at most `output_buffer_length` bytes of
    // FILE_NOTIFY_INFORMATION; nullopt while it has to keep waiting.
    std::optional<Completion> try_complete(WaiterId id, uint32_t output_buffer_length);
    // CANCEL: withdraws the waiter (the next one is woken if changes are waiting).
    void remove_waiter(WaiterId id);

    // For tests.
    size_t pending_changes() const;
    size_t waiters() const;

  private:
    struct Waiter {
        WaiterId id;
        std::function<void()> wake;
    };
    bool has_news_locked() const { return overflow_ || !changes_.empty() || closed_; }
    // The wake of the oldest waiter, if there is news for it.
    std::function<void()> front_wake_locked() const;

    const uint32_t filter_;
    const bool watch_tree_;
    const uint32_t buffer_length_;

    mutable std::mutex mu_;
    std::vector<protocol::FileNotifyInformation> changes_;
    size_t changes_bytes_ = 0;  // notify_information_size(changes_)
    bool overflow_ = false;
    bool closed_ = false;
    NtStatus close_status_ = NtStatus::NotifyCleanup;
    std::deque<Waiter> waiters_;
    WaiterId next_id_ = 1;
};

}  // namespace daxsmbd::server::notify
