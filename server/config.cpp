// smb.conf-style configuration parser. The syntax follows Samba's smb.conf(5) so that an admin's
// habits carry over: `[section]` headers, `key = value`, whole-line comments starting with ';' or
// '#', a trailing '\' continues a line, parameter names compare case- and whitespace-insensitively
// ("read only" == "readonly" == "Read Only"). Unlike Samba, anything daxsmbd does not understand
// is an error with FILE:LINE, never silently ignored: a typo in a security setting must not turn
// into a default.
#include "server/config.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "server/cluster/etcd_codec.h"
#include "server/cluster/share_ownership.h"
#include "server/metrics/http_endpoint.h"

namespace daxsmbd::server {

namespace {

using protocol::Dialect;

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && is_space(s.back()))
        s.remove_suffix(1);
    return s;
}

// Parameter names (and enumerated values such as "bad user") compare like Samba's: case and
// whitespace do not matter.
std::string squash(std::string_view s) {
    std::string out;
    for (char c : s)
        if (!is_space(c)) out += char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Booleans as Samba accepts them (lib/util/util.c set_boolean).
std::optional<bool> parse_bool(std::string_view v) {
    const std::string s = lower(trim(v));
    if (s == "yes" || s == "true" || s == "1" || s == "on") return true;
    if (s == "no" || s == "false" || s == "0" || s == "off") return false;
    return std::nullopt;
}

std::optional<uint64_t> parse_uint(std::string_view v) {
    v = trim(v);
    uint64_t out = 0;
    if (v.empty()) return std::nullopt;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
    return out;
}

// A byte count with an optional binary suffix: 1048576, 1024k, 1M.
std::optional<uint64_t> parse_size(std::string_view v) {
    v = trim(v);
    uint64_t mult = 1;
    if (!v.empty()) {
        switch (std::tolower(static_cast<unsigned char>(v.back()))) {
            case 'k':
                mult = 1ull << 10;
                break;
            case 'm':
                mult = 1ull << 20;
                break;
            case 'g':
                mult = 1ull << 30;
                break;
            default:
                break;
        }
        if (mult != 1) v.remove_suffix(1);
    }
    auto n = parse_uint(v);
    if (!n || *n > (~0ull / mult)) return std::nullopt;
    return *n * mult;
}

// Dialect names as in Samba's "server min/max protocol". "SMB2" and "SMB3" name a family: the
// newest member of it as a maximum, the oldest as a minimum (smb.conf(5), "server max protocol").
std::optional<Dialect> parse_dialect(std::string_view v, bool is_max, std::string* why) {
    const std::string s = squash(v);
    if (s == "smb2_02") return Dialect::Smb202;
    if (s == "smb2_10") return Dialect::Smb210;
    if (s == "smb3_00") return Dialect::Smb300;
    if (s == "smb3_02") return Dialect::Smb302;
    if (s == "smb3_11") return Dialect::Smb311;
    if (s == "smb2") return is_max ? Dialect::Smb210 : Dialect::Smb202;
    if (s == "smb3") return is_max ? Dialect::Smb311 : Dialect::Smb300;
    if (s == "default") return is_max ? Dialect::Smb311 : Dialect::Smb202;
    if (s == "core" || s == "coreplus" || s == "lanman1" || s == "lanman2" || s == "nt1")
        *why =
            "SMB1 (" + std::string(trim(v)) + ") is not supported; the oldest dialect is SMB2_02";
    else if (s == "smb2_22" || s == "smb2_24" || s == "smb3_10")
        *why = "'" + std::string(trim(v)) + "' is a pre-release dialect and is not supported";
    return std::nullopt;
}

// "server signing" values as Samba's loadparm accepts them (enum_smb_signing_vals). For SMB2+
// Samba's "disabled" and "desired" both behave as "auto" on the server side; we keep "disabled"
// distinct so the server can still choose not to sign responses it is not asked to sign.
std::optional<SigningPolicy> parse_signing(std::string_view v) {
    const std::string s = lower(trim(v));
    if (s == "default" || s == "auto" || s == "if_required" || s == "desired" || s == "enabled" ||
        s == "yes" || s == "true" || s == "1" || s == "on")
        return SigningPolicy::Auto;
    if (s == "mandatory" || s == "required" || s == "forced" || s == "enforced")
        return SigningPolicy::Mandatory;
    if (s == "disabled" || s == "no" || s == "false" || s == "0" || s == "off")
        return SigningPolicy::Disabled;
    return std::nullopt;
}

// "smb encrypt" values as Samba's loadparm accepts them (enum_smb3_encryption_vals).
std::optional<EncryptPolicy> parse_encrypt(std::string_view v) {
    const std::string s = lower(trim(v));
    if (s == "default" || s == "if_required" || s == "auto" || s == "enabled" || s == "yes" ||
        s == "true" || s == "1" || s == "on")
        return EncryptPolicy::IfRequired;
    if (s == "off" || s == "disabled" || s == "no" || s == "false" || s == "0")
        return EncryptPolicy::Off;
    if (s == "desired") return EncryptPolicy::Desired;
    if (s == "required" || s == "mandatory" || s == "force") return EncryptPolicy::Required;
    return std::nullopt;
}

// "server smb3 encryption algorithms": Samba's names, in preference order, each at most once.
std::optional<std::vector<uint16_t>> parse_cipher_list(std::string_view v, std::string* why) {
    std::vector<uint16_t> out;
    std::string item;
    auto take = [&]() -> bool {
        if (item.empty()) return true;
        const std::string s = lower(item);
        uint16_t id = 0;
        if (s == "aes-128-ccm") id = 0x0001;
        if (s == "aes-128-gcm") id = 0x0002;
        if (s == "aes-256-ccm") id = 0x0003;
        if (s == "aes-256-gcm") id = 0x0004;
        if (id == 0) {
            *why = "unknown cipher '" + item +
                   "' (expected AES-128-GCM, AES-128-CCM, AES-256-GCM, AES-256-CCM)";
            return false;
        }
        if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
        item.clear();
        return true;
    };
    for (char c : v) {
        if (c == ',' || is_space(c)) {
            if (!take()) return std::nullopt;
        } else {
            item += c;
        }
    }
    if (!take()) return std::nullopt;
    if (out.empty()) {
        *why = "empty cipher list (use 'smb encrypt = off' to disable encryption)";
        return std::nullopt;
    }
    return out;
}

// A list separated by commas and/or whitespace; a double-quoted item may contain spaces
// (Samba's "valid users = alice, \"john smith\"").
std::optional<std::vector<std::string>> split_list(std::string_view v) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < v.size()) {
        if (is_space(v[i]) || v[i] == ',') {
            ++i;
            continue;
        }
        std::string item;
        if (v[i] == '"') {
            const size_t end = v.find('"', i + 1);
            if (end == std::string_view::npos) return std::nullopt;
            item = std::string(v.substr(i + 1, end - i - 1));
            i = end + 1;
        } else {
            while (i < v.size() && !is_space(v[i]) && v[i] != ',')
                item += v[i++];
        }
        if (!item.empty()) out.push_back(std::move(item));
    }
    return out;
}

