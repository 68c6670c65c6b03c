// The verbs provider (smbdirect/verbs_provider.h) over a real RDMA device: a listener and an
// initiator in this process, connected to each other through the device (soft-RoCE in
// tests/vm/verbs.sh). Skips where no RDMA device has an IPv4 address, which is the normal case
// outside the VM. DAXSMBD_VERBS_TEST_ADDR picks the address (e.g. an iWARP one) instead of the
// first RoCE/IB IPv4 address.
#include <gtest/gtest.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <regex>
#include <thread>

#include <infiniband/verbs.h>

#include "smbdirect/verbs_provider.h"

namespace daxsmbd::smbdirect {
namespace {

using namespace std::chrono_literals;
using Op = Completion::Op;

// A page-aligned, zeroed buffer, so that "at a non-page-aligned offset" means what it says.
struct PageBuffer {
    explicit PageBuffer(size_t n) : size(n) {
        size_t rounded = (n + 4095) / 4096 * 4096;
        data = static_cast<std::byte*>(std::aligned_alloc(4096, rounded));
        std::memset(data, 0, rounded);
    }
    ~PageBuffer() { std::free(data); }
    PageBuffer(const PageBuffer&) = delete;
    PageBuffer& operator=(const PageBuffer&) = delete;
    std::byte* data;
    size_t size;
};

void fill_pattern(std::byte* p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i)
        p[i] = std::byte((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}

// The first offset where a and b differ, or -1.
long first_difference(const std::byte* a, const std::byte* b, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return long(i);
    return -1;
}

// `rdma resource show` without the per-device context count: librdmacm opens each device once
// per process and keeps it open, so only the context count may stay above the baseline.
std::string rdma_resources() {
    FILE* f = popen("rdma resource show 2>/dev/null", "r");
    if (!f) return {};
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), f))
        out += buf;
    pclose(f);
    return std::regex_replace(out, std::regex("ctx [0-9]+ "), "");
}

std::string detail(const char* kind) {
    std::string cmd = std::string("rdma resource show ") + kind + " 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) return {};
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), f))
        out += buf;
    pclose(f);
    return out;
}

std::optional<RdmaInterface> test_interface() {
    const char* want = std::getenv("DAXSMBD_VERBS_TEST_ADDR");
    for (const RdmaInterface& i : rdma_interfaces()) {
        if (want ? i.address == want : (!i.iwarp && i.address.find(':') == std::string::npos))
            return i;
    }
    return std::nullopt;
}

std::string describe(const QueuePairCaps& c) {
    return "send_wr " + std::to_string(c.max_send_wr) + " recv_wr " +
           std::to_string(c.max_recv_wr) + " send_sge " + std::to_string(c.max_send_sge) +
           " rdma_read_outstanding " + std::to_string(c.max_rdma_read_outstanding) +
           " max_rdma_size " + std::to_string(c.max_rdma_size);
}

constexpr size_t kRecvSize = 4096;
constexpr int kRecvCount = 4;
constexpr uint64_t kRecvWrId = 100;

class VerbsProviderTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto itf = test_interface();
        if (!itf)
            GTEST_SKIP() << "no RDMA device with an IPv4 address (tests/vm/verbs.sh runs "
                            "this over soft-RoCE)";
        itf_ = *itf;
        addr_ = asio::ip::make_address(itf_.address);
        baseline_ = rdma_resources();
    }

    void TearDown() override {
        if (itf_.address.empty()) return;
        client_recv_mr_.reset();
        server_recv_mr_.reset();
        server_.reset();
        client_.reset();
        listener_.reset();
        // Everything this test made is gone again: the kernel's resource tracking is back to
        // where the test started (QPs, CQs, PDs, MRs, CM ids).
        std::string now = rdma_resources();
        auto t0 = std::chrono::steady_clock::now();
        while (now != baseline_ && std::chrono::steady_clock::now() - t0 < 20s) {
            std::this_thread::sleep_for(500ms);
            now = rdma_resources();
        }
        if (now == baseline_ && std::chrono::steady_clock::now() - t0 > 1s)
            std::cout << "resources back at the baseline after "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - t0)
                             .count()
                      << " ms\n";
        EXPECT_EQ(baseline_, now) << "RDMA resources left behind:\n"
                                  << detail("pd") << detail("qp") << detail("cm_id")
                                  << detail("mr");
    }

    VerbsLog logger() {
        return [](const std::string& line) { std::cerr << "[verbs] " << line << "\n"; };
    }

    // Runs the loop until done() or the limit.
    void run_until(const std::function<bool()>& done, std::chrono::seconds limit = 15s) {
        auto deadline = std::chrono::steady_clock::now() + limit;
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            loop_.restart();
            if (loop_.run_one_for(100ms) == 0) std::this_thread::sleep_for(5ms);
        }
    }

    // Posts `count` receives of kRecvSize into `buf` (registered as `mr`), wr_id kRecvWrId + i.
    static Status post_receives(QueuePair& qp, PageBuffer& buf, std::unique_ptr<MemoryRegion>& mr,
                                int count) {
        std::string why;
        mr = qp.domain().register_memory(buf.data, buf.size, access::kLocalWrite, &why);
        if (!mr) return Error(NtStatus::InsufficientResources);
        for (int i = 0; i < count; ++i) {
            LocalSegment seg{buf.data + size_t(i) * kRecvSize, uint32_t(kRecvSize), mr->lkey};
            if (Status s = qp.post_receive(kRecvWrId + uint64_t(i), seg); !s) return s;
        }
        return {};
    }

    // A listener on the test address (port chosen by rdma_cm), a server queue pair accepted
    // from it and a client queue pair connected to it; each side with `recvs` receives posted
    // before the connection is made.
    void connect_pair(int recvs) {
        std::string error;
        listener_ = VerbsConnectionRequests::listen(loop_, addr_, 0, req_, &error, logger());
        ASSERT_TRUE(listener_) << error;
        ASSERT_NE(listener_->port(), 0);
        bool server_done = false, client_done = false;
        Status server_status, client_status;
        std::string client_error;
        asio::co_spawn(
            loop_,
            [&]() -> asio::awaitable<void> {
                auto r = co_await listener_->next(loop_);
                if (!r) {
                    server_status = Error(r.status());
                } else {
                    server_ = std::move(*r);
                    server_status = post_receives(*server_, server_recv_, server_recv_mr_, recvs);
                    if (server_status) server_status = co_await server_->accept();
                }
                server_done = true;
            },
            asio::detached);
        asio::co_spawn(
            loop_,
            [&]() -> asio::awaitable<void> {
                auto r = co_await VerbsQueuePair::connect(
                    loop_, addr_, listener_->port(), req_,
                    [&](QueuePair& qp) {
                        return post_receives(qp, client_recv_, client_recv_mr_, recvs);
                    },
                    &client_error, logger());
                if (r)
                    client_ = std::move(*r);
                else
                    client_status = Error(r.status());
                client_done = true;
            },
            asio::detached);
        run_until([&] { return server_done && client_done; });
        ASSERT_TRUE(server_done && client_done) << "connection setup did not finish";
        ASSERT_TRUE(client_status) << "connect: " << client_error;
        ASSERT_TRUE(server_status) << "accept: status " << uint32_t(server_status.status());
        ASSERT_TRUE(server_ && client_);
    }

    // Polls (and waits on) `qp` until `n` completions arrived or the limit passed.
    std::vector<Completion> collect(QueuePair& qp, size_t n, std::chrono::seconds limit = 10s) {
        std::vector<Completion> got;
        bool done = false;
        asio::co_spawn(
            loop_,
            [&]() -> asio::awaitable<void> {
                std::array<Completion, 8> buf;
                for (;;) {
                    size_t k = qp.poll(buf);
                    got.insert(got.end(), buf.begin(), buf.begin() + long(k));
                    if (got.size() >= n) break;
                    if (k == 0) co_await qp.wait();
                }
                done = true;
            },
            asio::detached);
        run_until([&] { return done; }, limit);
        return got;
    }

    // Waits (with wait()) until qp.disconnected().
    bool wait_disconnected(QueuePair& qp, std::chrono::seconds limit = 10s) {
        bool done = false;
        asio::co_spawn(
            loop_,
            [&]() -> asio::awaitable<void> {
                std::array<Completion, 8> buf;
                while (!qp.disconnected()) {
                    if (qp.poll(buf) == 0) co_await qp.wait();
                }
                done = true;
            },
            asio::detached);
        run_until([&] { return done; }, limit);
        return qp.disconnected();
    }

    asio::io_context loop_;
    RdmaInterface itf_;
    asio::ip::address addr_;
    std::string baseline_;
    QueuePairRequest req_{};
    PageBuffer server_recv_{kRecvSize * kRecvCount};
    PageBuffer client_recv_{kRecvSize * kRecvCount};
    std::unique_ptr<VerbsConnectionRequests> listener_;
    std::unique_ptr<QueuePair> server_;
    std::unique_ptr<VerbsQueuePair> client_;
    std::unique_ptr<MemoryRegion> server_recv_mr_;
    std::unique_ptr<MemoryRegion> client_recv_mr_;
};

