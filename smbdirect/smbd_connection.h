// One SMB Direct connection (MS-SMBD 3.1): negotiation, credits, fragmentation and reassembly,
// keepalive, RDMA READ and WRITE for the upper layer's buffer descriptors, and disconnect; over
// any provider (smbdirect/provider.h). Runs on one event loop: every method is called there.
//
// Credits (MS-SMBD 3.1.5.1, 3.1.5.9): every receive granted to the peer is posted first, so the
// credits granted never exceed the receives posted; a message is sent only with a send credit,
// the last credit only by a message that grants credits. Receive buffers (MaxReceiveSize each)
// and send buffers (MaxSendSize each) are two regions registered once per connection; upper-
// layer bytes are copied into send buffers, which is cheap at 1364 bytes a message: bulk data
// moves by RDMA READ/WRITE from registered memory the caller names (LocalSegment).
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "smbdirect/event.h"
#include "smbdirect/provider.h"
#include "smbdirect/smbd_codec.h"

namespace daxsmbd::smbdirect {

// Counters of every SMB Direct connection of a server (read by the stats line).
struct SmbdCounters {
    std::atomic<uint64_t> connections{0};
    std::atomic<uint64_t> negotiate_failures{0};
    std::atomic<uint64_t> sends{0};
    std::atomic<uint64_t> receives{0};
    std::atomic<uint64_t> rdma_reads{0};
    std::atomic<uint64_t> rdma_read_bytes{0};
    std::atomic<uint64_t> rdma_writes{0};
    std::atomic<uint64_t> rdma_write_bytes{0};
    std::atomic<uint64_t> send_invalidates{0};
    std::atomic<uint64_t> keepalives{0};
    // RDMA bytes moved through registered pool buffers, and straight from or into a DAX
    // mapping (counted by the transport, which knows the memory).
    std::atomic<uint64_t> bounce_bytes{0};
    std::atomic<uint64_t> direct_bytes{0};
    std::atomic<uint64_t> disconnects_on_error{0};
};

struct SmbdTimers {
    std::chrono::milliseconds negotiate{5000};         // MS-SMBD 3.1.7.2 (passive side)
    std::chrono::milliseconds keepalive_idle{120000};  // KeepaliveInterval, 3.1.6.2
    std::chrono::milliseconds keepalive_answer{5000};  // MS-SMBD <4>
};

class SmbdConnection : public std::enable_shared_from_this<SmbdConnection> {
  public:
    using Logger = std::function<void(const std::string&)>;
    SmbdConnection(std::unique_ptr<QueuePair> qp, const SmbdConfig& config,
                   boost::asio::any_io_executor ex, SmbdCounters* counters, Logger log,
                   SmbdTimers timers = {});
    ~SmbdConnection();
    SmbdConnection(const SmbdConnection&) = delete;
    SmbdConnection& operator=(const SmbdConnection&) = delete;

    // Passive side: posts the receives, accepts the RDMA connection, answers the peer's
    // negotiate request (MS-SMBD 3.1.5.6) within the negotiate timer, then runs the connection.
    // Fails (and closes) on a refused or failed negotiation.
    boost::asio::awaitable<Status> accept();
    // Active side (our test client) on a connected queue pair: sends the negotiate request
    // and checks the response (MS-SMBD 3.1.5.2, 3.1.5.7).
    boost::asio::awaitable<Status> connect();

    struct Message {
        ByteVector bytes;                          // one whole upper-layer message
        std::optional<uint32_t> invalidated_rkey;  // 3.1.5.8: handed up with the message
    };
    // The next upper-layer message; ConnectionDisconnected once the connection is down.
    boost::asio::awaitable<Result<Message>> receive();

    // Sends one upper-layer message made of `parts` (MS-SMBD 3.1.4.1), fragmented as needed;
    // with `invalidate_rkey`, its last fragment is a Send with Invalidate of that peer token.
    // Concurrent callers are serialised (fragments of two messages never interleave).
    boost::asio::awaitable<Status> send(std::span<const Bytes> parts,
                                        std::optional<uint32_t> invalidate_rkey = std::nullopt);

    // RDMA WRITE of `local` (registered memory) into the peer's buffers `remote`, in order;
    // the lengths must match. Returns once every write completed (MS-SMBD 3.1.4.6).
    boost::asio::awaitable<Status> write_to_peer(std::span<const BufferDescriptorV1> remote,
                                                 std::span<const LocalSegment> local);
    // RDMA READ of the peer's buffers `remote` into `local` (MS-SMBD 3.1.4.5).
    boost::asio::awaitable<Status> read_from_peer(std::span<const BufferDescriptorV1> remote,
                                                  std::span<const LocalSegment> local);

