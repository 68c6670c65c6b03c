#include "server/connection.h"
#include "server/handlers/handler.h"
#include "server/server.h"

namespace daxsmbd::server {

asio::thread_pool& blocking_pool(Server& s) {
    return s.pool();
}

Result<std::shared_ptr<Open>> RequestContext::find_open(const protocol::FileId& id) {
    protocol::FileId fid = id;
    if (id.is_related_placeholder()) {
        // MS-SMB2 3.3.5.2.7.2: the file the previous element of a related chain used/opened.
        if (related_file_id) {
            fid = *related_file_id;
        } else if (related_create_status) {
            return Error(*related_create_status);
        } else {
            // Unrelated, or the chain has no file yet: no open has this id (Windows and Samba
            // answer FILE_CLOSED; smbtorture smb2.compound.unrelated1, related5, invalid3).
            return Error(NtStatus::FileClosed);
        }
    }
    auto o = server.opens.find(fid.volatile_);
    if (!o || o->id.persistent != fid.persistent || o->session_id != session_id)
        return Error(NtStatus::FileClosed);
    if (tree && o->tree_id != tree->id) return Error(NtStatus::FileClosed);
    related_file_id = fid;
    return o;
}

protocol::Dialect RequestContext::dialect() const {
    return conn.state.dialect;
}
const Limits& RequestContext::limits() const {
    return server.limits();
}
const ConnectionLog& RequestContext::log() const {
    return conn.log;
}
asio::any_io_executor RequestContext::executor() const {
    return conn.executor;
}

io::Engine& RequestContext::io() {
    return *conn.io_engine;
}

io::Caller RequestContext::caller(const Open& o) {
    return io::Caller(*conn.io_engine, o.local.path, fs_identity().get());
}

bool RequestContext::signature_valid(auth::Signer& signer) const {
    return header.is_signed() && conn.verify_signature(signer, msg, header).ok();
}

asio::awaitable<Status> RequestContext::go_async() {
    co_return co_await conn.go_async(*this);
}

}  // namespace daxsmbd::server