TEST_F(VerbsProviderTest, ListsTheRdmaInterfaces) {
    for (const RdmaInterface& i : rdma_interfaces())
        std::cout << "rdma interface: " << i.address << " netdev " << i.netdev << " device "
                  << i.device << (i.iwarp ? " iWARP" : " RoCE/IB") << " link "
                  << i.link_speed_bps / 1000000 << " Mb/s\n";
    EXPECT_FALSE(itf_.netdev.empty());
    EXPECT_FALSE(itf_.device.empty());
}

TEST_F(VerbsProviderTest, SendsBothWays) {
    ASSERT_NO_FATAL_FAILURE(connect_pair(kRecvCount));
    std::cout << "device " << server_->domain().device_name() << "; server caps "
              << describe(server_->caps()) << "; client caps " << describe(client_->caps())
              << "; peer " << server_->peer() << " / " << client_->peer() << "; on-demand paging "
              << server_->domain().on_demand_paging() << "\n";
    EXPECT_GE(server_->caps().max_send_sge, 2u);
    EXPECT_EQ(server_->peer_address(), itf_.address);

    // Client to server, gathered from two pieces of a registered buffer.
    PageBuffer send_buf(8192);
    std::string why;
    auto mr =
        client_->domain().register_memory(send_buf.data, send_buf.size, access::kLocalWrite, &why);
    ASSERT_TRUE(mr) << why;
    const char head[] = "hello from ";
    const char tail[] = "the client";
    std::memcpy(send_buf.data, head, sizeof(head) - 1);
    std::memcpy(send_buf.data + 5000, tail, sizeof(tail) - 1);
    std::array<LocalSegment, 2> parts{
        LocalSegment{send_buf.data, uint32_t(sizeof(head) - 1), mr->lkey},
        LocalSegment{send_buf.data + 5000, uint32_t(sizeof(tail) - 1), mr->lkey}};
    ASSERT_TRUE(client_->post_send(7, parts, std::nullopt));
    auto sent = collect(*client_, 1);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_TRUE(sent[0].ok) << sent[0].error;
    EXPECT_EQ(sent[0].wr_id, 7u);
    EXPECT_EQ(sent[0].op, Op::Send);
    auto received = collect(*server_, 1);
    ASSERT_EQ(received.size(), 1u);
    EXPECT_TRUE(received[0].ok) << received[0].error;
    EXPECT_EQ(received[0].op, Op::Receive);
    EXPECT_EQ(received[0].wr_id, kRecvWrId);
    EXPECT_FALSE(received[0].invalidated_rkey);
    ASSERT_EQ(received[0].byte_len, sizeof(head) + sizeof(tail) - 2);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(server_recv_.data), received[0].byte_len),
              "hello from the client");

    // Server to client: 3000 bytes.
    PageBuffer reply(4096);
    fill_pattern(reply.data, 3000, 1);
    auto rmr = server_->domain().register_memory(reply.data, reply.size, 0, &why);
    ASSERT_TRUE(rmr) << why;
    LocalSegment one{reply.data, 3000, rmr->lkey};
    ASSERT_TRUE(server_->post_send(8, {&one, 1}, std::nullopt));
    auto back = collect(*client_, 1);
    ASSERT_EQ(back.size(), 1u);
    EXPECT_TRUE(back[0].ok) << back[0].error;
    EXPECT_EQ(back[0].op, Op::Receive);
    EXPECT_EQ(back[0].byte_len, 3000u);
    EXPECT_EQ(first_difference(client_recv_.data, reply.data, 3000), -1);
    auto server_sent = collect(*server_, 1);
    ASSERT_EQ(server_sent.size(), 1u);
    EXPECT_TRUE(server_sent[0].ok);
    EXPECT_EQ(server_sent[0].op, Op::Send);
    EXPECT_EQ(server_sent[0].wr_id, 8u);
}

