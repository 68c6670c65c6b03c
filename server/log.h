// One line per event to stderr: "2026-11-30T10:00:00.123Z LEVEL component: message".
#pragma once

#include <atomic>
#include <sstream>
#include <string_view>

namespace daxsmbd::server {

enum class LogLevel { Error = 0, Info = 1, Debug = 2, Trace = 3 };

extern std::atomic<int> g_log_level;
void log_line(LogLevel level, std::string_view text);
// Daemon mode: lines go to syslog(3) instead of stderr.
void set_log_to_syslog(bool on);

template <class... Args>
void log(LogLevel level, const Args&... args) {
    if (int(level) > g_log_level.load(std::memory_order_relaxed)) return;
    std::ostringstream os;
    (os << ... << args);
    log_line(level, os.str());
}
template <class... Args>
void log_error(const Args&... a) {
    log(LogLevel::Error, a...);
}
template <class... Args>
void log_info(const Args&... a) {
    log(LogLevel::Info, a...);
}
template <class... Args>
void log_debug(const Args&... a) {
    log(LogLevel::Debug, a...);
}
inline bool debug_enabled() {
    return g_log_level.load(std::memory_order_relaxed) >= 2;
}

}  // namespace daxsmbd::server
