#include "server/log.h"

#include <sys/time.h>
#include <syslog.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>

namespace daxsmbd::server {

std::atomic<int> g_log_level{1};
static std::atomic<bool> g_syslog{false};

void set_log_to_syslog(bool on) {
    g_syslog = on;
}

void log_line(LogLevel level, std::string_view text) {
    static constexpr const char* names[] = {"ERROR", "INFO", "DEBUG", "TRACE"};
    if (g_syslog) {
        static constexpr int prio[] = {LOG_ERR, LOG_INFO, LOG_DEBUG, LOG_DEBUG};
        syslog(prio[int(level)], "%.*s", int(text.size()), text.data());
        return;
    }
    timeval tv;
    gettimeofday(&tv, nullptr);
    tm t;
    gmtime_r(&tv.tv_sec, &t);
    char ts[96];
    std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900,
                  t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, int(tv.tv_usec / 1000));
    std::string line;
    line.reserve(text.size() + 48);
    line += ts;
    line += ' ';
    line += names[int(level)];
    line += ' ';
    line += text;
    line += '\n';
    // One write(2) per line so that lines from several loops never interleave.
    [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
}

}  // namespace daxsmbd::server
