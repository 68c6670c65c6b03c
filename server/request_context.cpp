#include "server/connection.h"
#include "server/handlers/handler.h"
#include "server/log.h"
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
    if (!sequence_admitted) {
        // The first open a request names: the request is counted under its ChannelSequence.
        if (!admit_sequence(o)) return Error(NtStatus::FileNotAvailable);
        // MS-SMB2 3.3.5.9.10: a request on the open shows the client got its CREATE response;
        // a replay of that CREATE is a new open from now on.
        o->replay_eligible.store(false, std::memory_order_relaxed);
    }
    return o;
}

bool RequestContext::admit_sequence(const std::shared_ptr<Open>& o) {
    sequence_admitted = true;
    sequenced_open = o;
    // MS-SMB2 3.3.5.2.10: only the SMB 3.x dialects carry a ChannelSequence.
    if (!protocol::is_smb3(dialect())) return true;
    bool refused = false;
    sequence_ticket = o->channel_sequence.admit(header.channel_sequence(),
                                                header.flags & protocol::flags::kReplayOperation,
                                                handler_for(header.command).modifies, &refused);
    if (refused)
        log().debug(protocol::command_name(header.command), " with stale ChannelSequence ",
                    header.channel_sequence(), " (open's ", o->channel_sequence.sequence(),
                    "): FILE_NOT_AVAILABLE");
    return !refused;
}

void RequestContext::finish_sequence() {
    if (auto o = sequenced_open.lock(); o && sequence_ticket)
        o->channel_sequence.finish(*sequence_ticket);
    sequence_ticket.reset();
    sequenced_open.reset();
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
