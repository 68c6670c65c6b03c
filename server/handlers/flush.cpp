// FLUSH (MS-SMB2 3.3.5.11).
#include "protocol/flush.h"

#include <unistd.h>

#include <cerrno>

#include "protocol/access_mask.h"
#include "server/connection.h"
#include "server/errno_status.h"
#include "server/handlers/handlers.h"
#include "server/log.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace am = protocol::access_mask;

asio::awaitable<NtStatus> flush(RequestContext& ctx) {
    auto req = FlushRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    std::shared_ptr<Open> open = *found;

    // A named pipe has nothing buffered on the server side: what was written has already been
    // consumed by the RPC endpoint.
    if (open->pipe) {
        FlushResponse{}.serialize(ctx.body());
        co_return NtStatus::Success;
    }
    // MS-SMB2 3.3.5.11: files need FILE_WRITE_DATA or FILE_APPEND_DATA, directories
    // FILE_ADD_FILE or FILE_ADD_SUBDIRECTORY (the same two bits).
    if (!(open->granted_access & (am::kFileWriteData | am::kFileAppendData))) {
        log_info("conn ", ctx.conn.id, " ", ctx.conn.transport->peer(), ": FLUSH of '", open->path,
                 "' without write access refused");
        co_return NtStatus::AccessDenied;
    }
    const int fd = open->fd;
    // DAX: the writes made without write-through are still in the CPU caches; flush them. The
    // fsync still follows for what the block path wrote (fallbacks) and for metadata.
    if (open->dax_map && !open->dax_map->persist())
        log_info("DAX FLUSH of '", open->path, "': some ranges could not be flushed");
    int err = co_await ctx.blocking([fd] { return ::fsync(fd) == 0 ? 0 : errno; });
    if (err) co_return errno_to_status(err);
    FlushResponse{}.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
