// A transport without a peer, for tests that drive a handler on a Connection directly: nothing
// arrives (receive() reports a disconnect) and whatever is sent is dropped.
#pragma once

#include <string>

#include "server/transport.h"

namespace daxsmbd::test_support {

class NullTransport final : public server::Transport {
  public:
    boost::asio::awaitable<Result<server::PoolBuffer>> receive() override;
    using server::Transport::send;
    boost::asio::awaitable<Status> send(std::span<const protocol::Bytes>,
                                        server::Payload&) override;
    std::string peer() const override { return "test"; }
    std::string peer_address() const override { return "test"; }
    void close() override {}
};

}  // namespace daxsmbd::test_support
