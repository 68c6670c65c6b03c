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

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

// How long a stop lets the requests in processing finish (systemd's default stop timeout is
// 90 s: well within it).
constexpr std::chrono::milliseconds kStopDrainBound{10000};

static int usage() {
    std::fprintf(stderr,
                 "usage: daxsmbd -s FILE [-F] [-d LEVEL]\n"
                 "       daxsmbd --print-default-config [--share-path DIR] "
                 "[--user-database FILE]\n");
    return 2;
}

// SIGHUP and daxsmbd-admin reload: the file read and parsed anew and applied; a file with an
// error is refused whole (FILE:LINE) and the running configuration stays. Each outcome is logged.
static ReloadOutcome reload_configuration(Server& server, const std::string& path, int debug_level,
                                          const char* via) {
    log_info(via, ": reloading ", path);
    // sd_notify(3): a reload is under way until the next READY=1, whatever its outcome.
    sd_notify_send("RELOADING=1");
    struct ReadyAgain {
        ~ReadyAgain() { sd_notify_send("READY=1"); }
    } ready_again;
    ReloadOutcome outcome;
    auto parsed = Config::load(path);
    if (auto* err = std::get_if<Config::ParseError>(&parsed)) {
        outcome.error = err->message;
    } else {
        auto next = std::get<Config>(std::move(parsed));
        if (debug_level >= 0) next.global.log_level = unsigned(debug_level);  // -d stays
        outcome = server.reload(next);
    }
    if (!outcome.applied) {
        log_error("reload refused, the running configuration stays: ", outcome.error);
        return outcome;
    }
    for (const auto& line : outcome.lines)
        log_info("reload: ", line);
    return outcome;
}

static control::Reply reload_reply(const ReloadOutcome& outcome) {
    if (!outcome.applied)
        return {false, "reload refused, the running configuration stays: " + outcome.error};
    std::string text;
    for (const auto& line : outcome.lines)
        text += line + "\n";
    return {true, text};
}

// systemd's watchdog (WatchdogSec= in the unit; sd_watchdog_enabled(3)): WATCHDOG_USEC set, and
// WATCHDOG_PID unset or ours. Returns the interval, or 0 when no watchdog is asked for.
static std::chrono::microseconds watchdog_interval() {
    const char* usec = std::getenv("WATCHDOG_USEC");
    const char* pid = std::getenv("WATCHDOG_PID");
    if (!usec) return std::chrono::microseconds(0);
    if (pid && std::strtoll(pid, nullptr, 10) != getpid()) return std::chrono::microseconds(0);
    return std::chrono::microseconds(std::strtoll(usec, nullptr, 10));
}

// Sends WATCHDOG=1 every half interval while every event loop answers within a quarter of it:
// a loop stuck in a handler or a system call stops the keep-alives and systemd restarts the
// daemon. Ends when `stopping` is set.
static std::thread start_watchdog(Server& server, const std::atomic<bool>& stopping) {
    const auto interval = watchdog_interval();
    if (interval.count() <= 0) return {};
    log_info("systemd watchdog: keep-alive every ",
             std::chrono::duration_cast<std::chrono::milliseconds>(interval / 2).count(), " ms");
    return std::thread([&server, &stopping, interval] {
        const auto period = std::chrono::duration_cast<std::chrono::milliseconds>(interval / 2);
        bool was_stuck = false;
        while (!stopping.load()) {
            const auto next = std::chrono::steady_clock::now() + period;
            const bool ok = server.loops_responsive(period / 2);
            if (ok) sd_notify_send("WATCHDOG=1");
            if (!ok && !was_stuck)
                log_error("an event loop did not answer within ", (period / 2).count(),
                          " ms; no watchdog keep-alive");
            was_stuck = !ok;
            while (!stopping.load() && std::chrono::steady_clock::now() < next)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });
}

// SIGUSR1: the proof that DAX served I/O (README "DAX") and that SMB Direct moved data by RDMA
// (README "SMB Direct").
static void log_counters(Server& server) {
    log_info(server.dax_maps.stats().snapshot().to_string());
    if (server.config().global.transport_rdma)
        log_info(smbd_stats_line(server.smbd_counters, server.rdma_memory));
}

// SIGINT/SIGTERM: the requests in processing finish (bounded), the shares are synced, then the
// loops stop.
static void stop_gracefully(Server& server) {
    const auto d = server.drain(kStopDrainBound);
    if (d.still_busy > 0)
        log_error("stop: ", d.still_busy, " of ", d.busy_connections,
                  " connections still had requests in processing after ", d.took.count(),
                  " ms; stopping anyway");
    else
        log_info("stop: the requests in processing on ", d.busy_connections,
                 " connections finished in ", d.took.count(), " ms; shares synced");
    server.stop();
}

// daxsmbd-admin status/close-session/reload. Without it the daemon still serves SMB: a second
// daemon on the same socket path (tests, a mistake) only loses its administration.
static std::unique_ptr<control::ControlSocket> start_control_socket(
    Server& server, std::function<control::Reply()> reload) {
    const std::string& path = server.config().global.control_socket;
    if (path.empty()) return nullptr;
    std::string error;
    auto socket = control::ControlSocket::start(
        path, control::server_commands(server, std::move(reload)), &error);
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
    auto control_socket = start_control_socket(server, [&] {
        return reload_reply(
            reload_configuration(server, conf_path, debug_level, "daxsmbd-admin reload"));
    });
    // The listeners are bound: systemd (Type=notify) may start what depends on the service.
    sd_notify_send("READY=1");
    std::atomic<bool> stopping{false};
    std::thread watchdog = start_watchdog(server, stopping);
    std::thread sig_thread([&] {
        for (;;) {
            int sig = 0;
            if (sigwait(&sigs, &sig) != 0) continue;
            if (sig == SIGHUP) {
                reload_configuration(server, conf_path, debug_level, "SIGHUP");
                continue;
            }
            if (sig == SIGUSR1) {
                log_counters(server);
                continue;
            }
            log_info("signal ", sig, ": stopping");
            stopping.store(true);
            sd_notify_send("STOPPING=1");
            control_socket.reset();
            stop_gracefully(server);
            return;
        }
    });
    server.run();
    sig_thread.join();
    if (watchdog.joinable()) watchdog.join();
    log_info(server.dax_maps.stats().snapshot().to_string());
    log_info("daxsmbd stopped");
    return 0;
}
