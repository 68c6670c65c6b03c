// Choosing an open's data path (data_path.h).
#include "server/io/data_path.h"

#include "dax/mapping.h"
#include "protocol/access_mask.h"
#include "server/io/block_path.h"
#include "server/io/dax_path.h"
#include "server/log.h"
#include "server/state/open.h"
#include "server/state/share.h"

namespace daxsmbd::server::io {

asio::awaitable<Result<Payload>> DataPath::lend(Caller c, size_t len, uint64_t offset,
                                                PayloadKinds kinds, BufferPool& pool) {
    if (kinds.has(PayloadKind::Pipe) && splices(len)) {
        auto piped = co_await read_to_pipe(c, len, offset);
        if (piped) co_return Payload(std::move(*piped));
        if (piped.status() != NtStatus::NotSupported) co_return Error(piped.status());
    }
    PoolBuffer buf = pool.acquire(len);
    auto r = co_await read(c, buf, len, offset);
    if (!r) co_return Error(r.status());
    buf.set_size(*r);
    co_return Payload(std::move(buf));
}

namespace am = protocol::access_mask;

std::shared_ptr<DataPath> open_data_path(const Share& share, const Open& open,
                                         dax::MapRegistry& maps, BackgroundRunner background) {
    // An open that neither reads nor writes data (attributes, delete, rename: CREATE gives it an
    // O_PATH descriptor) gets a plain buffered block path: no O_DIRECT reopen (a descriptor with
    // data access it was not granted) and no mapping.
    constexpr uint32_t kDataAccess =
        am::kFileReadData | am::kFileWriteData | am::kFileAppendData | am::kFileExecute;
    if (open.local.is_directory || open.local.fd < 0 || !(open.granted_access & kDataAccess))
        return std::make_shared<BlockDataPath>(open.local.fd, vfs::UniqueFd{}, 0, 0,
                                               BlockOptions{});

    BlockOptions o;
    o.direct_io = share.config.direct_io;
    o.io_poll = share.config.direct_io && share.config.io_poll && share.io_poll_usable;
    o.io_sqpoll = share.config.io_sqpoll;
    o.aio_write_size = share.config.aio_write_size;
    o.splice_reads = share.config.use_sendfile;
    std::shared_ptr<DataPath> block = BlockDataPath::open(open.local.fd, o);
    if (!share.dax) return block;

    // DAX share: the open joins its file's mapping, shared by all opens of the file (and kept
    // for the next open after the last one closes, while the file stays unchanged).
    std::shared_ptr<dax::FileMap> map =
        maps.acquire(open.local.device, open.local.file_id, open.local.fd, *share.dax);
    if (!map) {
        log_info("DAX: no mapping for '", open.local.path,
                 "' (not a regular file or no usable descriptor)");
        return block;
    }
    return std::make_shared<DaxDataPath>(std::move(map), std::move(block), std::move(background),
                                         share.rdma_direct);
}

asio::awaitable<Result<SplicePipe>> DataPath::read_to_pipe(Caller, size_t, uint64_t) {
    co_return Error(NtStatus::NotSupported);
}

std::shared_ptr<DataPath> data_path_of(Open& open) {
    std::lock_guard lk(open.mu);
    if (!open.local.data)
        open.local.data =
            std::make_shared<BlockDataPath>(open.local.fd, vfs::UniqueFd{}, 0, 0, BlockOptions{});
    return open.local.data;
}

}  // namespace daxsmbd::server::io
