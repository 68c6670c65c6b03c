// End-to-end test of the Prometheus endpoint ("metrics address"): the in-process server with
// metrics on a loopback port, known traffic from our client (N READs of 4 KiB, M logons with a
// wrong password), then GET /metrics: the counts are there, every histogram's buckets are
// cumulative with +Inf equal to _count, and `promtool check metrics` accepts the text.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "protocol/access_mask.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;

constexpr int kReads = 25;
constexpr int kFailedLogons = 3;
constexpr uint32_t kReadSize = 4096;

// The whole answer to one HTTP request on a fresh loopback connection.
std::string http_get(uint16_t port, const std::string& path) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(fd);
        return {};
    }
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != ssize_t(req.size())) {
        close(fd);
        return {};
    }
    std::string got;
    char buf[65536];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;)
        got.append(buf, size_t(n));
    close(fd);
    return got;
}

// "name{labels}" -> value, of every sample line.
std::map<std::string, double> samples_of(const std::string& text) {
    std::map<std::string, double> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
        if (l.empty() || l[0] == '#') continue;
        auto sp = l.rfind(' ');
        if (sp == std::string::npos) continue;
        out[l.substr(0, sp)] = std::stod(l.substr(sp + 1));
    }
    return out;
}

double sum_matching(const std::map<std::string, double>& s, const std::string& prefix,
                    const std::string& needle) {
    double t = 0;
    for (const auto& [k, v] : s)
        if (k.rfind(prefix, 0) == 0 && k.find(needle) != std::string::npos) t += v;
    return t;
}

// Every histogram series: buckets never decrease, and le="+Inf" equals _count. Returns the
// number of series checked.
int check_histograms(const std::string& text) {
    std::istringstream in(text);
    std::string series;  // name + labels without le, of the buckets being read
    double last = -1;
    std::map<std::string, double> inf;
    int checked = 0;
    for (std::string l; std::getline(in, l);) {
        auto b = l.find("_bucket{");
        if (l.empty() || l[0] == '#' || b == std::string::npos) continue;
        auto le = l.find("le=\"", b);
        EXPECT_NE(le, std::string::npos) << l;
        if (le == std::string::npos) continue;
        std::string key = l.substr(0, b) + "{" + l.substr(b + 8, le - (b + 8));
        if (!key.empty() && key.back() == ',') key.pop_back();
        const double v = std::stod(l.substr(l.rfind(' ') + 1));
        if (key != series) {
            series = key;
            last = -1;
        }
        EXPECT_GE(v, last) << "buckets not cumulative at " << l;
        last = v;
        if (l.find("le=\"+Inf\"") != std::string::npos) inf[key] = v;
    }
    const auto all = samples_of(text);
    for (const auto& [key, v] : inf) {
        // key: name{labels  ->  name_count{labels}  (or name_count without labels)
        auto brace = key.find('{');
        std::string count_key = key.substr(0, brace) + "_count";
        if (brace + 1 < key.size()) count_key += key.substr(brace) + "}";
        auto it = all.find(count_key);
        EXPECT_NE(it, all.end()) << "no " << count_key;
        if (it != all.end()) {
            EXPECT_EQ(it->second, v) << count_key;
        }
        ++checked;
    }
    return checked;
}

