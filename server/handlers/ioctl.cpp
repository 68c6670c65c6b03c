// IOCTL (MS-SMB2 3.3.5.15): the FSCTLs the SMB2 server answers itself (validate negotiate,
// pipes, server-side copy, snapshots, DFS, network interfaces) and the file-system controls of
// MS-FSA 2.1.5.10 that Linux can express (sparse files, zeroing, allocated ranges, object ids,
// reflinks). Every other FSCTL gets what Windows answers for one its file system does not
// implement: STATUS_INVALID_DEVICE_REQUEST for the MS-FSCC codes, STATUS_NOT_SUPPORTED for codes
// MS-FSCC does not define (MS-SMB2 3.3.5.15.8). The FSCTL families are in fsctl_*.cpp
// (fsctl.h); this file checks the request and dispatches by control code.
#include "protocol/ioctl.h"

#include <algorithm>
#include <iterator>
#include <memory>

#include "server/connection_state.h"
#include "server/handlers/fsctl.h"
#include "server/handlers/handlers.h"
#include "server/log.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
using fsctls::reply;

namespace {

bool is_all_ones(const FileId& id) {
    return id.persistent == ~0ull && id.volatile_ == ~0ull;
}

// The FSCTLs whose FileId must be {all ones} because they are not about a file
// (MS-SMB2 3.3.5.15).
bool fsctl_without_file(uint32_t code) {
    return code == fsctl::kDfsGetReferrals || code == fsctl::kDfsGetReferralsEx ||
           code == fsctl::kQueryNetworkInterfaceInfo || code == fsctl::kValidateNegotiateInfo ||
           code == fsctl::kPipeWait;
}

// The MS-FSCC 2.3 control codes (pass-through FSCTLs a file system may implement).
bool is_fscc_code(uint32_t code) {
    static constexpr uint32_t kCodes[] = {
        fsctl::kCreateOrGetObjectId,
        fsctl::kDeleteObjectId,
        fsctl::kDeleteReparsePoint,
        fsctl::kDuplicateExtentsToFile,
        fsctl::kDuplicateExtentsToFileEx,
        fsctl::kFilesystemGetStatistics,
        fsctl::kFileLevelTrim,
        fsctl::kFindFilesBySid,
        fsctl::kGetCompression,
        fsctl::kGetIntegrityInformation,
        fsctl::kGetNtfsVolumeData,
        fsctl::kGetRefsVolumeData,
        fsctl::kGetObjectId,
        fsctl::kGetReparsePoint,
        fsctl::kGetRetrievalPointerCount,
        fsctl::kGetRetrievalPointers,
        fsctl::kGetRetrievalPointersAndRefcount,
        fsctl::kIsPathnameValid,
        fsctl::kLmrSetLinkTrackingInformation,
        fsctl::kMarkHandle,
        fsctl::kOffloadRead,
        fsctl::kOffloadWrite,
        fsctl::kQueryAllocatedRanges,
        fsctl::kQueryFatBpb,
        fsctl::kQueryFileRegions,
        fsctl::kQueryOnDiskVolumeInfo,
        fsctl::kQuerySparingInfo,
        fsctl::kReadFileUsnData,
        fsctl::kRecallFile,
        fsctl::kRefsStreamSnapshotManagement,
        fsctl::kSetCompression,
        fsctl::kSetDefectManagement,
        fsctl::kSetEncryption,
        fsctl::kSetIntegrityInformation,
        fsctl::kSetIntegrityInformationEx,
        fsctl::kSetObjectId,
        fsctl::kSetObjectIdExtended,
        fsctl::kSetReparsePoint,
        fsctl::kSetSparse,
        fsctl::kSetZeroData,
        fsctl::kSetZeroOnDeallocation,
        fsctl::kSisCopyfile,
        fsctl::kWriteUsnCloseRecord,
    };
    return std::find(std::begin(kCodes), std::end(kCodes), code) != std::end(kCodes);
}

}  // namespace

NtStatus fsctls::reply(RequestContext& ctx, const IoctlRequest& req, const FileId& fid,
                       Bytes output, NtStatus status) {
    IoctlResponse r;
    r.ctl_code = req.ctl_code;
    r.file_id = fid;
    r.output = output;
    r.serialize(ctx.body());
    return status;
}

