// TcpTransport framing over a real loopback socket: messages split into many segments, large
// messages received with a receive low-watermark, and the small messages that follow them;
// messages whose tail is a pipe (spliced READ data), spliced by TCP and copied by the default.
#include "server/transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace daxsmbd::server {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

std::vector<uint8_t> framed(size_t len, uint8_t seed) {
    std::vector<uint8_t> m(4 + len);
    m[1] = uint8_t(len >> 16);
    m[2] = uint8_t(len >> 8);
    m[3] = uint8_t(len);
    for (size_t i = 0; i < len; ++i)
        m[4 + i] = uint8_t(seed + i * 7 + (i >> 12));
    return m;
}

bool same_payload(const PoolBuffer& got, const std::vector<uint8_t>& frame) {
    return got.size() + 4 == frame.size() &&
           std::memcmp(got.data(), frame.data() + 4, got.size()) == 0;
}

// A connected pair: `server` wrapped in the transport under test, `peer` a plain blocking
// descriptor the test writes from (on its own thread, so that a writer blocked on a full
// socket buffer cannot stall the loop that drains it).
struct Pair {
    BufferPool buffers;
    asio::io_context ctx;
    std::unique_ptr<TcpTransport> transport;
    int server_fd = -1;
    int peer = -1;

    explicit Pair(size_t max_message = 16u << 20) {
        tcp::acceptor acc(ctx, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
        peer = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(acc.local_endpoint().port());
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::connect(peer, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
        tcp::socket s = acc.accept();
        server_fd = s.native_handle();
        transport = std::make_unique<TcpTransport>(std::move(s), max_message, buffers);
    }
    ~Pair() {
        if (peer >= 0) ::close(peer);
    }
    int low_watermark() const {
        int v = 0;
        socklen_t l = sizeof v;
        ::getsockopt(server_fd, SOL_SOCKET, SO_RCVLOWAT, &v, &l);
        return v;
    }
};

void write_all(int fd, const uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return;
        p += w;
        n -= size_t(w);
    }
}

// Runs `body` on the pair's loop to completion.
template <typename Body>
void run(Pair& p, Body body) {
    bool finished = false;
    asio::co_spawn(
        p.ctx,
        [&]() -> asio::awaitable<void> {
            co_await body();
            finished = true;
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    p.ctx.run();
    ASSERT_TRUE(finished);
}

TEST(TcpTransport, LargeMessageInSmallPiecesThenSmallMessages) {
    Pair p;
    const auto big = framed(1u << 20, 1);
    const auto small = framed(100, 2);
    const auto medium = framed(300u << 10, 3);
    std::thread writer([&] {
        // The large message trickles in (many wakeups while the low-watermark is set), the next
        // two arrive whole: the small one must not wait for bytes that never come.
        for (size_t off = 0; off < big.size(); off += 64 * 1024) {
            write_all(p.peer, big.data() + off, std::min<size_t>(64 * 1024, big.size() - off));
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        write_all(p.peer, small.data(), small.size());
        write_all(p.peer, medium.data(), medium.size());
    });
    run(p, [&]() -> asio::awaitable<void> {
        auto a = co_await p.transport->receive();
        EXPECT_TRUE(a && same_payload(*a, big));
        EXPECT_EQ(p.low_watermark(), 1);  // reset before the next header is awaited
        auto b = co_await p.transport->receive();
        EXPECT_TRUE(b && same_payload(*b, small));
        auto c = co_await p.transport->receive();
        EXPECT_TRUE(c && same_payload(*c, medium));
        EXPECT_EQ(p.low_watermark(), 1);
    });
    writer.join();
}

TEST(TcpTransport, BackToBackLargeMessagesOfGrowingSize) {
    // Each message is larger than the one before, so a receive window or watermark left over
    // from the previous message would be too small for the next one.
    Pair p;
    std::vector<std::vector<uint8_t>> msgs;
    for (size_t i = 0; i < 6; ++i)
        msgs.push_back(framed((200u << 10) + i * (400u << 10), uint8_t(10 + i)));
    std::thread writer([&] {
        for (auto& m : msgs)
            write_all(p.peer, m.data(), m.size());
    });
    run(p, [&]() -> asio::awaitable<void> {
        for (auto& m : msgs) {
            auto r = co_await p.transport->receive();
            EXPECT_TRUE(r && same_payload(*r, m));
        }
    });
    writer.join();
}

TEST(TcpTransport, PipelinedMessagesInOneSegment) {
    // Several requests arrive in one segment (a client with many in flight): each is returned
    // whole, in order, including one larger than the staged-message size whose head was staged
    // together with the others, and a NetBIOS keepalive between them is skipped.
    Pair p;
    std::vector<std::vector<uint8_t>> msgs = {framed(100, 20), framed(4200, 21), framed(64, 22),
                                              framed(20000, 23), framed(117, 24)};
    std::vector<uint8_t> wire;
    for (size_t i = 0; i < msgs.size(); ++i) {
        wire.insert(wire.end(), msgs[i].begin(), msgs[i].end());
        if (i == 1) wire.insert(wire.end(), {0x85, 0, 0, 0});
    }
    write_all(p.peer, wire.data(), wire.size());
    run(p, [&]() -> asio::awaitable<void> {
        for (auto& m : msgs) {
            auto r = co_await p.transport->receive();
            EXPECT_TRUE(r && same_payload(*r, m));
        }
    });
}

TEST(TcpTransport, PeerClosingInsideALargeMessageIsADisconnect) {
    Pair p;
    const auto big = framed(1u << 20, 4);
    write_all(p.peer, big.data(), 300 * 1024);
    ::shutdown(p.peer, SHUT_WR);
    run(p, [&]() -> asio::awaitable<void> {
        auto r = co_await p.transport->receive();
        EXPECT_FALSE(r);
        if (r) co_return;
        EXPECT_EQ(r.status(), NtStatus::ConnectionDisconnected);
        EXPECT_EQ(p.low_watermark(), 1);
    });
}

TEST(TcpTransport, OversizedAndMalformedFrames) {
    Pair over(1u << 20);
    const auto big = framed((1u << 20) + 1, 5);
    write_all(over.peer, big.data(), 4);
    run(over, [&]() -> asio::awaitable<void> {
        auto r = co_await over.transport->receive();
        EXPECT_FALSE(r);
        if (r) co_return;
        EXPECT_EQ(r.status(), NtStatus::BufferOverflow);
    });

    Pair bad;
    const uint8_t frame[] = {0x81, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8};  // not Direct TCP framing
    write_all(bad.peer, frame, sizeof frame);
    run(bad, [&]() -> asio::awaitable<void> {
        auto r = co_await bad.transport->receive();
        EXPECT_FALSE(r);
        if (r) co_return;
        EXPECT_EQ(r.status(), NtStatus::InvalidParameter);
    });
}

// A pipe holding `data` as spliced READ data would (written, not spliced, for the test).
io::SplicePipe pipe_holding(io::PipePool& pool, const std::vector<uint8_t>& data) {
    io::SplicePipe pipe = pool.acquire(0, data.size());
    if (!pipe) return pipe;
    size_t off = 0;
    while (off < data.size()) {
        ssize_t n = ::write(pipe.write_fd(), data.data() + off, data.size() - off);
        if (n <= 0) break;
        off += size_t(n);
    }
    pipe.added(off);
    return pipe;
}

// Header fragments, then 1 MiB from a pipe, into a socket whose peer reads slowly from a
// small buffer (the splice waits for writability many times), then an ordinary message: the
// peer sees two whole, correctly framed messages in order, and the pipe is empty.
TEST(TcpTransport, MessageWithAPipeTail) {
    auto pool = io::PipePool::make("test");
    const auto data = framed(io::PipePool::kCapacity - 4, 6);  // any 1 MiB of bytes
    io::SplicePipe pipe = pipe_holding(*pool, data);
    if (!pipe) GTEST_SKIP() << "no 1 MiB pipe here (pipe-max-size)";
    ASSERT_EQ(pipe.size(), data.size());
    Pair p;
    int small = 16 * 1024;
    ::setsockopt(p.peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    const std::vector<uint8_t> head = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const std::vector<uint8_t> after = {42, 43};
    std::vector<uint8_t> got;
    const size_t expect = 4 + head.size() + data.size() + 4 + after.size();
    std::thread reader([&] {
        std::vector<uint8_t> buf(4096);
        while (got.size() < expect) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            ssize_t n = ::recv(p.peer, buf.data(), buf.size(), 0);
            if (n <= 0) return;
            got.insert(got.end(), buf.begin(), buf.begin() + n);
        }
    });
    run(p, [&]() -> asio::awaitable<void> {
        std::array<protocol::Bytes, 1> frags{
            protocol::Bytes(reinterpret_cast<const std::byte*>(head.data()), head.size())};
        Payload tail(std::move(pipe));
        auto st = co_await p.transport->send(frags, tail);
        EXPECT_TRUE(st);
        EXPECT_EQ(tail.size(), 0u);
        std::array<protocol::Bytes, 1> next{
            protocol::Bytes(reinterpret_cast<const std::byte*>(after.data()), after.size())};
        EXPECT_TRUE(co_await p.transport->send(next));
    });
    reader.join();
    ASSERT_EQ(got.size(), expect);
    const size_t len = head.size() + data.size();
    EXPECT_EQ(got[0], 0);
    EXPECT_EQ((size_t(got[1]) << 16) | (size_t(got[2]) << 8) | got[3], len);
    EXPECT_TRUE(std::equal(head.begin(), head.end(), got.begin() + 4));
    EXPECT_TRUE(std::equal(data.begin(), data.end(), got.begin() + 4 + long(head.size())));
    const size_t second = 4 + len;
    EXPECT_EQ(got[second + 3], after.size());
    EXPECT_TRUE(std::equal(after.begin(), after.end(), got.begin() + long(second) + 4));
}

// Where the transport cannot carry a pipe, or the bytes are needed (signing, sealing), the edge
// makes the payload memory: the pipe's bytes, once, in a pool buffer.
TEST(Payload, PipeMadeMemoryHoldsThePipesBytes) {
    BufferPool buffers;  // outlives the payload that ends up holding one of its buffers
    auto pool = io::PipePool::make("test");
    const std::vector<uint8_t> data(100000, 0x5a);
    io::SplicePipe pipe = pipe_holding(*pool, data);
    if (!pipe) GTEST_SKIP() << "no 1 MiB pipe here (pipe-max-size)";
    Payload payload(std::move(pipe));
    EXPECT_EQ(payload.kind(), PayloadKind::Pipe);
    EXPECT_EQ(payload.size(), data.size());
    EXPECT_TRUE(payload.bytes().empty());
    ASSERT_TRUE(payload.make_memory(buffers));
    EXPECT_EQ(payload.kind(), PayloadKind::Memory);
    ASSERT_EQ(payload.size(), data.size());
    auto b = payload.bytes();
    EXPECT_TRUE(std::equal(data.begin(), data.end(), reinterpret_cast<const uint8_t*>(b.data())));
}

// A transport says what it carries: TCP sends pipes itself, every transport sends memory.
TEST(Transport, TcpCarriesMemoryAndPipes) {
    Pair p;
    EXPECT_TRUE(p.transport->carries().has(PayloadKind::Memory));
    EXPECT_TRUE(p.transport->carries().has(PayloadKind::Pipe));
    EXPECT_FALSE(p.transport->carries().has(PayloadKind::Mapped));
}

}  // namespace
}  // namespace daxsmbd::server
