// LOCK (MS-SMB2 3.3.5.14) over the byte-range lock table (server/state/lock_table.h,
// MS-FSA 2.1.5.8 / 2.1.5.9).
//
// Lock sequence replay detection (MS-SMB2 3.3.5.14, Open.LockSequenceArray) runs where the
// specification asks for it: on resilient opens (FSCTL_LMR_REQUEST_RESILIENCY), durable and
// persistent opens and on every open of a 3.x connection when the server offers multichannel.
// Elsewhere LockSequenceNumber/Index are ignored, as Windows does (smbtorture
// smb2.lock.replay_broken_windows). The locks of a persistent open are journaled with it
// (server/persistent_handles.h) before the LOCK is answered.
#include "protocol/lock.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/negotiate.h"
#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/log.h"
#include "server/persistent_handles.h"
#include "server/server.h"
#include "server/state/lock_table.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace lf = protocol::lock_flags;
namespace am = protocol::access_mask;

namespace {

// MS-SMB2 3.3.5.14.1: a series of unlocks, processed in order. The first failure ends the
// request; the unlocks done before it stay done.
NtStatus process_unlocks(LockTable& table, const FileKey& key, LockOwner owner,
                         const std::vector<LockElement>& locks) {
    for (const auto& e : locks) {
        // Only UNLOCK alone is valid here: SHARED/EXCLUSIVE are explicitly refused, and
        // FAIL_IMMEDIATELY or unknown bits are not a valid combination (MS-SMB2 2.2.26.1;
        // smbtorture smb2.lock.valid-request expects INVALID_PARAMETER for
        // UNLOCK|FAIL_IMMEDIATELY).
        if (e.flags != lf::kUnlock) return NtStatus::InvalidParameter;
        auto st = table.unlock(key, owner, e.offset, e.length);
        if (!st) return st.status();
    }
    return NtStatus::Success;
}

// The pending LOCK's own open went away while it waited. An explicit CLOSE of that handle fails
// the request with RANGE_NOT_LOCKED; when the whole tree or session was torn down (TREE_DISCONNECT,
// LOGOFF), the request completes with SUCCESS, as smbtorture smb2.lock.cancel-tdis and
// cancel-logoff expect from Windows.
NtStatus owner_closed_status(RequestContext& ctx) {
    const bool session_gone = !ctx.server.sessions.find(ctx.session_id);
    const bool tree_gone = !ctx.session || !ctx.session->find_tree(ctx.tree_id);
    return session_gone || tree_gone ? NtStatus::Success : NtStatus::RangeNotLocked;
}

// MS-SMB2 3.3.5.14: the bucket (1..64) of Open.LockSequenceArray a request names, when lock
// sequence verification applies to it; nullopt otherwise (dialect 2.0.2, an open that is neither
// resilient nor durable nor persistent on a server without multichannel, bucket 0 or past 64).
std::optional<size_t> lock_sequence_bucket(const RequestContext& ctx, const Open& open,
                                           const LockRequest& req) {
    if (ctx.dialect() == Dialect::Smb202) return std::nullopt;
    const bool verify =
        open.is_resilient || (is_smb3(ctx.dialect()) &&
                              (ctx.conn.state.server_capabilities & global_caps::kMultiChannel));
    const uint32_t index = req.lock_sequence_index();
    if (!verify || index == 0 || index > open.lock_sequence.size()) return std::nullopt;
    return size_t(index - 1);
}

// MS-FSA 2.1.5.8 / 2.1.5.9: the opens that may not take byte-range locks; Success otherwise.
NtStatus refuse_lock_on(RequestContext& ctx, const Open& open) {
    // Named pipes have no byte ranges to lock (NPFS does not take lock requests).
    if (open.local.pipe) return NtStatus::InvalidDeviceRequest;
    // MS-FSA 2.1.5.8 / 2.1.5.9: byte-range locks are not permitted on directories.
    if (open.local.is_directory) return NtStatus::InvalidParameter;
    // MS-FSA 2.1.5.8: the open must be able to read or write the data it locks.
    if (!(open.granted_access & (am::kFileReadData | am::kFileWriteData))) {
        ctx.log().refusal("LOCK on '", open.local.path, "' without read or write access refused");
        return NtStatus::AccessDenied;
    }
    return NtStatus::Success;
}

// MS-SMB2 3.3.5.14: a request whose sequence number its bucket already holds is a replay of
// one that succeeded (true: it succeeds again without being processed). Any other request
// empties the bucket, which takes the new number once the request succeeds.
bool replays_lock_sequence(RequestContext& ctx, Open& open, std::optional<size_t> bucket,
                           uint8_t sequence) {
    if (!bucket) return false;
    std::lock_guard lk(open.mu);
    uint8_t& entry = open.lock_sequence[*bucket];
    if (entry == sequence) {
        ctx.log().debug("LOCK on '", open.local.path, "' replays sequence ", int(sequence),
                        " of bucket ", *bucket + 1, ": nothing done");
        return true;
    }
    entry = Open::kNoLockSequence;
    return false;
}

// The success of a LOCK: its sequence number goes into its bucket (when the open still
// exists), and the response is written.
struct LockGranted {
    RequestContext& ctx;
    std::weak_ptr<Open> open;
    std::optional<size_t> bucket;
    uint8_t sequence = 0;

