#include "server/notify/notify_entry.h"

#include <algorithm>
#include <array>

#include "protocol/notify_info.h"

namespace daxsmbd::server::notify {

using protocol::FileNotifyInformation;
namespace fa = protocol::file_action;

namespace {
// Upper bound of what one open keeps between requests whatever its buffer length (a client must
// not make the server hold megabytes per directory handle); past it: NOTIFY_ENUM_DIR.
constexpr size_t kMaxKeptBytes = 256 * 1024;
}  // namespace

void NotifyEntry::report(uint32_t action, std::string name, uint32_t filter_match) {
    std::function<void()> wake;
    {
        std::lock_guard lk(mu_);
        // MS-FSA 2.1.4.1: only changes the filter asks for; invalid filter bits never match
        // (MS-SMB2 3.3.5.19: a filter without valid bits keeps the request pending).
        if (closed_ || !(filter_match & filter_)) return;
        if (action == fa::kModified && !changes_.empty() && changes_.back().action == action &&
            changes_.back().file_name == name)
            return;
        if (!overflow_) {
            FileNotifyInformation c{action, std::move(name)};
            const size_t size =
                protocol::notify_information_size(std::span<const FileNotifyInformation>(&c, 1));
            if (changes_bytes_ + size > std::min<size_t>(buffer_length_, kMaxKeptBytes)) {
                // More than the client's buffer can take: the request gets NOTIFY_ENUM_DIR and
                // rescans the directory, as on Windows when its notify buffer overflows.
                overflow_ = true;
                changes_.clear();
                changes_bytes_ = 0;
            } else {
                changes_.push_back(std::move(c));
                changes_bytes_ += size;
            }
        }
        wake = front_wake_locked();
    }
    if (wake) wake();
}

void NotifyEntry::report_overflow() {
    std::function<void()> wake;
    {
        std::lock_guard lk(mu_);
        if (closed_) return;
        overflow_ = true;
        changes_.clear();
        changes_bytes_ = 0;
        wake = front_wake_locked();
    }
    if (wake) wake();
}

void NotifyEntry::close(NtStatus why) {
    std::vector<std::function<void()>> wakes;
    {
        std::lock_guard lk(mu_);
        if (closed_) return;
        closed_ = true;
        close_status_ = why;
        // Nobody will receive what was kept.
        changes_.clear();
        changes_bytes_ = 0;
        overflow_ = false;
        for (auto& w : waiters_)
            wakes.push_back(w.wake);
    }
    for (auto& w : wakes)
        if (w) w();
}

bool NotifyEntry::closed() const {
    std::lock_guard lk(mu_);
    return closed_;
}

NotifyEntry::WaiterId NotifyEntry::add_waiter(std::function<void()> wake) {
    std::lock_guard lk(mu_);
    WaiterId id = next_id_++;
    waiters_.push_back(Waiter{id, std::move(wake)});
    return id;
}

std::optional<Completion> NotifyEntry::try_complete(WaiterId id, uint32_t output_buffer_length) {
    std::lock_guard lk(mu_);
    auto me = std::find_if(waiters_.begin(), waiters_.end(),
                           [id](const Waiter& w) { return w.id == id; });
    if (me == waiters_.end()) return std::nullopt;
    if (closed_) {
        // Every pending request learns about the close, not only the oldest.
        waiters_.erase(me);
        return Completion{close_status_, {}};
    }
    if (me != waiters_.begin() || (!overflow_ && changes_.empty())) return std::nullopt;
    waiters_.pop_front();
    Completion c;
    // MS-FSA 2.1.5.11.1: everything reported so far if it fits, else NOTIFY_ENUM_DIR with
    // nothing. The limit is the smaller of this request's buffer and the entry's (the
    // first request's), which is what makes "if the first notify returns NOTIFY_ENUM_DIR,
    // all do" (smbtorture smb2.notify.valid-req). The kept changes are consumed either way.
    const size_t limit = std::min<size_t>(output_buffer_length, buffer_length_);
    if (overflow_ || changes_bytes_ > limit) {
        c.status = NtStatus::NotifyEnumDir;
    } else {
        c.status = NtStatus::Success;
        c.changes = std::move(changes_);
    }
    changes_.clear();
    changes_bytes_ = 0;
    overflow_ = false;
    return c;
}

void NotifyEntry::remove_waiter(WaiterId id) {
    std::function<void()> wake;
    {
        std::lock_guard lk(mu_);
        auto me = std::find_if(waiters_.begin(), waiters_.end(),
                               [id](const Waiter& w) { return w.id == id; });
        if (me == waiters_.end()) return;
        waiters_.erase(me);
        wake = front_wake_locked();
    }
    if (wake) wake();
}

std::function<void()> NotifyEntry::front_wake_locked() const {
    if (waiters_.empty() || !has_news_locked()) return {};
    return waiters_.front().wake;
}

size_t NotifyEntry::pending_changes() const {
    std::lock_guard lk(mu_);
    return changes_.size();
}

size_t NotifyEntry::waiters() const {
    std::lock_guard lk(mu_);
    return waiters_.size();
}

}  // namespace daxsmbd::server::notify