asio::awaitable<NtStatus> ioctl(RequestContext& ctx) {
    auto req = IoctlRequest::parse(ctx.msg);
    if (!req) co_return req.status();

    // MS-SMB2 3.3.5.15: only FSCTLs travel over SMB2.
    if (req->flags != ioctl_flags::kIsFsctl) co_return NtStatus::NotSupported;
    const uint32_t code = req->ctl_code;
    std::shared_ptr<Open> open;
    if (fsctl_without_file(code)) {
        if (!is_all_ones(req->file_id)) co_return NtStatus::InvalidParameter;
    } else {
        auto found = ctx.find_open(req->file_id);
        if (!found) co_return found.status();
        open = std::move(*found);
    }
    // MS-SMB2 3.3.5.15: nothing larger than Connection.MaxTransactSize.
    const uint32_t max_transact = ctx.conn.state.max_transact_size;
    if (req->input.size() > max_transact || req->max_input_response > max_transact ||
        req->max_output_response > max_transact)
        co_return NtStatus::InvalidParameter;

    switch (code) {
        case fsctl::kValidateNegotiateInfo:
            co_return fsctls::validate_negotiate(ctx, *req);
        case fsctl::kQueryNetworkInterfaceInfo:
            co_return co_await fsctls::query_network_interface_info(ctx, *req);
        case fsctl::kDfsGetReferrals:
        case fsctl::kDfsGetReferralsEx:
            // MS-SMB2 3.3.5.15.2: IsDfsCapable is FALSE.
            co_return NtStatus::FsDriverRequired;
        case fsctl::kPipeWait:
            if (!ctx.tree->is_ipc()) co_return NtStatus::NotSupported;
            co_return fsctls::pipe_wait(ctx, *req);
        case fsctl::kPipeTransceive:
        case fsctl::kPipePeek:
            // MS-SMB2 3.3.5.15.3 / .4: only on the named pipe share.
            if (!ctx.tree->is_ipc() || !open->local.pipe) co_return NtStatus::NotSupported;
            co_return code == fsctl::kPipeTransceive ? fsctls::pipe_transceive(ctx, *req, *open)
                                                     : fsctls::pipe_peek(ctx, *req, *open);
        default:
            break;
    }

    // Everything else is about a file or directory of a disk share.
    if (open->local.pipe) co_return NtStatus::InvalidDeviceRequest;
    switch (code) {
        case fsctl::kSrvEnumerateSnapshots: {
            // MS-SMB2 3.3.5.15.1: no previous versions are kept, so the array is empty.
            if (req->max_output_response < 16) co_return NtStatus::InvalidParameter;
            ByteVector out;
            ByteWriter w(out);
            SrvSnapshotArray{}.encode(w, req->max_output_response);
            co_return reply(ctx, *req, open->id, out);
        }
        case fsctl::kSrvRequestResumeKey:
            co_return fsctls::request_resume_key(ctx, *req, *open);
        case fsctl::kSrvCopychunk:
        case fsctl::kSrvCopychunkWrite:
            co_return co_await fsctls::copychunk(ctx, *req, std::move(open));
        case fsctl::kSrvReadHash:
            co_return NtStatus::NotSupported;  // MS-SMB2 3.3.5.15.7: no BranchCache
        case fsctl::kLmrRequestResiliency:
            co_return fsctls::request_resiliency(ctx, *req, *open);
        case fsctl::kGetReparsePoint:
            // MS-FSA 2.1.5.10.14: nothing here is a reparse point (symlinks are followed inside
            // the share and never opened as such).
            co_return NtStatus::NotAReparsePoint;
        case fsctl::kSetSparse:
            co_return co_await fsctls::set_sparse(ctx, *req, std::move(open));
        case fsctl::kSetZeroData:
            co_return co_await fsctls::set_zero_data(ctx, *req, std::move(open));
        case fsctl::kQueryAllocatedRanges:
            co_return co_await fsctls::query_allocated_ranges(ctx, *req, std::move(open));
        case fsctl::kCreateOrGetObjectId:
        case fsctl::kGetObjectId:
            co_return fsctls::object_id(ctx, *req, *open);
        case fsctl::kGetCompression:
            co_return fsctls::get_compression(ctx, *req, *open);
        case fsctl::kSetCompression:
            co_return fsctls::set_compression(ctx, *req, *open);
        case fsctl::kDuplicateExtentsToFile:
            co_return co_await fsctls::duplicate_extents(ctx, *req, std::move(open));
        default:
            break;
    }
    if (debug_enabled()) ctx.log().debug("FSCTL 0x", std::hex, code, " not implemented");
    // MS-SMB2 3.3.5.15.8: an MS-FSCC control the object store does not implement is
    // STATUS_INVALID_DEVICE_REQUEST (MS-FSA 2.1.5.10, "support for this operation is
    // optional"); a code MS-FSCC does not define is STATUS_NOT_SUPPORTED.
    co_return is_fscc_code(code) ? NtStatus::InvalidDeviceRequest : NtStatus::NotSupported;
}

}  // namespace daxsmbd::server::handlers