    NtStatus operator()() const {
        if (bucket) {
            if (auto o = open.lock()) {
                std::lock_guard lk(o->mu);
                o->lock_sequence[*bucket] = sequence;
            }
        }
        LockResponse{}.serialize(ctx.body());
        return NtStatus::Success;
    }
};

// The elements of a series of locks (MS-SMB2 3.3.5.14.2) as ranges, up to the first one that is
// not a valid lock (an UNLOCK, an invalid flag combination: INVALID_PARAMETER; a range past
// 2^64: INVALID_LOCK_RANGE), whose status is `invalid`.
struct LockSeries {
    std::vector<LockRange> ranges;
    std::optional<NtStatus> invalid;
    bool all_fail_immediately = true;
};

LockSeries lock_series(const std::vector<LockElement>& elements) {
    LockSeries series;
    for (const auto& e : elements) {
        if ((e.flags & lf::kUnlock) || !is_valid_lock_flags(e.flags)) {
            series.invalid = NtStatus::InvalidParameter;
            break;
        }
        if (!lock_range_valid(e.offset, e.length)) {
            series.invalid = NtStatus::InvalidLockRange;
            break;
        }
        series.all_fail_immediately &= (e.flags & lf::kFailImmediately) != 0;
        series.ranges.push_back(LockRange{e.offset, e.length, (e.flags & lf::kExclusiveLock) != 0});
    }
    return series;
}

// Abuse limit "max locks per open": STATUS_INSUFFICIENT_RESOURCES, what Windows answers when it
// cannot hold another lock; the open's other locks stay.
void log_lock_limit(RequestContext& ctx, NtStatus st, size_t max_locks, const std::string& path) {
    if (st != NtStatus::InsufficientResources) return;
    ctx.server.limit_hits.hit(metrics::Limit::MaxLocksPerOpen);
    ctx.log().refusal("limit 'max locks per open' (", max_locks, ") reached on '", path,
                      "'; LOCK refused");
}

// One blocking lock (MS-FSA 2.1.5.8): granted now, or the request goes async and waits for the
// conflicting locks to go (unlock, close of their open) or for a CANCEL. `open` must be the
// request's only reference to the open (see the wait).
asio::awaitable<NtStatus> lock_or_wait(RequestContext& ctx, std::shared_ptr<Open> open,
                                       LockTable& table, FileKey key, LockRange range,
                                       size_t max_locks, LockGranted granted) {
    // Woken from whichever thread released the range.
    auto wake = Wakeup::make(ctx.executor());
    auto waiter = table.lock_or_wait(key, open.get(), range, wake->waker(), max_locks);
    if (!waiter) {
        log_lock_limit(ctx, waiter.status(), max_locks, open->local.path);
        co_return waiter.status();
    }
    auto w = *waiter;
    if (w->state() == LockWaiter::State::Granted) co_return granted();

    const std::string path = open->local.path;
    // While parked, only the lock table refers to the open (as its owner): a CLOSE of this
    // handle then destroys the Open, whose close hook withdraws the request (OwnerClosed).
    open.reset();
    ctx.pending->waiter = wake;
    if (Status st = co_await ctx.go_async(); !st) {
        // Not allowed to wait (limit, or in the middle of a compound); the lock may have been
        // granted meanwhile.
        if (table.cancel(w) == LockWaiter::State::Cancelled) co_return st.status();
    }
    ctx.log().debug("LOCK on '", path, "' waits");
    while (w->state() == LockWaiter::State::Waiting) {
        if (ctx.cancelled()) {
            // MS-SMB2 3.3.5.16; the lock may have been granted just before the CANCEL arrived.
            if (table.cancel(w) == LockWaiter::State::Cancelled) co_return NtStatus::Cancelled;
            break;
        }
        co_await wake->wait();
    }
    switch (w->state()) {
        case LockWaiter::State::Granted:
            co_return granted();
        case LockWaiter::State::OwnerClosed: {
            NtStatus st = owner_closed_status(ctx);
            if (st == NtStatus::Success) LockResponse{}.serialize(ctx.body());
            co_return st;
        }
        default:
            co_return NtStatus::Cancelled;
    }
}

asio::awaitable<NtStatus> lock_request(RequestContext& ctx, std::shared_ptr<Open> open,
                                       const LockRequest* req);

}  // namespace

