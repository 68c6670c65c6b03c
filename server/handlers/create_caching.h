// What a CREATE grants besides the open itself, and the CREATE that re-binds a durable open:
//   - the oplock or lease (MS-SMB2 3.3.5.9 "Oplock Acquisition", 3.3.5.9.8, 3.3.5.9.11), from
//     the FileTable;
//   - durability (3.3.5.9.6 DHnQ, 3.3.5.9.10 DH2Q): only with a batch oplock or a lease with
//     HANDLE caching, as Windows grants it; never persistence (no share is continuously
//     available);
//   - the durable reconnect (3.3.5.9.7 DHnC, 3.3.5.9.12 DH2C), which re-binds a disconnected
//     durable open to the requesting session, tree and connection.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>

#include "protocol/create.h"
#include "server/handlers/create_contexts.h"
#include "server/handlers/handler.h"
#include "server/state/file_table.h"
#include "server/state/open.h"

namespace daxsmbd::server::handlers {

namespace asio = boost::asio;

// The lease a CREATE asks for, when it asks for one this connection may get (OplockLevel LEASE,
// an RqLs context, leasing negotiated).
std::optional<LeaseId> requested_lease(const RequestContext& ctx,
                                       const protocol::CreateRequest& req,
                                       const CreateContextRequests& contexts);

// Grants the oplock or lease and durability of registered open `open`; fills the response's
// OplockLevel and `grants`. InvalidParameter when the lease key belongs to another file.
Status grant_caching(RequestContext& ctx, const protocol::CreateRequest& req,
                     const CreateContextRequests& contexts, const std::shared_ptr<Open>& open,
                     uint8_t& level, CreateGrants& grants);

// A CREATE with DHnC or DH2C: re-binds the disconnected durable open it names and writes the
// response. OBJECT_NAME_NOT_FOUND when there is no such open or it does not match (CreateGuid,
// lease key, client), ACCESS_DENIED when it belongs to another user.
asio::awaitable<NtStatus> reconnect_durable(RequestContext& ctx, const protocol::CreateRequest& req,
                                            const CreateContextRequests& contexts);

// The replay key of a CREATE with a DH2Q context (MS-SMB2 3.3.5.9.10).
std::optional<ReplayKey> replay_key(const RequestContext& ctx, const CreateContextRequests& c);

// A DH2Q CREATE whose CreateGuid names an open this client may still replay, or a CREATE in
// progress (MS-SMB2 3.3.5.9.10): `open` for a replay (SMB2_FLAGS_REPLAY_OPERATION) to answer
// with respond_replayed() instead of opening the file again; `refusal` when the CREATE fails
// (FILE_NOT_AVAILABLE: the original is in progress; DUPLICATE_OBJECTID: not a replay;
// ACCESS_DENIED: asks for another lease); neither for a CREATE like any other.
struct ReplayMatch {
    std::shared_ptr<Open> open;
    NtStatus refusal = NtStatus::Success;
};
ReplayMatch replayed_create(RequestContext& ctx, const CreateContextRequests& contexts);
asio::awaitable<NtStatus> respond_replayed(RequestContext& ctx, const protocol::CreateRequest& req,
                                           const CreateContextRequests& contexts,
                                           const std::shared_ptr<Open>& open);

// MS-SMB2 3.3.5.9.13: a CREATE with an AppInstanceId closes the opens of the same file name on
// the same share that carry that AppInstanceId from another client (an earlier instance of the
// application, failed over), before it opens anything. On 3.1.1 an APP_INSTANCE_VERSION not
// newer than such an open's refuses the CREATE instead: STATUS_FILE_FORCED_CLOSED, nothing
// closed. Returns how many were closed.
Result<size_t> close_earlier_app_instance(RequestContext& ctx,
                                          const CreateContextRequests& contexts,
                                          std::string_view name);

// A CREATE response's times, sizes and attributes from the open file's (create.cpp).
void fill_times(protocol::CreateResponse& r, const vfs::FileInfo& i);

// The durable owner of the session's opens (MS-SMB2 3.3.1.10 Open.DurableOwner).
std::string durable_owner(const Session& s);

}  // namespace daxsmbd::server::handlers
