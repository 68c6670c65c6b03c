// READ (MS-SMB2 3.3.5.12). File data comes from the open's data path (server/io: the io_uring
// block path, completing on this loop, or on a DAX share the file's mapping) as a payload that
// the response carries after its body (server/payload.h): a pool buffer, or, when the dispatcher
// allows it, a pipe that the transport empties into the socket (server/io/splice_pipe.h).
#include "protocol/read.h"

#include <boost/asio/redirect_error.hpp>
#include <chrono>
#include <cstdint>

#include "protocol/access_mask.h"
#include "server/buffer_pool.h"
#include "server/connection_state.h"
#include "server/handlers/handlers.h"
#include "server/handlers/rdma_transfer.h"
#include "server/io/data_path.h"
#include "server/log.h"
#include "server/rpcpipe/pipe_endpoint.h"
#include "server/server.h"
#include "server/state/lock_table.h"
#include "server/transport.h"

namespace daxsmbd::server::handlers {

using namespace protocol;
namespace am = protocol::access_mask;

namespace {

// READ on a named pipe: the RPC output waiting in the endpoint. A read that finds nothing waits
// (MS-SMB2 3.3.5.12 lets a blocking-mode pipe read go async) for a WRITE on the same pipe to
// produce a reply, until the request is cancelled or the pipe closed.
asio::awaitable<NtStatus> read_pipe(RequestContext& ctx, const std::shared_ptr<Open>& open,
                                    const ReadRequest& req) {
    // MS-SMB2 3.3.5.12: unbuffered reads make no sense on a pipe (3.0.2 and later).
    if ((req.flags & read_flags::kReadUnbuffered) &&
        uint16_t(ctx.dialect()) >= uint16_t(Dialect::Smb302))
        co_return NtStatus::InvalidParameter;
    if (req.length > 0 && open->local.pipe->pending() == 0) {
        if (Status st = co_await ctx.go_async(); !st) co_return st.status();
        // Woken by a WRITE that produced output, by the CLOSE of the pipe, or by a CANCEL.
        auto wake = Wakeup::make(ctx.executor());
        ctx.pending->waiter = wake;
        open->local.pipe->set_reader_waker(wake->waker());
        while (open->local.pipe->pending() == 0) {
            if (ctx.cancelled() || ctx.server.opens.find(open->id.volatile_) != open) {
                open->local.pipe->set_reader_waker({});
                co_return ctx.cancelled() ? NtStatus::Cancelled : NtStatus::PipeBroken;
            }
            co_await wake->wait();
        }
        open->local.pipe->set_reader_waker({});
    }
    ByteVector data = open->local.pipe->read(req.length);
    ReadResponse resp;
    resp.data = Bytes(data);
    resp.serialize(ctx.body());
    // The message did not fit: the client reads the rest with further READs (MS-SMB2
    // 3.3.5.12, STATUS_BUFFER_OVERFLOW is a warning that still carries data).
    co_return open->local.pipe->message_continues() ? NtStatus::BufferOverflow : NtStatus::Success;
}

// Which data path served a READ, for the share's metrics: a spliced pipe, a DAX range or a
// copy out of the mapping, else the block path.
metrics::IoPath read_path(PayloadKind kind, const io::DataPath& data) {
    if (kind == PayloadKind::Pipe) return metrics::IoPath::Splice;
    if (kind == PayloadKind::Mapped || data.name() == "dax") return metrics::IoPath::Dax;
    return metrics::IoPath::Block;
}

}  // namespace

asio::awaitable<NtStatus> read(RequestContext& ctx) {
    auto req = ReadRequest::parse(ctx.msg);
    if (!req) co_return req.status();
    auto found = ctx.find_open(req->file_id);
    if (!found) co_return found.status();
    std::shared_ptr<Open> open = *found;

    // MS-SMB2 3.3.5.12: Length above MaxReadSize.
    if (req->length > ctx.conn.state.max_read_size) co_return NtStatus::InvalidParameter;
    // MS-SMB2 3.3.5.12: an RDMA channel names the client's buffers the data is written into.
    std::optional<RdmaTransfer> rdma;
    if (req->channel != channel::kNone) {
        auto t = rdma_transfer(ctx, req->channel, req->channel_info, req->length);
        if (!t) co_return t.status();
        rdma = std::move(*t);
        // Also when the READ fails: the client relies on the server to invalidate.
        if (rdma->invalidate) ctx.invalidate_token = rdma->buffers[0].token;
    }

    // Over SMB Direct a READ answered inline must fit in what the client reassembles (MS-SMBD
    // 3.1.5.4: a message above MaxFragmentedSize cannot be sent): the header, the 16-byte
    // body and, when sealed, the TRANSFORM_HEADER around them.
    if (!rdma && ctx.conn.rdma) {
        const size_t overhead = kHeaderSize + 16 + (ctx.request_encrypted ? 52 : 0);
        if (req->length + overhead > ctx.conn.rdma->max_inline_message()) {
            ctx.log().debug("READ of ", req->length, " bytes without an RDMA channel refused: ",
                            "more than the client reassembles (",
                            ctx.conn.rdma->max_inline_message(), ")");
            co_return NtStatus::InvalidParameter;
        }
    }

    if (open->local.pipe) {
        if (rdma) co_return NtStatus::InvalidParameter;  // pipe data is small: inline
        co_return co_await read_pipe(ctx, open, *req);
    }

    // A directory has no data stream to read (Windows and Samba: INVALID_DEVICE_REQUEST, even
    // for zero bytes; smbtorture smb2.read.dir).
    if (open->local.is_directory) co_return NtStatus::InvalidDeviceRequest;
    // MS-SMB2 3.3.5.12; EXECUTE implied READ_DATA at CREATE.
    if (!(open->granted_access & (am::kFileReadData | am::kFileExecute))) {
        ctx.log().refusal("READ of '", open->local.path, "' without read access refused");
        co_return NtStatus::AccessDenied;
    }
    // Offsets are signed 64-bit in the object store (MS-FSA 2.1.5.2): past INT64_MAX, or a
    // range ending past it, is invalid (smbtorture smb2.rw.invalid).
    constexpr uint64_t kMaxOffset = uint64_t(INT64_MAX);
    if (req->offset > kMaxOffset || req->length > kMaxOffset - req->offset)
        co_return NtStatus::InvalidParameter;
    // MS-SMB2 3.3.5.12: fewer bytes than MinimumCount is END_OF_FILE; asking for less than the
    // minimum can never succeed.
    if (req->minimum_count > req->length) co_return NtStatus::EndOfFile;

    // MS-FSA 2.1.5.2 via 2.1.4.10: a byte-range lock of another open covering the range.
    if (!ctx.server.locks.allows_io(FileKey{open->local.device, open->local.file_id}, open.get(),
                                    req->offset, req->length, false))
        co_return NtStatus::FileLockConflict;

    ReadResponse resp;
    if (req->length == 0) {
        // A zero-byte read succeeds anywhere (smbtorture smb2.read.eof); the Buffer byte of
        // the 17-byte structure is still sent.
        resp.serialize_without_data(ctx.body(), 0);
        ctx.body().u8(0);
        co_return NtStatus::Success;
    }

    const uint64_t offset = req->offset;
    std::shared_ptr<io::DataPath> data = io::data_path_of(*open);
    auto failed = [&](NtStatus st) {
        ctx.log().debug("READ of '", open->local.path, "' at ", offset,
                        " failed: ", status_name(st));
        return st;
    };
    // The data path lends the cheapest form the response can carry: on a buffered block path a
    // large read goes page cache -> pipe -> transport when nothing needs the bytes here (Samba's
    // "use sendfile"); anything else is read into a pool buffer.
    // Over RDMA the data goes out in what the RDMA channel writes from (registered memory).
    const PayloadKinds kinds = rdma ? ctx.conn.rdma->push_kinds() : ctx.reply_data_kinds;
    auto lent =
        co_await data->lend(ctx.caller(*open), req->length, offset, kinds, ctx.server.buffers);
    if (!lent) co_return failed(lent.status());
    const size_t bytes = lent->size();
    // At or past the end of file nothing is read: END_OF_FILE (MS-FSA 2.1.5.2).
    if (bytes == 0 || bytes < req->minimum_count) co_return NtStatus::EndOfFile;
    if (rdma) {
        // MS-SMB2 3.3.5.12: RDMA WRITE into the client's buffers, then a response without data
        // whose DataRemaining says how much was written.
        auto to = smbdirect::select_range(rdma->buffers, 0, bytes);
        if (!to) co_return NtStatus::InvalidParameter;
        if (auto st = co_await ctx.conn.rdma->push(*to, *lent); !st) co_return failed(st.status());
        {
            std::lock_guard lk(open->mu);
            open->local.position = offset + bytes;
        }
        resp.data_remaining = uint32_t(bytes);
        ctx.io_bytes = bytes;
        ctx.io_path = metrics::IoPath::Rdma;
        // The 16 fixed bytes only, no Buffer byte (as ksmbd and Windows): the Linux client
        // reads nothing past them when the data came by RDMA and would take a left-over byte
        // for the start of its next message.
        resp.serialize_without_data(ctx.body(), 0);
        co_return NtStatus::Success;
    }
    ctx.io_bytes = bytes;
    ctx.io_path = read_path(lent->kind(), *data);
    ctx.reply_data = std::move(*lent);

    {
        // FilePositionInformation follows the last read, as Samba keeps it (smbtorture
        // smb2.read.position in its default, non-Windows mode).
        std::lock_guard lk(open->mu);
        open->local.position = offset + bytes;
    }
    resp.serialize_without_data(ctx.body(), uint32_t(bytes));
    co_return NtStatus::Success;
}

}  // namespace daxsmbd::server::handlers
