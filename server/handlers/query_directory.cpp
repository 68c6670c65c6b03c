// QUERY_DIRECTORY (MS-SMB2 3.3.5.18, MS-FSA 2.1.5.6.3). The enumeration state is the open's
// DirectoryCursor (created by the first query, restarted by SMB2_RESTART_SCANS, recreated by
// SMB2_REOPEN) and the pattern it runs with (Open.QueryPattern); the listing itself is
// info::list_directory().

#include "protocol/query_directory.h"
#include "protocol/access_mask.h"
#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/handlers/info_classes.h"
#include "server/log.h"
#include "server/state/share.h"
#include "server/vfs/dir.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace qdf = protocol::query_directory_flags;

asio::awaitable<NtStatus> query_directory(RequestContext& ctx) {
    auto req = QueryDirectoryRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    std::shared_ptr<Open> open = *found;

    // MS-SMB2 3.3.5.18: not a directory (a pipe, a file) -> INVALID_PARAMETER, also with
    // SMB2_REOPEN (the implementation-specific code of <406>; Windows answers the same).
    if (open->local.pipe || !open->local.is_directory || !ctx.tree->share || !ctx.tree->share->root)
        co_return NtStatus::InvalidParameter;
    if (req->output_buffer_length > ctx.conn.state.max_transact_size)
        co_return NtStatus::InvalidParameter;
    if (!(open->granted_access & access_mask::kFileListDirectory)) {
        ctx.log().debug("QUERY_DIRECTORY on '", open->local.path,
                        "' without LIST_DIRECTORY access");
        co_return NtStatus::AccessDenied;
    }
    if (!DirectoryInfoWriter::supported(req->file_information_class))
        co_return NtStatus::InvalidInfoClass;
    if (auto st = info::check_pattern(req->pattern); !st) co_return st.status();

    std::shared_ptr<vfs::ShareRoot> root = ctx.tree->share->root;
    const uint8_t flags = req->flags;
    auto result = co_await ctx.blocking([&]() -> Result<ByteVector> {
        std::lock_guard lk(open->mu);
        bool first = false;
        if (!open->local.dir || (flags & qdf::kReopen)) {
            // First query, or SMB2_REOPEN: a new enumeration with this request's pattern.
            DAX_TRY(auto cursor, vfs::DirectoryCursor::open(*root, open->local.path));
            open->local.dir = std::make_unique<vfs::DirectoryCursor>(std::move(cursor));
            open->local.dir_pattern = req->pattern.empty() ? "*" : req->pattern;
            first = true;
        } else if (flags & qdf::kRestartScans) {
            // MS-FSA 2.1.5.6.3: a restart takes a new pattern when one is given.
            open->local.dir->rewind();
            if (!req->pattern.empty()) open->local.dir_pattern = req->pattern;
        }
        // SMB2_INDEX_SPECIFIED: FileIndex is ignored (MS-SMB2 3.3.5.18 <410>, info_classes.h).
        info::ListRequest lr;
        lr.info_class = req->file_information_class;
        lr.pattern = open->local.dir_pattern;
        lr.output_buffer_length = req->output_buffer_length;
        lr.return_single_entry = flags & qdf::kReturnSingleEntry;
        lr.first_query = first;
        lr.root = root.get();
        return info::list_directory(*open->local.dir, lr);
    });
    if (!result) co_return result.status();

    QueryDirectoryResponse resp;
    resp.buffer = *result;
    resp.serialize(ctx.body());
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
