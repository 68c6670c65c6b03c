// One handler per SMB2 command, one file each (server/handlers/<command>.cpp); the dispatch
// table in table.cpp lists them with their metadata.
#pragma once

#include "server/handlers/handler.h"

namespace daxsmbd::server::handlers {

asio::awaitable<NtStatus> negotiate(RequestContext& ctx);
asio::awaitable<NtStatus> session_setup(RequestContext& ctx);
asio::awaitable<NtStatus> logoff(RequestContext& ctx);
asio::awaitable<NtStatus> tree_connect(RequestContext& ctx);
asio::awaitable<NtStatus> tree_disconnect(RequestContext& ctx);
asio::awaitable<NtStatus> create(RequestContext& ctx);
asio::awaitable<NtStatus> close(RequestContext& ctx);
asio::awaitable<NtStatus> flush(RequestContext& ctx);
asio::awaitable<NtStatus> read(RequestContext& ctx);
asio::awaitable<NtStatus> write(RequestContext& ctx);
asio::awaitable<NtStatus> lock(RequestContext& ctx);
asio::awaitable<NtStatus> ioctl(RequestContext& ctx);
asio::awaitable<NtStatus> echo(RequestContext& ctx);
asio::awaitable<NtStatus> query_directory(RequestContext& ctx);
asio::awaitable<NtStatus> change_notify(RequestContext& ctx);
asio::awaitable<NtStatus> query_info(RequestContext& ctx);
asio::awaitable<NtStatus> set_info(RequestContext& ctx);
asio::awaitable<NtStatus> oplock_break(RequestContext& ctx);

}  // namespace daxsmbd::server::handlers
