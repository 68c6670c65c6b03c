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
//   DHnQ / DH2Q / DHnC / DH2C / RqLs  not granted: the response carries no context and oplock
//                            level NONE (durable handles and leases come with their own issue;
//                            3.3.5.9.6 lets a server that does not grant durability ignore them)
//   anything else            ignored (MS-SMB2 3.3.5.9: unknown contexts are not an error)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/create.h"
#include "protocol/create_contexts.h"
#include "protocol/security_descriptor.h"
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
    bool query_on_disk_id = false;  // QFid
};

// Decodes the contexts this server acts on. A context present with a malformed body (wrong
// DataLength, broken EA chain) fails with STATUS_INVALID_PARAMETER (MS-SMB2 3.3.5.9
// "Create Context Validation").
Result<CreateContextRequests> decode_create_contexts(const protocol::CreateContextList& list);

// Response contexts (MS-SMB2 3.3.5.9.5, 2.2.14.2.9). `maximal_access` is what the user may do
// with the opened object.
protocol::CreateContextList encode_create_response_contexts(const CreateContextRequests& req,
                                                            uint32_t maximal_access,
                                                            const vfs::FileInfo& info);

}  // namespace daxsmbd::server::handlers
