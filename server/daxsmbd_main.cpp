// daxsmbd: the SMB 3.1.1 file server daemon.
//
//   daxsmbd -s FILE [-F] [-d LEVEL]
//   daxsmbd --print-default-config [--share-path DIR] [--user-database FILE]
//
// -s names the configuration file (as with Samba's smbd); -F stays in the foreground and logs
// to stderr; without -F the daemon detaches and logs to syslog.
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "dax/stats.h"
#include "server/config.h"
#include "server/control/commands.h"
#include "server/control/sd_notify.h"
#include "server/descriptor_limit.h"
#include "server/log.h"
#include "server/server.h"

using namespace daxsmbd::server;

static int usage() {
    std::fprintf(stderr,
                 "usage: daxsmbd -s FILE [-F] [-d LEVEL]\n"
                 "       daxsmbd --print-default-config [--share-path DIR] "
                 "[--user-database FILE]\n");
    return 2;
}

// daxsmbd-admin status/close-session. Without it the daemon still serves SMB: a second daemon
// on the same socket path (tests, a mistake) only loses its administration.
static std::unique_ptr<control::ControlSocket> start_control_socket(Server& server) {
    const std::string& path = server.config().global.control_socket;
    if (path.empty()) return nullptr;
    std::string error;
    auto socket = control::ControlSocket::start(path, control::server_commands(server), &error);
    if (socket)
        log_info("control socket ", path);
    else
        log_error("WARNING: no control socket: ", error,
                  "; daxsmbd-admin status cannot reach this daemon");
    return socket;
}

int main(int argc, char** argv) {
    std::string conf_path;
    bool foreground = false;
    bool print_default = false;
    int debug_level = -1;
    std::string share_path = "/srv/daxsmbd/share";
    std::string userdb = "/var/lib/daxsmbd/users.db";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (a == "-s" || a == "--configfile") {
            auto v = next();
            if (!v) return usage();
            conf_path = v;
        } else if (a.rfind("--configfile=", 0) == 0) {
            conf_path = a.substr(13);
        } else if (a == "-F" || a == "--foreground") {
            foreground = true;
        } else if (a == "-d" || a == "--debuglevel") {
            auto v = next();
            if (!v) return usage();
            debug_level = std::atoi(v);
        } else if (a == "--print-default-config") {
            print_default = true;
        } else if (a == "--share-path") {
            auto v = next();
            if (!v) return usage();
            share_path = v;
        } else if (a == "--user-database") {
            auto v = next();
            if (!v) return usage();
            userdb = v;
        } else if (a == "-V" || a == "--version") {
            std::printf("daxsmbd 0.1.0\n");
            return 0;
        } else {
            return usage();
        }
    }
    if (print_default) {
        std::cout << default_config_text(share_path, userdb);
        return 0;
    }
    if (conf_path.empty()) return usage();

    auto parsed = Config::load(conf_path);
    if (auto* err = std::get_if<Config::ParseError>(&parsed)) {
        std::fprintf(stderr, "daxsmbd: %s\n", err->message.c_str());
        return 1;
    }
    auto config = std::get<Config>(std::move(parsed));
    if (debug_level >= 0) config.global.log_level = unsigned(debug_level);

    // Signals are taken by one thread with sigwait; every other thread has them blocked.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    signal(SIGPIPE, SIG_IGN);

    // Detach before any thread exists (fork keeps only the calling thread).
    if (!foreground) {
        if (daemon(0, 0) != 0) {
            std::perror("daemon");
            return 1;
        }
        openlog("daxsmbd", LOG_PID, LOG_DAEMON);
        set_log_to_syslog(true);
    }
    const std::string descriptor_line = raise_descriptor_limit(config.global.max_connections);
    Server server(std::move(config));
    std::string error;
    if (!server.start(&error)) {
        log_error("daxsmbd: ", error);
        return 1;
    }
    log_info("daxsmbd 0.1.0 started, ", server.shares().size() - 1, " share(s)");
    log_info(descriptor_line);
    auto control_socket = start_control_socket(server);
    // The listeners are bound: systemd (Type=notify) may start what depends on the service.
    sd_notify_send("READY=1");
    std::thread sig_thread([&] {
        for (;;) {
            int sig = 0;
            if (sigwait(&sigs, &sig) != 0) continue;
            if (sig == SIGHUP) {
                log_info("SIGHUP: configuration reload is not implemented yet; ignored");
                continue;
            }
            if (sig == SIGUSR1) {
                // The proof that DAX served I/O (README "DAX").
                log_info(server.dax_maps.stats().snapshot().to_string());
                // The proof that SMB Direct moved data by RDMA (README "SMB Direct").
                if (server.config().global.transport_rdma)
                    log_info(smbd_stats_line(server.smbd_counters, server.rdma_memory));
                continue;
            }
            log_info("signal ", sig, ": stopping");
            sd_notify_send("STOPPING=1");
            control_socket.reset();
            server.stop();
            return;
        }
    });
    server.run();
    sig_thread.join();
    log_info(server.dax_maps.stats().snapshot().to_string());
    log_info("daxsmbd stopped");
    return 0;
}
