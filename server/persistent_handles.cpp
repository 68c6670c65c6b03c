#include "server/persistent_handles.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "server/errno_status.h"
#include "server/io/data_path.h"
#include "server/log.h"
#include "server/server.h"
#include "server/state/lock_table.h"
#include "server/vfs/metadata.h"
#include "server/vfs/open.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server {

namespace am = protocol::access_mask;

Result<std::shared_ptr<HandleJournal>> open_share_journal(const Share& share) {
    HandleJournal::Options o;
    if (share.dax) o.pmem = share.dax->flush;
    o.require_sync = true;
    DAX_TRY(auto j, HandleJournal::open(share.config.path + "/" + kServerStateDirectory, o));
    return std::shared_ptr<HandleJournal>(std::move(j));
}

Result<protocol::Guid> stable_server_guid(const Share& share) {
    const std::string path = share.config.path + "/" + kServerStateDirectory + "/server-guid";
    protocol::Guid g{};
    vfs::UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (in && ::read(in.get(), g.data(), g.size()) == ssize_t(g.size())) return g;
    std::random_device rd;
    for (auto& b : g)
        b = std::byte(rd());
    const std::string tmp = path + ".new";
    vfs::UniqueFd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!out) return Error(errno_to_status(errno));
    if (::write(out.get(), g.data(), g.size()) != ssize_t(g.size()) || ::fsync(out.get()) != 0 ||
        ::rename(tmp.c_str(), path.c_str()) != 0)
        return Error(errno_to_status(errno));
    return g;
}

PersistentHandle persistent_handle_of(const Open& o, const FileTable::Held& held,
                                      std::vector<LockRange> locks) {
    PersistentHandle h;
    h.persistent_id = o.id.persistent;
    h.path = o.local.path;
    h.inode = o.local.file_id;
    h.is_directory = o.local.is_directory;
    h.granted_access = o.granted_access;
    h.share_access = o.local.share_access;
    h.create_options = o.create_options;
    h.create_guid = o.durable.create_guid.value_or(protocol::Guid{});
    h.client_guid = o.durable.client_guid;
    h.owner = o.durable.owner;
    h.timeout_ms = o.durable.timeout_ms;
    h.oplock = held.oplock;
    if (held.lease && o.durable.lease_key) {
        h.lease_key = o.durable.lease_key;
        h.lease_state = held.lease->state;
        h.lease_epoch = held.lease->epoch;
        h.lease_version = held.lease->version;
        h.parent_lease_key = held.lease->parent_key;
    }
    h.app_instance_id = o.durable.app_instance_id;
    h.app_instance_version = o.durable.app_instance_version;
    h.locks = std::move(locks);
    return h;
}

namespace {

void forget_on_close(Open& open, const std::shared_ptr<HandleJournal>& journal) {
    // Whatever closes the open (CLOSE, LOGOFF, TREE_DISCONNECT, expiry, a break while it was
    // disconnected) forgets it; a stopping server's teardown does not (HandleJournal::freeze).
    add_close_hook(open, [weak = std::weak_ptr<HandleJournal>(journal), id = open.id.persistent] {
        if (auto j = weak.lock()) j->remove(id);
    });
}

}  // namespace

Status journal_persistent_open(const std::shared_ptr<HandleJournal>& journal,
                               const std::shared_ptr<Open>& open, const FileTable::Held& held) {
    DAX_CHECK(journal->put(persistent_handle_of(*open, held)));
    forget_on_close(*open, journal);
    return {};
}

void rejournal_persistent_opens(Server& server, const std::function<bool(const Open&)>& which) {
    for (const auto& o :
         server.opens.find_all([&](const Open& o) { return o.durable.persistent && which(o); })) {
        const auto& reg = o->local.file_registration;
        auto share = server.find_share(o->durable.share);
        if (!reg || !share || !share->journal) continue;
        auto locks = server.locks.locks_of(reg->key(), o.get());
        if (auto st = share->journal->put(persistent_handle_of(
                *o, reg->table().held(reg->key(), reg->token()), std::move(locks)));
            !st)
            log_info("persistent handle '", o->local.path,
                     "': new caching or lock state not journaled: ", status_name(st.status()));
    }
}

