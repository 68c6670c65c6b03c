// SmbdConnection (smbdirect/smbd_connection.h) over the emulated provider: negotiation as the
// Linux client asks for it, credit accounting under random traffic (the emulated queue pair
// breaks the connection on any send the receiver had not posted a receive for), fragmentation
// and reassembly, Send with Invalidate, RDMA READ/WRITE into registered memory, keepalive, and
// a raw peer's malformed messages, each of which must close that connection.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <random>

#include "smbdirect/emulated_provider.h"
#include "smbdirect/smbd_connection.h"

using namespace daxsmbd;
using namespace daxsmbd::smbdirect;
namespace asio = boost::asio;

namespace {

std::vector<std::byte> pattern(size_t n, uint32_t seed) {
    std::vector<std::byte> v(n);
    std::mt19937 g(seed);
    for (auto& b : v)
        b = std::byte(g());
    return v;
}

// Runs `f` (a coroutine) to completion on `io`, failing the test after `limit` of loop time.
template <class F>
void run(asio::io_context& io, F f, std::chrono::seconds limit = std::chrono::seconds(20)) {
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await f();
            done = true;
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    auto until = std::chrono::steady_clock::now() + limit;
    while (!done && std::chrono::steady_clock::now() < until) {
        io.restart();
        io.run_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(done) << "timed out";
    io.restart();
    io.poll();
}

struct Pair {
    asio::io_context io;
    EmulatedQueuePair* client_qp = nullptr;
    EmulatedQueuePair* server_qp = nullptr;
    SmbdCounters counters;
    std::shared_ptr<SmbdConnection> client, server;
    std::vector<std::string> server_log;

    explicit Pair(SmbdTimers timers = {}, SmbdConfig server_config = {},
                  SmbdConfig client_config = {},
                  QueuePairCaps caps = EmulatedQueuePair::default_caps()) {
        auto [a, b] = EmulatedQueuePair::make_pair(io.get_executor(), io.get_executor(), caps);
        client_qp = a.get();
        server_qp = b.get();
        client = std::make_shared<SmbdConnection>(std::move(a), client_config, io.get_executor(),
                                                  nullptr, nullptr, timers);
        server = std::make_shared<SmbdConnection>(
            std::move(b), server_config, io.get_executor(), &counters,
            [this](const std::string& s) { server_log.push_back(s); }, timers);
    }
    void connect() {
        Status cs, ss;
        run(io, [&]() -> asio::awaitable<void> {
            asio::co_spawn(
                io, [&]() -> asio::awaitable<void> { ss = co_await server->accept(); },
                asio::detached);
            cs = co_await client->connect();
            // Let the server finish its side.
            for (int i = 0; i < 100 && !server->parameters().max_send_size; ++i) {
                asio::steady_timer t(io, std::chrono::milliseconds(1));
                co_await t.async_wait(asio::use_awaitable);
            }
        });
        ASSERT_TRUE(cs) << int(cs.status());
        ASSERT_TRUE(ss) << int(ss.status());
    }
    ~Pair() {
        client->close("test over");
        server->close("test over");
        io.restart();
        io.poll();
    }
};

}  // namespace

TEST(SmbdConnection, NegotiatesWithTheLinuxClientsParameters) {
    // The Linux client asks for 255 credits, sends and receives 1364 bytes, reassembles 173910.
    SmbdConfig linux_client;
    linux_client.max_fragmented_recv_size = 173910;
    Pair p({}, {}, linux_client);
    p.connect();
    const auto& s = p.server->parameters();
    EXPECT_LE(s.max_send_size, 1364u);
    EXPECT_EQ(s.max_fragmented_send_size, 173910u);
    EXPECT_EQ(s.receive_credit_target, 255u);
    const auto& c = p.client->parameters();
    EXPECT_GT(c.send_credits, 0u);
    EXPECT_LE(c.send_credits, p.server->posted_receives());
    EXPECT_EQ(p.counters.connections.load(), 1u);
}

TEST(SmbdConnection, CarriesFragmentedMessagesBothWaysWithinTheCredits) {
    Pair p;
    p.connect();
    std::mt19937 g(7);
    for (int round = 0; round < 40; ++round) {
        // Sizes from empty-ish to several hundred fragments (1340 bytes of payload each).
        const size_t n = 1 + g() % (round % 5 == 0 ? 160000 : 3000);
        auto a = pattern(n, round);
        auto b = pattern(n / 2 + 1, round + 1000);
        run(p.io, [&]() -> asio::awaitable<void> {
            std::array<Bytes, 1> pa{Bytes(a)};
            auto st = co_await p.client->send(pa);
            EXPECT_TRUE(st);
            auto m = co_await p.server->receive();
            EXPECT_TRUE(m);
            if (!m) co_return;
            EXPECT_EQ(m->bytes.size(), a.size());
            EXPECT_TRUE(m->bytes == a);
            // Answered in two parts, gathered into the fragments.
            std::array<Bytes, 2> pb{Bytes(b).subspan(0, b.size() / 3),
                                    Bytes(b).subspan(b.size() / 3)};
            st = co_await p.server->send(pb);
            EXPECT_TRUE(st);
            auto r = co_await p.client->receive();
            EXPECT_TRUE(r);
            if (r) {
                EXPECT_TRUE(r->bytes == b);
            }
        });
        // Never more credits granted than receives posted, on either side.
        EXPECT_LE(p.server->granted_receive_credits(), p.server->posted_receives());
        EXPECT_LE(p.client->granted_receive_credits(), p.client->posted_receives());
    }
    EXPECT_EQ(p.client_qp->failed_sends(), 0u);
    EXPECT_EQ(p.server_qp->failed_sends(), 0u);
    EXPECT_FALSE(p.server->closed());
}

TEST(SmbdConnection, ManyConcurrentSendersNeverUseACreditTheyWereNotGranted) {
    // Small credit windows on both sides make the senders wait for credits all the time.
    SmbdConfig small;
    small.receive_credit_max = 4;
    small.send_credit_target = 4;
    Pair p({}, small, small);
    p.connect();
    int received = 0;
    const int kMessages = 300;
    run(p.io, [&]() -> asio::awaitable<void> {
        for (int i = 0; i < kMessages; ++i) {
            asio::co_spawn(
                p.io,
                [&, i]() -> asio::awaitable<void> {
                    auto m = pattern(100 + (i * 977) % 5000, i);
                    std::array<Bytes, 1> parts{Bytes(m)};
                    EXPECT_TRUE(co_await p.client->send(parts));
                },
                asio::detached);
        }
        while (received < kMessages) {
            auto m = co_await p.server->receive();
            if (!m) break;
            ++received;
            EXPECT_LE(p.server->granted_receive_credits(), p.server->posted_receives());
        }
    });
    EXPECT_EQ(received, kMessages);
    EXPECT_EQ(p.client_qp->failed_sends(), 0u);
    EXPECT_LE(p.server_qp->max_posted_receives(), 4u + 4u);
}

TEST(SmbdConnection, AMessageAboveThePeersFragmentedSizeIsRefused) {
    SmbdConfig client;
    client.max_fragmented_recv_size = 131072;
    Pair p({}, {}, client);
    p.connect();
    auto big = pattern(131073, 1);
    Status st;
    run(p.io, [&]() -> asio::awaitable<void> {
        std::array<Bytes, 1> parts{Bytes(big)};
        st = co_await p.server->send(parts);
    });
    EXPECT_FALSE(st);
}

TEST(SmbdConnection, SendWithInvalidateReachesThePeerWithTheMessage) {
    Pair p;
    p.connect();
    // The client registers a buffer for the server to write into, as for an SMB2 READ.
    std::vector<std::byte> client_buf(100000);
    std::string why;
    auto mr = p.client_qp->domain().register_memory(
        client_buf.data(), client_buf.size(), access::kLocalWrite | access::kRemoteWrite, &why);
    ASSERT_TRUE(mr);
    auto data = pattern(client_buf.size(), 3);
    std::vector<std::byte> server_buf = data;
    auto smr = p.server_qp->domain().register_memory(server_buf.data(), server_buf.size(),
                                                     access::kLocalWrite, &why);
    ASSERT_TRUE(smr);
    BufferDescriptorV1 d{uint64_t(reinterpret_cast<uintptr_t>(client_buf.data())), mr->rkey,
                         uint32_t(client_buf.size())};
    std::optional<uint32_t> seen;
    run(p.io, [&]() -> asio::awaitable<void> {
        // Two local pieces for one remote buffer.
        std::array<LocalSegment, 2> local{
            LocalSegment{server_buf.data(), 4000, smr->lkey},
            LocalSegment{server_buf.data() + 4000, uint32_t(server_buf.size() - 4000), smr->lkey}};
        EXPECT_TRUE(co_await p.server->write_to_peer(std::span(&d, 1), local));
        auto resp = pattern(300, 4);
        std::array<Bytes, 1> parts{Bytes(resp)};
        EXPECT_TRUE(co_await p.server->send(parts, d.token));
        auto m = co_await p.client->receive();
        EXPECT_TRUE(m);
        if (m) seen = m->invalidated_rkey;
    });
    EXPECT_TRUE(client_buf == data);
    ASSERT_TRUE(seen);
    EXPECT_EQ(*seen, mr->rkey);
    EXPECT_EQ(p.counters.send_invalidates.load(), 1u);
    EXPECT_GE(p.counters.rdma_writes.load(), 1u);
    EXPECT_EQ(p.counters.rdma_write_bytes.load(), client_buf.size());
    // The token is gone: a second write to it breaks the connection.
    Status again;
    run(p.io, [&]() -> asio::awaitable<void> {
        LocalSegment l{server_buf.data(), 10, smr->lkey};
        BufferDescriptorV1 small{d.offset, d.token, 10};
        again = co_await p.server->write_to_peer(std::span(&small, 1), std::span(&l, 1));
    });
    EXPECT_FALSE(again);
    EXPECT_TRUE(p.server->closed());
}

TEST(SmbdConnection, RdmaReadPullsThePeersBuffersAcrossDescriptorsAndLargeTransfers) {
    Pair p;
    p.connect();
    // Three client buffers, the middle one larger than one RDMA operation of the device.
    const size_t sizes[] = {5000, (1u << 20) + 12345, 777};
    std::vector<std::vector<std::byte>> bufs;
    std::vector<std::unique_ptr<MemoryRegion>> mrs;
    std::vector<BufferDescriptorV1> descs;
    std::vector<std::byte> expect;
    std::string why;
    for (size_t i = 0; i < 3; ++i) {
        bufs.push_back(pattern(sizes[i], 10 + i));
        expect.insert(expect.end(), bufs[i].begin(), bufs[i].end());
    }
    for (auto& b : bufs) {
        mrs.push_back(
            p.client_qp->domain().register_memory(b.data(), b.size(), access::kRemoteRead, &why));
        descs.push_back({uint64_t(reinterpret_cast<uintptr_t>(b.data())), mrs.back()->rkey,
                         uint32_t(b.size())});
    }
    std::vector<std::byte> into(expect.size());
    auto mr =
        p.server_qp->domain().register_memory(into.data(), into.size(), access::kLocalWrite, &why);
    Status st;
    run(p.io, [&]() -> asio::awaitable<void> {
        LocalSegment l{into.data(), uint32_t(into.size()), mr->lkey};
        st = co_await p.server->read_from_peer(descs, std::span(&l, 1));
    });
    EXPECT_TRUE(st);
    EXPECT_TRUE(into == expect);
    EXPECT_GE(p.counters.rdma_reads.load(), 4u);  // the 1 MiB limit splits the middle one
}

TEST(SmbdConnection, RdmaReadWithoutAnAcceptedReadDepthIsRefusedNotPosted) {
    // A connection whose CM exchange left no RDMA READ depth (initiator depth 0) would never
    // complete a read on a real device: refuse it with a log line instead of posting.
    QueuePairCaps caps = EmulatedQueuePair::default_caps();
    caps.max_rdma_read_outstanding = 0;
    Pair p({}, {}, {}, caps);
    p.connect();
    std::vector<std::byte> client_buf = pattern(4096, 3);
    std::string why;
    auto cmr = p.client_qp->domain().register_memory(client_buf.data(), client_buf.size(),
                                                     access::kRemoteRead, &why);
    std::vector<std::byte> into(client_buf.size());
    auto mr =
        p.server_qp->domain().register_memory(into.data(), into.size(), access::kLocalWrite, &why);
    Status st;
    run(p.io, [&]() -> asio::awaitable<void> {
        BufferDescriptorV1 d{uint64_t(reinterpret_cast<uintptr_t>(client_buf.data())), cmr->rkey,
                             uint32_t(client_buf.size())};
        LocalSegment l{into.data(), uint32_t(into.size()), mr->lkey};
        st = co_await p.server->read_from_peer(std::span(&d, 1), std::span(&l, 1));
    });
    EXPECT_FALSE(st);
    EXPECT_EQ(p.counters.rdma_reads.load(), 0u);
    bool logged = false;
    for (auto& l : p.server_log)
        logged |= l.find("RDMA READ") != std::string::npos;
    EXPECT_TRUE(logged);
    EXPECT_FALSE(p.server->closed());  // the connection still carries sends
}

TEST(SmbdConnection, RdmaFromUnregisteredMemoryIsRefused) {
    Pair p;
    p.connect();
    std::vector<std::byte> client_buf(100);
    std::string why;
    auto mr = p.client_qp->domain().register_memory(client_buf.data(), client_buf.size(),
                                                    access::kRemoteWrite, &why);
    std::vector<std::byte> server_buf(100);
    Status st;
    run(p.io, [&]() -> asio::awaitable<void> {
        BufferDescriptorV1 d{uint64_t(reinterpret_cast<uintptr_t>(client_buf.data())), mr->rkey,
                             100};
        LocalSegment l{server_buf.data(), 100, 0xdead};  // no such lkey
        st = co_await p.server->write_to_peer(std::span(&d, 1), std::span(&l, 1));
    });
    EXPECT_FALSE(st);
}

TEST(SmbdConnection, AnIdleConnectionIsProbedAndClosedWithoutAnAnswer) {
    SmbdTimers fast;
    fast.keepalive_idle = std::chrono::milliseconds(100);
    // Generous: an answer that a loaded machine delays past a short deadline would close the
    // connection this test expects to stay up.
    fast.keepalive_answer = std::chrono::milliseconds(400);
    Pair p(fast);
    p.connect();
    // Both sides answer keepalives: the connection stays up over several idle periods.
    run(p.io, [&]() -> asio::awaitable<void> {
        asio::steady_timer t(p.io, std::chrono::milliseconds(2000));
        co_await t.async_wait(asio::use_awaitable);
    });
    EXPECT_FALSE(p.server->closed());
    EXPECT_GE(p.counters.keepalives.load(), 2u);
}

namespace {

// A peer that speaks raw MS-SMBD bytes: negotiate and data transfer messages of its making.
SmbdTimers negotiate_fast() {
    SmbdTimers t;
    t.negotiate = std::chrono::milliseconds(300);
    return t;
}

struct RawPeer {
    asio::io_context io;
    std::unique_ptr<EmulatedQueuePair> qp;
    EmulatedQueuePair* server_qp = nullptr;
    SmbdCounters counters;
    std::shared_ptr<SmbdConnection> server;
    std::vector<std::byte> mem = std::vector<std::byte>(64 * 2048);
    std::unique_ptr<MemoryRegion> mr;
    Status accepted;
    bool accept_done = false;
    std::vector<std::string> log;

