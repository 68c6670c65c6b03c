// An in-process daxsmbd for end-to-end tests: the real Server (server/server.h) with a
// configuration built in code, one writable share `data` in a fresh temporary directory, a user
// database with alice/pw, listening on 127.0.0.1 on a kernel-chosen port, run on its own thread.
// Stopped, joined and its directory removed on destruction.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/config.h"

namespace daxsmbd::server {
class Server;
}

namespace daxsmbd::client {

class TestServer {
  public:
    struct Options {
        std::string user = "alice";
        std::string password = "pw";
        std::vector<std::pair<std::string, std::string>> extra_users;  // more {user, password}
        // Users with uids of their own (the others act as the test's uid).
        struct UnixUser {
            std::string name, password;
            uint32_t uid = 0, gid = 0;
        };
        std::vector<UnixUser> unix_users;
        unsigned log_level = 0;       // 0 errors only; 2 debug
        unsigned worker_threads = 1;  // event loops
        // Last word on the configuration (signing policy, dialect range, more shares ...).
        std::function<void(server::Config&)> configure;
    };

    TestServer();
    explicit TestServer(Options options);
    ~TestServer();
    TestServer(const TestServer&) = delete;
    TestServer& operator=(const TestServer&) = delete;

    // False when the server did not start; error() says why.
    bool ok() const { return started_; }
    const std::string& error() const { return error_; }

    uint16_t port() const { return port_; }
    const std::string& dir() const { return dir_; }          // the temporary directory
    const std::string& share_dir() const { return share_; }  // path of share `data`
    const server::Config& config() const { return config_; }
    server::Server& server() { return *server_; }

  private:
    Options opts_;
    std::string dir_;
    std::string share_;
    server::Config config_;
    std::unique_ptr<server::Server> server_;
    std::thread thread_;
    bool started_ = false;
    std::string error_;
    uint16_t port_ = 0;
};

}  // namespace daxsmbd::client
