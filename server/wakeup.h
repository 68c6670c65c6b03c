// The one cross-loop wake-up: a request parked on its connection's event loop (a blocking LOCK,
// a CREATE waiting for oplock breaks, a CHANGE_NOTIFY, a pipe READ) waits on a Wakeup; whatever
// ends the wait (a lock released on another loop, a break acknowledged, a file-system event on
// the notify thread, a WRITE to the pipe, a CANCEL) calls a waker from any thread.
//
// A notify() that comes before the wait is not lost: the next wait() returns at once. A waker
// outlives the Wakeup safely (it holds it weakly): calling it then does nothing. The wake is
// posted to the waiter's loop, so it cannot run between the waiter's last check and its wait.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace daxsmbd::server {

namespace asio = boost::asio;

class Wakeup : public std::enable_shared_from_this<Wakeup> {
  public:
    using Clock = std::chrono::steady_clock;

    // A Wakeup whose waits run on `loop`.
    static std::shared_ptr<Wakeup> make(asio::any_io_executor loop);

    // Wakes the current or the next wait(). Any thread.
    void notify();
    // notify() as a callable that any thread may keep and call, also after this is gone.
    std::function<void()> waker();

    // On the loop: returns true once notified (since the last wait that returned true), false
    // when `deadline` passed first.
    asio::awaitable<bool> wait(Clock::time_point deadline = Clock::time_point::max());

  private:
    explicit Wakeup(asio::any_io_executor loop) : loop_(loop), timer_(loop) {}

    asio::any_io_executor loop_;
    asio::steady_timer timer_;
    std::atomic<bool> notified_{false};
};

}  // namespace daxsmbd::server