// MS-SMBD 3.1.4.1 / SMB2_CHANNEL_RDMA_V1_INVALIDATE: the server answers with a Send with
// Invalidate of the client's rkey. Only keys of memory windows and fast-registered MRs can be
// invalidated remotely (IBTA 10.6.7.2.1; rxe: "rxe_invalidate_mr: mr->type (3) is wrong type"
// for an ibv_reg_mr key), which is what kernel clients register with. The client here binds a
// type 2 memory window over its region and gives the server that rkey.
TEST_F(VerbsProviderTest, SendWithInvalidateReportsTheRkey) {
    ASSERT_NO_FATAL_FAILURE(connect_pair(2));
    auto& client_pd = static_cast<VerbsDomain&>(client_->domain());
    PageBuffer region(65536);
    // Released after the client's QP (which the window is bound through), also when an
    // assertion ends the test early.
    struct Window {
        ibv_mr* mr = nullptr;
        ibv_mw* mw = nullptr;
        std::unique_ptr<VerbsQueuePair>* qp = nullptr;
        ~Window() {
            qp->reset();
            if (mw) ibv_dealloc_mw(mw);
            if (mr) ibv_dereg_mr(mr);
        }
    } window{nullptr, nullptr, &client_};
    window.mr = ibv_reg_mr(client_pd.pd(), region.data, region.size,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
    ASSERT_TRUE(window.mr) << errno_name(errno);
    ibv_mr* mr = window.mr;
    window.mw = ibv_alloc_mw(client_pd.pd(), IBV_MW_TYPE_2);
    ibv_mw* mw = window.mw;
    if (!mw) GTEST_SKIP() << "no type 2 memory windows on " << client_pd.device_name();
    uint32_t rkey = ibv_inc_rkey(mw->rkey);
    ibv_send_wr bind{};
    bind.wr_id = 1ull << 40;  // unsignaled, outside the provider's wr_id space
    bind.opcode = IBV_WR_BIND_MW;
    bind.bind_mw.mw = mw;
    bind.bind_mw.rkey = rkey;
    bind.bind_mw.bind_info.mr = mr;
    bind.bind_mw.bind_info.addr = reinterpret_cast<uintptr_t>(region.data);
    bind.bind_mw.bind_info.length = region.size;
    bind.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(client_->native_qp(), &bind, &bad), 0);
    // A send behind the bind on the same send queue: once it completed, the window is bound.
    PageBuffer msg(4096);
    std::string why;
    auto cmr = client_->domain().register_memory(msg.data, msg.size, 0, &why);
    ASSERT_TRUE(cmr) << why;
    LocalSegment hello{msg.data, 5, cmr->lkey};
    ASSERT_TRUE(client_->post_send(3, {&hello, 1}, std::nullopt));
    auto hello_sent = collect(*client_, 1);
    ASSERT_EQ(hello_sent.size(), 1u);
    ASSERT_TRUE(hello_sent[0].ok) << hello_sent[0].error;
    auto hello_got = collect(*server_, 1);
    ASSERT_EQ(hello_got.size(), 1u);

    auto smr = server_->domain().register_memory(msg.data + 2048, 4, 0, &why);
    ASSERT_TRUE(smr) << why;
    LocalSegment seg{msg.data + 2048, 4, smr->lkey};
    ASSERT_TRUE(server_->post_send(9, {&seg, 1}, rkey));
    auto got = collect(*client_, 1);
    auto sent = collect(*server_, 1);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(sent.size(), 1u);
    std::cout << "send with invalidate of a memory window's rkey: sender "
              << (sent[0].ok ? "ok" : sent[0].error) << ", receiver "
              << (got[0].ok ? "ok" : got[0].error) << ", invalidated rkey "
              << (got[0].invalidated_rkey ? std::to_string(*got[0].invalidated_rkey) : "none")
              << " (window rkey " << rkey << ")\n";
    EXPECT_TRUE(sent[0].ok) << sent[0].error;
    EXPECT_TRUE(got[0].ok) << got[0].error;
    EXPECT_EQ(got[0].op, Op::Receive);
    EXPECT_EQ(got[0].byte_len, 4u);
    ASSERT_TRUE(got[0].invalidated_rkey.has_value());
    EXPECT_EQ(*got[0].invalidated_rkey, rkey);
    // The window is invalid now: an RDMA WRITE through it fails.
    LocalSegment w{msg.data + 2048, 4, smr->lkey};
    ASSERT_TRUE(server_->post_write(10, {&w, 1}, reinterpret_cast<uintptr_t>(region.data), rkey));
    // (The failed WRITE puts the server's QP in error: its remaining receive is flushed too.)
    auto after = collect(*server_, 1);
    ASSERT_GE(after.size(), 1u);
    EXPECT_EQ(after[0].op, Op::Write);
    EXPECT_EQ(after[0].wr_id, 10u);
    EXPECT_FALSE(after[0].ok) << "RDMA WRITE through an invalidated rkey succeeded";
}

