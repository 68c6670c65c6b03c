// CHANGE_NOTIFY (MS-SMB2 3.3.5.19) over the inotify watcher (server/notify/): the open's
// ChangeNotifyEntry (MS-FSA 2.1.5.11) is made by its first request and keeps the changes that
// happen between requests; a request with nothing to report goes async until a change, a
// CANCEL or the close of its handle (STATUS_NOTIFY_CLEANUP).
#include "protocol/change_notify.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "protocol/access_mask.h"
#include "protocol/notify_info.h"
#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/log.h"
#include "server/notify/notify_entry.h"
#include "server/notify/watcher.h"
#include "server/server.h"
#include "server/state/file_table.h"
#include "server/state/lock_table.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace am = protocol::access_mask;

namespace {

NtStatus respond(RequestContext& ctx, const notify::Completion& c) {
    ChangeNotifyResponse resp;
    ByteVector buf;
    switch (c.status) {
        case NtStatus::Success: {
            ByteWriter w(buf);
            encode_notify_information(w, c.changes);
            resp.buffer = Bytes(buf);
            break;
        }
        case NtStatus::NotifyEnumDir:  // MS-SMB2 3.3.5.19: a response with OutputBufferLength 0
        case NtStatus::NotifyCleanup:
            break;
        default:  // DeletePending: an error response
            return c.status;
    }
    resp.serialize(ctx.body());
    // StructureSize 9 counts one byte of Buffer; an empty buffer still sends that byte.
    if (buf.empty()) ctx.body().u8(0);
    return c.status;
}

}  // namespace

asio::awaitable<NtStatus> change_notify(RequestContext& ctx) {
    auto req = ChangeNotifyRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    // Moved out, so that `open` below is the request's only reference (see the wait).
    std::shared_ptr<Open> open = std::move(*found);

    // MS-SMB2 3.3.5.19, in the order of the spec.
    if (req->output_buffer_length > ctx.conn.state.max_transact_size)
        co_return NtStatus::InvalidParameter;
    if (!open->local.is_directory || open->local.pipe) co_return NtStatus::InvalidParameter;
    if (!(open->granted_access & am::kFileListDirectory)) {
        ctx.log().refusal("CHANGE_NOTIFY on '", open->local.path,
                          "' without FILE_LIST_DIRECTORY refused");
        co_return NtStatus::AccessDenied;
    }
    notify::Watcher* watcher = ctx.server.notify_watcher();
    if (!watcher) co_return NtStatus::NotSupported;  // no inotify: no change notifications

    // MS-FSA 2.1.5.11: the first request creates the entry with its filter, WATCH_TREE flag and
    // buffer length; later requests use it as it is (even when they were cancelled: smbtorture
    // sends one and cancels it "so the buffer is setup").
    std::shared_ptr<notify::NotifyEntry> entry;
    bool created = false;
    {
        std::lock_guard lk(open->mu);
        entry = open->local.notify_entry;
        if (!entry) {
            entry = std::make_shared<notify::NotifyEntry>(
                req->completion_filter, (req->flags & change_notify_flags::kWatchTree) != 0,
                req->output_buffer_length);
            open->local.notify_entry = entry;
            created = true;
        }
    }
    if (created) {
        // Closing the handle ends the watch and completes pending requests with
        // STATUS_NOTIFY_CLEANUP (the Open's destructor runs the hook: CLOSE, TREE_DISCONNECT,
        // LOGOFF, connection loss).
        add_close_hook(*open, [entry, watcher] {
            entry->close(NtStatus::NotifyCleanup);
            watcher->unwatch(entry.get());
        });
        const int fd = open->local.fd;
        auto st = co_await ctx.blocking([&] { return watcher->watch(entry, fd); });
        if (!st)
            ctx.log().info("cannot watch '", open->local.path, "': ", status_name(st.status()));
    }

    // Woken from the watcher's thread, and when the directory's delete becomes pending.
    auto wake = Wakeup::make(ctx.executor());
    auto id = entry->add_waiter(wake->waker());
    const uint32_t out_len = req->output_buffer_length;
    if (auto done = entry->try_complete(id, out_len)) co_return respond(ctx, *done);

    // While parked, the entry is all this request needs; dropping the open lets a CLOSE of the
    // handle destroy it and so complete this request with NOTIFY_CLEANUP.
    const FileKey dir_key{open->local.device, open->local.file_id};
    open.reset();
    ctx.pending->waiter = wake;
    ctx.server.files.when_delete_pending(dir_key, wake->waker());
    if (Status st = co_await ctx.go_async(); !st) {
        entry->remove_waiter(id);  // limit reached, or in the middle of a compound
        co_return st.status();
    }
    for (;;) {
        if (auto done = entry->try_complete(id, out_len)) co_return respond(ctx, *done);
        if (ctx.cancelled()) {
            entry->remove_waiter(id);
            co_return NtStatus::Cancelled;
        }
        // MS-FSA 2.1.5.11 (Open.ChangeNotifyDirectoryMarkedDeleted): once the watched directory's
        // delete is pending (another handle set delete-on-close and went away), pending and
        // later requests fail with STATUS_DELETE_PENDING (smbtorture smb2.notify.rmdir1-4).
        if (ctx.server.files.delete_pending(dir_key)) {
            entry->close(NtStatus::DeletePending);
            continue;
        }
        co_await wake->wait();
    }
}

}  // namespace daxsmbd::server::handlers
