#include "protocol/tree_connect.h"

#include <algorithm>

#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace {

// Number of UTF-16 code units the UTF-8 string encodes to (4-byte sequences are surrogate
// pairs).
size_t utf16_units(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s) {
        if ((c & 0xC0) != 0x80) ++n;  // lead byte or ASCII
        if ((c & 0xF8) == 0xF0) ++n;  // 4-byte lead: two units
    }
    return n;
}

Result<std::string> decode_path(Bytes utf16) {
    auto s = utf16le_to_utf8(utf16);
    if (!s) return Error(NtStatus::InvalidParameter);  // MS-SMB2 3.3.5.7: bad path format
    return std::move(s).value();
}

}  // namespace

Result<SharePath> SharePath::split(std::string_view path) {
    if (path.size() < 2 || path[0] != '\\' || path[1] != '\\')
        return Error(NtStatus::InvalidParameter);
    path.remove_prefix(2);
    size_t sep = path.find('\\');
    if (sep == std::string_view::npos) return Error(NtStatus::InvalidParameter);  // no share
    SharePath sp{std::string(path.substr(0, sep)), std::string(path.substr(sep + 1))};
    if (sp.share.empty() || utf16_units(sp.share) > kMaxShareChars ||
        utf16_units(sp.server) > kMaxServerChars)
        return Error(NtStatus::InvalidParameter);
    return sp;
}

Result<TreeConnectRequest> TreeConnectRequest::parse(Bytes msg, bool allow_extension) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    if (size != kStructureSize) return Error(NtStatus::InvalidParameter);
    TreeConnectRequest req;
    DAX_TRY(req.flags, r.u16());
    DAX_TRY(auto path_offset, r.u16());
    DAX_TRY(auto path_length, r.u16());
    if (!allow_extension) req.flags = 0;  // reserved before 3.1.1 (MS-SMB2 2.2.9)
    size_t min_path = kExtensionOffset;
    uint32_t ctx_offset = 0;
    uint16_t ctx_count = 0;
    if (req.has_extension()) {
        // MS-SMB2 2.2.9.1: the extension starts at Buffer (msg offset 72).
        DAX_TRY(auto ext, r.slice(kExtensionOffset, kExtensionFixedSize));
        ctx_offset = load_le32(ext.data());
        ctx_count = load_le16(ext.data() + 4);
        min_path = kExtensionOffset + kExtensionFixedSize;
    }
    if (path_length > 0 && path_offset < min_path) return Error(NtStatus::InvalidParameter);
    DAX_TRY(auto path, r.slice(path_offset, path_length));
    DAX_TRY(req.path, decode_path(path));
    if (ctx_count > 0) {
        // The contexts follow the PathName (MS-SMB2 2.2.9.1). Microsoft's test encoder sends a
        // msg offset (spec-digest 10.3), which is then at or after the end of the path; the
        // spec's wording (from the start of the TREE_CONNECT body) gives a value 64 smaller,
        // which in the 2.2.9.1 layout (contexts right after the PathName) lands before the end
        // of the path. So a value before the path's end is read as body-relative; no second
        // guess is made after a failed parse.
        size_t min_ctx = std::max<size_t>(min_path, size_t(path_offset) + path_length);
        uint64_t pos =
            ctx_offset >= min_ctx ? uint64_t(ctx_offset) : uint64_t(ctx_offset) + kHeaderSize;
        if (pos < min_ctx) return Error(NtStatus::InvalidParameter);
        DAX_TRY(auto list, parse_tree_connect_contexts(msg, pos, ctx_count));
        req.contexts = std::move(list);
    }
    return req;
}

Status TreeConnectRequest::serialize(ByteWriter& w) const {
    bool ext = has_extension() || !contexts.empty();
    size_t body = w.size();
    w.u16(kStructureSize);
    w.u16(ext ? uint16_t(flags | tree_connect_flags::kExtensionPresent) : flags);
    w.u16(0);  // PathOffset, patched
    w.u16(0);  // PathLength, patched
    size_t ext_pos = w.size();
    if (ext) w.zeros(kExtensionFixedSize);
    size_t path_start = w.size();
    w.patch_u16(body + 4, uint16_t(w.size() - w.base()));
    utf8_to_utf16le(path, w);
    w.patch_u16(body + 6, uint16_t(w.size() - path_start));
    if (ext && !contexts.empty()) {
        DAX_TRY(auto off, serialize_tree_connect_contexts(contexts, w));
        w.patch_u32(ext_pos, off);
        w.patch_u16(ext_pos + 4, uint16_t(contexts.size()));
    }
    return {};
}

Result<TreeConnectResponse> TreeConnectResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    if (size != kStructureSize) return Error(NtStatus::InvalidParameter);
    TreeConnectResponse rsp;
    DAX_TRY(rsp.share_type, r.u8());
    DAX_CHECK(r.skip(1));
    DAX_TRY(rsp.share_flags, r.u32());
    DAX_TRY(rsp.capabilities, r.u32());
    DAX_TRY(rsp.maximal_access, r.u32());
    return rsp;
}

void TreeConnectResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(share_type);
    w.u8(0);
    w.u32(share_flags);
    w.u32(capabilities);
    w.u32(maximal_access);
}

}  // namespace daxsmbd::protocol