std::string default_netbios_name() {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "DAXSMBD";
    std::string name(host);
    name = name.substr(0, name.find('.'));
    if (name.size() > 15) name.resize(15);  // NetBIOS names are at most 15 characters
    for (char& c : name)
        c = char(std::toupper(static_cast<unsigned char>(c)));
    return name;
}

std::string default_cluster_node_name() {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "daxsmbd";
    return host;
}

bool valid_cluster_node_name(std::string_view name) {
    if (name.empty() || name.size() > 253) return false;
    for (char c : name) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '/') return false;
    }
    return true;
}

// Characters Windows refuses in a share name (MS-SRVS 2.2.4.102: share names are path
// components; the server also cannot serve a name that contains a path separator).
bool valid_share_name(std::string_view name, std::string* why) {
    if (name.empty()) {
        *why = "empty share name";
        return false;
    }
    if (name.size() > 80) {
        *why = "share name longer than 80 characters";
        return false;
    }
    for (char c : name) {
        if (static_cast<unsigned char>(c) < 0x20 || std::strchr("\\/:*?\"<>|", c) != nullptr) {
            *why = "share name '" + std::string(name) + "' contains a character not allowed (" +
                   std::string(1, c) + ")";
            return false;
        }
    }
    return true;
}

// What a setter reports: nothing, or the message (without FILE:LINE).
using Problem = std::optional<std::string>;

Problem bad_value(std::string_view key, std::string_view value, std::string_view expected) {
    return "bad value '" + std::string(value) + "' for '" + std::string(key) + "' (expected " +
           std::string(expected) + ")";
}

Problem set_bool(bool& out, std::string_view key, std::string_view v) {
    auto b = parse_bool(v);
    if (!b) return bad_value(key, v, "yes/no/true/false/1/0/on/off");
    out = *b;
    return std::nullopt;
}

template <class T>
Problem set_uint(T& out, std::string_view key, std::string_view v, uint64_t lo, uint64_t hi) {
    auto n = parse_uint(v);
    if (!n || *n < lo || *n > hi)
        return bad_value(key, v, "an integer " + std::to_string(lo) + ".." + std::to_string(hi));
    out = T(*n);
    return std::nullopt;
}

Problem set_abs_path(std::string& out, std::string_view key, std::string_view v) {
    if (v.empty() || v.front() != '/') return bad_value(key, v, "an absolute path");
    out = std::string(v);
    return std::nullopt;
}

enum class Section { None, Global, Share };

struct ParseState {
    Config cfg;
    Section section = Section::None;  // the section the lines being read belong to
    std::vector<size_t> share_lines;  // header line of each share, parallel to cfg.shares
    size_t min_line = 0;  // where "server min/max protocol" were set, for the min>max message
    size_t max_line = 0;
    size_t methods_line = 0;  // "server auth methods", when given
    size_t keytab_line = 0;
    size_t user_map_line = 0;
    size_t message_size_line = 0;  // "max message size", when given
};

using GlobalSetter = Problem (*)(ParseState&, std::string_view key, std::string_view v,
                                 size_t line);