namespace {

// Opens the file of journaled handle `h` again and registers it in the FileTable with its share
// access, oplock or lease. ObjectNameNotFound when the path names another file now.
Result<std::shared_ptr<Open>> reopen(Server& server, const std::shared_ptr<Share>& share,
                                     const PersistentHandle& h) {
    const bool writes = h.granted_access & (am::kFileWriteData | am::kFileAppendData);
    const int flags = h.is_directory ? O_RDONLY | O_DIRECTORY : writes ? O_RDWR : O_RDONLY;
    DAX_TRY(auto fd, vfs::open_beneath(*share->root, h.path, flags));
    DAX_TRY(auto info, vfs::query_info(fd.get()));
    if (info.file_id != h.inode) return Error(NtStatus::ObjectNameNotFound);
    FileKey key{info.device, info.file_id};
    DAX_TRY(auto token,
            server.files.add(key, ShareMode{h.granted_access, h.share_access}, false, h.path));
    auto o = std::make_shared<Open>();
    o->local.fd = fd.release();
    o->local.path = h.path;
    o->local.is_directory = h.is_directory;
    o->local.file_id = info.file_id;
    o->local.device = info.device;
    o->local.share_access = h.share_access;
    o->local.file_registration =
        std::make_shared<FileRegistration>(server.files, key, token, share->root);
    o->granted_access = h.granted_access;
    o->create_options = h.create_options;
    // The caching state it had; breaks reach nobody until the reconnect (the notifiers are
    // replaced by keep_disconnected's purge at once).
    if (h.lease_key) {
        LeaseRequest lr;
        lr.id = LeaseId{h.client_guid, *h.lease_key};
        lr.state = h.lease_state;
        lr.version = h.lease_version ? h.lease_version : 1;
        lr.epoch = h.lease_epoch;
        lr.parent_key = h.parent_lease_key;
        DAX_TRY(auto g,
                server.files.grant_lease(key, token, lr, h.is_directory, [](const LeaseBreak&) {}));
        (void)g;
    } else if (h.oplock != protocol::oplock_level::kNone) {
        server.files.grant_oplock(key, token, h.oplock, h.is_directory, [](uint8_t) {});
    }
    auto& d = o->durable;
    d.version = 2;
    d.persistent = true;
    d.share = share->config.name;
    d.timeout_ms = h.timeout_ms;
    d.create_guid = h.create_guid;
    d.owner = h.owner;
    d.client_guid = h.client_guid;
    d.lease_key = h.lease_key;
    d.app_instance_id = h.app_instance_id;
    d.app_instance_version = h.app_instance_version;
    // Its byte-range locks, owned by the new Open (nobody else can have taken them: the server
    // has just started, before any client).
    if (!h.locks.empty()) {
        DAX_CHECK(server.locks.lock(key, o.get(), h.locks));
        install_lock_release_hook(*o, server.locks);
    }
    if (!h.is_directory) o->local.data = io::open_data_path(*share, *o, server.dax_maps);
    return o;
}

}  // namespace

size_t restore_persistent_handles(Server& server, const std::shared_ptr<Share>& share) {
    if (!share->journal) return 0;
    size_t restored = 0;
    for (const auto& h : share->journal->handles()) {
        auto o = reopen(server, share, h);
        if (!o) {
            log_info("share [", share->config.name, "]: persistent handle '", h.path,
                     "' not restored (", status_name(o.status()), ")");
            share->journal->remove(h.persistent_id);
            continue;
        }
        server.opens.insert_restored(*o, h.persistent_id);
        forget_on_close(**o, share->journal);
        server.keep_disconnected(*o);
        ++restored;
    }
    if (restored)
        log_info("share [", share->config.name, "]: ", restored,
                 " persistent handles restored, waiting for their clients");
    return restored;
}

}  // namespace daxsmbd::server
