// Synchronous share redirection (MS-SMB2 2.2.2.2.2, 3.3.5.7; README "Share redirection"): two
// servers, A on 127.0.0.2 and B on 127.0.0.3, each with the same "scale out" shares, whose
// owner entries (set through Server::share_ownership(), as a cluster feed would) say node B
// owns them. A TREE_CONNECT to A with SMB2_TREE_CONNECT_FLAG_REDIRECT_TO_OWNER on 3.1.1 gets
// STATUS_BAD_NETWORK_NAME with one Share Redirect error context listing B's addresses (IPv4,
// the client's family, first), signed; our client follows it to B, where the tree connect
// succeeds with SCALEOUT (and ASYMMETRIC, REDIRECT_TO_OWNER where they apply). Without the flag,
// or below 3.1.1: plain BAD_NETWORK_NAME. Debian's smbclient (no redirect support) is refused
// by A and works against B; tshark decodes the redirect response (written as a pcap).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/create.h"
#include "protocol/error.h"
#include "protocol/tree_connect.h"
#include "server/cluster/share_ownership.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
using server::cluster::ShareOwner;

constexpr const char* kAddrA = "127.0.0.2";
constexpr const char* kAddrB = "127.0.0.3";
constexpr const char* kOwnerV6 = "fd00::3";  // a second address of B, listed first by the owner
constexpr uint16_t kRedirect = tree_connect_flags::kRedirectToOwner;

// Every share: "data" (scale out, asymmetric), "sofs" (scale out only), "orphan" (scale out,
// never given an owner), "local" (an ordinary share).
void scale_out_shares(server::Config& c, const char* address) {
    c.global.interfaces = {address};
    c.shares.front().scale_out = true;
    c.shares.front().asymmetric = true;
    const server::ShareConfig data = c.shares.front();
    server::ShareConfig sofs = data;
    sofs.name = "sofs";
    sofs.asymmetric = false;
    c.shares.push_back(sofs);
    server::ShareConfig orphan = sofs;
    orphan.name = "orphan";
    c.shares.push_back(orphan);
    server::ShareConfig local = data;
    local.name = "local";
    local.scale_out = false;
    local.asymmetric = false;
    c.shares.push_back(local);
}

class E2eShareRedirect : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        TestServer::Options oa;
        oa.configure = [](server::Config& c) { scale_out_shares(c, kAddrA); };
        a_ = new TestServer(oa);
        TestServer::Options ob;
        ob.configure = [](server::Config& c) { scale_out_shares(c, kAddrB); };
        b_ = new TestServer(ob);
        if (!a_->ok() || !b_->ok()) return;
        ShareOwner owner;
        owner.node = "node-b";
        owner.epoch = 7;
        owner.addresses = {*server::cluster::parse_endpoint(std::string("[") + kOwnerV6 + "]:445"),
                           *server::cluster::parse_endpoint(std::string(kAddrB) + ":" +
                                                            std::to_string(b_->port()))};
        // A: fed ownership (a share without an entry has no known owner); B owns both shares.
        auto& on_a = a_->server().share_ownership();
        on_a.attach_feed();
        ASSERT_TRUE(on_a.update("DATA", owner));  // share names are case-insensitive
        ASSERT_TRUE(on_a.update("sofs", owner));
        // B: no feed (no cluster), so "sofs" is its own without an entry; "data" says so.
        owner.is_self = true;
        ASSERT_TRUE(b_->server().share_ownership().update("data", owner));
    }
    static void TearDownTestSuite() {
        delete a_;
        delete b_;
        a_ = b_ = nullptr;
    }
    void SetUp() override {
        ASSERT_TRUE(a_->ok()) << a_->error();
        ASSERT_TRUE(b_->ok()) << b_->error();
    }

    // A client with a session on `host`, dialect `dialect` only.
    static std::unique_ptr<Smb2Client> logged_on(const char* host, uint16_t port,
                                                 uint16_t dialect = dialect::k311) {
        auto c = std::make_unique<Smb2Client>();
        if (!c->connect(host, port)) return nullptr;
        NegotiateOptions n;
        n.dialects = {dialect};
        if (!c->negotiate(n).ok()) return nullptr;
        if (!c->session_setup("alice", "pw").ok()) return nullptr;
        return c;
    }

    static TestServer* a_;
    static TestServer* b_;
};
TestServer* E2eShareRedirect::a_ = nullptr;
TestServer* E2eShareRedirect::b_ = nullptr;

