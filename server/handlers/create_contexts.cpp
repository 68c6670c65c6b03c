// Create contexts of CREATE (MS-SMB2 3.3.5.9.x); see create_contexts.h for what is done with each.
#include "server/handlers/create_contexts.h"

namespace daxsmbd::server::handlers {

using namespace protocol;

namespace {

Status decode_durable_contexts(const CreateContextList& list, CreateContextRequests& out) {
    namespace n = create_context_name;
    const CreateContext* dhnq = list.find(Bytes(n::kDurableHandleRequest));
    const CreateContext* dhnc = list.find(Bytes(n::kDurableHandleReconnect));
    const CreateContext* dh2q = list.find(Bytes(n::kDurableHandleRequestV2));
    const CreateContext* dh2c = list.find(Bytes(n::kDurableHandleReconnectV2));
    if (dhnq) DAX_CHECK(DurableHandleRequest::decode(dhnq->data));
    if (dhnc) {
        DAX_TRY(auto r, DurableHandleReconnect::decode(dhnc->data));
        out.reconnect_v1 = r.file_id;
    }
    if (dh2q) {
        DAX_TRY(auto r, DurableHandleRequestV2::decode(dh2q->data));
        out.durable_v2 = r;
    }
    if (dh2c) {
        DAX_TRY(auto r, DurableHandleReconnectV2::decode(dh2c->data));
        out.reconnect_v2 = r;
    }
    // MS-SMB2 3.3.5.9.10 / 3.3.5.9.12: a v2 context next to any v1 one, or two kinds of one
    // version, is INVALID_PARAMETER. A DHnQ next to a DHnC is the reconnect (3.3.5.9.7).
    if ((dh2q || dh2c) && (dhnq || dhnc)) return Error(NtStatus::InvalidParameter);
    if (dh2q && dh2c) return Error(NtStatus::InvalidParameter);
    out.durable_v1 = dhnq && !dhnc;
    return {};
}

}  // namespace

Result<CreateContextRequests> decode_create_contexts(const CreateContextList& list) {
    namespace n = create_context_name;
    CreateContextRequests out;
    if (const CreateContext* c = list.find(Bytes(n::kEaBuffer))) {
        DAX_TRY(auto ea, EaBufferContext::decode(c->data));
        std::vector<vfs::Ea> eas;
        eas.reserve(ea.entries.size());
        for (auto& e : ea.entries)
            eas.push_back(vfs::Ea{e.name, e.value, e.flags});
        out.eas = std::move(eas);
    }
    if (const CreateContext* c = list.find(Bytes(n::kSdBuffer))) {
        DAX_TRY(auto sd, SecurityDescriptor::parse(c->data));
        out.security_descriptor = std::move(sd);
    }
    if (const CreateContext* c = list.find(Bytes(n::kAllocationSize))) {
        DAX_TRY(auto alloc, AllocationSizeContext::decode(c->data));
        out.allocation_size = alloc.allocation_size;
    }
    if (const CreateContext* c = list.find(Bytes(n::kTimewarpToken))) {
        DAX_TRY(auto twrp, TimewarpToken::decode(c->data));
        out.timewarp = twrp.timestamp;
    }
    if (const CreateContext* c = list.find(Bytes(n::kQueryMaximalAccess))) {
        DAX_TRY(auto mxac, MaximalAccessRequest::decode(c->data));
        out.query_maximal_access = true;
        out.maximal_access_timestamp = mxac.timestamp;
    }
    // QFid requests carry no data; whatever they carry is ignored (MS-SMB2 2.2.13.2.9).
    out.query_on_disk_id = list.find(Bytes(n::kQueryOnDiskId)) != nullptr;
    if (const CreateContext* c = list.find(Bytes(n::kRequestLease))) {
        DAX_TRY(auto lease, LeaseContext::decode(c->data));
        out.lease = lease;
    }
    DAX_CHECK(decode_durable_contexts(list, out));
    if (const CreateContext* c = list.find(Bytes(n::kAppInstanceId))) {
        DAX_TRY(auto app, AppInstanceIdContext::decode(c->data));
        out.app_instance_id = app.app_instance_id;
    }
    if (const CreateContext* c = list.find(Bytes(n::kAppInstanceVersion))) {
        DAX_TRY(auto v, AppInstanceVersionContext::decode(c->data));
        out.app_instance_version = AppInstanceVersion{v.version_high, v.version_low};
    }
    return out;
}

CreateContextList encode_create_response_contexts(const CreateContextRequests& req,
                                                  uint32_t maximal_access,
                                                  const vfs::FileInfo& info,
                                                  const CreateGrants& grants) {
    CreateContextList out;
    if (grants.lease) out.add(*grants.lease);
    if (grants.durable_v1) out.add(DurableHandleResponse{});
    if (grants.durable_v2) out.add(*grants.durable_v2);
    if (req.query_maximal_access) {
        MaximalAccessResponse r;
        // MS-SMB2 3.3.5.9.5: a client that already knows the answer for this ChangeTime gets
        // STATUS_NONE_MAPPED and no access mask.
        if (req.maximal_access_timestamp && *req.maximal_access_timestamp == info.change_time) {
            r.query_status = NtStatus::NoneMapped;
            r.maximal_access = 0;
        } else {
            r.maximal_access = maximal_access;
        }
        out.add(r);
    }
    if (req.query_on_disk_id) {
        // MS-SMB2 2.2.14.2.9: DiskFileId is the file's id on the volume (the inode, as
        // FileInternalInformation reports it), VolumeId the volume it lives on.
        QueryOnDiskIdResponse r;
        r.disk_file_id = info.file_id;
        r.volume_id = info.device;
        out.add(r);
    }
    return out;
}

}  // namespace daxsmbd::server::handlers
