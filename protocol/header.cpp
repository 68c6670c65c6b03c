#include "protocol/header.h"

namespace daxsmbd::protocol {

const char* command_name(Command c) {
    static constexpr const char* names[kCommandCount] = {
        "NEGOTIATE", "SESSION_SETUP", "LOGOFF", "TREE_CONNECT", "TREE_DISCONNECT",
        "CREATE", "CLOSE", "FLUSH", "READ", "WRITE", "LOCK", "IOCTL", "CANCEL", "ECHO",
        "QUERY_DIRECTORY", "CHANGE_NOTIFY", "QUERY_INFO", "SET_INFO", "OPLOCK_BREAK",
        "SERVER_TO_CLIENT_NOTIFICATION"};
    auto i = size_t(c);
    return i < kCommandCount ? names[i] : "UNKNOWN";
}

Result<FileId> read_file_id(ByteReader& r) {
    DAX_TRY(auto p, r.u64());
    DAX_TRY(auto v, r.u64());
    return FileId{p, v};
}

void write_file_id(ByteWriter& w, const FileId& id) {
    w.u64(id.persistent);
    w.u64(id.volatile_);
}

Result<Header> Header::parse(Bytes msg) {
    ByteReader r(msg);
    Header h;
    DAX_TRY(auto proto, r.u32());
    if (proto != kSmb2ProtocolId) return Error(NtStatus::InvalidParameter);
    DAX_TRY(auto size, r.u16());
    if (size != kHeaderSize) return Error(NtStatus::InvalidParameter);
    DAX_TRY(h.credit_charge, r.u16());
    DAX_TRY(h.status, r.u32());
    DAX_TRY(auto cmd, r.u16());
    h.command = Command(cmd);
    DAX_TRY(h.credits, r.u16());
    DAX_TRY(h.flags, r.u32());
    DAX_TRY(h.next_command, r.u32());
    DAX_TRY(h.message_id, r.u64());
    if (h.flags & flags::kAsyncCommand) {
        DAX_TRY(h.async_id, r.u64());
    } else {
        DAX_TRY(h.process_id, r.u32());
        DAX_TRY(h.tree_id, r.u32());
    }
    DAX_TRY(h.session_id, r.u64());
    DAX_TRY(h.signature, r.array<16>());
    return h;
}

void Header::serialize(ByteWriter& w) const {
    w.u32(kSmb2ProtocolId);
    w.u16(uint16_t(kHeaderSize));
    w.u16(credit_charge);
    w.u32(status);
    w.u16(uint16_t(command));
    w.u16(credits);
    w.u32(flags);
    w.u32(next_command);
    w.u64(message_id);
    if (flags & flags::kAsyncCommand) {
        w.u64(async_id);
    } else {
        w.u32(process_id);
        w.u32(tree_id);
    }
    w.u64(session_id);
    w.bytes(signature);
}

}  // namespace daxsmbd::protocol
