#include "server/handlers/rdma_transfer.h"

#include "protocol/read.h"
#include "server/connection_state.h"
#include "server/handlers/handler.h"
#include "server/transport.h"

namespace daxsmbd::server::handlers {

using namespace protocol;

Result<RdmaTransfer> rdma_transfer(RequestContext& ctx, uint32_t ch, Bytes channel_info,
                                   uint64_t length) {
    auto refuse = [&](const char* why) {
        ctx.log().debug(command_name(ctx.header.command), " with RDMA channel ", ch,
                        " refused: ", why);
        return Error(NtStatus::InvalidParameter);
    };
    RdmaTransfer t;
    if (ch == channel::kRdmaV1Invalidate) {
        if (uint16_t(ctx.dialect()) < uint16_t(Dialect::Smb302))
            return refuse("RDMA_V1_INVALIDATE needs 3.0.2 or later");
        t.invalidate = true;
    } else if (ch != channel::kRdmaV1) {
        return refuse("not a channel this server offers");
    }
    if (!ctx.conn.rdma) return refuse("not an RDMA connection");
    if (channel_info.empty()) return refuse("no channel info");
    auto list = smbdirect::parse_buffer_descriptors(channel_info);
    if (!list) return refuse("channel info is not a list of buffer descriptors");
    if (list->size() > kMaxRdmaBuffers) return refuse("too many buffer descriptors");
    if ((*list)[0].length == 0) return refuse("the first buffer is empty");
    if (smbdirect::total_length(*list) < length) return refuse("the buffers are too small");
    if (length > ctx.conn.rdma->max_read_write_size())
        return refuse("longer than the connection's MaxReadWriteSize");
    t.buffers = std::move(*list);
    return t;
}

}  // namespace daxsmbd::server::handlers
