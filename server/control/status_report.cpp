#include "server/control/status_report.h"

#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <sstream>

#include "protocol/create.h"
#include "server/connection.h"
#include "server/server.h"
#include "server/state/file_table.h"
#include "server/state/lock_table.h"
#include "server/state/open.h"

namespace daxsmbd::server {

namespace {

// A connection's negotiated state lives on its loop: read it there.
ConnectionStatus connection_status(const std::shared_ptr<Connection>& c) {
    ConnectionStatus base;
    base.id = c->id;
    base.peer = c->peer();
    base.transport = c->rdma ? "rdma" : "tcp";
    auto promise = std::make_shared<std::promise<ConnectionStatus>>();
    auto answer = promise->get_future();
    boost::asio::post(c->executor, [c, base, promise]() mutable {
        base.dialect = uint16_t(c->state.dialect);
        base.cipher_id = c->state.cipher_id;
        if (c->state.signing_algorithm_id)
            base.signing_algorithm_id = *c->state.signing_algorithm_id;
        for (const auto& [sid, ch] : c->channels)
            base.session_ids.push_back(sid);
        promise->set_value(std::move(base));
    });
    if (answer.wait_for(std::chrono::seconds(1)) == std::future_status::ready) return answer.get();
    return base;
}

SessionStatus session_status(Session& s) {
    SessionStatus st;
    st.id = s.id;
    st.user = s.is_anonymous     ? "(anonymous)"
              : s.is_guest       ? "(guest)"
              : s.domain.empty() ? s.user
                                 : s.domain + "\\" + s.user;
    st.dialect = uint16_t(s.dialect);
    st.signing_required = s.signing_required;
    st.encrypted = s.encrypt_data;
    std::lock_guard lk(s.mu);
    st.channels = s.channels.size();
    for (const auto& [tid, tree] : s.trees)
        st.trees.push_back({tid, tree->share ? tree->share->config.name : std::string("?"),
                            tree->remoted_token.has_value()});
    return st;
}

std::string caching_text(uint8_t level) {
    namespace ol = protocol::oplock_level;
    switch (level) {
        case ol::kII:
            return "LEVEL_II";
        case ol::kExclusive:
            return "EXCLUSIVE";
        case ol::kBatch:
            return "BATCH";
        case ol::kLease:
            return "LEASE";
        default:
            return "NONE";
    }
}

// The open's own fields under its mutex (a rename changes the path under it); the file and
// lock tables after it is released (they are not nested inside an Open's mutex elsewhere).
OpenStatus open_status(Server& server, Open& o) {
    std::unique_lock lk(o.mu);
    OpenStatus st;
    st.persistent_id = o.id.persistent;
    st.volatile_id = o.id.volatile_;
    st.session_id = o.durable.disconnected ? 0 : o.session_id;
    st.share = o.tree && o.tree->share ? o.tree->share->config.name : o.durable.share;
    st.path = o.local.path.empty() ? "." : o.local.path;
    st.access = o.granted_access;
    st.share_access = o.local.share_access;
    std::shared_ptr<FileRegistration> reg = o.local.file_registration;
    if (o.durable.version) {
        st.durability = o.durable.persistent ? "persistent" : "durable";
        if (o.durable.version == 2) st.durability += " v2";
        if (o.durable.disconnected) st.durability += " (disconnected)";
    }
    lk.unlock();
    if (reg) {
        st.caching = caching_text(server.files.oplock_level(reg->key(), reg->token()));
        st.file_locks = server.locks.lock_count(reg->key());
    } else {
        st.caching = "NONE";
    }
    return st;
}

std::string hex(uint64_t v, int width = 0) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%0*llx", width, static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace

std::string dialect_text(uint16_t d) {
    if (d == 0) return "-";
    char buf[8];
    std::snprintf(buf, sizeof buf, "%x.%x.%x", d >> 8, (d >> 4) & 0xF, d & 0xF);
    return buf;
}

StatusReport collect_status(Server& server) {
    StatusReport r;
    for (const auto& c : server.live_connections())
        r.connections.push_back(connection_status(c));
    for (const auto& s : server.sessions.all())
        if (s->state.load() == Session::State::Valid) r.sessions.push_back(session_status(*s));
    for (const auto& o : server.opens.find_all([](const Open&) { return true; }))
        r.opens.push_back(open_status(server, *o));
    return r;
}

std::string format_status(const StatusReport& r) {
    std::ostringstream os;
    os << "Connections: " << r.connections.size() << "\n";
    for (const auto& c : r.connections) {
        os << "  " << c.id << "  " << c.peer << "  " << c.transport << "  dialect "
           << dialect_text(c.dialect) << "  cipher " << (c.cipher_id ? hex(c.cipher_id, 4) : "-")
           << "  sessions";
        if (c.session_ids.empty()) os << " -";
        for (auto sid : c.session_ids)
            os << " " << hex(sid);
        os << "\n";
    }
    os << "Sessions: " << r.sessions.size() << "\n";
    for (const auto& s : r.sessions) {
        os << "  " << hex(s.id) << "  " << s.user << "  dialect " << dialect_text(s.dialect)
           << "  signing " << (s.signing_required ? "required" : "optional") << "  encryption "
           << (s.encrypted ? "on" : "off") << "  channels " << s.channels << "\n";
        for (const auto& t : s.trees)
            os << "    tree " << t.id << "  [" << t.share << "]"
               << (t.remoted_identity ? "  remoted identity" : "") << "\n";
    }
    os << "Open files: " << r.opens.size() << "\n";
    for (const auto& o : r.opens) {
        os << "  " << hex(o.persistent_id) << ":" << hex(o.volatile_id) << "  session "
           << (o.session_id ? hex(o.session_id) : "-") << "  [" << o.share << "] " << o.path
           << "  access " << hex(o.access, 8) << "  share " << hex(o.share_access, 1) << "  "
           << o.caching;
        if (!o.durability.empty()) os << "  " << o.durability;
        if (o.file_locks) os << "  locks " << o.file_locks;
        os << "\n";
    }
    return os.str();
}

}  // namespace daxsmbd::server
