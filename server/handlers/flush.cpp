// FLUSH (MS-SMB2 3.3.5.11): a real fsync, through the open's data path (the io_uring block
// path submits IORING_OP_FSYNC on this loop's ring; the DAX path first flushes the CPU caches
// over what was written into the mapping).
#include "protocol/flush.h"

#include "protocol/access_mask.h"
#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/io/data_path.h"
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
    if (open->local.pipe) {
        FlushResponse{}.serialize(ctx.body());
        co_return NtStatus::Success;
    }
    // MS-SMB2 3.3.5.11: files need FILE_WRITE_DATA or FILE_APPEND_DATA, directories
    // FILE_ADD_FILE or FILE_ADD_SUBDIRECTORY (the same two bits).
    if (!(open->granted_access & (am::kFileWriteData | am::kFileAppendData))) {
        ctx.log().refusal("FLUSH of '", open->local.path, "' without write access refused");
        co_return NtStatus::AccessDenied;
    }
    std::shared_ptr<io::DataPath> data = io::data_path_of(*open);
    auto st = co_await data->flush(ctx.caller(*open));
    if (!st) co_return st.status();
    FlushResponse{}.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
