#include "tests/support/etcd_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <thread>
#include <vector>

#include "server/cluster/etcd_client.h"

namespace daxsmbd::cluster::test {

namespace asio = boost::asio;

bool etcd_installed() {
    return access(kEtcdBinary, X_OK) == 0;
}

uint16_t free_loopback_port() {
    asio::io_context ioc;
    asio::ip::tcp::acceptor a(ioc, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    return a.local_endpoint().port();
}

EtcdProcess::EtcdProcess() : client_port_(free_loopback_port()), peer_port_(free_loopback_port()) {}

EtcdProcess::~EtcdProcess() {
    kill();
}

std::string EtcdProcess::url() const {
    return "http://127.0.0.1:" + std::to_string(client_port_);
}

bool EtcdProcess::start(std::string* error, std::chrono::seconds wait) {
    if (!dir_.ok()) {
        *error = "no temporary directory";
        return false;
    }
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    std::vector<std::string> args = {kEtcdBinary,
                                     "--name=t",
                                     "--data-dir=" + dir_.at("data"),
                                     "--listen-client-urls=" + url(),
                                     "--advertise-client-urls=" + url(),
                                     "--listen-peer-urls=" + peer,
                                     "--initial-advertise-peer-urls=" + peer,
                                     "--initial-cluster=t=" + peer,
                                     "--logger=zap",
                                     "--log-outputs=" + dir_.at("etcd.log")};
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
        const int null = open("/dev/null", O_RDWR);
        dup2(null, 1);
        dup2(null, 2);
        execv(kEtcdBinary, argv.data());
        _exit(127);
    }
    if (pid_ < 0) {
        *error = "fork failed";
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + wait;
    std::string last;
    while (std::chrono::steady_clock::now() < deadline) {
        asio::io_context ioc;
        EtcdEndpoint ep{"127.0.0.1", client_port_, url()};
        EtcdClient client(ioc.get_executor(), {ep}, std::chrono::milliseconds(500));
        auto f = asio::co_spawn(ioc, client.range("/"), asio::use_future);
        ioc.run();
        auto r = f.get();
        if (r) return true;
        last = r.error;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    *error = "etcd did not answer within " + std::to_string(wait.count()) + " s: " + last +
             " (log: " + dir_.at("etcd.log") + ")";
    return false;
}

void EtcdProcess::pause() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGSTOP);
    // The signal is delivered asynchronously: wait until the kernel reports etcd stopped, so
    // that no request of the test is answered after pause() returned.
    int status = 0;
    while (waitpid(pid_, &status, WUNTRACED) == -1 && errno == EINTR) {
    }
}

void EtcdProcess::resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
}

void EtcdProcess::kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
}

}  // namespace daxsmbd::cluster::test