using ShareSetter = Problem (*)(ShareConfig&, std::string_view key, std::string_view v);

struct GlobalKey {
    std::string_view name;  // squashed form
    GlobalSetter set;
};
struct ShareKey {
    std::string_view name;
    ShareSetter set;
};

const GlobalKey kGlobalKeys[] =
    {
        {"smbports",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             auto items = split_list(v);
             if (!items || items->empty()) return bad_value(key, v, "one or more port numbers");
             std::vector<uint16_t> ports;
             for (const auto& it : *items) {
                 auto n = parse_uint(it);
                 if (!n || *n == 0 || *n > 65535) return bad_value(key, it, "a port 1..65535");
                 if (std::find(ports.begin(), ports.end(), uint16_t(*n)) == ports.end())
                     ports.push_back(uint16_t(*n));
             }
             st.cfg.global.smb_ports = std::move(ports);
             return std::nullopt;
         }},
        {"serversmbtransports",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             auto items = split_list(v);
             if (!items || items->empty()) return bad_value(key, v, "tcp, rdma or both");
             bool tcp = false, rdma = false;
             for (const auto& it : *items) {
                 std::string t = it;
                 for (auto& c : t)
                     c = char(std::tolower(static_cast<unsigned char>(c)));
                 if (t == "tcp")
                     tcp = true;
                 else if (t == "rdma")
                     rdma = true;
                 else
                     return bad_value(key, it, "tcp or rdma (quic and nbt are not offered)");
             }
             st.cfg.global.transport_tcp = tcp;
             st.cfg.global.transport_rdma = rdma;
             return std::nullopt;
         }},
        {"interfaces",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             auto items = split_list(v);
             if (!items) return bad_value(key, v, "IP addresses");
             std::vector<std::string> out;
             for (auto it : *items) {
                 // "[::1]" is accepted as well as "::1".
                 if (it.size() > 2 && it.front() == '[' && it.back() == ']')
                     it = it.substr(1, it.size() - 2);
                 unsigned char buf[16];
                 if (inet_pton(AF_INET, it.c_str(), buf) != 1 &&
                     inet_pton(AF_INET6, it.c_str(), buf) != 1)
                     return bad_value(key, it,
                                      "IPv4 or IPv6 addresses; interface names and masks are not "
                                      "supported");
                 out.push_back(it);
             }
             st.cfg.global.interfaces = std::move(out);
             return std::nullopt;
         }},
        {"serverminprotocol",
         [](ParseState& st, std::string_view key, std::string_view v, size_t line) -> Problem {
             std::string why;
             auto d = parse_dialect(v, false, &why);
             if (!d)
                 return why.empty() ? bad_value(key, v,
                                                "SMB2_02, SMB2_10, SMB3_00, SMB3_02, SMB3_11, "
                                                "SMB2 or SMB3")
                                    : Problem(why);
             st.cfg.global.min_protocol = *d;
             st.min_line = line;
             return std::nullopt;
         }},
        {"servermaxprotocol",
         [](ParseState& st, std::string_view key, std::string_view v, size_t line) -> Problem {
             std::string why;
             auto d = parse_dialect(v, true, &why);
             if (!d)
                 return why.empty() ? bad_value(key, v,
                                                "SMB2_02, SMB2_10, SMB3_00, SMB3_02, SMB3_11, "
                                                "SMB2 or SMB3")
                                    : Problem(why);
             st.cfg.global.max_protocol = *d;
             st.max_line = line;
             return std::nullopt;
         }},
        {"serversigning",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             auto s = parse_signing(v);
             if (!s) return bad_value(key, v, "auto, mandatory or disabled");
             st.cfg.global.signing = *s;
             return std::nullopt;
         }},
        {"smbencrypt",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             auto e = parse_encrypt(v);
             if (!e) return bad_value(key, v, "off, if_required, desired or required");
             st.cfg.global.encrypt = *e;
             return std::nullopt;
         }},
        {"serversmb3encryptionalgorithms",
         [](ParseState& st, std::string_view, std::string_view v, size_t) -> Problem {
             std::string why;
             auto l = parse_cipher_list(v, &why);
             if (!l) return why;
             st.cfg.global.encryption_algorithms = std::move(*l);
             return std::nullopt;
         }},
        {"userdatabase",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_abs_path(st.cfg.global.user_database, key, v);
         }},
        {"netbiosname",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             if (v.empty() || v.size() > 15 || v.find_first_of(" \t.\\/:*?\"<>|") != v.npos)
                 return bad_value(key, v, "1 to 15 characters without spaces, dots or \\/:*?\"<>|");
             st.cfg.global.netbios_name = std::string(v);
             for (char& c : st.cfg.global.netbios_name)
                 c = char(std::toupper(static_cast<unsigned char>(c)));
             return std::nullopt;
         }},
        {"workgroup",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             if (v.empty() || v.size() > 15 || v.find_first_of("\\/:*?\"<>|") != v.npos)
                 return bad_value(key, v, "1 to 15 characters without \\/:*?\"<>|");
             st.cfg.global.workgroup = std::string(v);
             for (char& c : st.cfg.global.workgroup)
                 c = char(std::toupper(static_cast<unsigned char>(c)));
             return std::nullopt;
         }},
        {"serverstring",
         [](ParseState& st, std::string_view, std::string_view v, size_t) -> Problem {
             st.cfg.global.server_string = std::string(v);
             return std::nullopt;
         }},
        {"workerthreads",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.worker_threads, key, v, 0, 1024);
         }},
        {"loglevel",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             // Samba's levels run to 10; everything above our most verbose level means "trace".
             unsigned level = 0;
             if (auto p = set_uint(level, key, v, 0, 10)) return p;
             st.cfg.global.log_level = std::min(level, 3u);
             return std::nullopt;
         }},
        {"devicehealthinterval",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.device_health_interval_s, key, v, 0, 86400);
         }},
        {"metricsaddress",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             std::string host;
             uint16_t port = 0;
             if (!v.empty() && !metrics::parse_host_port(std::string(v), &host, &port))
                 return bad_value(key, v, "IP:port (127.0.0.1:9922, [::1]:9922), or empty for off");
             st.cfg.global.metrics_address = std::string(v);
             return std::nullopt;
         }},
        {"controlsocket",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             // sun_path holds 107 bytes and a NUL; a relative path would depend on the cwd.
             if (!v.empty() && (v.front() != '/' || v.size() > 107))
                 return bad_value(key, v,
                                  "an absolute path of at most 107 bytes, or empty for none");
             st.cfg.global.control_socket = std::string(v);
             return std::nullopt;
         }},
        {"maxiosize",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             // MS-SMB2 3.3.5.4: MaxReadSize/MaxWriteSize/MaxTransactSize must be at least 65536.
             auto n = parse_size(v);
             if (!n || *n < 65536 || *n > (16u << 20))
                 return bad_value(key, v, "a size from 64k to 16M");
             st.cfg.global.max_io_size = uint32_t(*n);
             return std::nullopt;
         }},
        {"authtimeout",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.auth_timeout_s, key, v, 1, 3600);
         }},
        {"deadtime",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             unsigned minutes = 0;
             // Samba's unit: minutes; 0 disables the idle disconnect.
             if (auto p = set_uint(minutes, key, v, 0, 525600)) return p;
             st.cfg.global.idle_timeout_s = minutes * 60u;
             return std::nullopt;
         }},
        {"smb2maxcredits",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_credits, key, v, 32, 65535);
         }},
        {"maxconnectionstotal",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_connections, key, v, 1, 1000000);
         }},
        {"maxconnectionsperaddress",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_connections_per_address, key, v, 1, 1000000);
         }},
        {"maxsessionsperconnection",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_sessions_per_connection, key, v, 1, 65534);
         }},
        {"servermultichannelsupport",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_bool(st.cfg.global.multi_channel, key, v);
         }},
        {"smb2leases",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_bool(st.cfg.global.leases, key, v);
         }},
        {"smb3directoryleases",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_bool(st.cfg.global.directory_leases, key, v);
         }},
        {"durablehandles",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_bool(st.cfg.global.durable_handles, key, v);
         }},
        {"maxopenspersession",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_opens_per_session, key, v, 1, 1000000);
         }},
        {"maxtreeconnectspersession",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_trees_per_session, key, v, 1, 65534);
         }},
        {"maxdurablehandlesperclient",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_durable_per_client, key, v, 1, 1000000);
         }},
        {"maxlocksperopen",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_locks_per_open, key, v, 1, 1000000);
         }},
        {"maxbytesinflightperconnection",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             auto n = parse_size(v);
             if (!n || *n < 65536 || *n > (uint64_t(4) << 30))
                 return bad_value(key, v, "a size from 64k to 4G");
             st.cfg.global.max_bytes_in_flight = *n;
             return std::nullopt;
         }},
        {"maxasyncrequestsperconnection",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_async_per_connection, key, v, 1, 65535);
         }},
        {"maxmessagesize",
         [](ParseState& st, std::string_view key, std::string_view v, size_t line) -> Problem {
             auto n = parse_size(v);
             if (!n || *n < 65536 || *n > (64u << 20))
                 return bad_value(key, v, "a size from 64k to 64M");
             st.cfg.global.max_message_size = uint32_t(*n);
             st.message_size_line = line;
             return std::nullopt;
         }},
        {"daxmapcachefiles",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.dax_map_cache_files, key, v, 0, 65536);
         }},
        {"daxmapcachesize",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             auto n = parse_size(v);
             if (!n || *n > (uint64_t(1) << 40))
                 return bad_value(key, v, "a size up to 1024G (k/M/G suffixes)");
             st.cfg.global.dax_map_cache_bytes = *n;
             return std::nullopt;
         }},
        {"maxcompoundlength",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.max_compound_length, key, v, 1, 1024);
         }},
        {"serverauthmethods",
         [](ParseState& st, std::string_view key, std::string_view v, size_t line) -> Problem {
             auto items = split_list(v);
             if (!items || items->empty()) return bad_value(key, v, "kerberos and/or ntlm");
             bool krb = false, ntlm = false;
             for (const auto& it : *items) {
                 const std::string m = lower(it);
                 if (m == "kerberos" || m == "krb5")
                     krb = true;
                 else if (m == "ntlm" || m == "ntlmv2")
                     ntlm = true;
                 else
                     return bad_value(key, it, "kerberos and/or ntlm");
             }
             st.cfg.global.auth_kerberos = krb;
             st.cfg.global.auth_ntlm = ntlm;
             st.methods_line = line;
             return std::nullopt;
         }},
        {"kerberoskeytabfile",
         [](ParseState& st, std::string_view key, std::string_view v, size_t line) -> Problem {
             st.keytab_line = line;
             return set_abs_path(st.cfg.global.kerberos_keytab, key, v);
         }},
        {"realm",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             if (v.empty() || v.find_first_of(" \t@/\\") != v.npos)
                 return bad_value(key, v, "a Kerberos realm such as EXAMPLE.COM");
             // Samba upper-cases the realm too; AD and most MIT realms are upper case.
             st.cfg.global.realm = std::string(v);
             for (char& c : st.cfg.global.realm)
                 c = char(std::toupper(static_cast<unsigned char>(c)));
             return std::nullopt;
         }},
        {"kerberosusermap",
         [](ParseState& st, std::string_view key, std::string_view v, size_t line) -> Problem {
             st.user_map_line = line;
             return set_abs_path(st.cfg.global.kerberos_user_map_file, key, v);
         }},
        {"logonfailuredelay",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.logon_failure_delay_ms, key, v, 0, 60000);
         }},
        {"logonfailuremaxdelay",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.logon_failure_max_delay_ms, key, v, 0, 600000);
         }},
        {"logonfailurewindow",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             return set_uint(st.cfg.global.logon_failure_window_s, key, v, 1, 86400);
         }},
        {"guestaccount",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             if (v.empty() || v.find_first_of(" \t:/") != v.npos)
                 return bad_value(key, v, "a Unix account name such as nobody");
             st.cfg.global.guest_account = std::string(v);
             return std::nullopt;
         }},
        {"adminusers",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             auto items = split_list(v);
             if (!items) return bad_value(key, v, "a list of user names");
             st.cfg.global.admin_users = std::move(*items);
             return std::nullopt;
         }},
        {"maptoguest",
         [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
             const std::string s = squash(v);
             if (s == "never") {
                 st.cfg.global.guest_ok = false;
             } else if (s == "baduser") {
                 st.cfg.global.guest_ok = true;
             } else if (s == "badpassword" || s == "baduid") {
                 return "'" + std::string(v) + "' for '" + std::string(key) +
                        "' is not supported (a wrong password never becomes a guest login)";
             } else {
                 return bad_value(key, v, "never or bad user");
             }
             return std::nullopt;
         }},
};

