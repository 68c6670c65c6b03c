#include "server/control/control_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "server/log.h"

namespace daxsmbd::server::control {

namespace {

constexpr size_t kMaxRequest = 4096;
constexpr int kRequestTimeoutMs = 5000;

std::string errno_text(const std::string& what, int err) {
    return what + ": " + std::strerror(err);
}

bool make_address(const std::string& path, sockaddr_un* sa, std::string* error) {
    std::memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof sa->sun_path) {
        *error = "control socket path '" + path + "' must be 1 to " +
                 std::to_string(sizeof sa->sun_path - 1) + " bytes";
        return false;
    }
    std::memcpy(sa->sun_path, path.data(), path.size());
    return true;
}

// mkdir -p with mode 0700 for the directories it creates (existing ones keep theirs).
bool make_parent_directories(const std::string& path, std::string* error) {
    for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
        const std::string dir = path.substr(0, pos);
        if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
            *error = errno_text("cannot create " + dir, errno);
            return false;
        }
    }
    return true;
}

// A socket file nobody accepts on is left over from a daemon that died: it may be replaced.
// One somebody accepts on belongs to a running daemon.
bool remove_stale_socket(const std::string& path, const sockaddr_un& sa, std::string* error) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? true : false;
    if (!S_ISSOCK(st.st_mode)) {
        *error = path + " exists and is not a socket";
        return false;
    }
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) {
        *error = errno_text("socket", errno);
        return false;
    }
    const bool live = ::connect(probe, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0;
    ::close(probe);
    if (live) {
        *error = "another daxsmbd serves the control socket " + path;
        return false;
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        *error = errno_text("cannot remove the stale " + path, errno);
        return false;
    }
    return true;
}

bool read_request_line(int fd, std::string* line) {
    line->clear();
    char buf[512];
    while (line->size() < kMaxRequest) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, kRequestTimeoutMs) <= 0) return false;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return !line->empty();  // a request without its newline still counts
        line->append(buf, size_t(n));
        if (auto nl = line->find('\n'); nl != std::string::npos) {
            line->resize(nl);
            if (!line->empty() && line->back() == '\r') line->pop_back();
            return true;
        }
    }
    return false;
}

void write_all(int fd, const std::string& text) {
    size_t off = 0;
    while (off < text.size()) {
        const ssize_t n = ::send(fd, text.data() + off, text.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the client went away; nothing to tell it
        off += size_t(n);
    }
}

}  // namespace

struct ControlSocket::Impl {
    std::string path;
    std::vector<Command> commands;
    int listen_fd = -1;
    int wake[2] = {-1, -1};  // a byte on wake[1] stops the thread
    dev_t dev = 0;
    ino_t ino = 0;
    std::thread thread;

    void serve() {
        for (;;) {
            pollfd p[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
            if (::poll(p, 2, -1) < 0) {
                if (errno == EINTR) continue;
                log_error("control socket: poll: ", std::strerror(errno));
                return;
            }
            if (p[1].revents) return;
            if (!(p[0].revents & POLLIN)) continue;
            const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            serve_one(fd);
            ::close(fd);
        }
    }

    void serve_one(int fd) {
        ucred cred{};
        socklen_t len = sizeof cred;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
            !peer_allowed(cred.uid, ::geteuid())) {
            log_info("control socket: refused a connection from uid ", cred.uid, " pid ", cred.pid,
                     " (root only)");
            write_all(fd, "error: permission denied (root only)\n");
            return;
        }
        std::string line;
        if (!read_request_line(fd, &line)) {
            write_all(fd, "error: no request line (at most 4096 bytes, within 5 s)\n");
            return;
        }
        write_all(fd, answer_request(commands, line));
    }
};

bool peer_allowed(uid_t peer_uid, uid_t daemon_uid) {
    return peer_uid == 0 || peer_uid == daemon_uid;
}

std::vector<std::string> split_request(const std::string& line) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
            ++i;
        size_t j = i;
        while (j < line.size() && line[j] != ' ' && line[j] != '\t')
            ++j;
        if (j > i) words.push_back(line.substr(i, j - i));
        i = j;
    }
    return words;
}

