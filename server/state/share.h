// A configured share as the running server sees it.
#pragma once

#include <memory>
#include <string>

#include "server/config.h"

namespace daxsmbd::server {

namespace vfs {
class ShareRoot;
}

struct Share {
    ShareConfig config;
    bool is_ipc = false;
    std::shared_ptr<vfs::ShareRoot> root;  // null for IPC$
};

}  // namespace daxsmbd::server
