// daxsmbd_server is compiled with BOOST_ASIO_NO_DEPRECATED (a PUBLIC definition of that target);
// this file is part of daxsmbd_client, which does not link it, so it sets the same definition to
// see the same Asio declarations.
#ifndef BOOST_ASIO_NO_DEPRECATED
#define BOOST_ASIO_NO_DEPRECATED
#endif

#include "tests/client/test_server.h"

#include <sys/stat.h>
#include <unistd.h>
#include <csignal>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "auth/userdb.h"
#include "server/server.h"

namespace daxsmbd::client {

TestServer::TestServer() : TestServer(Options{}) {}

TestServer::TestServer(Options options) : opts_(std::move(options)) {
    // A client that resets while a READ's pipe is spliced into its socket raises SIGPIPE
    // (splice(2) has no MSG_NOSIGNAL); daxsmbd_main ignores it, and so does the test process.
    std::signal(SIGPIPE, SIG_IGN);
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/daxsmbd-e2e-XXXXXX";
    if (!::mkdtemp(tmpl.data())) {
        error_ = "mkdtemp failed";
        return;
    }
    dir_ = tmpl;
    share_ = dir_ + "/data";
    if (::mkdir(share_.c_str(), 0755) != 0) {
        error_ = "cannot create " + share_;
        return;
    }

    // The user database: alice/pw (and the extra users), files created as the test's own uid.
    std::string userdb = dir_ + "/users.db";
    std::string err;
    auto db = auth::UserDatabase::load(userdb, &err);
    if (!db) {
        error_ = "user database: " + err;
        return;
    }
    auth::UserRecord rec;
    rec.name = opts_.user;
    rec.nt_hash = auth::nt_hash_of_password(opts_.password);
    rec.uid = uint32_t(::getuid());
    rec.gid = uint32_t(::getgid());
    db->set(rec);
    for (const auto& [name, password] : opts_.extra_users) {
        rec.name = name;
        rec.nt_hash = auth::nt_hash_of_password(password);
        db->set(rec);
    }
    for (const auto& u : opts_.unix_users) {
        rec.name = u.name;
        rec.nt_hash = auth::nt_hash_of_password(u.password);
        rec.uid = u.uid;
        rec.gid = u.gid;
        db->set(rec);
    }
    if (!db->save(&err)) {
        error_ = "user database: " + err;
        return;
    }

    config_.global.smb_ports = {0};
    config_.global.interfaces = {"127.0.0.1"};
    config_.global.user_database = userdb;
    config_.global.netbios_name = "DAXTEST";
    config_.global.worker_threads = opts_.worker_threads;
    config_.global.log_level = opts_.log_level;
    // Suites log on wrongly on purpose many times from 127.0.0.1; the logon throttle would
    // hold back every later logon of the suite. Tests of the throttle switch it on.
    config_.global.logon_failure_delay_ms = 0;
    // The users act as the test's own uid; when that is root, they must be 'admin users'.
    if (::getuid() == 0) {
        config_.global.admin_users.push_back(opts_.user);
        for (const auto& [name, password] : opts_.extra_users)
            config_.global.admin_users.push_back(name);
    }
    server::ShareConfig share;
    share.name = "data";
    share.path = share_;
    share.read_only = false;
    config_.shares.push_back(share);
    if (opts_.configure) opts_.configure(config_);

    server_ = std::make_unique<server::Server>(config_);
    if (!server_->start(&error_)) return;
    port_ = server_->bound_port();
    thread_ = std::thread([s = server_.get()] { s->run(); });
    started_ = true;
}

TestServer::~TestServer() {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    if (!dir_.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
}

}  // namespace daxsmbd::client
