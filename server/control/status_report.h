// What `daxsmbd-admin status` shows, like Samba's smbstatus: connections, sessions with their
// tree connects, and open files with their caching and locks. Collected from the server's
// tables; each connection's own state is read on its event loop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace daxsmbd::server {

class Server;

struct ConnectionStatus {
    uint64_t id = 0;
    std::string peer;
    std::string transport;  // "tcp" or "rdma"
    uint16_t dialect = 0;   // 0: not negotiated yet
    uint16_t cipher_id = 0;
    uint16_t signing_algorithm_id = 0xFFFF;  // 0xFFFF: none negotiated (3.1.1 context absent)
    std::vector<uint64_t> session_ids;       // the sessions this connection is a channel of
};

struct TreeStatus {
    uint32_t id = 0;
    std::string share;
    bool remoted_identity = false;
};

struct SessionStatus {
    uint64_t id = 0;
    std::string user;  // domain\user, "(anonymous)" or "(guest)"
    uint16_t dialect = 0;
    bool signing_required = false;
    bool encrypted = false;
    size_t channels = 0;
    std::vector<TreeStatus> trees;
};

struct OpenStatus {
    uint64_t persistent_id = 0;
    uint64_t volatile_id = 0;
    uint64_t session_id = 0;  // 0: a disconnected durable handle
    std::string share;
    std::string path;
    uint32_t access = 0;
    uint32_t share_access = 0;
    std::string caching;     // NONE, LEVEL_II, EXCLUSIVE, BATCH or LEASE
    std::string durability;  // "", "durable", "durable (disconnected)", "persistent", ...
    size_t file_locks = 0;   // byte-range locks on the file
};

struct StatusReport {
    std::vector<ConnectionStatus> connections;
    std::vector<SessionStatus> sessions;
    std::vector<OpenStatus> opens;
};

// Blocking: waits for each connection's loop (at most a second each; a connection that does
// not answer is listed without its negotiated state). Not on an event loop.
StatusReport collect_status(Server& server);

// The report as the text `daxsmbd-admin status` prints.
std::string format_status(const StatusReport& report);

std::string dialect_text(uint16_t dialect);

}  // namespace daxsmbd::server
