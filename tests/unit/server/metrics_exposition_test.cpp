// Tests of the Prometheus text format writer (server/metrics/exposition.h) and of the HTTP
// endpoint that serves it (server/metrics/http_endpoint.h, on a real loopback socket).
#include "server/metrics/exposition.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

#include "server/metrics/http_endpoint.h"

namespace daxsmbd::server::metrics {
namespace {

using protocol::Command;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        out.push_back(l);
    return out;
}

TEST(MetricsExposition, FormatSeconds) {
    EXPECT_EQ(format_seconds(0), "0");
    EXPECT_EQ(format_seconds(50'000), "0.00005");
    EXPECT_EQ(format_seconds(2'500'000), "0.0025");
    EXPECT_EQ(format_seconds(1'000'000'000), "1");
    EXPECT_EQ(format_seconds(2'500'000'000), "2.5");
    EXPECT_EQ(format_seconds(12'000'000'001), "12.000000001");
}

TEST(MetricsExposition, EscapesLabelValues) {
    EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    EXPECT_EQ(escape_label_value("data"), "data");
}

TEST(MetricsExposition, FamilyAndSamples) {
    ExpositionWriter w;
    w.family("x_total", "counter", "Things.");
    w.sample("x_total", "", 3);
    w.sample("x_total", "a=\"b\"", 4);
    EXPECT_EQ(w.text(),
              "# HELP x_total Things.\n# TYPE x_total counter\nx_total 3\n"
              "x_total{a=\"b\"} 4\n");
}

TEST(MetricsExposition, HistogramIsCumulativeWithInfSumAndCount) {
    LatencyHistogram h;
    h.observe(40'000);          // <= 50 us
    h.observe(80'000);          // <= 100 us
    h.observe(80'000);          // <= 100 us
    h.observe(3'000'000);       // <= 5 ms
    h.observe(99'000'000'000);  // +Inf
    HistogramSnapshot s;
    s.add(h);
    ExpositionWriter w;
    w.histogram("lat_seconds", "command=\"READ\"", s);
    auto lines = lines_of(w.text());
    ASSERT_EQ(lines.size(), kLatencyBuckets + 2);
    EXPECT_EQ(lines[0], "lat_seconds_bucket{command=\"READ\",le=\"0.00005\"} 1");
    EXPECT_EQ(lines[1], "lat_seconds_bucket{command=\"READ\",le=\"0.0001\"} 3");
    EXPECT_EQ(lines[5], "lat_seconds_bucket{command=\"READ\",le=\"0.0025\"} 3");
    EXPECT_EQ(lines[6], "lat_seconds_bucket{command=\"READ\",le=\"0.005\"} 4");
    EXPECT_EQ(lines[16], "lat_seconds_bucket{command=\"READ\",le=\"10\"} 4");
    EXPECT_EQ(lines[17], "lat_seconds_bucket{command=\"READ\",le=\"+Inf\"} 5");
    EXPECT_EQ(lines[18], "lat_seconds_sum{command=\"READ\"} 99.0032");
    EXPECT_EQ(lines[19], "lat_seconds_count{command=\"READ\"} 5");
}

TEST(MetricsExposition, SnapshotFamilies) {
    Registry r;
    r.configure(1, {"IPC$", "da\"ta"});
    r.shard(0).request_done(Command::Read, NtStatus::EndOfFile, 1000);
    r.shard(0).share_io(1, IoDirection::Write, IoPath::Splice, 512, 1000);
    ExpositionWriter w;
    write_snapshot(w, r.snapshot());
    const std::string& t = w.text();
    EXPECT_NE(t.find("# TYPE daxsmbd_smb2_requests_total counter\n"), std::string::npos);
    EXPECT_NE(t.find("daxsmbd_smb2_requests_total{command=\"READ\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("daxsmbd_smb2_requests_total{command=\"NEGOTIATE\"} 0\n"), std::string::npos);
    EXPECT_EQ(t.find("command=\"CANCEL\""), std::string::npos);  // never answered
    EXPECT_NE(t.find("daxsmbd_smb2_request_errors_total{command=\"READ\","
                     "status=\"STATUS_END_OF_FILE\"} 1\n"),
              std::string::npos);
    EXPECT_NE(t.find("# TYPE daxsmbd_smb2_request_duration_seconds histogram\n"),
              std::string::npos);
    EXPECT_NE(t.find("daxsmbd_share_io_bytes_total{share=\"da\\\"ta\",op=\"write\","
                     "path=\"splice\"} 512\n"),
              std::string::npos);
    EXPECT_NE(t.find("daxsmbd_share_io_duration_seconds_count{share=\"da\\\"ta\",op=\"write\","
                     "path=\"splice\"} 1\n"),
              std::string::npos);
    // Each family's HELP and TYPE come once, before its samples.
    EXPECT_EQ(t.find("# TYPE daxsmbd_share_io_bytes_total"),
              t.rfind("# TYPE daxsmbd_share_io_bytes_total"));
}

// One HTTP exchange on a fresh loopback connection: everything the server sent.
std::string exchange(uint16_t port, const std::string& request) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(fd);
        return "connect failed";
    }
    size_t off = 0;
    while (off < request.size()) {
        ssize_t n = send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += size_t(n);
    }
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;)
        got.append(buf, size_t(n));
    close(fd);
    return got;
}

TEST(MetricsHttpEndpoint, ServesMetricsAnd404) {
    std::atomic<int> renders{0};
    std::string err;
    auto ep = HttpEndpoint::start(
        "127.0.0.1:0",
        [&] {
            ++renders;
            return std::string("# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n");
        },
        &err);
    ASSERT_TRUE(ep) << err;
    ASSERT_NE(ep->port(), 0);
    std::string r = exchange(ep->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
    EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4\r\n"), std::string::npos) << r;
    EXPECT_NE(r.find("\r\n\r\n# HELP x_total X.\n"), std::string::npos) << r;
    EXPECT_EQ(renders.load(), 1);

    r = exchange(ep->port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << r;
    r = exchange(ep->port(), "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab");
    EXPECT_EQ(r.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u) << r;
    EXPECT_EQ(renders.load(), 1);

    // A request past the size bound gets no answer, and the endpoint goes on serving.
    r = exchange(ep->port(), "GET /metrics HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n");
    EXPECT_EQ(r.find("200 OK"), std::string::npos);
    r = exchange(ep->port(), "garbage\r\n\r\n");
    EXPECT_EQ(r.find("200 OK"), std::string::npos);
    r = exchange(ep->port(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r;
    EXPECT_EQ(renders.load(), 2);
}

TEST(MetricsHttpEndpoint, BadAddressesAreRefused) {
    std::string err;
    EXPECT_FALSE(HttpEndpoint::start(
        "nohost:1", [] { return std::string(); }, &err));
    EXPECT_NE(err.find("metrics address"), std::string::npos);
    std::string host;
    uint16_t port = 0;
    EXPECT_TRUE(parse_host_port("[::1]:9922", &host, &port));
    EXPECT_EQ(host, "::1");
    EXPECT_EQ(port, 9922);
    EXPECT_FALSE(parse_host_port("127.0.0.1:", &host, &port));
    EXPECT_FALSE(parse_host_port("127.0.0.1:65536", &host, &port));
    EXPECT_FALSE(parse_host_port("[::1]9922", &host, &port));
}

}  // namespace
}  // namespace daxsmbd::server::metrics
