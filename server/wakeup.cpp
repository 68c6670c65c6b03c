#include "server/wakeup.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace daxsmbd::server {

std::shared_ptr<Wakeup> Wakeup::make(asio::any_io_executor loop) {
    return std::shared_ptr<Wakeup>(new Wakeup(std::move(loop)));
}

void Wakeup::notify() {
    notified_.store(true, std::memory_order_release);
    // The timer belongs to the loop: cancel it there.
    asio::post(loop_, [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->timer_.cancel();
    });
}

std::function<void()> Wakeup::waker() {
    return [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->notify();
    };
}

asio::awaitable<bool> Wakeup::wait(Clock::time_point deadline) {
    for (;;) {
        if (notified_.exchange(false, std::memory_order_acq_rel)) co_return true;
        if (Clock::now() >= deadline) co_return false;
        // A cancel posted by an earlier notify() whose wait already returned may end this one
        // early: then the loop waits again.
        timer_.expires_at(deadline);
        boost::system::error_code ec;
        co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

}  // namespace daxsmbd::server
