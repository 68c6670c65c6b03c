#pragma once
// The systemd readiness protocol (sd_notify(3)): one datagram "READY=1", "STOPPING=1", ... to
// the Unix socket named by $NOTIFY_SOCKET; a leading '@' names an abstract socket. Without the
// variable (not started by systemd) it does nothing.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace daxsmbd::server {

inline bool sd_notify_send(std::string_view state) {
    const char* path = std::getenv("NOTIFY_SOCKET");
    if (path == nullptr || path[0] == '\0') return false;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    size_t len = std::strlen(path);
    if (len >= sizeof(addr.sun_path)) return false;
    std::memcpy(addr.sun_path, path, len);
    if (path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    auto addr_len = socklen_t(offsetof(sockaddr_un, sun_path) + len);
    ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                            reinterpret_cast<const sockaddr*>(&addr), addr_len);
    ::close(fd);
    return sent == ssize_t(state.size());
}

}  // namespace daxsmbd::server