// The scale-out cluster's keys (server/cluster/cluster_node.h), in [global].
const GlobalKey kClusterKeys[] = {
    {"clusteretcdendpoints",
     [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
         auto items = split_list(v);
         if (!items) return bad_value(key, v, "http://HOST:PORT URLs");
         for (const auto& url : *items) {
             std::string why;
             if (!daxsmbd::cluster::parse_etcd_url(url, &why))
                 return "bad etcd endpoint '" + url + "' for '" + std::string(key) + "': " + why;
         }
         st.cfg.global.cluster_etcd_endpoints = std::move(*items);
         return std::nullopt;
     }},
    {"clusternodename",
     [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
         // The name is part of etcd keys (nodes/<name>) and of the owner records.
         if (!valid_cluster_node_name(v))
             return bad_value(key, v, "1 to 253 printable characters without spaces or '/'");
         st.cfg.global.cluster_node_name = std::string(v);
         return std::nullopt;
     }},
    {"clusteraddresses",
     [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
         auto items = split_list(v);
         if (!items) return bad_value(key, v, "ADDR:PORT list");
         for (const auto& a : *items)
             if (!cluster::parse_endpoint(a)) return bad_value(key, a, "ADDR:PORT or [IPV6]:PORT");
         st.cfg.global.cluster_addresses = std::move(*items);
         return std::nullopt;
     }},
    {"clusterleasettl",
     [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
         // etcd grants no lease shorter than about 2 s (1.5 election timeouts).
         return set_uint(st.cfg.global.cluster_lease_ttl_s, key, v, 2, 300);
     }},
    {"clusterkeyprefix",
     [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
         if (v.size() < 2 || v.front() != '/' || v.back() != '/' ||
             v.find_first_of(" \t") != v.npos)
             return bad_value(key, v, "a key prefix starting and ending with '/'");
         st.cfg.global.cluster_key_prefix = std::string(v);
         return std::nullopt;
     }},
    {"clustertakeovercommand",
     [](ParseState& st, std::string_view key, std::string_view v, size_t) -> Problem {
         if (v.empty()) {
             st.cfg.global.cluster_takeover_command.clear();
             return std::nullopt;
         }
         // Run without a shell, with the share and the old owner as its arguments.
         return set_abs_path(st.cfg.global.cluster_takeover_command, key, v);
     }},
};

