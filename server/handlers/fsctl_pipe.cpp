// The named-pipe FSCTLs (MS-SMB2 3.3.5.15.3, 3.3.5.15.4, 3.3.5.15.10), on the IPC$ share only.
#include <algorithm>
#include <cstdint>

#include "server/handlers/fsctl.h"
#include "server/rpcpipe/pipe_endpoint.h"

namespace daxsmbd::server::handlers::fsctls {

using namespace protocol;

namespace {

// FILE_PIPE_PEEK_BUFFER (MS-FSCC 2.3.49): NamedPipeState, ReadDataAvailable, NumberOfMessages,
// MessageLength, then the data.
constexpr size_t kPipePeekFixedSize = 16;
constexpr uint32_t kFilePipeConnectedState = 3;

}  // namespace

NtStatus pipe_transceive(RequestContext& ctx, const IoctlRequest& req, Open& open) {
    auto out = open.local.pipe->transceive(req.input, req.max_output_response);
    if (!out) return out.status();
    // The reply did not fit: its first part now, the rest by READ (MS-SMB2 3.3.5.15.3 with the
    // message-mode rules of 3.3.5.12).
    const NtStatus st =
        open.local.pipe->message_continues() ? NtStatus::BufferOverflow : NtStatus::Success;
    return reply(ctx, req, open.id, *out, st);
}

NtStatus pipe_peek(RequestContext& ctx, const IoctlRequest& req, Open& open) {
    if (req.max_output_response < kPipePeekFixedSize) return NtStatus::BufferTooSmall;
    auto p = open.local.pipe->peek(req.max_output_response - kPipePeekFixedSize);
    ByteVector out;
    ByteWriter w(out);
    w.u32(kFilePipeConnectedState);
    w.u32(uint32_t(std::min<size_t>(p.bytes_available, UINT32_MAX)));
    w.u32(uint32_t(std::min<size_t>(p.messages, UINT32_MAX)));
    w.u32(uint32_t(std::min<size_t>(p.message_remaining, UINT32_MAX)));
    w.bytes(p.data);
    // A message longer than the buffer: the peek shows its beginning (MS-FSCC 2.3.49).
    const NtStatus st =
        p.data.size() < p.message_remaining ? NtStatus::BufferOverflow : NtStatus::Success;
    return reply(ctx, req, open.id, out, st);
}

NtStatus pipe_wait(RequestContext& ctx, const IoctlRequest& req) {
    // FSCTL_PIPE_WAIT_REQUEST (MS-FSCC 2.3.31): Timeout(8) NameLength(4) TimeoutSpecified(1)
    // Padding(1) Name. A malformed name is OBJECT_NAME_NOT_FOUND (MS-SMB2 3.3.5.15.10).
    ByteReader r(req.input);
    if (!r.skip(8)) return NtStatus::ObjectNameNotFound;
    auto len = r.u32();
    if (!len || !r.skip(2)) return NtStatus::ObjectNameNotFound;
    auto raw = r.bytes(*len);
    if (!raw) return NtStatus::ObjectNameNotFound;
    auto name = utf16le_to_utf8(*raw);
    if (!name || !rpcpipe::pipe_exists(*name)) return NtStatus::ObjectNameNotFound;
    // Our pipes take any number of connections: one is always available at once.
    return reply(ctx, req, kPlaceholderFileId, {});
}

}  // namespace daxsmbd::server::handlers::fsctls