TEST_F(E2eShareRedirect, NonOwnerRedirectsAndTheClientFollowsToTheOwner) {
    auto c = logged_on(kAddrA, a_->port());
    ASSERT_TRUE(c);
    const uint64_t redirected = a_->server().share_ownership().refusals.redirected;
    auto r = c->tree_connect("data", kRedirect, {});
    ASSERT_STATUS(r, NtStatus::BadNetworkName);
    // Signed like every response of the session (the 3.1.1 TREE_CONNECT was signed).
    EXPECT_TRUE(r.header.is_signed());
    EXPECT_TRUE(r.signature_verified);
    auto body = r.error_body();
    ASSERT_TRUE(body);
    ASSERT_EQ(body->error_context_count, 1);
    auto contexts = parse_error_contexts(body->error_data, body->error_context_count);
    ASSERT_TRUE(contexts);
    ASSERT_EQ(contexts->size(), 1u);
    EXPECT_EQ(contexts->front().error_id, error_id::kShareRedirect);
    auto redirect = Smb2Client::share_redirect(r);
    ASSERT_TRUE(redirect);
    ASSERT_TRUE(redirect->has_value());
    const ShareRedirectErrorContext& sr = **redirect;
    EXPECT_EQ(sr.notification_type, ShareRedirectErrorContext::kShareMoveNotification);
    EXPECT_EQ(sr.target_type, 0);
    // The path exactly as the client sent it.
    EXPECT_EQ(sr.resource_name, std::string("\\\\") + kAddrA + "\\data");
    // Every address of the owner, the client's family (IPv4) first.
    ASSERT_EQ(sr.ip_addresses.size(), 2u);
    EXPECT_EQ(sr.ip_addresses[0].type, MoveDstIpAddr::kTypeV4);
    EXPECT_EQ(redirect_ip_text(sr.ip_addresses[0]), kAddrB);
    EXPECT_EQ(sr.ip_addresses[1].type, MoveDstIpAddr::kTypeV6);
    EXPECT_EQ(redirect_ip_text(sr.ip_addresses[1]), kOwnerV6);
    EXPECT_EQ(a_->server().share_ownership().refusals.redirected, redirected + 1);
    // The session on A goes on working.
    EXPECT_TRUE(c->tree_connect("local").ok());

    auto f = follow_share_redirect(sr, b_->port(), "alice", "pw", "data", kRedirect);
    EXPECT_EQ(f.address, kAddrB);
    ASSERT_TRUE(f.tree.ok()) << describe(f.tree);
    EXPECT_EQ(f.tree.body.capabilities,
              share_caps::kScaleout | share_caps::kAsymmetric | share_caps::kRedirectToOwner);
    // The tree on B serves files.
    auto created = f.client->open("redirected.txt", access_mask::kFileGenericWrite,
                                  create_disposition::kOverwriteIf);
    ASSERT_TRUE(created.ok()) << describe(created);
    std::string text = "written through the owner";
    ASSERT_TRUE(f.client->write(created.body.file_id, 0, as_bytes(text)).ok());
    ASSERT_TRUE(f.client->close(created.body.file_id).ok());
    auto disk = file_contents(b_->share_dir() + "/redirected.txt");
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(disk.data()), disk.size()), text);
}

TEST_F(E2eShareRedirect, WithoutTheFlagOrBelow311ThePlainStatus) {
    for (uint16_t d : {dialect::k311, dialect::k302, dialect::k300, dialect::k210}) {
        SCOPED_TRACE(d);
        auto c = logged_on(kAddrA, a_->port(), d);
        ASSERT_TRUE(c);
        // Below 3.1.1 Flags is reserved: the server ignores the redirect flag there.
        for (uint16_t flags : {uint16_t(0), kRedirect}) {
            if (d == dialect::k311 && flags) continue;  // the redirect case, above
            auto r = c->tree_connect("data", flags, {});
            ASSERT_STATUS(r, NtStatus::BadNetworkName);
            auto body = r.error_body();
            ASSERT_TRUE(body);
            EXPECT_EQ(body->error_context_count, 0);
            EXPECT_TRUE(body->error_data.empty());
            auto redirect = Smb2Client::share_redirect(r);
            ASSERT_TRUE(redirect);
            EXPECT_FALSE(redirect->has_value());
        }
    }
}

TEST_F(E2eShareRedirect, NoKnownOwnerIsBadNetworkNameWithoutRedirect) {
    auto c = logged_on(kAddrA, a_->port());
    ASSERT_TRUE(c);
    const uint64_t unknown = a_->server().share_ownership().refusals.unknown;
    auto r = c->tree_connect("orphan", kRedirect, {});
    ASSERT_STATUS(r, NtStatus::BadNetworkName);
    auto body = r.error_body();
    ASSERT_TRUE(body);
    EXPECT_EQ(body->error_context_count, 0);
    EXPECT_EQ(a_->server().share_ownership().refusals.unknown, unknown + 1);
    // An ordinary share of the same node is not affected, and says nothing of scale-out.
    auto local = c->tree_connect("local", kRedirect, {});
    ASSERT_TRUE(local.ok()) << describe(local);
    EXPECT_EQ(local.body.capabilities, 0u);
}