const ShareKey kShareKeys[] = {
    {"path",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_abs_path(sh.path, key, v);
     }},
    {"readonly",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.read_only, key, v);
     }},
    // The inverse of "read only" (Samba; "writeable" and "write ok" reach it through kSynonyms).
    {"writable",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         bool w = false;
         if (auto p = set_bool(w, key, v)) return p;
         sh.read_only = !w;
         return std::nullopt;
     }},
    {"validusers",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         auto items = split_list(v);
         if (!items) return bad_value(key, v, "user names separated by commas or spaces");
         for (const auto& u : *items) {
             // Samba's "@group" / "+group" / "&group": the user database has no groups.
             if (u.front() == '@' || u.front() == '+' || u.front() == '&')
                 return "groups ('" + u + "') in '" + std::string(key) + "' are not supported";
         }
         sh.valid_users = std::move(*items);
         return std::nullopt;
     }},
    {"identityremoting",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.identity_remoting, key, v);
     }},
    {"identityremotingprincipals",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         auto items = split_list(v);
         if (!items) return bad_value(key, v, "user names separated by commas or spaces");
         for (const auto& u : *items)
             if (u.front() == '@' || u.front() == '+' || u.front() == '&')
                 return "groups ('" + u + "') in '" + std::string(key) + "' are not supported";
         sh.identity_remoting_principals = std::move(*items);
         return std::nullopt;
     }},
    {"browseable",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.browseable, key, v);
     }},
    {"comment",
     [](ShareConfig& sh, std::string_view, std::string_view v) -> Problem {
         sh.comment = std::string(v);
         return std::nullopt;
     }},
    {"casesensitive",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         // Samba also has "auto" (case sensitive for CIFS UNIX extensions clients only, which
         // SMB2 does not have): for SMB2 that is "no".
         const std::string s = lower(trim(v));
         if (s == "auto" || s == "default") {
             sh.case_sensitive = false;
             return std::nullopt;
         }
         return set_bool(sh.case_sensitive, key, v);
     }},
    {"storedosattributes",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.store_dos_attributes, key, v);
     }},
    {"dax",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         auto m = dax::parse_dax_mode(lower(trim(v)));
         if (!m) return bad_value(key, v, "auto, on or off");
         sh.dax = *m;
         return std::nullopt;
     }},
    {"daxflush",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         auto k = dax::parse_flush_kind(lower(trim(v)));
         if (!k) return bad_value(key, v, "auto, clwb, clflushopt, clflush or ntstore");
         sh.dax_flush = *k;
         return std::nullopt;
     }},
    {"daxprefault",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         auto n = parse_size(v);
         if (!n || *n > (uint64_t(1) << 30))
             return bad_value(key, v, "a size up to 1G (0: no prefault)");
         sh.dax_prefault = size_t(*n);
         return std::nullopt;
     }},
    {"rdmaintopmem",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         const std::string m = lower(trim(v));
         if (m != "auto" && m != "bounce") return bad_value(key, v, "auto or bounce");
         sh.rdma_into_pmem_direct = m == "auto";
         return std::nullopt;
     }},
    {"smbencrypt",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         auto e = parse_encrypt(v);
         if (!e) return bad_value(key, v, "off, if_required, desired or required");
         sh.encrypt = *e;
         return std::nullopt;
     }},
    {"directio",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.direct_io, key, v);
     }},
    {"iopoll",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.io_poll, key, v);
     }},
    {"aiowritesize",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         auto n = parse_size(v);
         if (!n || *n > (uint64_t(1) << 30))
             return bad_value(key, v, "a size up to 1G (0: every write on the loop)");
         sh.aio_write_size = size_t(*n);
         return std::nullopt;
     }},
    {"usesendfile",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.use_sendfile, key, v);
     }},
    {"continuousavailability",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.continuous_availability, key, v);
     }},
    {"scaleout",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.scale_out, key, v);
     }},
    {"asymmetric",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.asymmetric, key, v);
     }},
    {"iosqpoll",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.io_sqpoll, key, v);
     }},
    {"guestok",
     [](ShareConfig& sh, std::string_view key, std::string_view v) -> Problem {
         return set_bool(sh.guest_ok, key, v);
     }},
};

