#include "tests/support/null_transport.h"

namespace daxsmbd::test_support {

boost::asio::awaitable<Result<server::PoolBuffer>> NullTransport::receive() {
    co_return Error(NtStatus::ConnectionDisconnected);
}

boost::asio::awaitable<Status> NullTransport::send(std::span<const protocol::Bytes>, server::Payload&) {
    co_return Status{};
}

}  // namespace daxsmbd::test_support
