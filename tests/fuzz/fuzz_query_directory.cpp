// Fuzz target: QUERY_DIRECTORY and CHANGE_NOTIFY messages, directory entry buffers of every
// class and FILE_NOTIFY_INFORMATION lists (protocol/query_directory.h, protocol/dir_info.h,
// protocol/change_notify.h, protocol/notify_info.h). The first input byte picks the directory
// information class; the rest is an SMB2 body (behind a 64-byte header) and an entry buffer.
#include <cstddef>
#include <cstdint>

#include "protocol/change_notify.h"
#include "protocol/dir_info.h"
#include "protocol/notify_info.h"
#include "protocol/query_directory.h"

using namespace daxsmbd::protocol;

namespace {
template <class T>
ByteVector reserialize(const T& x) {
    ByteVector out(kHeaderSize);
    ByteWriter w(out);
    x.serialize(w);
    return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    uint8_t cls = data[0];
    Bytes rest = as_bytes(data + 1, size - 1);
    ByteVector msg(kHeaderSize);
    msg.insert(msg.end(), rest.begin(), rest.end());

    if (auto req = QueryDirectoryRequest::parse(msg); req.ok()) {
        auto again = QueryDirectoryRequest::parse(reserialize(*req));
        if (!again.ok() || again->pattern != req->pattern ||
            again->output_buffer_length != req->output_buffer_length)
            __builtin_trap();
    }
    (void)QueryDirectoryResponse::parse(msg);
    if (auto req = ChangeNotifyRequest::parse(msg); req.ok()) {
        auto again = ChangeNotifyRequest::parse(reserialize(*req));
        if (!again.ok() || again->completion_filter != req->completion_filter) __builtin_trap();
    }
    if (auto rsp = ChangeNotifyResponse::parse(msg); rsp.ok())
        (void)decode_notify_information(rsp->buffer);

    // Entry buffers: whatever parses must re-encode to entries that parse back the same.
    if (auto entries = DirectoryInfoWriter::parse(cls, rest); entries.ok()) {
        DirectoryInfoWriter w(cls, SIZE_MAX);
        for (const auto& e : *entries)
            if (!w.append(e)) __builtin_trap();
        auto back = DirectoryInfoWriter::parse(cls, w.bytes());
        if (!back.ok() || back->size() != entries->size()) __builtin_trap();
        for (size_t i = 0; i < back->size(); ++i)
            if ((*back)[i].name != (*entries)[i].name) __builtin_trap();
    }
    if (auto changes = decode_notify_information(rest); changes.ok()) {
        ByteVector out;
        ByteWriter w(out);
        encode_notify_information(w, *changes);
        if (out.size() != notify_information_size(*changes)) __builtin_trap();
        auto back = decode_notify_information(out);
        if (!back.ok() || *back != *changes) __builtin_trap();
    }
    return 0;
}
