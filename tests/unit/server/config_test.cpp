// Tests of the smb.conf-style configuration parser (server/config.cpp).
#include "server/config.h"
#include "server/server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace daxsmbd::server {
namespace {

using protocol::Dialect;

Config parse_ok(std::string_view text) {
    auto r = Config::parse(text, "t.conf");
    if (auto* e = std::get_if<Config::ParseError>(&r)) {
        ADD_FAILURE() << "unexpected parse error: " << e->message;
        return Config{};
    }
    return std::get<Config>(std::move(r));
}

std::string parse_err(std::string_view text) {
    auto r = Config::parse(text, "t.conf");
    if (auto* e = std::get_if<Config::ParseError>(&r)) return e->message;
    ADD_FAILURE() << "parse succeeded but an error was expected for:\n" << text;
    return {};
}

TEST(Config, EmptyTextGivesDefaults) {
    Config c = parse_ok("");
    EXPECT_EQ(c.global.smb_ports, std::vector<uint16_t>{445});
    EXPECT_TRUE(c.global.interfaces.empty());
    EXPECT_EQ(c.global.min_protocol, Dialect::Smb202);
    EXPECT_EQ(c.global.max_protocol, Dialect::Smb311);
    EXPECT_EQ(c.global.signing, SigningPolicy::Auto);
    EXPECT_EQ(c.global.user_database, "/var/lib/daxsmbd/users.db");
    EXPECT_EQ(c.global.workgroup, "WORKGROUP");
    EXPECT_EQ(c.global.max_io_size, 8u << 20);
    EXPECT_EQ(c.global.idle_timeout_s, 900u);
    EXPECT_EQ(c.global.auth_timeout_s, 60u);
    EXPECT_EQ(c.global.max_credits, 8192u);
    EXPECT_FALSE(c.global.guest_ok);
    EXPECT_TRUE(c.shares.empty());
    // The NetBIOS name defaults to the host name: upper case, at most 15 characters, no dots.
    ASSERT_FALSE(c.global.netbios_name.empty());
    EXPECT_LE(c.global.netbios_name.size(), 15u);
    EXPECT_EQ(c.global.netbios_name.find('.'), std::string::npos);
    for (char ch : c.global.netbios_name)
        EXPECT_FALSE(std::islower(static_cast<unsigned char>(ch)));
}

TEST(Config, FullGlobalSection) {
    Config c = parse_ok(R"([global]
    smb ports = 4450 4451
    interfaces = 127.0.0.1, ::1 [fe80::1]
    server min protocol = SMB2_10
    server max protocol = SMB3_02
    server signing = mandatory
    user database = /tmp/users.db
    netbios name = myhost
    workgroup = corp
    server string = the test server
    worker threads = 4
    log level = 2
    max io size = 1M
    auth timeout = 30
    deadtime = 5
    smb2 max credits = 512
    map to guest = bad user
)");
    EXPECT_EQ(c.global.smb_ports, (std::vector<uint16_t>{4450, 4451}));
    EXPECT_EQ(c.global.interfaces, (std::vector<std::string>{"127.0.0.1", "::1", "fe80::1"}));
    EXPECT_EQ(c.global.min_protocol, Dialect::Smb210);
    EXPECT_EQ(c.global.max_protocol, Dialect::Smb302);
    EXPECT_EQ(c.global.signing, SigningPolicy::Mandatory);
    EXPECT_EQ(c.global.user_database, "/tmp/users.db");
    EXPECT_EQ(c.global.netbios_name, "MYHOST");
    EXPECT_EQ(c.global.workgroup, "CORP");
    EXPECT_EQ(c.global.server_string, "the test server");
    EXPECT_EQ(c.global.worker_threads, 4u);
    EXPECT_EQ(c.global.log_level, 2u);
    EXPECT_EQ(c.global.max_io_size, 1u << 20);
    EXPECT_EQ(c.global.auth_timeout_s, 30u);
    EXPECT_EQ(c.global.idle_timeout_s, 300u);  // deadtime is in minutes
    EXPECT_EQ(c.global.max_credits, 512u);
    EXPECT_TRUE(c.global.guest_ok);
}

TEST(Config, KeysAreCaseAndWhitespaceInsensitive) {
    for (const char* key :
         {"read only", "readonly", "Read Only", "READONLY", "read  only", "Read\tOnly"}) {
        Config c = parse_ok(std::string("[s]\npath = /x\n") + key + " = no\n");
        ASSERT_EQ(c.shares.size(), 1u) << key;
        EXPECT_FALSE(c.shares[0].read_only) << key;
    }
    Config c = parse_ok("[GLOBAL]\nSMBPorts=1234\nServer Max Protocol=smb3_00\n");
    EXPECT_EQ(c.global.smb_ports, std::vector<uint16_t>{1234});
    EXPECT_EQ(c.global.max_protocol, Dialect::Smb300);
}

TEST(Config, CommentsBlankLinesAndCrlf) {
    Config c = parse_ok(
        "\xEF\xBB\xBF; a comment\r\n"
        "# another\r\n"
        "\r\n"
        "[global]\r\n"
        "   ; indented comment\r\n"
        "   smb ports = 99\r\n"
        "[data]\r\n"
        "   path = /srv/data # not a comment: Samba has whole-line comments only\r\n");
    EXPECT_EQ(c.global.smb_ports, std::vector<uint16_t>{99});
    ASSERT_EQ(c.shares.size(), 1u);
    EXPECT_EQ(c.shares[0].path, "/srv/data # not a comment: Samba has whole-line comments only");
}

TEST(Config, LineContinuation) {
    Config c = parse_ok(
        "[data]\n"
        "path = /srv/\\\n"
        "       data\n"
        "valid users = alice, \\\n"
        "   bob \\\n"
        "   carol\n"
        "comment = x\n");
    ASSERT_EQ(c.shares.size(), 1u);
    EXPECT_EQ(c.shares[0].path, "/srv/data");
    EXPECT_EQ(c.shares[0].valid_users, (std::vector<std::string>{"alice", "bob", "carol"}));
    // Errors after a continued line name the right physical line.
    EXPECT_EQ(parse_err("[data]\npath = /a\\\n  b\nbogus = 1\n"),
              "t.conf:4: unknown parameter 'bogus'");
}

TEST(Config, Booleans) {
    const std::pair<const char*, bool> cases[] = {
        {"yes", true}, {"no", false}, {"true", true}, {"false", false}, {"1", true},
        {"0", false},  {"on", true},  {"off", false}, {"YES", true},    {"Off", false},
    };
    for (auto [text, want] : cases) {
        Config c = parse_ok(std::string("[s]\npath=/x\nbrowseable = ") + text + "\n");
        EXPECT_EQ(c.shares[0].browseable, want) << text;
    }
    EXPECT_EQ(parse_err("[s]\npath=/x\nbrowseable = maybe\n"),
              "t.conf:3: bad value 'maybe' for 'browseable' (expected "
              "yes/no/true/false/1/0/on/off)");
    EXPECT_NE(parse_err("[s]\npath=/x\nread only =\n").find("bad value"), std::string::npos);
}

TEST(Config, ShareKeysAndDefaults) {
    Config c = parse_ok(R"([data]
    path = /srv/data
[full]
    path = /srv/full
    read only = no
    valid users = alice bob,"john smith"
    browsable = no
    comment = all of it
    case sensitive = yes
    store dos attributes = no
    guest ok = yes
)");
    ASSERT_EQ(c.shares.size(), 2u);
    const ShareConfig& d = c.shares[0];
    EXPECT_EQ(d.name, "data");
    EXPECT_EQ(d.path, "/srv/data");
    EXPECT_TRUE(d.read_only);  // Samba's default
    EXPECT_TRUE(d.valid_users.empty());
    EXPECT_TRUE(d.browseable);
    EXPECT_EQ(d.comment, "");
    EXPECT_FALSE(d.case_sensitive);
    EXPECT_TRUE(d.store_dos_attributes);
    EXPECT_FALSE(d.guest_ok);
    const ShareConfig& f = c.shares[1];
    EXPECT_FALSE(f.read_only);
    EXPECT_EQ(f.valid_users, (std::vector<std::string>{"alice", "bob", "john smith"}));
    EXPECT_FALSE(f.browseable);
    EXPECT_EQ(f.comment, "all of it");
    EXPECT_TRUE(f.case_sensitive);
    EXPECT_FALSE(f.store_dos_attributes);
    EXPECT_TRUE(f.guest_ok);
}

TEST(Config, DaxKeys) {
    Config d = parse_ok("[s]\npath=/x\n");
    EXPECT_EQ(d.shares[0].dax, dax::DaxMode::Auto);
    EXPECT_EQ(d.shares[0].dax_flush, dax::FlushKind::Auto);
    Config c = parse_ok(
        "[a]\npath=/x\ndax = on\ndax flush = clflushopt\n"
        "[b]\npath=/y\nDAX = Off\ndaxflush = NTSTORE\n");
    EXPECT_EQ(c.shares[0].dax, dax::DaxMode::On);
    EXPECT_EQ(c.shares[0].dax_flush, dax::FlushKind::Clflushopt);
    EXPECT_EQ(c.shares[1].dax, dax::DaxMode::Off);
    EXPECT_EQ(c.shares[1].dax_flush, dax::FlushKind::NtStore);
    EXPECT_NE(parse_err("[s]\npath=/x\ndax = sometimes\n").find("t.conf:3"), std::string::npos);
    EXPECT_NE(parse_err("[s]\npath=/x\ndax flush = sfence\n").find("clwb"), std::string::npos);
    EXPECT_NE(parse_err("[global]\ndax = on\n"), "");  // a share key
}

TEST(Config, DaxMapCacheAndPrefaultKeys) {
    Config d = parse_ok("[s]\npath=/x\n");
    EXPECT_EQ(d.global.dax_map_cache_files, 64u);
    EXPECT_EQ(d.global.dax_map_cache_bytes, uint64_t(16) << 30);
    EXPECT_EQ(d.shares[0].dax_prefault, size_t(64) << 20);
    Config c = parse_ok(
        "[global]\ndax map cache files = 0\ndax map cache size = 512M\n"
        "[a]\npath=/x\ndax prefault = 0\n[b]\npath=/y\nDaxPrefault = 2m\n");
    EXPECT_EQ(c.global.dax_map_cache_files, 0u);
    EXPECT_EQ(c.global.dax_map_cache_bytes, uint64_t(512) << 20);
    EXPECT_EQ(c.shares[0].dax_prefault, 0u);
    EXPECT_EQ(c.shares[1].dax_prefault, size_t(2) << 20);
    EXPECT_NE(parse_err("[global]\ndax map cache files = many\n").find("t.conf:2"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\ndax map cache size = 2T\n"), "");
    EXPECT_NE(parse_err("[s]\npath=/x\ndax prefault = 2G\n").find("up to 1G"), std::string::npos);
    EXPECT_NE(parse_err("[s]\npath=/x\ndax map cache files = 1\n"), "");  // a [global] key
    EXPECT_NE(parse_err("[global]\ndax prefault = 1M\n"), "");            // a share key
}

TEST(Config, RdmaIntoPmem) {
    Config c = parse_ok(
        "[a]\npath=/x\n[b]\npath=/y\nrdma into pmem = Bounce\n"
        "[c]\npath=/z\nrdma into pmem = auto\n");
    EXPECT_TRUE(c.shares[0].rdma_into_pmem_direct);  // auto by default
    EXPECT_FALSE(c.shares[1].rdma_into_pmem_direct);
    EXPECT_TRUE(c.shares[2].rdma_into_pmem_direct);
    EXPECT_NE(parse_err("[s]\npath=/x\nrdma into pmem = direct\n").find("auto or bounce"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nrdma into pmem = bounce\n"), "");  // a share key
}

TEST(Config, ClusterKeys) {
    Config d = parse_ok("");
    EXPECT_TRUE(d.global.cluster_etcd_endpoints.empty());
    EXPECT_FALSE(d.global.cluster_node_name.empty());  // the host name
    EXPECT_TRUE(d.global.cluster_addresses.empty());
    EXPECT_EQ(d.global.cluster_lease_ttl_s, 10u);
    EXPECT_EQ(d.global.cluster_key_prefix, "/daxsmbd/");
    Config c = parse_ok(
        "[global]\n"
        "cluster etcd endpoints = http://10.0.0.1:2379, http://[fd00::2]:2379 http://etcd3:2379\n"
        "cluster node name = node-1.example\n"
        "cluster addresses = 10.0.0.11:445, [fd00::11]:445\n"
        "cluster lease ttl = 3\n"
        "cluster key prefix = /prod/smb/\n"
        "cluster takeover command = /usr/local/sbin/fence\n");
    EXPECT_EQ(c.global.cluster_etcd_endpoints,
              (std::vector<std::string>{"http://10.0.0.1:2379", "http://[fd00::2]:2379",
                                        "http://etcd3:2379"}));
    EXPECT_EQ(c.global.cluster_node_name, "node-1.example");
    EXPECT_EQ(c.global.cluster_addresses,
              (std::vector<std::string>{"10.0.0.11:445", "[fd00::11]:445"}));
    EXPECT_EQ(c.global.cluster_lease_ttl_s, 3u);
    EXPECT_EQ(c.global.cluster_key_prefix, "/prod/smb/");
    EXPECT_EQ(c.global.cluster_takeover_command, "/usr/local/sbin/fence");
    EXPECT_TRUE(d.global.cluster_takeover_command.empty());
    parse_err("[global]\ncluster takeover command = fence.sh\n");  // a relative path

    const std::string https = parse_err("[global]\ncluster etcd endpoints = https://e:2379\n");
    EXPECT_NE(https.find("t.conf:2: "), std::string::npos) << https;
    EXPECT_NE(https.find("not supported"), std::string::npos) << https;
    EXPECT_NE(parse_err("[global]\ncluster etcd endpoints = 10.0.0.1:2379\n").find("t.conf:2"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\n\ncluster lease ttl = 1\n").find("t.conf:3: bad value"),
              std::string::npos);
    parse_err("[global]\ncluster lease ttl = 301\n");
    parse_err("[global]\ncluster node name = a/b\n");
    parse_err("[global]\ncluster node name = a b\n");
    parse_err("[global]\ncluster addresses = 10.0.0.1\n");
    parse_err("[global]\ncluster addresses = node1:445\n");
    parse_err("[global]\ncluster key prefix = daxsmbd/\n");
    parse_err("[global]\ncluster key prefix = /daxsmbd\n");
    EXPECT_NE(parse_err("[s]\npath = /x\ncluster lease ttl = 5\n").find("global parameter"),
              std::string::npos);
}

TEST(Config, MetricsAddress) {
    EXPECT_EQ(parse_ok("").global.metrics_address, "");  // off by default
    EXPECT_EQ(parse_ok("[global]\nmetrics address = 127.0.0.1:9922\n").global.metrics_address,
              "127.0.0.1:9922");
    EXPECT_EQ(parse_ok("[global]\nmetrics address = [::1]:0\n").global.metrics_address, "[::1]:0");
    EXPECT_NE(parse_err("[global]\nmetrics address = localhost:9922\n").find("t.conf:2"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nmetrics address = 127.0.0.1\n").find("IP:port"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nmetrics address = 127.0.0.1:70000\n").find("IP:port"),
              std::string::npos);
    parse_err("[global]\nmetrics address = ::1:9922\n");  // IPv6 needs brackets
}

TEST(Config, ControlSocket) {
    EXPECT_EQ(parse_ok("").global.control_socket, "/run/daxsmbd/control");
    EXPECT_EQ(parse_ok("[global]\ncontrol socket = /tmp/x/ctl\n").global.control_socket,
              "/tmp/x/ctl");
    EXPECT_EQ(parse_ok("[global]\ncontrol socket =\n").global.control_socket, "");  // none
    EXPECT_NE(parse_err("[global]\ncontrol socket = run/ctl\n").find("absolute path"),
              std::string::npos);
    EXPECT_NE(
        parse_err("[global]\ncontrol socket = /" + std::string(120, 'x') + "\n").find("t.conf:2"),
        std::string::npos);
}

TEST(Config, DeviceHealthInterval) {
    EXPECT_EQ(parse_ok("").global.device_health_interval_s, 60u);
    EXPECT_EQ(parse_ok("[global]\ndevice health interval = 0\n").global.device_health_interval_s,
              0u);  // never read
    EXPECT_NE(parse_err("[global]\ndevice health interval = often\n").find("t.conf:2"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\ndevice health interval = 86401\n"), "");
}

TEST(Config, GlobalSettingsAreKeptAsWrittenByCanonicalKey) {
    Config c = parse_ok(
        "[global]\nSMB Ports = 445 1445\nserver smb encrypt = desired\n"
        "smb ports = 4455\n");
    ASSERT_EQ(c.global_settings.count("smbports"), 1u);
    EXPECT_EQ(c.global_settings["smbports"].key, "smb ports");  // the last setting wins
    EXPECT_EQ(c.global_settings["smbports"].value, "4455");
    EXPECT_EQ(c.global_settings["smbports"].line, 4u);
    EXPECT_EQ(c.global_settings["smbencrypt"].value, "desired");  // the synonym's key
}

TEST(Config, AioWriteSize) {
    EXPECT_EQ(parse_ok("[s]\npath=/x\n").shares[0].aio_write_size, 64u * 1024);
    Config c = parse_ok("[a]\npath=/x\naio write size = 16k\n[b]\npath=/y\naio write size = 0\n");
    EXPECT_EQ(c.shares[0].aio_write_size, 16u * 1024);
    EXPECT_EQ(c.shares[1].aio_write_size, 0u);
    EXPECT_NE(parse_err("[s]\npath=/x\naio write size = lots\n").find("t.conf:3"),
              std::string::npos);
    EXPECT_NE(parse_err("[s]\npath=/x\naio write size = 2g\n"), "");
}

TEST(Config, UseSendfile) {
    EXPECT_TRUE(parse_ok("[s]\npath=/x\n").shares[0].use_sendfile);
    Config c = parse_ok("[a]\npath=/x\nuse sendfile = no\n[b]\npath=/y\nuse sendfile = yes\n");
    EXPECT_FALSE(c.shares[0].use_sendfile);
    EXPECT_TRUE(c.shares[1].use_sendfile);
    EXPECT_NE(parse_err("[s]\npath=/x\nuse sendfile = maybe\n"), "");
}

TEST(Config, WritableIsTheInverseOfReadOnly) {
    for (const char* key : {"writable", "writeable", "write ok"}) {
        Config yes = parse_ok(std::string("[s]\npath=/x\n") + key + " = yes\n");
        EXPECT_FALSE(yes.shares[0].read_only) << key;
        Config no = parse_ok(std::string("[s]\npath=/x\nread only = no\n") + key + " = no\n");
        EXPECT_TRUE(no.shares[0].read_only) << key;
    }
    // The last setting wins, as in Samba.
    Config c = parse_ok("[s]\npath=/x\nwritable = yes\nread only = yes\n");
    EXPECT_TRUE(c.shares[0].read_only);
    Config g = parse_ok("[s]\npath=/x\npublic = yes\n");
    EXPECT_TRUE(g.shares[0].guest_ok);
}

TEST(Config, CaseSensitiveAcceptsSambaAuto) {
    EXPECT_FALSE(parse_ok("[s]\npath=/x\ncase sensitive = auto\n").shares[0].case_sensitive);
    EXPECT_NE(parse_err("[s]\npath=/x\ncase sensitive = sometimes\n").find("bad value"),
              std::string::npos);
}

TEST(Config, ProtocolNames) {
    struct Case {
        const char* text;
        Dialect as_min;
        Dialect as_max;
    };
    const Case cases[] = {
        {"SMB2_02", Dialect::Smb202, Dialect::Smb202},
        {"SMB2_10", Dialect::Smb210, Dialect::Smb210},
        {"SMB3_00", Dialect::Smb300, Dialect::Smb300},
        {"SMB3_02", Dialect::Smb302, Dialect::Smb302},
        {"SMB3_11", Dialect::Smb311, Dialect::Smb311},
        {"smb3_11", Dialect::Smb311, Dialect::Smb311},
        // A family name is its oldest member as a minimum, its newest as a maximum.
        {"SMB2", Dialect::Smb202, Dialect::Smb210},
        {"SMB3", Dialect::Smb300, Dialect::Smb311},
        {"default", Dialect::Smb202, Dialect::Smb311},
    };
    for (const auto& k : cases) {
        Config mn = parse_ok(std::string("[global]\nserver min protocol = ") + k.text + "\n");
        EXPECT_EQ(mn.global.min_protocol, k.as_min) << k.text;
        Config mx = parse_ok(std::string("[global]\nserver min protocol = SMB2_02\n"
                                         "server max protocol = ") +
                             k.text + "\n");
        EXPECT_EQ(mx.global.max_protocol, k.as_max) << k.text;
    }
    EXPECT_EQ(parse_err("[global]\nserver max protocol = NT1\n"),
              "t.conf:2: SMB1 (NT1) is not supported; the oldest dialect is SMB2_02");
    EXPECT_NE(parse_err("[global]\nserver max protocol = SMB3_10\n").find("pre-release"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nserver min protocol = SMB4\n").find("bad value 'SMB4'"),
              std::string::npos);
}

TEST(Config, MinProtocolAboveMaxIsAnError) {
    EXPECT_EQ(
        parse_err("[global]\nserver min protocol = SMB3_11\n\nserver max protocol = SMB3_00\n"),
        "t.conf:4: server min protocol (SMB3_11) is newer than server max protocol "
        "(SMB3_00)");
    // The order of the two keys does not matter; the later one is the line reported.
    EXPECT_EQ(parse_err("[global]\nserver max protocol = SMB2\nserver min protocol = SMB3\n"),
              "t.conf:3: server min protocol (SMB3_00) is newer than server max protocol "
              "(SMB2_10)");
    Config eq = parse_ok("[global]\nserver min protocol = SMB3_11\nserver max protocol = SMB3\n");
    EXPECT_EQ(eq.global.min_protocol, Dialect::Smb311);
}

TEST(Config, SigningValuesAndSambaSynonyms) {
    const std::pair<const char*, SigningPolicy> cases[] = {
        {"auto", SigningPolicy::Auto},
        {"default", SigningPolicy::Auto},
        {"if_required", SigningPolicy::Auto},
        {"desired", SigningPolicy::Auto},
        {"yes", SigningPolicy::Auto},
        {"mandatory", SigningPolicy::Mandatory},
        {"required", SigningPolicy::Mandatory},
        {"forced", SigningPolicy::Mandatory},
        {"enforced", SigningPolicy::Mandatory},
        {"disabled", SigningPolicy::Disabled},
        {"off", SigningPolicy::Disabled},
        {"no", SigningPolicy::Disabled},
        {"Mandatory", SigningPolicy::Mandatory},
    };
    for (auto [text, want] : cases) {
        Config c = parse_ok(std::string("[global]\nserver signing = ") + text + "\n");
        EXPECT_EQ(c.global.signing, want) << text;
    }
    EXPECT_NE(parse_err("[global]\nserver signing = sometimes\n").find("bad value"),
              std::string::npos);
}

TEST(Config, MapToGuest) {
    EXPECT_FALSE(parse_ok("[global]\nmap to guest = Never\n").global.guest_ok);
    EXPECT_TRUE(parse_ok("[global]\nmap to guest = Bad User\n").global.guest_ok);
    EXPECT_TRUE(parse_ok("[global]\nmap to guest = bad  user\n").global.guest_ok);
    EXPECT_NE(parse_err("[global]\nmap to guest = bad password\n").find("not supported"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nmap to guest = always\n").find("bad value"), std::string::npos);
}

TEST(Config, ServerMultiChannelSupport) {
    EXPECT_TRUE(parse_ok("[global]\n").global.multi_channel);  // Samba's default: yes
    EXPECT_FALSE(parse_ok("[global]\nserver multi channel support = no\n").global.multi_channel);
    EXPECT_TRUE(parse_ok("[global]\nserver multi channel support = yes\n").global.multi_channel);
    EXPECT_NE(parse_err("[global]\nserver multi channel support = maybe\n").find("bad value"),
              std::string::npos);
}

TEST(Config, Smb3DirectoryLeases) {
    EXPECT_TRUE(parse_ok("[global]\n").global.directory_leases);  // Samba's default: yes
    EXPECT_FALSE(parse_ok("[global]\nsmb3 directory leases = no\n").global.directory_leases);
    EXPECT_NE(parse_err("[global]\nsmb3 directory leases = sometimes\n").find("bad value"),
              std::string::npos);
}

TEST(Config, NumericRanges) {
    EXPECT_NE(parse_err("[global]\nsmb ports = 0\n").find("bad value"), std::string::npos);
    EXPECT_NE(parse_err("[global]\nsmb ports = 65536\n").find("bad value"), std::string::npos);
    EXPECT_NE(parse_err("[global]\nsmb ports = 44x\n").find("bad value"), std::string::npos);
    EXPECT_NE(parse_err("[global]\nsmb ports =\n").find("bad value"), std::string::npos);
    EXPECT_EQ(parse_ok("[global]\nsmb ports = 445, 445 139\n").global.smb_ports,
              (std::vector<uint16_t>{445, 139}));
    EXPECT_NE(parse_err("[global]\nworker threads = -1\n").find("bad value"), std::string::npos);
    EXPECT_NE(parse_err("[global]\nworker threads = 99999999999999999999999\n").find("bad value"),
              std::string::npos);
    EXPECT_EQ(parse_ok("[global]\nlog level = 10\n").global.log_level, 3u);
    EXPECT_NE(parse_err("[global]\nlog level = 11\n").find("bad value"), std::string::npos);
    EXPECT_EQ(parse_ok("[global]\nmax io size = 65536\n").global.max_io_size, 65536u);
    EXPECT_EQ(parse_ok("[global]\nmax io size = 4096k\n").global.max_io_size, 4u << 20);
    EXPECT_NE(parse_err("[global]\nmax io size = 65535\n").find("bad value"), std::string::npos);
    EXPECT_NE(parse_err("[global]\nmax io size = 1G\n").find("bad value"), std::string::npos);
    EXPECT_EQ(parse_ok("[global]\ndeadtime = 0\n").global.idle_timeout_s, 0u);
    EXPECT_NE(parse_err("[global]\nauth timeout = 0\n").find("bad value"), std::string::npos);
    EXPECT_NE(parse_err("[global]\nsmb2 max credits = 70000\n").find("bad value"),
              std::string::npos);
}

TEST(Config, InterfacesMustBeAddresses) {
    EXPECT_NE(parse_err("[global]\ninterfaces = eth0\n").find("bad value 'eth0'"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\ninterfaces = 10.0.0.0/8\n").find("bad value"),
              std::string::npos);
    EXPECT_TRUE(parse_ok("[global]\ninterfaces =\n").global.interfaces.empty());
}

TEST(Config, PathsMustBeAbsolute) {
    EXPECT_EQ(parse_err("[s]\npath = srv/data\n"),
              "t.conf:2: bad value 'srv/data' for 'path' (expected an absolute path)");
    EXPECT_NE(parse_err("[global]\nuser database = users.db\n").find("absolute path"),
              std::string::npos);
}

TEST(Config, StructuralErrorsCarryFileAndLine) {
    EXPECT_EQ(parse_err("[global]\nsmb ports = 445\nfrobnicate = yes\n"),
              "t.conf:3: unknown parameter 'frobnicate'");
    EXPECT_EQ(parse_err("smb ports = 445\n"),
              "t.conf:1: parameter 'smb ports' before any [section] header");
    EXPECT_EQ(parse_err("[global]\njust words\n"), "t.conf:2: expected 'key = value'");
    EXPECT_EQ(parse_err("[global]\n = 1\n"), "t.conf:2: missing parameter name before '='");
    EXPECT_EQ(parse_err("\n[global\n"), "t.conf:2: section header without closing ']'");
    EXPECT_EQ(parse_err("[global] extra\n"), "t.conf:1: unexpected text after section header");
    EXPECT_EQ(parse_err("[]\n"), "t.conf:1: empty share name");
    EXPECT_NE(parse_err("[a/b]\npath=/x\n").find("not allowed"), std::string::npos);
}

TEST(Config, KeysInTheWrongSection) {
    EXPECT_EQ(parse_err("[global]\nread only = no\n"),
              "t.conf:2: 'read only' is a share parameter; set it in a share section, not in "
              "[global]");
    EXPECT_EQ(parse_err("[data]\npath = /x\nsmb ports = 445\n"),
              "t.conf:3: 'smb ports' is a global parameter; set it in [global]");
}

TEST(Config, ShareRules) {
    EXPECT_EQ(parse_err("[data]\ncomment = no path\n[other]\npath=/x\n"),
              "t.conf:1: share [data] has no 'path' (it is required)");
    EXPECT_EQ(parse_err("[data]\npath=/a\n\n[DATA]\npath=/b\n"),
              "t.conf:4: duplicate share [DATA] (first defined at line 1)");
    EXPECT_EQ(parse_err("[ipc$]\npath=/x\n"),
              "t.conf:1: share name IPC$ is reserved (the server provides it)");
    EXPECT_NE(parse_err("[s]\npath=/x\nvalid users = @staff\n").find("not supported"),
              std::string::npos);
    EXPECT_NE(parse_err("[s]\npath=/x\nvalid users = \"unterminated\n").find("bad value"),
              std::string::npos);
    // A repeated [global] adds to the first one.
    Config c = parse_ok("[global]\nsmb ports = 1\n[s]\npath=/x\n[global]\nworkgroup = w\n");
    EXPECT_EQ(c.global.smb_ports, std::vector<uint16_t>{1});
    EXPECT_EQ(c.global.workgroup, "W");
}

TEST(Config, FindShareIsCaseInsensitive) {
    Config c = parse_ok("[Data]\npath=/a\n[ro]\npath=/b\n");
    ASSERT_NE(c.find_share("data"), nullptr);
    EXPECT_EQ(c.find_share("DATA")->path, "/a");
    EXPECT_EQ(c.find_share("Ro")->path, "/b");
    EXPECT_EQ(c.find_share("missing"), nullptr);
    EXPECT_EQ(c.find_share("IPC$"), nullptr);
}

TEST(Config, DefaultConfigTextParses) {
    const std::string text = default_config_text("/srv/daxsmbd/share", "/var/lib/daxsmbd/u.db");
    Config c = parse_ok(text);
    EXPECT_EQ(c.global.smb_ports, std::vector<uint16_t>{445});
    EXPECT_EQ(c.global.user_database, "/var/lib/daxsmbd/u.db");
    ASSERT_EQ(c.shares.size(), 1u);
    EXPECT_EQ(c.shares[0].name, "share");
    EXPECT_EQ(c.shares[0].path, "/srv/daxsmbd/share");
    EXPECT_FALSE(c.shares[0].read_only);
}

// Who sessions act as on disk (README "Identity"): Samba's keys and defaults.
TEST(Config, IdentityKeys) {
    Config d = parse_ok("");
    EXPECT_EQ(d.global.guest_account, "nobody");
    EXPECT_TRUE(d.global.admin_users.empty());
    EXPECT_FALSE(d.global.is_admin_user("root"));
    Config c = parse_ok("[global]\nguest account = smbguest\nadmin users = Root, \"Backup Op\"\n");
    EXPECT_EQ(c.global.guest_account, "smbguest");
    EXPECT_TRUE(c.global.is_admin_user("root"));
    EXPECT_TRUE(c.global.is_admin_user("backup op"));
    EXPECT_FALSE(c.global.is_admin_user("alice"));
    EXPECT_NE(parse_err("[global]\nguest account = a b\n").find("guest account"),
              std::string::npos);
}

// conf/daxsmbd.conf documents every parameter with its default: its [global] lines must set
// exactly the built-in defaults, and its share must parse.
TEST(Config, ExampleConfigStatesTheDefaults) {
    std::string here = __FILE__;  // .../tests/unit/server/config_test.cpp
    const std::string root = here.substr(0, here.rfind("tests/unit/server/"));
    auto r = Config::load(root + "conf/daxsmbd.conf");
    ASSERT_TRUE(std::holds_alternative<Config>(r)) << std::get<Config::ParseError>(r).message;
    const Config& c = std::get<Config>(r);
    const GlobalConfig d;
    EXPECT_EQ(c.global.smb_ports, d.smb_ports);
    EXPECT_EQ(c.global.interfaces, d.interfaces);
    EXPECT_EQ(c.global.min_protocol, d.min_protocol);
    EXPECT_EQ(c.global.max_protocol, d.max_protocol);
    EXPECT_EQ(c.global.signing, d.signing);
    EXPECT_EQ(c.global.user_database, d.user_database);
    EXPECT_EQ(c.global.workgroup, d.workgroup);
    EXPECT_EQ(c.global.server_string, d.server_string);
    EXPECT_EQ(c.global.worker_threads, d.worker_threads);
    EXPECT_EQ(c.global.log_level, d.log_level);
    EXPECT_EQ(c.global.max_io_size, d.max_io_size);
    EXPECT_EQ(c.global.idle_timeout_s, d.idle_timeout_s);
    EXPECT_EQ(c.global.auth_timeout_s, d.auth_timeout_s);
    EXPECT_EQ(c.global.max_credits, d.max_credits);
    EXPECT_EQ(c.global.guest_account, d.guest_account);
    EXPECT_EQ(c.global.control_socket, d.control_socket);
    EXPECT_EQ(c.global.device_health_interval_s, d.device_health_interval_s);
    EXPECT_EQ(c.global.admin_users, d.admin_users);
    EXPECT_EQ(c.global.max_connections, d.max_connections);
    EXPECT_EQ(c.global.max_connections_per_address, d.max_connections_per_address);
    EXPECT_EQ(c.global.max_sessions_per_connection, d.max_sessions_per_connection);
    EXPECT_EQ(c.global.max_opens_per_session, d.max_opens_per_session);
    EXPECT_EQ(c.global.max_async_per_connection, d.max_async_per_connection);
    EXPECT_EQ(c.global.max_message_size, d.max_message_size);
    EXPECT_EQ(c.global.max_compound_length, d.max_compound_length);
    EXPECT_EQ(c.global.dax_map_cache_files, d.dax_map_cache_files);
    EXPECT_EQ(c.global.dax_map_cache_bytes, d.dax_map_cache_bytes);
    EXPECT_EQ(c.global.guest_ok, d.guest_ok);
    EXPECT_EQ(c.global.auth_kerberos, d.auth_kerberos);
    EXPECT_EQ(c.global.auth_ntlm, d.auth_ntlm);
    EXPECT_EQ(c.global.kerberos_keytab, d.kerberos_keytab);
    EXPECT_EQ(c.global.logon_failure_delay_ms, d.logon_failure_delay_ms);
    EXPECT_EQ(c.global.logon_failure_max_delay_ms, d.logon_failure_max_delay_ms);
    EXPECT_EQ(c.global.logon_failure_window_s, d.logon_failure_window_s);
    EXPECT_EQ(c.global.encrypt, d.encrypt);
    EXPECT_EQ(c.global.encryption_algorithms, d.encryption_algorithms);
    EXPECT_EQ(c.global.cluster_etcd_endpoints, d.cluster_etcd_endpoints);
    EXPECT_EQ(c.global.cluster_node_name, parse_ok("").global.cluster_node_name);
    EXPECT_EQ(c.global.cluster_addresses, d.cluster_addresses);
    EXPECT_EQ(c.global.cluster_lease_ttl_s, d.cluster_lease_ttl_s);
    EXPECT_EQ(c.global.cluster_key_prefix, d.cluster_key_prefix);
    EXPECT_EQ(c.global.cluster_takeover_command, d.cluster_takeover_command);
    ASSERT_EQ(c.shares.size(), 1u);
    const ShareConfig ds;
    EXPECT_EQ(c.shares[0].valid_users, ds.valid_users);
    EXPECT_EQ(c.shares[0].browseable, ds.browseable);
    EXPECT_EQ(c.shares[0].case_sensitive, ds.case_sensitive);
    EXPECT_EQ(c.shares[0].store_dos_attributes, ds.store_dos_attributes);
    EXPECT_EQ(c.shares[0].guest_ok, ds.guest_ok);
    EXPECT_EQ(c.shares[0].dax_prefault, ds.dax_prefault);
    EXPECT_EQ(c.shares[0].use_sendfile, ds.use_sendfile);
}

TEST(Config, LoadReadsAFileAndNamesItInErrors) {
    char dir[] = "/tmp/daxsmbd-config-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string path = std::string(dir) + "/x.conf";
    {
        std::ofstream f(path);
        f << "[data]\npath = /srv\n[bad]\npath = /x\nnope = 1\n";
    }
    auto r = Config::load(path);
    ASSERT_TRUE(std::holds_alternative<Config::ParseError>(r));
    EXPECT_EQ(std::get<Config::ParseError>(r).message, path + ":5: unknown parameter 'nope'");
    {
        std::ofstream f(path);
        f << "[data]\npath = /srv\n";
    }
    auto ok = Config::load(path);
    ASSERT_TRUE(std::holds_alternative<Config>(ok));
    EXPECT_EQ(std::get<Config>(ok).shares.at(0).path, "/srv");
    std::remove(path.c_str());
    rmdir(dir);

    auto missing = Config::load(std::string(dir) + "/absent.conf");
    ASSERT_TRUE(std::holds_alternative<Config::ParseError>(missing));
    EXPECT_NE(std::get<Config::ParseError>(missing).message.find("absent.conf: cannot open"),
              std::string::npos);
}

}  // namespace
// ---- authentication methods, Kerberos, logon throttling ---------------------------------------

TEST(Config, AuthMethodsDefaultFollowsTheKeytab) {
    Config plain = parse_ok("");
    EXPECT_FALSE(plain.global.auth_kerberos);
    EXPECT_TRUE(plain.global.auth_ntlm);
    Config krb = parse_ok("[global]\nkerberos keytab file = /k.keytab\nrealm = example.com\n");
    EXPECT_TRUE(krb.global.auth_kerberos);
    EXPECT_TRUE(krb.global.auth_ntlm);
    EXPECT_EQ(krb.global.kerberos_keytab, "/k.keytab");
    EXPECT_EQ(krb.global.realm, "EXAMPLE.COM");  // upper-cased, as Samba does
    // The default mapping rule uses the realm.
    EXPECT_EQ(krb.global.kerberos_user_map.map("alice@EXAMPLE.COM"), "alice");
    EXPECT_EQ(krb.global.kerberos_user_map.map("alice@OTHER"), std::nullopt);
}

TEST(Config, AuthMethodsSwitch) {
    const std::string krb = "[global]\nkerberos keytab file = /k\nrealm = R\n";
    Config only_krb = parse_ok(krb + "server auth methods = kerberos\n");
    EXPECT_TRUE(only_krb.global.auth_kerberos);
    EXPECT_FALSE(only_krb.global.auth_ntlm);
    Config only_ntlm = parse_ok(krb + "server auth methods = NTLM\n");
    EXPECT_FALSE(only_ntlm.global.auth_kerberos);
    EXPECT_TRUE(only_ntlm.global.auth_ntlm);
    Config both = parse_ok(krb + "server auth methods = ntlm, kerberos\n");
    EXPECT_TRUE(both.global.auth_kerberos);
    EXPECT_TRUE(both.global.auth_ntlm);
    EXPECT_EQ(parse_err("[global]\nserver auth methods = kerberos\n"),
              "t.conf:2: 'server auth methods' includes kerberos but no 'kerberos keytab file' "
              "is set");
    EXPECT_NE(parse_err("[global]\nserver auth methods = ntlmv1\n").find("bad value 'ntlmv1'"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nserver auth methods =\n").find("bad value"), std::string::npos);
}

TEST(Config, KerberosNeedsRealmAndAbsolutePaths) {
    EXPECT_EQ(parse_err("[global]\n\nkerberos keytab file = /k\n"),
              "t.conf:3: 'kerberos keytab file' needs 'realm' (the realm whose users log on)");
    EXPECT_NE(parse_err("[global]\nkerberos keytab file = k.keytab\n").find("absolute path"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nrealm = A B\n").find("bad value"), std::string::npos);
    EXPECT_EQ(parse_err("[global]\nkerberos user map = /m\n"),
              "t.conf:2: 'kerberos user map' needs 'kerberos keytab file'");
}

TEST(Config, KerberosUserMapFileIsReadAndItsErrorsNamed) {
    char dir[] = "/tmp/daxsmbd-config-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string map = std::string(dir) + "/users.map";
    {
        std::ofstream f(map);
        f << "# map\ncarol = extern/admin@R, c@OTHER\n";
    }
    const std::string base = "[global]\nkerberos keytab file = /k\nrealm = R\n";
    Config c = parse_ok(base + "kerberos user map = " + map + "\n");
    EXPECT_EQ(c.global.kerberos_user_map.map("extern/admin@R"), "carol");
    EXPECT_EQ(c.global.kerberos_user_map.map("c@OTHER"), "carol");
    EXPECT_EQ(c.global.kerberos_user_map.map("bob@R"), "bob");
    {
        std::ofstream f(map);
        f << "\ncarol extern/admin@R\n";
    }
    EXPECT_EQ(parse_err(base + "kerberos user map = " + map + "\n"),
              map + ":2: expected 'localuser = principal ...'");
    std::remove(map.c_str());
    EXPECT_NE(parse_err(base + "kerberos user map = " + map + "\n")
                  .find("t.conf:4: cannot open kerberos user map"),
              std::string::npos);
    rmdir(dir);
}

TEST(Config, LogonThrottleKeys) {
    Config c = parse_ok(
        "[global]\nlogon failure delay = 0\nlogon failure max delay = 100\n"
        "logon failure window = 10\n");
    EXPECT_EQ(c.global.logon_failure_delay_ms, 0u);
    EXPECT_EQ(c.global.logon_failure_max_delay_ms, 100u);
    EXPECT_EQ(c.global.logon_failure_window_s, 10u);
    EXPECT_NE(parse_err("[global]\nlogon failure window = 0\n").find("bad value"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nlogon failure delay = 1s\n").find("bad value"),
              std::string::npos);
}

TEST(Config, LimitKeys) {
    Config c = parse_ok(
        "[global]\nmax connections total = 6000\nmax connections per address = 5000\n"
        "max sessions per connection = 2\nmax opens per session = 10\n"
        "max async requests per connection = 3\nmax io size = 1M\nmax message size = 2M\n"
        "max compound length = 4\nmax tree connects per session = 5\nmax locks per open = 6\n"
        "max bytes in flight per connection = 3M\n");
    EXPECT_EQ(c.global.max_connections, 6000u);
    EXPECT_EQ(c.global.max_trees_per_session, 5u);
    EXPECT_EQ(c.global.max_locks_per_open, 6u);
    EXPECT_EQ(c.global.max_bytes_in_flight, 3u << 20);
    EXPECT_EQ(c.global.max_connections_per_address, 5000u);
    EXPECT_EQ(c.global.max_sessions_per_connection, 2u);
    EXPECT_EQ(c.global.max_opens_per_session, 10u);
    EXPECT_EQ(c.global.max_async_per_connection, 3u);
    EXPECT_EQ(c.global.max_message_size, 2u << 20);
    EXPECT_EQ(c.global.max_compound_length, 4u);

    // The server's Limits follow the keys; without "max message size" it is max io size + 1M.
    const Limits l = Limits::from(c.global);
    EXPECT_EQ(l.max_connections, 6000u);
    EXPECT_EQ(l.max_connections_per_address, 5000u);
    EXPECT_EQ(l.max_sessions_per_connection, 2u);
    EXPECT_EQ(l.max_opens_per_session, 10u);
    EXPECT_EQ(l.max_async_per_connection, 3u);
    EXPECT_EQ(l.max_message_size, 2u << 20);
    EXPECT_EQ(l.max_compound_elements, 4u);
    EXPECT_EQ(l.max_trees_per_session, 5u);
    EXPECT_EQ(l.max_locks_per_open, 6u);
    EXPECT_EQ(l.max_bytes_in_flight, 3u << 20);
    // Safe defaults without the keys.
    const Limits d = Limits::from(parse_ok("[global]\n").global);
    EXPECT_EQ(d.max_trees_per_session, 1024u);
    EXPECT_EQ(d.max_locks_per_open, 16384u);
    EXPECT_EQ(d.max_bytes_in_flight, 32u << 20);
    EXPECT_EQ(Limits::from(parse_ok("[global]\nmax io size = 1M\n").global).max_message_size,
              2u << 20);

    for (const char* bad :
         {"max connections total = 0", "max connections per address = -1",
          "max sessions per connection = 0", "max sessions per connection = 65535",
          "max opens per session = many", "max async requests per connection = 0",
          "max message size = 1k", "max message size = 1G", "max compound length = 0",
          "max compound length = 1025", "max tree connects per session = 0",
          "max tree connects per session = 65535", "max locks per open = 0",
          "max bytes in flight per connection = 1k", "max bytes in flight per connection = 5G",
          "max bytes in flight per connection = lots"}) {
        EXPECT_EQ(parse_err(std::string("[global]\nlog level = 1\n") + bad + "\n")
                      .rfind("t.conf:3: bad value", 0),
                  0u)
            << bad;
    }
    // A message must hold a READ/WRITE of max io size; the error names the key's line.
    EXPECT_EQ(parse_err("[global]\nmax message size = 1M\nmax io size = 1M\n"),
              "t.conf:2: max message size (1048576) must be at least max io size (1048576) + 4096");
}

}  // namespace daxsmbd::server

namespace daxsmbd::server {
namespace {

TEST(ConfigEncryption, DefaultsAreSambas) {
    Config c = parse_ok("");
    EXPECT_EQ(c.global.encrypt, EncryptPolicy::IfRequired);
    EXPECT_EQ(c.global.encryption_algorithms, (std::vector<uint16_t>{2, 1, 4, 3}));
}

TEST(ConfigEncryption, GlobalAndShareKeys) {
    Config c = parse_ok(
        "[global]\n"
        "  server smb encrypt = desired\n"
        "  server smb3 encryption algorithms = AES-256-GCM, aes-128-ccm AES-256-GCM\n"
        "[a]\n  path = /a\n  smb encrypt = required\n"
        "[b]\n  path = /b\n  server smb encrypt = off\n"
        "[c]\n  path = /c\n");
    EXPECT_EQ(c.global.encrypt, EncryptPolicy::Desired);
    EXPECT_EQ(c.global.encryption_algorithms, (std::vector<uint16_t>{4, 1}));
    EXPECT_EQ(c.shares[0].encrypt, EncryptPolicy::Required);
    EXPECT_EQ(c.shares[1].encrypt, EncryptPolicy::Off);
    EXPECT_FALSE(c.shares[2].encrypt.has_value());  // inherits [global]
    EXPECT_EQ(parse_ok("[global]\nsmb encrypt = mandatory\n").global.encrypt,
              EncryptPolicy::Required);
    EXPECT_EQ(parse_ok("[global]\nsmb encrypt = if_required\n").global.encrypt,
              EncryptPolicy::IfRequired);
    EXPECT_EQ(parse_ok("[global]\nsmb encrypt = no\n").global.encrypt, EncryptPolicy::Off);
}

TEST(ConfigEncryption, BadValuesAreErrors) {
    EXPECT_NE(parse_err("[global]\nsmb encrypt = sometimes\n").find("t.conf:2:"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nserver smb3 encryption algorithms = AES-512-GCM\n")
                  .find("AES-512-GCM"),
              std::string::npos);
    EXPECT_NE(parse_err("[global]\nserver smb3 encryption algorithms = ,\n").find("empty"),
              std::string::npos);
    // The algorithm list is global only.
    EXPECT_NE(parse_err("[s]\npath = /s\nserver smb3 encryption algorithms = AES-128-GCM\n")
                  .find("global parameter"),
              std::string::npos);
}

TEST(Config, ScaleOutAndAsymmetric) {
    Config c = parse_ok(
        "[a]\npath=/a\n"
        "[b]\npath=/b\nscale out = yes\nasymmetric = yes\n"
        "[c]\npath=/c\nscaleout = on\nasymmetric = no\n");
    ASSERT_EQ(c.shares.size(), 3u);
    EXPECT_FALSE(c.shares[0].scale_out);  // both off by default
    EXPECT_FALSE(c.shares[0].asymmetric);
    EXPECT_TRUE(c.shares[1].scale_out);
    EXPECT_TRUE(c.shares[1].asymmetric);
    EXPECT_TRUE(c.shares[2].scale_out);
    EXPECT_FALSE(c.shares[2].asymmetric);
    EXPECT_NE(parse_err("[s]\npath=/x\nscale out = maybe\n").find("bad value"), std::string::npos);
    EXPECT_NE(parse_err("[s]\npath=/x\nasymmetric = 2\n").find("bad value"), std::string::npos);
    // Share keys only.
    EXPECT_FALSE(parse_err("[global]\nscale out = yes\n").empty());
}

TEST(Config, IdentityRemoting) {
    Config c = parse_ok(
        "[a]\npath=/a\n"
        "[b]\npath=/b\nidentity remoting = yes\n"
        "identity remoting principals = svc-web, \"svc sql\"\n");
    ASSERT_EQ(c.shares.size(), 2u);
    EXPECT_FALSE(c.shares[0].identity_remoting);  // off by default, and nobody listed
    EXPECT_TRUE(c.shares[0].identity_remoting_principals.empty());
    EXPECT_TRUE(c.shares[1].identity_remoting);
    EXPECT_EQ(c.shares[1].identity_remoting_principals,
              (std::vector<std::string>{"svc-web", "svc sql"}));
    EXPECT_NE(
        parse_err("[s]\npath=/x\nidentity remoting principals = @svc\n").find("not supported"),
        std::string::npos);
    EXPECT_NE(parse_err("[s]\npath=/x\nidentity remoting = maybe\n").find("bad value"),
              std::string::npos);
}

}  // namespace
}  // namespace daxsmbd::server
