// The FSCTL families of IOCTL (MS-SMB2 3.3.5.15), one file each: ioctl.cpp checks the request
// (FileId, MaxTransactSize) and dispatches by control code to these.
//   fsctl_network.cpp  VALIDATE_NEGOTIATE_INFO, QUERY_NETWORK_INTERFACE_INFO,
//   LMR_REQUEST_RESILIENCY fsctl_pipe.cpp     PIPE_TRANSCEIVE, PIPE_PEEK, PIPE_WAIT fsctl_copy.cpp
//   SRV_REQUEST_RESUME_KEY, SRV_COPYCHUNK(_WRITE), DUPLICATE_EXTENTS_TO_FILE fsctl_file.cpp
//   SET_SPARSE, SET_ZERO_DATA, QUERY_ALLOCATED_RANGES, object ids, compression
// Each returns the status of the IOCTL response; a success has written the response body.
#pragma once

#include <memory>

#include "protocol/ioctl.h"
#include "server/handlers/handler.h"

namespace daxsmbd::server::handlers::fsctls {

// Writes the IOCTL response (MS-SMB2 2.2.32): CtlCode of the request, InputCount 0, the output
// (never more than MaxOutputResponse; the callers make sure), Flags 0.
NtStatus reply(RequestContext& ctx, const protocol::IoctlRequest& req, const protocol::FileId& fid,
               protocol::Bytes output, NtStatus status = NtStatus::Success);

// ---- fsctl_network.cpp ----

// FSCTL_VALIDATE_NEGOTIATE_INFO (MS-SMB2 3.3.5.15.12): every failure disconnects.
NtStatus validate_negotiate(RequestContext& ctx, const protocol::IoctlRequest& req);
// FSCTL_QUERY_NETWORK_INTERFACE_INFO (MS-SMB2 3.3.5.15.11).
asio::awaitable<NtStatus> query_network_interface_info(RequestContext& ctx,
                                                       const protocol::IoctlRequest& req);
// FSCTL_LMR_REQUEST_RESILIENCY (MS-SMB2 3.3.5.15.9).
NtStatus request_resiliency(RequestContext& ctx, const protocol::IoctlRequest& req, Open& open);

// ---- fsctl_pipe.cpp (MS-SMB2 3.3.5.15.3, 3.3.5.15.4, 3.3.5.15.10) ----

NtStatus pipe_transceive(RequestContext& ctx, const protocol::IoctlRequest& req, Open& open);
NtStatus pipe_peek(RequestContext& ctx, const protocol::IoctlRequest& req, Open& open);
NtStatus pipe_wait(RequestContext& ctx, const protocol::IoctlRequest& req);

// ---- fsctl_copy.cpp (MS-SMB2 3.3.5.15.5, 3.3.5.15.6, 3.3.5.15.17) ----

NtStatus request_resume_key(RequestContext& ctx, const protocol::IoctlRequest& req, Open& open);
asio::awaitable<NtStatus> copychunk(RequestContext& ctx, const protocol::IoctlRequest& req,
                                    std::shared_ptr<Open> dest);
asio::awaitable<NtStatus> duplicate_extents(RequestContext& ctx, const protocol::IoctlRequest& req,
                                            std::shared_ptr<Open> dest);

// ---- fsctl_file.cpp (MS-FSA 2.1.5.10) ----

asio::awaitable<NtStatus> set_sparse(RequestContext& ctx, const protocol::IoctlRequest& req,
                                     std::shared_ptr<Open> open);
asio::awaitable<NtStatus> set_zero_data(RequestContext& ctx, const protocol::IoctlRequest& req,
                                        std::shared_ptr<Open> open);
asio::awaitable<NtStatus> query_allocated_ranges(RequestContext& ctx,
                                                 const protocol::IoctlRequest& req,
                                                 std::shared_ptr<Open> open);
NtStatus object_id(RequestContext& ctx, const protocol::IoctlRequest& req, const Open& open);
NtStatus get_compression(RequestContext& ctx, const protocol::IoctlRequest& req, const Open& open);
NtStatus set_compression(RequestContext& ctx, const protocol::IoctlRequest& req, const Open& open);

}  // namespace daxsmbd::server::handlers::fsctls
