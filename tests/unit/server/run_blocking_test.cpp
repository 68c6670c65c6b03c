// RequestContext::blocking (handlers/handler.h detail::run_blocking): the call runs on the
// blocking pool, never on the event loop, and the coroutine is back on the loop afterwards. A
// blocking call on a loop stalls every connection of it, and a credential switch there breaks
// SMB Direct (vfs::keep_credentials_on_this_thread).
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <thread>

#include "server/handlers/handler.h"

namespace daxsmbd::server {
namespace {

TEST(RunBlocking, TheCallRunsOnThePoolAndTheCoroutineResumesOnTheLoop) {
    asio::io_context loop;
    asio::thread_pool pool(2);
    std::thread::id loop_thread, call_thread, after_thread;
    bool done = false;
    asio::co_spawn(
        loop,
        [&]() -> asio::awaitable<void> {
            loop_thread = std::this_thread::get_id();
            auto call = [&] {
                call_thread = std::this_thread::get_id();
                return 7;
            };
            int r = co_await detail::run_blocking(loop.get_executor(), pool, nullptr, call);
            after_thread = std::this_thread::get_id();
            EXPECT_EQ(r, 7);
            done = true;
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    loop.run();
    pool.join();
    ASSERT_TRUE(done);
    EXPECT_NE(call_thread, loop_thread) << "the blocking call ran on the event loop";
    EXPECT_EQ(after_thread, loop_thread);
}

}  // namespace
}  // namespace daxsmbd::server