// Samba's synonyms (squashed): each stands for the key it names, in [global] and in shares.
constexpr std::pair<std::string_view, std::string_view> kSynonyms[] = {
    {"serversmbencrypt", "smbencrypt"}, {"writeable", "writable"}, {"writeok", "writable"},
    {"browsable", "browseable"},        {"public", "guestok"},
};

std::string canonical_key(std::string squashed) {
    for (const auto& [synonym, key] : kSynonyms)
        if (squashed == synonym) return std::string(key);
    return squashed;
}

template <class Table>
auto find_key(const Table& table, std::string_view squashed) -> decltype(&table[0]) {
    for (const auto& k : table)
        if (k.name == squashed) return &k;
    return nullptr;
}

std::string where(std::string_view origin, size_t line) {
    return std::string(origin) + ":" + std::to_string(line) + ": ";
}

const char* dialect_name(Dialect d) {
    switch (d) {
        case Dialect::Smb202:
            return "SMB2_02";
        case Dialect::Smb210:
            return "SMB2_10";
        case Dialect::Smb300:
            return "SMB3_00";
        case Dialect::Smb302:
            return "SMB3_02";
        case Dialect::Smb311:
            return "SMB3_11";
        default:
            return "?";
    }
}

// One logical line starting at `*pos`: a trailing '\' joins the next physical line (leading
// whitespace of the continuation is dropped; whitespace before the '\' is kept). Advances `*pos`
// past it and `*lineno` by the physical lines it took.
std::string next_logical_line(std::string_view text, size_t* pos, size_t* lineno) {
    std::string logical;
    bool continued = true;
    while (continued && *pos < text.size()) {
        size_t eol = text.find('\n', *pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view phys = text.substr(*pos, eol - *pos);
        *pos = eol + 1;
        ++*lineno;
        if (!phys.empty() && phys.back() == '\r') phys.remove_suffix(1);
        if (!logical.empty()) {
            while (!phys.empty() && is_space(phys.front()))
                phys.remove_prefix(1);
        }
        continued = !phys.empty() && phys.back() == '\\';
        if (continued) phys.remove_suffix(1);
        logical += phys;
    }
    return logical;
}

Problem parse_section_header(ParseState& st, std::string_view line, size_t first_line) {
    const size_t close = line.find(']');
    if (close == std::string_view::npos) return "section header without closing ']'";
    if (!trim(line.substr(close + 1)).empty()) return "unexpected text after section header";
    const std::string_view name = trim(line.substr(1, close - 1));
    if (iequals(name, "global")) {
        st.section = Section::Global;  // repeated [global] sections add up, as in Samba
        return std::nullopt;
    }
    std::string why;
    if (!valid_share_name(name, &why)) return why;
    if (iequals(name, "IPC$")) return "share name IPC$ is reserved (the server provides it)";
    for (size_t i = 0; i < st.cfg.shares.size(); ++i) {
        if (iequals(st.cfg.shares[i].name, name))
            return "duplicate share [" + std::string(name) + "] (first defined at line " +
                   std::to_string(st.share_lines[i]) + ")";
    }
    ShareConfig sh;
    sh.name = std::string(name);
    st.cfg.shares.push_back(std::move(sh));
    st.share_lines.push_back(first_line);
    st.section = Section::Share;
    return std::nullopt;
}

Problem parse_global_key(ParseState& st, std::string_view key, std::string_view value,
                         const GlobalKey* gk, const ShareKey* sk, size_t first_line) {
    if (gk == nullptr) {
        if (sk != nullptr)
            return "'" + std::string(key) +
                   "' is a share parameter; set it in a share section, not in [global]";
        return "unknown parameter '" + std::string(key) + "'";
    }
    return gk->set(st, key, value, first_line);
}

Problem parse_share_key(ParseState& st, std::string_view key, std::string_view value,
                        const GlobalKey* gk, const ShareKey* sk) {
    if (sk == nullptr) {
        if (gk != nullptr)
            return "'" + std::string(key) + "' is a global parameter; set it in [global]";
        return "unknown parameter '" + std::string(key) + "'";
    }
    return sk->set(st.cfg.shares.back(), key, value);
}

// The key is looked up in both tables so that a key set in the wrong section is reported as
// belonging to the other one, the likely mistake, rather than as unknown.
Problem parse_parameter(ParseState& st, std::string_view line, size_t first_line) {
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return "expected 'key = value'";
    const std::string_view key = trim(line.substr(0, eq));
    const std::string_view value = trim(line.substr(eq + 1));
    if (key.empty()) return "missing parameter name before '='";
    const std::string sq = canonical_key(squash(key));
    const GlobalKey* gk = find_key(kGlobalKeys, sq);
    if (gk == nullptr) gk = find_key(kClusterKeys, sq);
    const ShareKey* sk = find_key(kShareKeys, sq);
    switch (st.section) {
        case Section::None:
            return "parameter '" + std::string(key) + "' before any [section] header";
        case Section::Global: {
            Problem p = parse_global_key(st, key, value, gk, sk, first_line);
            if (!p)
                st.cfg.global_settings[sq] =
                    GlobalSetting{std::string(key), std::string(value), first_line};
            return p;
        }
        case Section::Share:
            return parse_share_key(st, key, value, gk, sk);
    }
    return std::nullopt;
}

std::optional<std::string> check_share_paths(const ParseState& st, std::string_view origin) {
    for (size_t i = 0; i < st.cfg.shares.size(); ++i) {
        if (st.cfg.shares[i].path.empty())
            return where(origin, st.share_lines[i]) + "share [" + st.cfg.shares[i].name +
                   "] has no 'path' (it is required)";
    }
    return std::nullopt;
}

std::optional<std::string> check_protocol_range(const ParseState& st, std::string_view origin) {
    const GlobalConfig& g = st.cfg.global;
    if (uint16_t(g.min_protocol) <= uint16_t(g.max_protocol)) return std::nullopt;
    return where(origin, std::max(st.min_line, st.max_line)) + "server min protocol (" +
           dialect_name(g.min_protocol) + ") is newer than server max protocol (" +
           dialect_name(g.max_protocol) + ")";
}

// A READ or WRITE of "max io size" must fit in one message: its 64-byte header, the 48-byte
// WRITE body and, with 3.1.1 encryption, the 52-byte TRANSFORM header (MS-SMB2 2.2.41).
std::optional<std::string> check_message_size(const ParseState& st, std::string_view origin) {
    const GlobalConfig& g = st.cfg.global;
    if (!st.message_size_line || g.max_message_size >= uint64_t(g.max_io_size) + 4096)
        return std::nullopt;
    return where(origin, st.message_size_line) + "max message size (" +
           std::to_string(g.max_message_size) + ") must be at least max io size (" +
           std::to_string(g.max_io_size) + ") + 4096";
}

// The Kerberos keys fit together: a realm for the default user mapping, a keytab for the
// method, and the user map file read and parsed (its errors name the map file and line).
std::optional<std::string> check_kerberos(ParseState& st, std::string_view origin) {
    GlobalConfig& g = st.cfg.global;
    const bool have_keytab = !g.kerberos_keytab.empty();
    if (st.methods_line == 0) g.auth_kerberos = have_keytab;  // the default
    if (g.auth_kerberos && !have_keytab)
        return where(origin, st.methods_line) +
               "'server auth methods' includes kerberos but no 'kerberos keytab file' is set";
    if (have_keytab && g.realm.empty())
        return where(origin, st.keytab_line) +
               "'kerberos keytab file' needs 'realm' (the realm whose users log on)";
    if (!g.kerberos_user_map_file.empty() && !have_keytab)
        return where(origin, st.user_map_line) + "'kerberos user map' needs 'kerberos keytab file'";
    g.kerberos_user_map = auth::KerberosUserMap(g.realm);
    if (g.kerberos_user_map_file.empty()) return std::nullopt;
    std::ifstream in(g.kerberos_user_map_file, std::ios::binary);
    if (!in)
        return where(origin, st.user_map_line) + "cannot open kerberos user map " +
               g.kerberos_user_map_file + ": " + std::strerror(errno);
    std::ostringstream buf;
    buf << in.rdbuf();
    auto parsed = auth::KerberosUserMap::parse(buf.str(), g.kerberos_user_map_file, g.realm);
    if (auto* e = std::get_if<auth::KerberosUserMap::ParseError>(&parsed)) return e->message;
    g.kerberos_user_map = std::move(std::get<auth::KerberosUserMap>(parsed));
    return std::nullopt;
}

}  // namespace