TEST_F(E2eShareRedirect, OwnerCapabilitiesByDialectAndFlag) {
    struct Case {
        const char* share;
        uint16_t dialect;
        uint16_t flags;
        uint32_t caps;
    };
    const Case cases[] = {
        // "sofs" has no owner entry on B and no feed: B serves it (no cluster configured).
        {"sofs", dialect::k311, kRedirect, share_caps::kScaleout | share_caps::kRedirectToOwner},
        {"sofs", dialect::k311, 0, share_caps::kScaleout},
        {"data", dialect::k311, 0, share_caps::kScaleout | share_caps::kAsymmetric},
        {"data", dialect::k302, kRedirect, share_caps::kScaleout | share_caps::kAsymmetric},
        {"data", dialect::k300, kRedirect, share_caps::kScaleout},  // ASYMMETRIC needs 3.0.2
        {"data", dialect::k210, 0, share_caps::kScaleout},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(std::string(k.share) + " dialect " + std::to_string(k.dialect));
        auto c = logged_on(kAddrB, b_->port(), k.dialect);
        ASSERT_TRUE(c);
        auto r = c->tree_connect(k.share, k.flags, {});
        ASSERT_TRUE(r.ok()) << describe(r);
        EXPECT_EQ(r.body.capabilities, k.caps);
        // Never CLUSTER (no Witness service) nor CONTINUOUS_AVAILABILITY because of scale-out.
        EXPECT_EQ(
            r.body.capabilities & (share_caps::kCluster | share_caps::kContinuousAvailability), 0u);
    }
}

// Runs `cmd`, returns its exit status and output (stdout and stderr).
int run(const std::string& cmd, std::string* out) {
    FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return -1;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
        out->append(buf.data(), n);
    return ::pclose(p);
}

bool have(const char* tool) {
    std::string out;
    return run(std::string("command -v ") + tool, &out) == 0;
}

TEST_F(E2eShareRedirect, SmbclientIsRefusedByTheNonOwnerAndWorksAgainstTheOwner) {
    if (!have("smbclient")) GTEST_SKIP() << "smbclient is not installed";
    const std::string conf = a_->dir() + "/smbclient.conf";
    std::ofstream(conf) << "[global]\n";
    auto smbclient = [&](const char* host, uint16_t port, std::string* out) {
        return run("timeout 60 smbclient --configfile=" + conf + " //" + host + "/data -p " +
                       std::to_string(port) + " -U alice%pw -m SMB3 -c ls",
                   out);
    };
    std::string on_a;
    EXPECT_NE(smbclient(kAddrA, a_->port(), &on_a), 0) << on_a;
    EXPECT_NE(on_a.find("NT_STATUS_BAD_NETWORK_NAME"), std::string::npos) << on_a;
    std::string on_b;
    EXPECT_EQ(smbclient(kAddrB, b_->port(), &on_b), 0) << on_b;
    EXPECT_EQ(on_b.find("NT_STATUS_"), std::string::npos) << on_b;
    EXPECT_NE(on_b.find("blocks available"), std::string::npos) << on_b;
}

