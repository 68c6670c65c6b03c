// Server::drain, the graceful part of a stop (SIGTERM), and Server::loops_responsive, what the
// systemd watchdog's keep-alive is sent on (README "Running it yourself").
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <future>
#include <thread>

#include "server/connection.h"
#include "server/log.h"
#include "server/server.h"
#include "server/vfs/share_root.h"

namespace daxsmbd::server {

namespace {

using namespace std::chrono_literals;

// How many of `conns` have requests in processing, each asked on its own loop; a loop that
// does not answer within a second counts as busy.
size_t count_busy(const std::vector<std::shared_ptr<Connection>>& conns) {
    std::vector<std::future<bool>> answers;
    for (const auto& c : conns) {
        auto answer = std::make_shared<std::promise<bool>>();
        answers.push_back(answer->get_future());
        asio::post(c->executor, [c, answer] {
            answer->set_value(!c->closed() && c->bytes_in_processing() > 0);
        });
    }
    size_t busy = 0;
    for (auto& f : answers)
        if (f.wait_for(1s) != std::future_status::ready || f.get()) ++busy;
    return busy;
}

}  // namespace

bool Server::loops_responsive(std::chrono::milliseconds within) {
    std::vector<std::future<void>> answers;
    for (auto& loop : loops_) {
        auto answer = std::make_shared<std::promise<void>>();
        answers.push_back(answer->get_future());
        asio::post(*loop, [answer] { answer->set_value(); });
    }
    const auto deadline = std::chrono::steady_clock::now() + within;
    for (auto& f : answers)
        if (f.wait_until(deadline) != std::future_status::ready) return false;
    return true;
}

Server::DrainResult Server::drain(std::chrono::milliseconds bound) {
    const auto start = std::chrono::steady_clock::now();
    draining_.store(true, std::memory_order_release);
    DrainResult r;
    if (loops_.empty()) return r;
    // The accept loops run on loop 0 and end when their listener closes (Cancelled).
    auto closed = std::make_shared<std::promise<void>>();
    auto listeners_closed = closed->get_future();
    asio::post(*loops_[0], [this, closed] {
        for (auto& l : listeners_)
            l->close();
        closed->set_value();
    });
    listeners_closed.wait_for(1s);

    r.busy_connections = count_busy(live_connections());
    r.still_busy = r.busy_connections;
    while (r.still_busy > 0 && std::chrono::steady_clock::now() - start < bound) {
        std::this_thread::sleep_for(20ms);
        r.still_busy = count_busy(live_connections());
    }
    // Buffered writes that were acknowledged are in the page cache: put them on disk before
    // the process ends (DAX writes are flushed as they are made).
    for (const auto& s : shares())
        if (s->root && ::syncfs(s->root->fd()) != 0)
            log_error("share [", s->config.name, "]: syncfs: ", std::strerror(errno));
    r.took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    return r;
}

}  // namespace daxsmbd::server
