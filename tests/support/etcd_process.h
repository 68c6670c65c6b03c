// A private etcd for one test: /usr/bin/etcd on free loopback ports with its data in a fresh
// temporary directory, started, waited for until it answers, and killed at the end. Tests that
// pause, kill or restart it get one of their own.
#pragma once

#include <sys/types.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "tests/support/temp_dir.h"

namespace daxsmbd::cluster::test {

inline constexpr const char* kEtcdBinary = "/usr/bin/etcd";

bool etcd_installed();

class EtcdProcess {
  public:
    EtcdProcess();
    ~EtcdProcess();  // kills etcd (SIGKILL) and removes its data
    EtcdProcess(const EtcdProcess&) = delete;
    EtcdProcess& operator=(const EtcdProcess&) = delete;

    // Starts etcd and waits until it answers a range; false (with `error`) when it does not
    // within `wait`.
    bool start(std::string* error, std::chrono::seconds wait = std::chrono::seconds(20));
    void pause();   // SIGSTOP: connections are accepted, nothing is answered
    void resume();  // SIGCONT
    void kill();    // SIGKILL and reap; start() again restarts it on the same data and ports
    bool running() const { return pid_ > 0; }

    uint16_t client_port() const { return client_port_; }
    std::string url() const;  // http://127.0.0.1:PORT

  private:
    daxsmbd::test_support::TempDir dir_{"daxsmbd-etcd"};
    uint16_t client_port_ = 0;
    uint16_t peer_port_ = 0;
    pid_t pid_ = -1;
};

// A loopback TCP port nobody listens on now (bound and released at once).
uint16_t free_loopback_port();

// Runs `aw` to completion on an io_context of its own and returns its value.
template <class T>
T run_sync(boost::asio::awaitable<T> aw) {
    boost::asio::io_context ioc;
    auto f = boost::asio::co_spawn(ioc, std::move(aw), boost::asio::use_future);
    ioc.run();
    return f.get();
}

}  // namespace daxsmbd::cluster::test