// A pcap (Ethernet, IPv4 127.0.0.2:445 -> 127.0.0.1:50000, TCP) of one Direct TCP frame
// carrying `msg`, for tshark.
ByteVector pcap_of(Bytes msg) {
    std::vector<uint8_t> nb = {0, uint8_t(msg.size() >> 16), uint8_t(msg.size() >> 8),
                               uint8_t(msg.size())};
    for (std::byte b : msg)
        nb.push_back(uint8_t(b));
    auto be16 = [](std::vector<uint8_t>& v, uint16_t x) {
        v.push_back(uint8_t(x >> 8));
        v.push_back(uint8_t(x));
    };
    auto checksum = [](const std::vector<uint8_t>& v) {
        uint32_t s = 0;
        for (size_t i = 0; i < v.size(); i += 2)
            s += uint32_t(v[i] << 8) | (i + 1 < v.size() ? v[i + 1] : 0);
        while (s >> 16)
            s = (s & 0xffff) + (s >> 16);
        return uint16_t(~s);
    };
    const std::vector<uint8_t> src = {127, 0, 0, 2}, dst = {127, 0, 0, 1};
    std::vector<uint8_t> tcp;
    be16(tcp, 445);
    be16(tcp, 50000);
    for (uint8_t b : {0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0})
        tcp.push_back(b);
    std::vector<uint8_t> pseudo = src;
    pseudo.insert(pseudo.end(), dst.begin(), dst.end());
    for (uint8_t b : {0, 6})
        pseudo.push_back(b);
    be16(pseudo, uint16_t(tcp.size() + nb.size()));
    pseudo.insert(pseudo.end(), tcp.begin(), tcp.end());
    pseudo.insert(pseudo.end(), nb.begin(), nb.end());
    const uint16_t tcp_sum = checksum(pseudo);
    tcp[16] = uint8_t(tcp_sum >> 8);
    tcp[17] = uint8_t(tcp_sum);
    std::vector<uint8_t> ip = {0x45, 0};
    be16(ip, uint16_t(20 + tcp.size() + nb.size()));
    for (uint8_t b : {0, 1, 0, 0, 64, 6, 0, 0})
        ip.push_back(b);
    ip.insert(ip.end(), src.begin(), src.end());
    ip.insert(ip.end(), dst.begin(), dst.end());
    const uint16_t ip_sum = checksum(ip);
    ip[10] = uint8_t(ip_sum >> 8);
    ip[11] = uint8_t(ip_sum);
    std::vector<uint8_t> frame(12, 0);  // MAC addresses
    be16(frame, 0x0800);
    frame.insert(frame.end(), ip.begin(), ip.end());
    frame.insert(frame.end(), tcp.begin(), tcp.end());
    frame.insert(frame.end(), nb.begin(), nb.end());
    ByteVector out;
    ByteWriter w(out);
    for (uint32_t x : {0xa1b2c3d4u, 0x00040002u, 0u, 0u, 65535u, 1u})  // pcap, v2.4, Ethernet
        w.u32(x);
    for (uint32_t x : {0u, 0u, uint32_t(frame.size()), uint32_t(frame.size())})
        w.u32(x);
    for (uint8_t b : frame)
        w.u8(b);
    return out;
}

TEST_F(E2eShareRedirect, TsharkDecodesTheShareRedirectContext) {
    if (!have("tshark")) GTEST_SKIP() << "tshark is not installed";
    auto c = logged_on(kAddrA, a_->port());
    ASSERT_TRUE(c);
    auto r = c->tree_connect("data", kRedirect, {});
    ASSERT_STATUS(r, NtStatus::BadNetworkName);
    const std::string file = a_->dir() + "/redirect.pcap";
    {
        ByteVector pcap = pcap_of(r.msg);
        std::ofstream(file, std::ios::binary)
            .write(reinterpret_cast<const char*>(pcap.data()), std::streamsize(pcap.size()));
    }
    std::string fields;
    ASSERT_EQ(run("tshark -r " + file +
                      " -T fields -E separator=, -e smb2.nt_status -e smb2.error.context_count"
                      " -e smb2.error.context.id -e smb2.error.share_redirect.struct_size"
                      " -e smb2.error.share_redirect.notif_type"
                      " -e smb2.error.share_redirect.target_type"
                      " -e smb2.error.share_redirect.ip_count",
                  &fields),
              0)
        << fields;
    EXPECT_NE(fields.find("0xc00000cc,1,0x72645253,48,3,0x0000,2"), std::string::npos) << fields;
    std::string verbose;
    ASSERT_EQ(run("tshark -r " + file + " -V", &verbose), 0) << verbose;
    EXPECT_NE(verbose.find("Tree Connect Response"), std::string::npos) << verbose;
    EXPECT_NE(verbose.find("ERROR_ID_SHARE_REDIRECT"), std::string::npos) << verbose;
    // Wireshark up to at least 4.0 reads each MOVE_DST_IPADDR (MS-SMB2 2.2.2.2.2.1: Type,
    // Reserved, 16 address bytes) as a Windows SOCKADDR_STORAGE and takes ResourceNameOffset
    // from the end of that list instead of from the start of the structure, so it reports a
    // malformed packet after "IP Addr List" for any spec-conformant context (Linux cifs,
    // Microsoft's test suite and scapy read the layout we send). Everything up to the list
    // must decode cleanly; a Wireshark that dissects the list right must find no fault at all.
    const size_t list = verbose.find("IP Addr List");
    ASSERT_NE(list, std::string::npos) << verbose;
    const size_t malformed = verbose.find("Malformed");
    if (malformed != std::string::npos) {
        EXPECT_GT(malformed, list) << verbose;
        EXPECT_NE(verbose.find("Socket Address", list), std::string::npos)
            << "malformed without the SOCKADDR reading of the list:\n"
            << verbose;
    }
}

}  // namespace
}  // namespace daxsmbd::client
