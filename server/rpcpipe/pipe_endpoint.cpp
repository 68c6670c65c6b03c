#include "server/rpcpipe/pipe_endpoint.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <memory>
#include <string>

#include "protocol/dcerpc.h"
#include "protocol/srvsvc.h"
#include "server/rpcpipe/srvsvc_provider.h"

namespace daxsmbd::server::rpcpipe {

using protocol::Bytes;
using protocol::ByteVector;
namespace rpc = protocol::rpc;

namespace {

// Unread replies a client may leave on one pipe before its writes are refused (the same bound
// PipeSession applies to itself; here it covers the replies moved out of it).
constexpr size_t kMaxPendingOutput = 1u << 20;

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

// The name as a client opens it on IPC$ is "srvsvc"; leading backslashes and a "PIPE\" prefix
// (the form of the bind_ack secondary address, MS-RPCE 2.1.1.2) are accepted too.
std::string_view bare_pipe_name(std::string_view name) {
    while (!name.empty() && (name.front() == '\\' || name.front() == '/'))
        name.remove_prefix(1);
    if (name.size() > 5 && iequals(name.substr(0, 4), "pipe") &&
        (name[4] == '\\' || name[4] == '/'))
        name.remove_prefix(5);
    return name;
}

// A DCE/RPC pipe in message mode (MS-SMB2 3.3.5.12): every reply PDU the session produces is one
// message; a READ smaller than the message gets its first part and BUFFER_OVERFLOW, the next
// READ the rest. The replies are moved out of the PipeSession as they appear, which is what lets
// FSCTL_PIPE_PEEK look at them without consuming them.
class RpcPipeEndpoint final : public PipeEndpoint {
  public:
    RpcPipeEndpoint(std::string name, rpc::PipeSession session)
        : name_(std::move(name)), session_(std::move(session)) {}

    Status write(Bytes data) override {
        if (out_bytes_ > kMaxPendingOutput) return Error(NtStatus::InsufficientResources);
        auto st = session_.write(data);
        // Replies queued before a failure (a fault for a broken pipe) stay readable.
        drain();
        return st;
    }

    size_t pending() const override {
        return out_.empty() ? 0 : out_.front().size() - front_offset_;
    }

    ByteVector read(size_t max) override {
        ByteVector result;
        if (out_.empty() || max == 0) return result;
        const ByteVector& front = out_.front();
        const size_t n = std::min(max, front.size() - front_offset_);
        auto begin = front.begin() + std::ptrdiff_t(front_offset_);
        result.assign(begin, begin + std::ptrdiff_t(n));
        front_offset_ += n;
        out_bytes_ -= n;
        if (front_offset_ == front.size()) {
            out_.pop_front();
            front_offset_ = 0;
        }
        return result;
    }

    Result<ByteVector> transceive(Bytes in, size_t max_out) override {
        DAX_CHECK(write(in));
        return read(max_out);
    }

    std::string_view name() const override { return name_; }

    bool message_continues() const override { return !out_.empty() && front_offset_ > 0; }

    Peek peek(size_t max) const override {
        Peek p;
        p.bytes_available = out_bytes_;
        p.messages = out_.size();
        p.message_remaining = pending();
        if (!out_.empty()) {
            auto begin = out_.front().begin() + std::ptrdiff_t(front_offset_);
            p.data.assign(begin, begin + std::ptrdiff_t(std::min(max, p.message_remaining)));
        }
        return p;
    }

  private:
    void drain() {
        while (size_t n = session_.pending_size()) {
            ByteVector msg = session_.read(n);
            out_bytes_ += msg.size();
            out_.push_back(std::move(msg));
        }
    }

    std::string name_;
    rpc::PipeSession session_;
    std::deque<ByteVector> out_;
    size_t front_offset_ = 0;
    size_t out_bytes_ = 0;
};

}  // namespace

bool pipe_exists(std::string_view pipe_name) {
    return iequals(bare_pipe_name(pipe_name), rpc::kSrvsvcPipeName);
}

std::unique_ptr<PipeEndpoint> make_pipe_endpoint(Server& server, std::string_view pipe_name) {
    if (!pipe_exists(pipe_name)) return nullptr;
    auto provider = std::make_shared<const ServerSrvsvcProvider>(server);
    return std::make_unique<RpcPipeEndpoint>(std::string(rpc::kSrvsvcPipeName),
                                             rpc::make_srvsvc_pipe(std::move(provider)));
}

}  // namespace daxsmbd::server::rpcpipe
