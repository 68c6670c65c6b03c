// Runs a coroutine against an io engine on a fresh io_context, for the tests of the data paths
// (io_engine_test.cpp, dax_path_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <functional>

#include "server/io/uring_engine.h"

namespace daxsmbd::server::io::test_support {

// Runs `body` to completion (the context runs until it has no work left) and fails the test if
// the coroutine did not finish, e.g. because a completion never arrived.
inline void run_engine(const EngineOptions& opts,
                       std::function<asio::awaitable<void>(Engine&)> body) {
    asio::io_context ctx;
    Engine engine(ctx.get_executor(), opts);
    bool finished = false;
    asio::co_spawn(
        ctx,
        [&]() -> asio::awaitable<void> {
            co_await body(engine);
            finished = true;
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    ctx.run();
    ASSERT_TRUE(finished);
}

}  // namespace daxsmbd::server::io::test_support