    explicit RawPeer(SmbdTimers t = negotiate_fast()) {
        auto [a, b] = EmulatedQueuePair::make_pair(io.get_executor(), io.get_executor());
        qp = std::move(a);
        server_qp = b.get();
        server = std::make_shared<SmbdConnection>(
            std::move(b), SmbdConfig{}, io.get_executor(), &counters,
            [this](const std::string& s) { log.push_back(s); }, t);
        std::string why;
        mr = qp->domain().register_memory(mem.data(), mem.size(), access::kLocalWrite, &why);
        for (uint32_t i = 1; i < 32; ++i)
            (void)qp->post_receive(i, LocalSegment{mem.data() + i * 2048, 2048, mr->lkey});
        asio::co_spawn(
            io,
            [this]() -> asio::awaitable<void> {
                accepted = co_await server->accept();
                accept_done = true;
            },
            asio::detached);
        io.poll();
    }
    void send(const ByteVector& m) {
        std::memcpy(mem.data(), m.data(), m.size());
        LocalSegment s{mem.data(), uint32_t(m.size()), mr->lkey};
        (void)qp->post_send(1000, std::span(&s, 1), std::nullopt);
        settle();
    }
    void settle(int ms = 50) {
        io.restart();
        io.run_for(std::chrono::milliseconds(ms));
    }
    void negotiate() {
        NegotiateRequest r;
        r.credits_requested = 255;
        r.preferred_send_size = 1364;
        r.max_receive_size = 1364;
        r.max_fragmented_size = 1u << 20;
        ByteVector m;
        r.serialize(m);
        send(m);
        ASSERT_TRUE(accept_done);
        ASSERT_TRUE(accepted);
    }
    ~RawPeer() {
        server->close("test over");
        io.restart();
        io.poll();
    }
};

ByteVector data_message(uint16_t credits_requested, uint16_t granted, uint32_t remaining,
                        uint32_t offset, uint32_t length, size_t total) {
    ByteVector m(total);
    protocol::store_le16(m.data(), credits_requested);
    protocol::store_le16(m.data() + 2, granted);
    protocol::store_le32(m.data() + 8, remaining);
    protocol::store_le32(m.data() + 12, offset);
    protocol::store_le32(m.data() + 16, length);
    return m;
}

}  // namespace

TEST(SmbdConnectionMalformed, NegotiateWithZeroCreditsDisconnects) {
    RawPeer p;
    NegotiateRequest r;
    r.credits_requested = 0;
    r.preferred_send_size = 1364;
    r.max_receive_size = 1364;
    r.max_fragmented_size = 1u << 20;
    ByteVector m;
    r.serialize(m);
    p.send(m);
    EXPECT_TRUE(p.server->closed());
    EXPECT_TRUE(p.accept_done);
    EXPECT_FALSE(p.accepted);
    EXPECT_EQ(p.counters.negotiate_failures.load(), 1u);
}

TEST(SmbdConnectionMalformed, MaxReceiveSizeBelow128Disconnects) {
    RawPeer p;
    NegotiateRequest r;
    r.credits_requested = 10;
    r.preferred_send_size = 1364;
    r.max_receive_size = 100;
    r.max_fragmented_size = 1u << 20;
    ByteVector m;
    r.serialize(m);
    p.send(m);
    EXPECT_TRUE(p.server->closed());
    EXPECT_FALSE(p.accepted);
}

TEST(SmbdConnectionMalformed, NoNegotiateRequestWithinTheTimerDisconnects) {
    RawPeer p;
    p.settle(500);
    EXPECT_TRUE(p.server->closed());
    EXPECT_TRUE(p.accept_done);
    EXPECT_FALSE(p.accepted);
}

TEST(SmbdConnectionMalformed, DataTransferWithZeroCreditsRequestedDisconnects) {
    RawPeer p;
    p.negotiate();
    p.send(data_message(0, 1, 0, 24, 10, 34));
    EXPECT_TRUE(p.server->closed());
}

TEST(SmbdConnectionMalformed, MisalignedDataOffsetDisconnects) {
    RawPeer p;
    p.negotiate();
    p.send(data_message(10, 1, 0, 26, 8, 34));
    EXPECT_TRUE(p.server->closed());
}

TEST(SmbdConnectionMalformed, RemainingPastTheFragmentedSizeDisconnects) {
    RawPeer p;
    p.negotiate();
    p.send(data_message(10, 1, (1u << 20), 24, 10, 34));
    EXPECT_TRUE(p.server->closed());
}

TEST(SmbdConnectionMalformed, DataPastTheMessageDisconnects) {
    RawPeer p;
    p.negotiate();
    p.send(data_message(10, 1, 0, 24, 100, 34));
    EXPECT_TRUE(p.server->closed());
}

TEST(SmbdConnectionMalformed, AWellFormedMessageIsDelivered) {
    // The control for the cases above: the same peer, a valid message, the connection stays.
    RawPeer p;
    p.negotiate();
    auto m = data_message(10, 1, 0, 24, 10, 34);
    for (int i = 0; i < 10; ++i)
        m[24 + i] = std::byte(i);
    p.send(m);
    EXPECT_FALSE(p.server->closed());
    bool got = false;
    asio::co_spawn(
        p.io,
        [&]() -> asio::awaitable<void> {
            auto r = co_await p.server->receive();
            got = r && r->bytes.size() == 10 && r->bytes[9] == std::byte(9);
        },
        asio::detached);
    p.settle();
    EXPECT_TRUE(got);
}

TEST(SmbdConnectionMalformed, APeerThatNeverAnswersAKeepaliveIsDisconnected) {
    SmbdTimers t = negotiate_fast();
    t.keepalive_idle = std::chrono::milliseconds(100);
    t.keepalive_answer = std::chrono::milliseconds(100);
    RawPeer p(t);
    p.negotiate();
    EXPECT_FALSE(p.server->closed());
    p.settle(600);  // the raw peer answers nothing
    EXPECT_TRUE(p.server->closed());
    EXPECT_EQ(p.server->close_reason(), "keepalive timeout");
    EXPECT_GE(p.counters.keepalives.load(), 1u);
}
