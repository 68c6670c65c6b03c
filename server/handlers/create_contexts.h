// Create contexts the CREATE handler understands (MS-SMB2 3.3.5.9.1 - 3.3.5.9.13), decoded from the
// request once, and the response contexts built from the outcome.
//
// What daxsmbd does with each:
//   ExtA  EA_BUFFER          applied to a created / overwritten file through vfs EAs (3.3.5.9.1)
//   SecD  SD_BUFFER          parsed (malformed: STATUS_INVALID_SECURITY_DESCR) and stored on a
//                            created file, completed as security_info.h says (3.3.5.9.2)
//   AlSi  ALLOCATION_SIZE    fallocate(KEEP_SIZE) on a created / overwritten file; file systems
//                            without fallocate are ignored, ENOSPC is DISK_FULL (3.3.5.9.3)
//   TWrp  TIMEWARP_TOKEN     no snapshots are served: OBJECT_NAME_NOT_FOUND (3.3.5.9.4)
//   MxAc  QUERY_MAXIMAL_ACCESS  answered (3.3.5.9.5)
//   QFid  QUERY_ON_DISK_ID   answered: inode + st_dev (MS-SMB2 2.2.14.2.9)
//   RqLs  REQUEST_LEASE v1/v2  with OplockLevel LEASE on a connection that negotiated leasing:
//                            the lease the FileTable grants, in the request's version (3.3.5.9.8,
//                            3.3.5.9.11)
//   DHnQ / DH2Q              durable handle v1 / v2 requests (3.3.5.9.6, 3.3.5.9.10): granted
//                            with a batch oplock or a HANDLE caching lease (v2: or persistence,
//                            which no share offers), answered with the response context
//   DHnC / DH2C              durable reconnects (3.3.5.9.7, 3.3.5.9.12): the CREATE re-binds a
//                            disconnected durable open instead of opening anything
//   APP_INSTANCE_ID          an open of the same name with the same AppInstanceId (a client's
//                            earlier instance, e.g. a failed-over VM) is closed first (3.3.5.9.13)
//   anything else            ignored (MS-SMB2 3.3.5.9: unknown contexts are not an error)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/create.h"
#include "protocol/create_contexts.h"
#include "protocol/security_descriptor.h"
#include "server/state/open.h"
#include "server/vfs/ea.h"
#include "server/vfs/metadata.h"

namespace daxsmbd::server::handlers {

struct CreateContextRequests {
    std::optional<std::vector<vfs::Ea>> eas;                          // ExtA
    std::optional<protocol::SecurityDescriptor> security_descriptor;  // SecD
    std::optional<uint64_t> allocation_size;                          // AlSi
    std::optional<int64_t> timewarp;                                  // TWrp
    bool query_maximal_access = false;                                // MxAc
    std::optional<int64_t> maximal_access_timestamp;
    bool query_on_disk_id = false;                                   // QFid
    std::optional<protocol::LeaseContext> lease;                     // RqLs
    bool durable_v1 = false;                                         // DHnQ
    std::optional<protocol::DurableHandleRequestV2> durable_v2;      // DH2Q
    std::optional<protocol::FileId> reconnect_v1;                    // DHnC
    std::optional<protocol::DurableHandleReconnectV2> reconnect_v2;  // DH2C
    std::optional<protocol::Guid> app_instance_id;                   // APP_INSTANCE_ID
    std::optional<AppInstanceVersion> app_instance_version;          // APP_INSTANCE_VERSION
    bool reconnect() const { return reconnect_v1 || reconnect_v2; }
};

// What the CREATE granted that has a response context.
struct CreateGrants {
    std::optional<protocol::LeaseContext> lease;
    bool durable_v1 = false;
    std::optional<protocol::DurableHandleResponseV2> durable_v2;
};

// Decodes the contexts this server acts on. A context present with a malformed body (wrong
// DataLength, broken EA chain), or durable contexts that cannot go together (3.3.5.9.6 -
// 3.3.5.9.12: v1 with v2, a request with a reconnect), fail with STATUS_INVALID_PARAMETER
// (MS-SMB2 3.3.5.9 "Create Context Validation").
Result<CreateContextRequests> decode_create_contexts(const protocol::CreateContextList& list);

// Response contexts (MS-SMB2 3.3.5.9.5, 2.2.14.2.9). `maximal_access` is what the user may do
// with the opened object.
protocol::CreateContextList encode_create_response_contexts(const CreateContextRequests& req,
                                                            uint32_t maximal_access,
                                                            const vfs::FileInfo& info,
                                                            const CreateGrants& grants = {});

}  // namespace daxsmbd::server::handlers
