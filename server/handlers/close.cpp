// CLOSE (MS-SMB2 3.3.5.10).
#include "protocol/close.h"

#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/io/data_path.h"
#include "server/log.h"
#include "server/server.h"
#include "server/state/file_table.h"
#include "server/vfs/metadata.h"

namespace daxsmbd::server::handlers {

using namespace protocol;

asio::awaitable<NtStatus> close(RequestContext& ctx) {
    auto req = CloseRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    std::shared_ptr<Open> open = *found;

    // MS-SMB2 3.3.4.17: the open leaves Session.OpenTable first, so that nothing that arrives
    // from now on can use it. A concurrent CLOSE of the same handle loses here.
    if (!ctx.server.opens.remove(open->id.volatile_)) co_return NtStatus::FileClosed;

    // The data path finishes with the open (the DAX path makes the writes without write-through
    // durable at CLOSE at the latest).
    std::shared_ptr<io::DataPath> data;
    {
        std::lock_guard lk(open->mu);
        data = open->local.data;
    }
    if (data) data->on_close(open->local.path);

    CloseResponse resp;
    const bool postquery = req->flags & close_flags::kPostqueryAttrib;
    auto reg = open->local.file_registration;
    const int fd = open->local.fd;
    // MS-SMB2 3.3.5.10: the attributes are queried before the close (a delete on close would
    // leave nothing to query afterwards); then the open leaves the FileTable, which deletes the
    // file when it was the last open of a file whose delete is pending.
    auto info = co_await ctx.blocking([&]() -> Result<vfs::FileInfo> {
        Result<vfs::FileInfo> r = Error(NtStatus::InvalidHandle);
        if (postquery && fd >= 0) r = vfs::query_info(fd);
        if (reg && open->local.modified.load(std::memory_order_relaxed))
            reg->break_parent_directory_leases(open->local.path);
        if (reg) reg->release();
        return r;
    });
    if (postquery && info) {
        resp.flags = close_flags::kPostqueryAttrib;
        resp.creation_time = info->creation_time;
        resp.last_access_time = info->last_access_time;
        resp.last_write_time = info->last_write_time;
        resp.change_time = info->change_time;
        resp.allocation_size = int64_t(info->allocation_size);
        resp.end_of_file = int64_t(info->end_of_file);
        resp.file_attributes = info->file_attributes;
    }
    // Without the flag, or for a pipe, every field stays 0 (MS-SMB2 2.2.16).
    resp.serialize(ctx.body());
    ctx.log().debug("CLOSE fid ", open->id.volatile_, " '", open->local.path, "'");
    // The descriptor is closed when the last reference to the Open goes (~Open).
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
