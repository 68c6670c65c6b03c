// The RDMA channel of a READ or WRITE (MS-SMB2 2.2.19/2.2.21 Channel and channel info;
// 3.3.5.12/3.3.5.13): which of the client's buffers the server writes into or reads from.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/result.h"
#include "smbdirect/smbd_codec.h"

namespace daxsmbd::server {
class RequestContext;
}

namespace daxsmbd::server::handlers {

struct RdmaTransfer {
    std::vector<smbdirect::BufferDescriptorV1> buffers;
    // SMB2_CHANNEL_RDMA_V1_INVALIDATE: the response invalidates the first buffer's token.
    bool invalidate = false;
};

// The most descriptors one request may carry: the Linux client sends one (one fast-registered
// region per I/O), Windows a few; more is refused rather than walked.
constexpr size_t kMaxRdmaBuffers = 64;

// Validates the RDMA channel of a request moving `length` bytes: a channel the dialect knows
// (RDMA_V1, or RDMA_V1_INVALIDATE from 3.0.2 on), an RDMA connection, channel info that is a
// whole, nonempty list of at most kMaxRdmaBuffers descriptors whose first one is not empty and
// which together describe at least `length` bytes, and `length` within the connection's
// MaxReadWriteSize. Anything else is STATUS_INVALID_PARAMETER (MS-SMB2 3.3.5.12/3.3.5.13);
// RDMA_TRANSFORM (needs the RDMA transform capability, not offered) too.
Result<RdmaTransfer> rdma_transfer(RequestContext& ctx, uint32_t channel,
                                   protocol::Bytes channel_info, uint64_t length);

}  // namespace daxsmbd::server::handlers
