// daxsmbd configuration: smb.conf-style INI ([global] + one section per share), Samba's key
// names where the meaning is the same. Unknown keys are an error with file:line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "auth/kerberos_user_map.h"
#include "dax/detect.h"
#include "dax/flush.h"
#include "protocol/header.h"
#include "protocol/result.h"

namespace daxsmbd::server {

enum class SigningPolicy { Disabled, Auto, Mandatory };  // "server signing"

// "smb encrypt" / "server smb encrypt" with Samba's meanings (smb.conf(5)):
//   Off        encryption is not offered at all (3.0.x: no SMB2_GLOBAL_CAP_ENCRYPTION, 3.1.1:
//              cipher 0); a share that requires it then refuses every client.
//   IfRequired offered; a client may encrypt, nothing is required (Samba's default).
//   Desired    sessions (global) or trees (share) of clients that can encrypt are encrypted:
//              SMB2_SESSION_FLAG_ENCRYPT_DATA / SMB2_SHAREFLAG_ENCRYPT_DATA; clients that
//              cannot still connect in clear.
//   Required   as Desired, and unencrypted access is refused (MS-SMB2 3.3.5.2.9, 3.3.5.2.11,
//              3.3.5.7: STATUS_ACCESS_DENIED); clients without encryption cannot connect.
enum class EncryptPolicy { Off, IfRequired, Desired, Required };

struct ShareConfig {
    std::string name;       // section name as written (lookup is case-insensitive)
    std::string path;       // "path"
    bool read_only = true;  // "read only" (Samba default: yes); "writable"/"writeable" invert it
    std::vector<std::string> valid_users;  // "valid users"; empty = every authenticated user
    bool browseable = true;                // "browseable" / "browsable"
    std::string comment;                   // "comment"
    bool case_sensitive = false;           // "case sensitive" (default no: case-insensitive lookup)
    bool store_dos_attributes = true;      // "store dos attributes"
    bool guest_ok = false;                 // "guest ok" / "public": guest sessions may connect
    // "identity remoting": TREE_CONNECT may carry SMB2_REMOTED_IDENTITY_TREE_CONNECT (MS-SMB2
    // 2.2.9.2.1), from the session users in "identity remoting principals" only (the spec says
    // nothing about who may remote; an empty list lets nobody).
    bool identity_remoting = false;
    std::vector<std::string> identity_remoting_principals;
    // "dax": READ/WRITE straight against persistent memory (dax/). auto: where the file system
    // supports MAP_SYNC; on: the share does not start without it; off: never.
    dax::DaxMode dax = dax::DaxMode::Auto;
    dax::FlushKind dax_flush = dax::FlushKind::Auto;  // "dax flush": the cache flush instruction
    // "dax prefault": bytes from the start of a file's mapping (per 1 GiB chunk) whose page
    // tables are populated off the event loop when the mapping is first used (dax::MapOptions).
    size_t dax_prefault = size_t(64) << 20;
    // "rdma into pmem" of a DAX share: auto (true) lets SMB Direct READ and WRITE data go
    // straight between the client and the file mappings when the start-up probe finds an RDMA
    // device that can register them (On-Demand Paging); bounce (false): always through
    // registered pool buffers, with a copy to or from the mapping.
    bool rdma_into_pmem_direct = true;
    // "smb encrypt" / "server smb encrypt" of this share; unset = the [global] value.
    std::optional<EncryptPolicy> encrypt;
    // Block path (server/io): "direct io" opens data files a second time with O_DIRECT for
    // aligned I/O; "io poll" completes that O_DIRECT I/O by polling (IORING_SETUP_IOPOLL) when
    // the device has poll queues; "io sqpoll" submits through a kernel polling thread
    // (IORING_SETUP_SQPOLL).
    bool direct_io = false;
    bool io_poll = false;
    bool io_sqpoll = false;
    // "aio write size" (Samba's meaning: writes larger than this are asynchronous): buffered
    // writes up to this size are written on the event loop (a page cache copy), larger ones
    // through io_uring. 0 = every write on the loop, 1 = none. Samba's default is 1; ours is
    // 64 KiB because on file systems without non-blocking buffered writes (ext4) io_uring
    // hands each write to a worker thread, which costs more than the copy.
    size_t aio_write_size = 64 * 1024;
    // "use sendfile" (Samba's meaning): large READs that are neither signed nor encrypted go
    // from the page cache to the socket by splice, without a copy through user space. Default
    // yes (Samba: no), since it is invisible to clients; buffered block path only.
    bool use_sendfile = true;
    // "continuous availability" (the Windows share property; Samba has no such key): the share
    // says SMB2_SHARE_CAP_CONTINUOUS_AVAILABILITY and grants persistent handles (MS-SMB2
    // 3.3.5.9.10), journaled in the share's ".daxsmbd" directory so that they survive a
    // restart of the server. Default no.
    bool continuous_availability = false;
    // "scale out": the share is served by one node of a cluster at a time (MS-SMB2 3.3.5.7,
    // STYPE_CLUSTER_SOFS): its owner answers TREE_CONNECT with SMB2_SHARE_CAP_SCALEOUT, the
    // other nodes with STATUS_BAD_NETWORK_NAME (and a Share Redirect error context when the
    // client asks for one). "asymmetric": the share's ownership can move between nodes
    // (SMB2_SHARE_CAP_ASYMMETRIC, 3.0.2 and later). Both default no.
    bool scale_out = false;
    bool asymmetric = false;

