// The commands the control socket serves (daxsmbd-admin status, close-session).
#pragma once

#include <vector>

#include "server/control/control_socket.h"

namespace daxsmbd::server {
class Server;
}

namespace daxsmbd::server::control {

std::vector<Command> server_commands(Server& server);

}  // namespace daxsmbd::server::control