TEST_F(VerbsProviderTest, RdmaWriteAndReadVerified) {
    ASSERT_NO_FATAL_FAILURE(connect_pair(0));
    constexpr size_t kSize = 65536;
    PageBuffer region(kSize);  // the client's, exposed to the server
    PageBuffer local(kSize);   // the server's
    PageBuffer expect(kSize);
    std::string why;
    auto region_mr = client_->domain().register_memory(
        region.data, kSize, access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead, &why);
    ASSERT_TRUE(region_mr) << why;
    auto local_mr = server_->domain().register_memory(local.data, kSize, access::kLocalWrite, &why);
    ASSERT_TRUE(local_mr) << why;
    const uint64_t remote = reinterpret_cast<uintptr_t>(region.data);
    const uint32_t rkey = region_mr->rkey;
    auto one_completion = [&](uint64_t wr_id, Op op) {
        auto c = collect(*server_, 1);
        ASSERT_EQ(c.size(), 1u);
        EXPECT_TRUE(c[0].ok) << c[0].error;
        EXPECT_EQ(c[0].wr_id, wr_id);
        EXPECT_EQ(c[0].op, op);
    };

    // 1. RDMA WRITE of the whole region.
    fill_pattern(local.data, kSize, 2);
    LocalSegment all{local.data, uint32_t(kSize), local_mr->lkey};
    ASSERT_TRUE(server_->post_write(20, {&all, 1}, remote, rkey));
    ASSERT_NO_FATAL_FAILURE(one_completion(20, Op::Write));
    EXPECT_EQ(first_difference(region.data, local.data, kSize), -1);

    // 2. RDMA WRITE gathered from two pieces to offset 1000 (not page aligned, crossing a page).
    std::memcpy(expect.data, region.data, kSize);
    fill_pattern(local.data, kSize, 3);
    std::array<LocalSegment, 2> pieces{LocalSegment{local.data + 7, 3000, local_mr->lkey},
                                       LocalSegment{local.data + 20000, 2000, local_mr->lkey}};
    std::memcpy(expect.data + 1000, local.data + 7, 3000);
    std::memcpy(expect.data + 4000, local.data + 20000, 2000);
    ASSERT_TRUE(server_->post_write(21, pieces, remote + 1000, rkey));
    ASSERT_NO_FATAL_FAILURE(one_completion(21, Op::Write));
    EXPECT_EQ(first_difference(region.data, expect.data, kSize), -1);

    // 3. RDMA READ from offset 4095 into offset 3 of ours, 9000 bytes, scattered in two pieces.
    fill_pattern(region.data, kSize, 4);
    std::memset(local.data, 0, kSize);
    std::array<LocalSegment, 2> into{LocalSegment{local.data + 3, 5000, local_mr->lkey},
                                     LocalSegment{local.data + 30001, 4000, local_mr->lkey}};
    ASSERT_TRUE(server_->post_read(22, into, remote + 4095, rkey));
    ASSERT_NO_FATAL_FAILURE(one_completion(22, Op::Read));
    EXPECT_EQ(first_difference(local.data + 3, region.data + 4095, 5000), -1);
    EXPECT_EQ(first_difference(local.data + 30001, region.data + 9095, 4000), -1);
    EXPECT_EQ(local.data[2], std::byte(0));
    EXPECT_EQ(local.data[5003], std::byte(0));

    // 4. RDMA READ of the whole region.
    fill_pattern(region.data, kSize, 5);
    ASSERT_TRUE(server_->post_read(23, {&all, 1}, remote, rkey));
    ASSERT_NO_FATAL_FAILURE(one_completion(23, Op::Read));
    EXPECT_EQ(first_difference(local.data, region.data, kSize), -1);

    // 5. A bad rkey fails the work request with an error completion, not silently.
    ASSERT_TRUE(server_->post_write(24, {&all, 1}, remote, rkey ^ 0x5a5a00));
    auto bad = collect(*server_, 1);
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_FALSE(bad[0].ok);
    EXPECT_EQ(bad[0].op, Op::Write);
    EXPECT_EQ(bad[0].wr_id, 24u);
    std::cout << "RDMA WRITE with a wrong rkey: " << bad[0].error << "\n";
}