    // Reload compares a share's settings as parsed (server/reload_plan.h).
    bool operator==(const ShareConfig&) const = default;
};

struct GlobalConfig {
    std::vector<uint16_t> smb_ports{445};  // "smb ports" (space separated)
    std::vector<std::string> interfaces;   // "interfaces": addresses to listen on; empty = all
    // "server smb transports" (Samba's key): tcp (Direct TCP on "smb ports") and rdma (SMB
    // Direct on every RDMA device's address: port 445 for RoCE/InfiniBand, 5445 for iWARP).
    bool transport_tcp = true;
    bool transport_rdma = false;
    protocol::Dialect min_protocol = protocol::Dialect::Smb202;  // "server min protocol"
    protocol::Dialect max_protocol = protocol::Dialect::Smb311;  // "server max protocol"
    SigningPolicy signing = SigningPolicy::Auto;                 // "server signing"
    std::string user_database = "/var/lib/daxsmbd/users.db";     // "user database"
    std::string netbios_name;               // "netbios name" (default: host name, upper case)
    std::string workgroup = "WORKGROUP";    // "workgroup"
    std::string server_string = "daxsmbd";  // "server string"
    unsigned worker_threads = 0;            // "worker threads": event loops; 0 = one per core
    unsigned log_level = 1;                 // "log level": 0 error, 1 info, 2 debug, 3 trace
    uint32_t max_io_size = 8u << 20;        // "max io size": MaxRead/Write/TransactSize (8 MiB)
    unsigned idle_timeout_s = 900;          // "deadtime" (minutes, as Samba) * 60: close idle
                                            // connections after this many seconds; 0 = never
    unsigned auth_timeout_s = 60;  // "auth timeout": time to finish authentication (seconds)
    unsigned max_credits = 8192;   // "smb2 max credits" (Samba's name)
    bool guest_ok = false;         // "map to guest = bad user" enables guest; default never
    // "guest account": the Unix account guest sessions act as on disk (Samba's key and default).
    std::string guest_account = "nobody";
    // "metrics address": IP:port of the Prometheus endpoint (GET /metrics); empty = off.
    std::string metrics_address;
    // "device health interval": seconds between reads of the shares' NVMe SMART / Health logs
    // (server/health); 0 = never read.
    unsigned device_health_interval_s = 60;

    // Scale-out cluster (server/cluster/cluster_node.h): share ownership kept in etcd.
    // "cluster etcd endpoints": http:// URLs of etcd's v3 JSON gateway; empty = no cluster.
    std::vector<std::string> cluster_etcd_endpoints;
    // "cluster node name": this node's name in etcd (default: the host name).
    std::string cluster_node_name;
    // "cluster addresses": ADDR:PORT list published for clients to reach this node (share
    // redirects); empty = the server's listen addresses.
    std::vector<std::string> cluster_addresses;
    unsigned cluster_lease_ttl_s = 10;             // "cluster lease ttl" (seconds, 2..300)
    std::string cluster_key_prefix = "/daxsmbd/";  // "cluster key prefix"
    // "cluster takeover command": run as `COMMAND SHARE OLD_OWNER` before this node serves a
    // share it has claimed (storage fencing of the old owner); exit 0 = serve. Empty = none.
    std::string cluster_takeover_command;
    // "control socket": the Unix socket daxsmbd-admin status/close-session talk to (root only);
    // empty = none.
    std::string control_socket = "/run/daxsmbd/control";
    // "admin users": user database names that may map to uid 0 (Samba's key; default none). A
    // logon of any other name whose entry says uid 0 is refused, so that no SMB user is root by
    // accident.
    std::vector<std::string> admin_users;
    // True when `name` (case-insensitive, as user names are) is listed in admin_users.
    bool is_admin_user(std::string_view name) const;
    // "server multi channel support": 3.x connections of a client may bind to its sessions as
    // further channels (MS-SMB2 3.3.5.5.2; SMB2_GLOBAL_CAP_MULTI_CHANNEL in NEGOTIATE).
    bool multi_channel = true;
    // "smb2 leases" (Samba's key): grant leases (SMB2_GLOBAL_CAP_LEASING, 2.1 and later);
    // without them lease requests get no lease and clients fall back to oplocks.
    bool leases = true;
    // "smb3 directory leases" (Samba's key): with leases on, 3.x connections are offered
    // SMB2_GLOBAL_CAP_DIRECTORY_LEASING and directories get READ and HANDLE caching leases,
    // broken when something inside the directory changes through this server.
    bool directory_leases = true;
    // "durable handles" (Samba's key): grant durable handles v1/v2 (MS-SMB2 3.3.5.9.6,
    // 3.3.5.9.10) to opens with a batch oplock or a HANDLE caching lease.
    bool durable_handles = true;