    // Disconnects (idempotent); every waiter fails with ConnectionDisconnected.
    void close(const std::string& reason);
    bool closed() const { return closed_; }
    const std::string& close_reason() const { return close_reason_; }

    const NegotiatedParameters& parameters() const { return params_; }
    QueuePair& queue_pair() { return *qp_; }

    // For tests: receives posted now, credits granted to the peer and not used yet, send
    // credits held.
    uint32_t posted_receives() const { return posted_; }
    uint32_t granted_receive_credits() const { return granted_; }
    uint32_t send_credits() const { return send_credits_; }
    // Log every RDMA transfer (debugging; "log level = 3").
    void set_trace(bool on) { trace_ = on; }

  private:
    struct RdmaOp {
        size_t pending = 0;
        bool failed = false;
        std::string error;
    };
    enum : uint64_t { kRecvTag = 1ull << 56, kSendTag = 2ull << 56, kRdmaTag = 3ull << 56 };
    static constexpr uint64_t kTagMask = 0xffull << 56;

    boost::asio::awaitable<void> drive();
    boost::asio::awaitable<void> keepalive();
    void handle(Completion& c);
    void handle_receive(Completion& c);
    void handle_negotiate(std::span<const std::byte> msg);
    void handle_negotiate_response(std::span<const std::byte> msg);
    boost::asio::awaitable<Status> await_negotiation();
    void start_keepalive();
    Status post_receive(uint32_t slot);
    void refill_receives();
    uint16_t take_grant();
    uint32_t receive_target() const;
    bool need_credit_message() const;
    boost::asio::awaitable<Status> send_fragment(std::span<const Bytes> parts, size_t offset,
                                                 size_t length, uint32_t remaining,
                                                 std::optional<uint32_t> invalidate_rkey,
                                                 bool empty, uint16_t extra_flags);
    boost::asio::awaitable<Status> send_empty(uint16_t flags);
    boost::asio::awaitable<Status> rdma(bool write, std::span<const BufferDescriptorV1> remote,
                                        std::span<const LocalSegment> local);
    boost::asio::awaitable<bool> wait_send_slot();
    void schedule_credit_message(uint16_t flags);
    void log(const std::string& s) const {
        if (log_) log_(s);
    }

    std::unique_ptr<QueuePair> qp_;
    SmbdConfig config_;
    boost::asio::any_io_executor ex_;
    SmbdCounters* counters_;
    Logger log_;
    SmbdTimers timers_;
    Event event_;  // completions processed, credits or slots freed, messages ready, closed

    bool trace_ = false;
    bool negotiated_ = false;
    bool active_ = false;  // we sent the negotiate request
    bool closed_ = false;
    std::string close_reason_;
    NegotiatedParameters params_;
    std::optional<Status> negotiate_result_;

    // Receive side.
    std::vector<std::byte> recv_memory_;
    std::unique_ptr<MemoryRegion> recv_region_;
    uint32_t recv_slots_ = 0;
    std::vector<uint32_t> idle_recv_slots_;  // not posted
    uint32_t posted_ = 0;                    // receives posted
    uint32_t granted_ = 0;                   // of those, granted to the peer and not used
    uint16_t receive_credit_target_ = 1;     // the peer's CreditsRequested
    std::optional<Reassembler> reassembler_;
    std::deque<Message> ready_;
    bool response_requested_ = false;

    // Send side.
    std::vector<std::byte> send_memory_;
    std::unique_ptr<MemoryRegion> send_region_;
    std::vector<uint32_t> free_send_slots_;
    uint32_t send_credits_ = 0;
    bool sending_ = false;  // one upper-layer message at a time (its fragments in order)
    bool credit_message_scheduled_ = false;
    uint32_t sq_in_flight_ = 0;  // work requests on the send queue
    uint32_t reads_in_flight_ = 0;

    // Keepalive (MS-SMBD 3.1.6.2).
    std::chrono::steady_clock::time_point last_receive_;
    bool keepalive_outstanding_ = false;
    std::optional<boost::asio::steady_timer> keepalive_timer_;

    uint64_t next_op_ = 1;
    std::map<uint64_t, RdmaOp> ops_;
};

}  // namespace daxsmbd::smbdirect