bool GlobalConfig::is_admin_user(std::string_view name) const {
    for (const auto& a : admin_users)
        if (iequals(a, name)) return true;
    return false;
}

const ShareConfig* Config::find_share(std::string_view name) const {
    for (const auto& s : shares)
        if (iequals(s.name, name)) return &s;
    return nullptr;
}

std::variant<Config, Config::ParseError> Config::parse(std::string_view text,
                                                       std::string_view origin) {
    ParseState st;
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark

    size_t pos = 0;
    size_t lineno = 0;
    while (pos < text.size()) {
        const size_t first_line = lineno + 1;
        const std::string logical = next_logical_line(text, &pos, &lineno);
        const std::string_view line = trim(logical);
        if (line.empty() || line.front() == ';' || line.front() == '#') continue;
        const Problem p = line.front() == '[' ? parse_section_header(st, line, first_line)
                                              : parse_parameter(st, line, first_line);
        if (p) return ParseError{where(origin, first_line) + *p};
    }

    if (auto e = check_share_paths(st, origin)) return ParseError{*e};
    if (auto e = check_protocol_range(st, origin)) return ParseError{*e};
    if (auto e = check_message_size(st, origin)) return ParseError{*e};
    if (st.cfg.global.netbios_name.empty()) st.cfg.global.netbios_name = default_netbios_name();
    if (st.cfg.global.cluster_node_name.empty())
        st.cfg.global.cluster_node_name = default_cluster_node_name();
    if (auto e = check_kerberos(st, origin)) return ParseError{*e};
    return std::move(st.cfg);
}

std::variant<Config, Config::ParseError> Config::load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return ParseError{path + ": cannot open: " + std::strerror(errno)};
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) return ParseError{path + ": read error: " + std::strerror(errno)};
    return parse(buf.str(), path);
}

std::string default_config_text(std::string_view share_path, std::string_view userdb_path) {
    std::string t;
    t += "# daxsmbd configuration written by the quick start; see conf/daxsmbd.conf for every\n";
    t += "# parameter with its default.\n";
    t += "[global]\n";
    t += "    smb ports = 445\n";
    t += "    server min protocol = SMB2_02\n";
    t += "    server max protocol = SMB3_11\n";
    t += "    server signing = auto\n";
    t += "    map to guest = never\n";
    t += "    user database = " + std::string(userdb_path) + "\n";
    t += "\n";
    t += "[share]\n";
    t += "    path = " + std::string(share_path) + "\n";
    t += "    read only = no\n";
    t += "    comment = daxsmbd quick start share\n";
    return t;
}

}  // namespace daxsmbd::server