    // Abuse limits (architecture.md "Limits on everything a client can make the server hold").
    unsigned max_connections = 4096;              // "max connections total"
    unsigned max_connections_per_address = 1024;  // "max connections per address"
    unsigned max_sessions_per_connection = 64;    // "max sessions per connection"
    unsigned max_opens_per_session = 16384;       // "max opens per session"
    unsigned max_trees_per_session = 1024;        // "max tree connects per session"
    unsigned max_locks_per_open = 16384;          // "max locks per open" (byte ranges)
    // "max durable handles per client": durable and persistent handles, connected or not, of
    // one ClientGuid; past it a CREATE gets its open without durability.
    unsigned max_durable_per_client = 16384;
    unsigned max_async_per_connection = 512;  // "max async requests per connection"
    // "max bytes in flight per connection": request and READ response bytes of the requests a
    // connection has in processing; past it the server stops reading that connection's socket
    // until some complete (TCP backpressure).
    uint64_t max_bytes_in_flight = 32u << 20;
    uint32_t max_message_size = 0;      // "max message size" (bytes); 0 = max io size + 1 MiB
    unsigned max_compound_length = 64;  // "max compound length": elements in one message

    // DAX map cache (dax::MapRegistry): closed files whose mappings (page tables) are kept for
    // their next open, at most this many ("dax map cache files", 0 = none) and this many mapped
    // bytes in total ("dax map cache size").
    unsigned dax_map_cache_files = 64;
    uint64_t dax_map_cache_bytes = uint64_t(16) << 30;

    // Authentication methods ("server auth methods"): what the NEGOTIATE response offers and
    // SESSION_SETUP accepts. Default: Kerberos when a keytab is configured, and NTLM.
    bool auth_kerberos = false;
    bool auth_ntlm = true;
    std::string kerberos_keytab;  // "kerberos keytab file"; empty = no Kerberos
    std::string realm;            // "realm" (upper case): user@REALM is the local user "user"
    std::string kerberos_user_map_file;       // "kerberos user map": explicit principal -> user
    auth::KerberosUserMap kerberos_user_map;  // realm rule + the file's entries

    // Logon throttling: the answer to a SESSION_SETUP that completes or fails an authentication
    // from an address with recent failures is delayed by delay * 2^(failures-1), at most
    // max delay; failures older than the window are forgotten. 0 delay disables it.
    unsigned logon_failure_delay_ms = 200;       // "logon failure delay" (milliseconds)
    unsigned logon_failure_max_delay_ms = 5000;  // "logon failure max delay" (milliseconds)
    unsigned logon_failure_window_s = 300;       // "logon failure window" (seconds)

    EncryptPolicy encrypt = EncryptPolicy::IfRequired;  // "smb encrypt" / "server smb encrypt"
    // "server smb3 encryption algorithms": cipher ids (MS-SMB2 2.2.3.1.2) in server preference
    // order; Samba's default order.
    std::vector<uint16_t> encryption_algorithms{0x0002, 0x0001, 0x0004, 0x0003};
};

// One [global] parameter as the file set it (the last setting of a key wins), for a reload to
// name what changed (server/reload_plan.h).
struct GlobalSetting {
    std::string key;    // as written
    std::string value;  // as written, trimmed
    size_t line = 0;
    bool operator==(const GlobalSetting& o) const { return value == o.value; }
};

struct Config {
    GlobalConfig global;
    std::vector<ShareConfig> shares;
    // The [global] parameters by canonical key (lower case, without spaces, synonyms resolved).
    std::map<std::string, GlobalSetting> global_settings;

    const ShareConfig* find_share(std::string_view name) const;  // case-insensitive

    // Parses the text of a configuration file; `origin` names it in error messages.
    // On failure returns a message "FILE:LINE: what is wrong".
    struct ParseError {
        std::string message;
    };
    static std::variant<Config, ParseError> parse(std::string_view text, std::string_view origin);
    static std::variant<Config, ParseError> load(const std::string& path);
};

// The embedded default configuration used by the quick start: one share, port 445.
std::string default_config_text(std::string_view share_path, std::string_view userdb_path);

}  // namespace daxsmbd::server
