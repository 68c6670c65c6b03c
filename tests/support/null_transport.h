// A transport without a peer, for tests that drive a handler on a Connection directly: nothing
// arrives (receive() reports a disconnect) and whatever is sent is dropped.
#pragma once

#include <string>

#include "server/transport.h"

namespace daxsmbd::test_support {

class NullTransport final : public server::Transport {
  public:
    boost::asio::awaitable<Result<server::PoolBuffer>> receive() override;
    boost::asio::awaitable<Status> send(std::span<const protocol::Bytes>) override;
    server::TransportKind kind() const override { return server::TransportKind::Tcp; }
    std::string peer() const override { return "test"; }
    std::string peer_address() const override { return "test"; }
    void close() override {}
};

}  // namespace daxsmbd::test_support