TEST_F(VerbsProviderTest, PeerDisconnectFlushesReceives) {
    ASSERT_NO_FATAL_FAILURE(connect_pair(3));
    client_->disconnect();
    EXPECT_TRUE(client_->disconnected());
    ASSERT_TRUE(wait_disconnected(*server_)) << "the server side saw no disconnect";
    auto flushed = collect(*server_, 3);
    ASSERT_EQ(flushed.size(), 3u);
    for (const Completion& c : flushed) {
        EXPECT_FALSE(c.ok);
        EXPECT_EQ(c.op, Op::Receive);
        EXPECT_GE(c.wr_id, kRecvWrId);
    }
    std::cout << "flushed receive after the peer's disconnect: " << flushed[0].error << "\n";
    auto own = collect(*client_, 3);
    ASSERT_EQ(own.size(), 3u);
    for (const Completion& c : own)
        EXPECT_FALSE(c.ok);
    LocalSegment seg{server_recv_.data, uint32_t(kRecvSize), server_recv_mr_->lkey};
    EXPECT_FALSE(server_->post_receive(1, seg));
}

TEST_F(VerbsProviderTest, PeerGoneFlushesReceives) {
    ASSERT_NO_FATAL_FAILURE(connect_pair(2));
    client_recv_mr_.reset();
    client_.reset();  // no rdma_disconnect: destroying the id sends the DREQ
    ASSERT_TRUE(wait_disconnected(*server_));
    auto flushed = collect(*server_, 2);
    ASSERT_EQ(flushed.size(), 2u);
    for (const Completion& c : flushed)
        EXPECT_FALSE(c.ok);
}

TEST_F(VerbsProviderTest, ConnectWithoutListenerFails) {
    std::string error;
    bool done = false;
    Status status;
    asio::co_spawn(
        loop_,
        [&]() -> asio::awaitable<void> {
            auto r = co_await VerbsQueuePair::connect(loop_, addr_, 9, req_, {}, &error, logger());
            status = r ? Status{} : Status(Error(r.status()));
            done = true;
        },
        asio::detached);
    auto t0 = std::chrono::steady_clock::now();
    run_until([&] { return done; });
    ASSERT_TRUE(done);
    EXPECT_FALSE(status);
    // librdmacm (rdma-core 44) keeps the device's internal PD of the rejected id until its next
    // use of the device (seen in the VM: a PD with no users stays for 20 s and more, and goes
    // with the next bind to the device): bind once so that the resource check below sees the
    // baseline again.
    listener_ = VerbsConnectionRequests::listen(loop_, addr_, 0, req_, &error, logger());
    EXPECT_TRUE(listener_) << error;
    listener_.reset();
    std::cout << "connect without a listener: " << error << " after "
              << std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - t0)
                     .count()
              << " ms\n";
}

TEST_F(VerbsProviderTest, CloseCancelsNext) {
    std::string error;
    listener_ = VerbsConnectionRequests::listen(loop_, addr_, 0, req_, &error, logger());
    ASSERT_TRUE(listener_) << error;
    bool done = false;
    NtStatus status = NtStatus::Success;
    asio::co_spawn(
        loop_,
        [&]() -> asio::awaitable<void> {
            auto r = co_await listener_->next(loop_);
            status = r.status();
            done = true;
        },
        asio::detached);
    run_until([] { return false; }, 0s);
    loop_.restart();
    loop_.poll();
    EXPECT_FALSE(done);
    listener_->close();
    run_until([&] { return done; });
    EXPECT_TRUE(done);
    EXPECT_EQ(status, NtStatus::Cancelled);
}

TEST_F(VerbsProviderTest, RegistrationFailureSaysWhy) {
    ASSERT_NO_FATAL_FAILURE(connect_pair(0));
    ProtectionDomain& pd = server_->domain();
    PageBuffer buf(8192);
    std::string why;
    auto odp =
        pd.register_memory(buf.data, buf.size, access::kLocalWrite | access::kOnDemand, &why);
    std::cout << "on-demand paging " << (pd.on_demand_paging() ? "offered" : "not offered")
              << "; ODP registration " << (odp ? "works" : "fails: " + why) << "\n";
    if (!pd.on_demand_paging()) {
        EXPECT_FALSE(odp);
        EXPECT_TRUE(why == "EINVAL" || why == "EOPNOTSUPP") << why;
    }
    why.clear();
    auto bad = pd.register_memory(nullptr, 0, access::kLocalWrite, &why);
    EXPECT_FALSE(bad);
    EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace daxsmbd::smbdirect