asio::awaitable<NtStatus> lock(RequestContext& ctx) {
    auto req = LockRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    const bool persistent = (*found)->durable.persistent;
    const uint64_t id = (*found)->id.volatile_;
    // Moved on, so that the request holds only one reference (see lock_or_wait()).
    NtStatus st = co_await lock_request(ctx, std::move(*found), &*req);
    // The locks a persistent handle holds are on the share's volume before the client learns of
    // the change, like the handle itself.
    if (st == NtStatus::Success && persistent)
        co_await ctx.blocking_as_daemon([&] {
            rejournal_persistent_opens(ctx.server,
                                       [&](const Open& o) { return o.id.volatile_ == id; });
        });
    co_return st;
}

namespace {

asio::awaitable<NtStatus> lock_request(RequestContext& ctx, std::shared_ptr<Open> open,
                                       const LockRequest* req) {
    if (NtStatus st = refuse_lock_on(ctx, *open); st != NtStatus::Success) co_return st;

    const LockGranted granted{ctx, open, lock_sequence_bucket(ctx, *open, *req),
                              req->lock_sequence_number()};
    if (replays_lock_sequence(ctx, *open, granted.bucket, granted.sequence)) {
        LockResponse{}.serialize(ctx.body());
        co_return NtStatus::Success;
    }

    // MS-FSA 2.1.4.12 (Operation LOCK): other opens' LEVEL_II oplocks break to NONE.
    if (open->local.file_registration) open->local.file_registration->break_others_level2_oplocks();

    LockTable& table = ctx.server.locks;
    const FileKey key{open->local.device, open->local.file_id};
    const LockOwner owner = open.get();
    const auto& els = req->locks;

    // MS-SMB2 3.3.5.14: the first element decides whether this is a series of unlocks.
    if (els.front().flags & lf::kUnlock) {
        NtStatus st = process_unlocks(table, key, owner, els);
        if (st != NtStatus::Success) co_return st;
        co_return granted();
    }

    // MS-SMB2 3.3.5.14.2: a series of locks. The first element that is not a valid lock ends the
    // request, and what the earlier elements locked is released again (smbtorture
    // smb2.lock.multiple-unlock: lock + unlock in one request leaves nothing locked). Taking the
    // earlier elements only in a dry run gives the same answers without anyone seeing the
    // short-lived locks.
    const LockSeries series = lock_series(els);
    // MS-SMB2 3.3.5.14.2: more than one lock in a request only with FAIL_IMMEDIATELY on each (a
    // blocking multi-range request could wait forever holding part of its ranges).
    if (els.size() > 1 && !series.all_fail_immediately) co_return NtStatus::InvalidParameter;
    if (series.invalid) {
        if (!series.ranges.empty()) {
            auto st = table.lock(key, owner, series.ranges, /*dry_run=*/true);
            if (!st) co_return st.status();
        }
        co_return *series.invalid;
    }

    install_lock_release_hook(*open, table);
    const size_t max_locks = ctx.limits().max_locks_per_open;
    if (series.all_fail_immediately) {
        // MS-SMB2 3.3.5.14.2: FAIL_IMMEDIATELY -> STATUS_LOCK_NOT_GRANTED on a conflict, all or
        // nothing.
        auto st = table.lock(key, owner, series.ranges, /*dry_run=*/false, max_locks);
        log_lock_limit(ctx, st.status(), max_locks, open->local.path);
        if (!st) co_return st.status();
        co_return granted();
    }
    co_return co_await lock_or_wait(ctx, std::move(open), table, key, series.ranges.front(),
                                    max_locks, granted);
}

}  // namespace

}  // namespace daxsmbd::server::handlers
