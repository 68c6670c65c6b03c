// A configured share as the running server sees it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "dax/mapping.h"
#include "server/config.h"

namespace daxsmbd::server {

namespace vfs {
class ShareRoot;
}
class HandleJournal;  // server/state/handle_journal.h

struct Share {
    ShareConfig config;
    bool is_ipc = false;
    std::shared_ptr<vfs::ShareRoot> root;  // null for IPC$
    // Set when the share's files are served through DAX mappings (config "dax", decided at
    // start by dax::detect_dax on the share's root).
    std::optional<dax::MapOptions> dax;
    // "io poll = yes" and the share's block device has poll queues (checked at start).
    bool io_poll_usable = false;
    // RDMA transfers of the DAX share's READs and WRITEs go straight from and into its file
    // mappings: "rdma into pmem = auto" and the start-up probe found an RDMA device that
    // registers them (On-Demand Paging). Set before the SMB Direct listeners accept.
    bool rdma_direct = false;
    // "continuous availability = yes": the journal of the share's persistent handles, opened
    // at start (server/persistent_handles.h).
    std::shared_ptr<HandleJournal> journal;
    // The share's slot in the metrics registry (Server::metrics), its index in Server::shares().
    size_t metrics_index = SIZE_MAX;
};

}  // namespace daxsmbd::server
