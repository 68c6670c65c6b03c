// A wake-up for coroutines of one event loop: wait() parks until the next notify(). Used as
// "check the condition, else wait, check again" on a single-threaded loop, where nothing can
// change between the check and the wait, so no notification is lost.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace daxsmbd::smbdirect {

class Event {
  public:
    explicit Event(boost::asio::any_io_executor ex)
        : timer_(std::move(ex), boost::asio::steady_timer::time_point::max()) {}
    // Wakes every coroutine parked in wait() now.
    void notify() { timer_.cancel(); }
    boost::asio::awaitable<void> wait() {
        boost::system::error_code ec;
        co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    }

  private:
    boost::asio::steady_timer timer_;
};

}  // namespace daxsmbd::smbdirect
