#include <array>

#include "protocol/credit_charge.h"
#include "server/handlers/handlers.h"

namespace daxsmbd::server {

using protocol::Command;

// The one dispatch table (MS-SMB2 3.3.5.2.9 / 3.3.5.2.11 decide needs_session / needs_tree).
// CANCEL is handled by the connection itself (it has no response and no handler).
static const std::array<HandlerInfo, protocol::kCommandCount> kTable = [] {
    namespace p = protocol;
    std::array<HandlerInfo, protocol::kCommandCount> t{};
    auto set = [&](Command c, HandlerInfo info) { t[size_t(c)] = info; };
    set(Command::Negotiate, {.fn = handlers::negotiate,
                             .needs_session = false,
                             .needs_tree = false,
                             .looks_up_session = false,
                             .answers_clear_request_clear = true});
    set(Command::SessionSetup, {.fn = handlers::session_setup,
                                .needs_session = false,
                                .needs_tree = false,
                                .on_expired_session = true,
                                .answers_clear_request_clear = true});
    set(Command::Logoff, {.fn = handlers::logoff, .needs_tree = false, .on_expired_session = true});
    set(Command::TreeConnect, {.fn = handlers::tree_connect, .needs_tree = false});
    set(Command::TreeDisconnect, {.fn = handlers::tree_disconnect});
    set(Command::Create,
        {.fn = handlers::create, .async_inside_compound = true, .opens_file = true});
    set(Command::Close, {.fn = handlers::close, .on_expired_session = true});
    set(Command::Flush, {.fn = handlers::flush});
    set(Command::Read,
        {.fn = handlers::read, .returns_data = true, .payload_size = p::read_payload_size});
    set(Command::Write,
        {.fn = handlers::write, .modifies = true, .payload_size = p::write_payload_size});
    set(Command::Lock, {.fn = handlers::lock, .on_expired_session = true});
    set(Command::Ioctl, {.fn = handlers::ioctl,
                         .body_on_error = true,
                         .modifies = true,
                         .payload_size = p::ioctl_payload_size});
    set(Command::Echo, {.fn = handlers::echo,
                        .needs_session = false,
                        .needs_tree = false,
                        .may_be_unsigned = true});
    set(Command::QueryDirectory,
        {.fn = handlers::query_directory, .payload_size = p::query_directory_payload_size});
    set(Command::ChangeNotify,
        {.fn = handlers::change_notify, .payload_size = p::change_notify_payload_size});
    set(Command::QueryInfo,
        {.fn = handlers::query_info, .payload_size = p::query_info_payload_size});
    set(Command::SetInfo,
        {.fn = handlers::set_info, .modifies = true, .payload_size = p::set_info_payload_size});
    set(Command::OplockBreak, {.fn = handlers::oplock_break, .may_be_unsigned = true});
    return t;
}();

const HandlerInfo& handler_for(Command c) {
    static const HandlerInfo none{};
    return size_t(c) < kTable.size() ? kTable[size_t(c)] : none;
}

}  // namespace daxsmbd::server
