// The control socket ("control socket" in [global]): a Unix stream socket on which
// daxsmbd-admin asks the running daemon for its status and gives it orders. Only root (and the
// daemon's own uid) may use it: the file is 0600 in a 0700 directory, and the peer's
// credentials (SO_PEERCRED) are checked on every connection, so a wrong mode alone opens
// nothing.
//
// One request per connection: a line of text, a command and its arguments separated by blanks
// ("status", "close-session 0x1d"). The answer is "ok\n" or "error: WHY\n", followed by the
// command's text; the daemon then closes the connection. Requests are served one at a time on
// a thread of their own, never on an event loop, and each is bounded (4 KiB, 5 s to arrive).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace daxsmbd::server::control {

struct Reply {
    bool ok = true;
    std::string text;  // on error: why (one line)
};

struct Command {
    std::string name;
    size_t min_args = 0;
    size_t max_args = 0;
    std::string usage;  // "close-session ID": shown when the arguments do not fit
    std::function<Reply(const std::vector<std::string>& args)> run;
};

class ControlSocket {
  public:
    // Binds `path` and starts serving `commands`. A stale socket file (no daemon answers on it)
    // is replaced; a path another daemon is serving, or that is not a socket, is an error. The
    // directory is created (0700) when missing. Null with `error` set on failure.
    static std::unique_ptr<ControlSocket> start(const std::string& path,
                                                std::vector<Command> commands, std::string* error);
    // Stops the thread and removes the socket file, unless another daemon has replaced it.
    ~ControlSocket();
    const std::string& path() const;

    struct Impl;

  private:
    explicit ControlSocket(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Whether a peer with these credentials may use the socket: root, or the daemon's own uid.
bool peer_allowed(uid_t peer_uid, uid_t daemon_uid);

// Splits a request line into words (blanks and tabs separate; no quoting: no command takes a
// word with a blank). Empty when the line is blank.
std::vector<std::string> split_request(const std::string& line);

// What the daemon answers to `line`: the reply's header line and text, as sent on the socket.
std::string answer_request(const std::vector<Command>& commands, const std::string& line);

// The client side (daxsmbd-admin): sends `request` to the socket at `path` and returns the
// reply; ok=false with the reason when the daemon cannot be reached or refuses.
Reply send_request(const std::string& path, const std::string& request);

}  // namespace daxsmbd::server::control
