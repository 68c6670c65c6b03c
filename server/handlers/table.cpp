#include <array>

#include "server/handlers/handlers.h"

namespace daxsmbd::server {

using protocol::Command;

// The one dispatch table (MS-SMB2 3.3.5.2.9 / 3.3.5.2.11 decide needs_session / needs_tree).
// CANCEL is handled by the connection itself (it has no response and no handler).
static const std::array<HandlerInfo, protocol::kCommandCount> kTable = [] {
    std::array<HandlerInfo, protocol::kCommandCount> t{};
    auto set = [&](Command c, Handler fn, bool session, bool tree) {
        t[size_t(c)] = HandlerInfo{fn, session, tree};
    };
    set(Command::Negotiate, handlers::negotiate, false, false);
    set(Command::SessionSetup, handlers::session_setup, false, false);
    set(Command::Logoff, handlers::logoff, true, false);
    set(Command::TreeConnect, handlers::tree_connect, true, false);
    set(Command::TreeDisconnect, handlers::tree_disconnect, true, true);
    set(Command::Create, handlers::create, true, true);
    set(Command::Close, handlers::close, true, true);
    set(Command::Flush, handlers::flush, true, true);
    set(Command::Read, handlers::read, true, true);
    set(Command::Write, handlers::write, true, true);
    set(Command::Lock, handlers::lock, true, true);
    set(Command::Ioctl, handlers::ioctl, true, true);
    set(Command::Echo, handlers::echo, false, false);
    set(Command::QueryDirectory, handlers::query_directory, true, true);
    set(Command::ChangeNotify, handlers::change_notify, true, true);
    set(Command::QueryInfo, handlers::query_info, true, true);
    set(Command::SetInfo, handlers::set_info, true, true);
    set(Command::OplockBreak, handlers::oplock_break, true, true);
    return t;
}();

const HandlerInfo& handler_for(Command c) {
    static const HandlerInfo none{};
    return size_t(c) < kTable.size() ? kTable[size_t(c)] : none;
}

}  // namespace daxsmbd::server
