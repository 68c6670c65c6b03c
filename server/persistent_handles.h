// Persistent handles (MS-SMB2 3.3.5.9.10 Open.IsPersistent) on continuously available shares:
// what a CREATE journals, and what a starting server brings back from the journal.
//
// A persistent handle is durable whatever oplock or lease it holds, and is journaled on the
// share's own volume (server/state/handle_journal.h) before the CREATE that made it is
// answered. When the server restarts (a crash, kill -9, or a stop: a stopping server freezes the
// journals, so closing its opens on the way down forgets nothing), every journaled handle is
// opened again at start, disconnected: the file reopened and checked to be the same one, its
// share access, oplock or lease taken again, and its timeout started. A client that reconnects
// within it (DH2C with the handle's FileId and CreateGuid, as the same user) gets it back,
// exactly as after a lost connection.
#pragma once

#include <memory>

#include "protocol/result.h"
#include "server/state/file_table.h"
#include "server/state/handle_journal.h"
#include "server/state/open.h"
#include "server/state/share.h"

namespace daxsmbd::server {

class Server;

// The share-root directory that holds the journal (hidden from clients).
inline constexpr const char* kServerStateDirectory = ".daxsmbd";

// Opens the journal of continuously available share `share` (in kServerStateDirectory of its
// root; mapped on a DAX share).
Result<std::shared_ptr<HandleJournal>> open_share_journal(const Share& share);

// The server's ServerGuid kept in kServerStateDirectory of `share` (made there, random, when
// missing): a client reconnecting its persistent handles after a restart meets the same server
// identity, as on Windows, whose ServerGuid survives reboots.
Result<protocol::Guid> stable_server_guid(const Share& share);

// What the journal keeps of persistent open `open`, whose oplock or lease is `held` and whose
// byte-range locks are `locks`.
PersistentHandle persistent_handle_of(const Open& open, const FileTable::Held& held,
                                      std::vector<LockRange> locks = {});

// Journals persistent open `open` and makes its CLOSE forget it. Blocking (syncs the journal).
Status journal_persistent_open(const std::shared_ptr<HandleJournal>& journal,
                               const std::shared_ptr<Open>& open, const FileTable::Held& held);

// The oplock, lease or byte-range locks of persistent opens changed (a break acknowledged, a
// LOCK): the journal gets their new state, so that a restart brings back neither caching they
// gave up nor locks they released, and keeps the locks they took. Blocking.
void rejournal_persistent_opens(Server& server, const std::function<bool(const Open&)>& which);

// Opens again, disconnected, every handle `share`'s journal holds; handles whose file is gone
// or is another file now are forgotten (logged). Returns how many were restored. After the
// event loops exist (the expiry timers run on loop 0). Blocking.
size_t restore_persistent_handles(Server& server, const std::shared_ptr<Share>& share);

}  // namespace daxsmbd::server
