// The commands the control socket serves (daxsmbd-admin status, close-session,
// debug-connection, reload).
#pragma once

#include <functional>
#include <vector>

#include "server/control/control_socket.h"

namespace daxsmbd::server {
class Server;
}

namespace daxsmbd::server::control {

// `reload` re-reads the configuration file and applies it (the daemon knows the file; null: no
// reload command).
std::vector<Command> server_commands(Server& server, std::function<Reply()> reload = nullptr);

}  // namespace daxsmbd::server::control