TEST(E2eMetrics, KnownTrafficShowsInTheScrape) {
    TestServer::Options o;
    o.worker_threads = 2;  // two loop shards to merge
    o.configure = [](server::Config& cfg) {
        cfg.global.metrics_address = "127.0.0.1:0";
        cfg.global.logon_failure_delay_ms = 0;  // no throttle delay: the test stays fast
    };
    TestServer server(o);
    ASSERT_TRUE(server.ok()) << server.error();
    const uint16_t port = server.server().metrics_port();
    ASSERT_NE(port, 0);

    // M failed logons (wrong password) on one connection, kept open until the scrape.
    Smb2Client bad;
    ASSERT_TRUE(bad.connect("127.0.0.1", server.port()));
    ASSERT_STATUS(bad.negotiate(), NtStatus::Success);
    for (int i = 0; i < kFailedLogons; ++i)
        EXPECT_STATUS(bad.session_setup("alice", "wrong"), NtStatus::LogonFailure);
    // N READs of 4 KiB on a second connection (another loop with two loops).
    Smb2Client c;
    ASSERT_TRUE(c.connect("127.0.0.1", server.port()));
    ASSERT_STATUS(c.negotiate(), NtStatus::Success);
    ASSERT_STATUS(c.session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(c.tree_connect("data"), NtStatus::Success);
    auto cr = c.open("metrics.bin", am::kFileGenericRead | am::kFileGenericWrite,
                     create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ByteVector data(kReadSize * 4, std::byte{0x5a});
    ASSERT_STATUS(c.write(cr.body.file_id, 0, data), NtStatus::Success);
    for (int i = 0; i < kReads; ++i) {
        auto r = c.read(cr.body.file_id, uint64_t(i % 4) * kReadSize, kReadSize);
        ASSERT_STATUS(r, NtStatus::Success);
        ASSERT_EQ(r.body.data.size(), kReadSize);
    }
    // Two byte-range locks held until the scrape.
    LockRequest lr;
    lr.file_id = cr.body.file_id;
    lr.locks = {LockElement{0, 10, lock_flags::kExclusiveLock | lock_flags::kFailImmediately},
                LockElement{100, 10, lock_flags::kSharedLock | lock_flags::kFailImmediately}};
    ASSERT_STATUS(c.lock(lr), NtStatus::Success);

    const std::string reply = http_get(port, "/metrics");
    ASSERT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << reply.substr(0, 200);
    EXPECT_NE(reply.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
    const auto body_at = reply.find("\r\n\r\n");
    ASSERT_NE(body_at, std::string::npos);
    const std::string text = reply.substr(body_at + 4);
    const auto s = samples_of(text);

    EXPECT_EQ(s.at("daxsmbd_smb2_requests_total{command=\"READ\"}"), kReads);
    EXPECT_EQ(s.at("daxsmbd_smb2_request_duration_seconds_count{command=\"READ\"}"), kReads);
    EXPECT_EQ(s.at("daxsmbd_smb2_request_duration_seconds_bucket{command=\"READ\",le=\"+Inf\"}"),
              kReads);
    EXPECT_EQ(s.at("daxsmbd_smb2_requests_total{command=\"WRITE\"}"), 1);
    EXPECT_EQ(s.at("daxsmbd_logon_failures_total"), kFailedLogons);
    EXPECT_EQ(s.at("daxsmbd_smb2_request_errors_total{command=\"SESSION_SETUP\","
                   "status=\"STATUS_LOGON_FAILURE\"}"),
              kFailedLogons);
    // Each failed logon was a 2-leg NTLM exchange: one MORE_PROCESSING_REQUIRED answer each, and
    // one more for the good logon.
    EXPECT_EQ(s.at("daxsmbd_smb2_request_errors_total{command=\"SESSION_SETUP\","
                   "status=\"STATUS_MORE_PROCESSING_REQUIRED\"}"),
              kFailedLogons + 1);
    EXPECT_EQ(s.at("daxsmbd_smb2_requests_total{command=\"SESSION_SETUP\"}"),
              2 * (kFailedLogons + 1));
    // The share's read bytes and operations, whichever data path served them.
    EXPECT_EQ(sum_matching(s, "daxsmbd_share_io_bytes_total{", "share=\"data\",op=\"read\""),
              double(kReads) * kReadSize);
    EXPECT_EQ(
        sum_matching(s, "daxsmbd_share_io_duration_seconds_count{", "share=\"data\",op=\"read\""),
        kReads);
    EXPECT_EQ(sum_matching(s, "daxsmbd_share_io_bytes_total{", "share=\"data\",op=\"write\""),
              double(data.size()));
    EXPECT_EQ(s.at("daxsmbd_connections"), 2);
    EXPECT_EQ(s.at("daxsmbd_connections_accepted_total"), 2);
    EXPECT_EQ(s.at("daxsmbd_sessions{dialect=\"3.1.1\",signing=\"optional\",encryption=\"no\"}") +
                  s.count("daxsmbd_sessions{dialect=\"3.1.1\",signing=\"required\","
                          "encryption=\"no\"}"),
              1);
    EXPECT_EQ(s.at("daxsmbd_opens"), 1);
    EXPECT_EQ(s.at("daxsmbd_byte_range_locks"), 2);
    EXPECT_EQ(s.at("daxsmbd_lock_waiters"), 0);
    EXPECT_EQ(s.at("daxsmbd_leases"), 0);  // the open asked for none
    EXPECT_EQ(s.at("daxsmbd_session_channels"), 1);
    // Every limit is listed, by its configuration key; none was hit here.
    EXPECT_EQ(s.at("daxsmbd_limit_hits_total{limit=\"max opens per session\"}"), 0);
    EXPECT_EQ(sum_matching(s, "daxsmbd_limit_hits_total{", "limit="), 0);
    // One per answered command (all but CANCEL and the server-to-client one), and per share
    // (IPC$, data) one per direction and data path.
    EXPECT_EQ(check_histograms(text), int(kCommandCount) - 2 + 2 * 2 * 4);

    EXPECT_EQ(http_get(port, "/").rfind("HTTP/1.1 404", 0), 0u);

    // The exposition format as Prometheus itself reads it.
    if (system("command -v promtool >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "promtool (Debian package prometheus) is not installed";
    const std::string file = server.dir() + "/metrics.txt";
    std::ofstream(file) << text;
    const std::string cmd = "promtool check metrics < " + file + " > " + file + ".out 2>&1";
    const int rc = system(cmd.c_str());
    std::ifstream out(file + ".out");
    std::string said((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
    EXPECT_EQ(rc, 0) << "promtool check metrics: " << said;
}

TEST(E2eMetrics, OffByDefault) {
    TestServer server;
    ASSERT_TRUE(server.ok()) << server.error();
    EXPECT_EQ(server.server().metrics_port(), 0);
}

TEST(E2eMetrics, UnbindableAddressStopsTheStart) {
    // Take a port, then ask the server for the same one.
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(fd, 1), 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    const std::string taken = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    TestServer::Options o;
    o.configure = [taken](server::Config& cfg) { cfg.global.metrics_address = taken; };
    TestServer server(o);
    EXPECT_FALSE(server.ok());
    EXPECT_NE(server.error().find("metrics address"), std::string::npos) << server.error();
    close(fd);
}

}  // namespace
}  // namespace daxsmbd::client