std::string answer_request(const std::vector<Command>& commands, const std::string& line) {
    auto words = split_request(line);
    if (words.empty()) return "error: empty request\n";
    for (const auto& c : commands) {
        if (c.name != words[0]) continue;
        const size_t args = words.size() - 1;
        if (args < c.min_args || args > c.max_args) return "error: usage: " + c.usage + "\n";
        words.erase(words.begin());
        Reply r = c.run(words);
        if (!r.ok) return "error: " + r.text + "\n";
        log_info("control socket: ", line);
        return "ok\n" + r.text;
    }
    std::string known;
    for (const auto& c : commands)
        known += (known.empty() ? "" : ", ") + c.name;
    return "error: unknown command '" + words[0] + "' (known: " + known + ")\n";
}

std::unique_ptr<ControlSocket> ControlSocket::start(const std::string& path,
                                                    std::vector<Command> commands,
                                                    std::string* error) {
    sockaddr_un sa{};
    if (!make_address(path, &sa, error)) return nullptr;
    if (!make_parent_directories(path, error)) return nullptr;
    if (!remove_stale_socket(path, sa, error)) {
        if (error->empty()) *error = errno_text("cannot stat " + path, errno);
        return nullptr;
    }
    auto impl = std::make_unique<Impl>();
    impl->path = path;
    impl->commands = std::move(commands);
    impl->listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (impl->listen_fd < 0) {
        *error = errno_text("socket", errno);
        return nullptr;
    }
    // The file is created 0600: nobody but root can connect while the mode is set below.
    const mode_t old_mask = ::umask(0177);
    const int bound = ::bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    const int bind_errno = errno;
    ::umask(old_mask);
    struct stat st {};
    if (bound != 0 || ::listen(impl->listen_fd, 16) != 0 || ::stat(path.c_str(), &st) != 0 ||
        ::pipe2(impl->wake, O_CLOEXEC) != 0) {
        *error = errno_text("cannot serve the control socket " + path, bound ? bind_errno : errno);
        ::close(impl->listen_fd);
        if (bound == 0) ::unlink(path.c_str());
        return nullptr;
    }
    impl->dev = st.st_dev;
    impl->ino = st.st_ino;
    Impl* raw = impl.get();
    impl->thread = std::thread([raw] { raw->serve(); });
    return std::unique_ptr<ControlSocket>(new ControlSocket(std::move(impl)));
}

ControlSocket::ControlSocket(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ControlSocket::~ControlSocket() {
    const char stop = 1;
    if (::write(impl_->wake[1], &stop, 1) < 0) {
        // The pipe cannot be full or closed here; nothing else would stop the thread.
    }
    if (impl_->thread.joinable()) impl_->thread.join();
    ::close(impl_->listen_fd);
    ::close(impl_->wake[0]);
    ::close(impl_->wake[1]);
    struct stat st {};
    if (::lstat(impl_->path.c_str(), &st) == 0 && st.st_dev == impl_->dev &&
        st.st_ino == impl_->ino)
        ::unlink(impl_->path.c_str());
}

const std::string& ControlSocket::path() const {
    return impl_->path;
}

Reply send_request(const std::string& path, const std::string& request) {
    Reply r;
    r.ok = false;
    sockaddr_un sa{};
    if (!make_address(path, &sa, &r.text)) return r;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        r.text = errno_text("socket", errno);
        return r;
    }
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        r.text = errno_text("cannot reach daxsmbd at " + path, errno);
        ::close(fd);
        return r;
    }
    write_all(fd, request + "\n");
    ::shutdown(fd, SHUT_WR);
    std::string all;
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        // status waits at most a second per connection that does not answer; be patient.
        if (::poll(&p, 1, 120000) <= 0) {
            r.text = "daxsmbd did not answer in time";
            ::close(fd);
            return r;
        }
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        all.append(buf, size_t(n));
    }
    ::close(fd);
    const size_t nl = all.find('\n');
    const std::string head = all.substr(0, nl);
    const std::string body = nl == std::string::npos ? std::string() : all.substr(nl + 1);
    if (head == "ok") {
        r.ok = true;
        r.text = body;
    } else if (head.rfind("error: ", 0) == 0) {
        r.text = head.substr(7);
    } else {
        r.text = "unexpected answer from daxsmbd: '" + head + "'";
    }
    return r;
}

}  // namespace daxsmbd::server::control
