#include "protocol/error.h"

#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace {
constexpr size_t kContextHeaderSize = 8;  // ErrorDataLength(4) ErrorId(4)
}  // namespace

Result<ErrorResponse> ErrorResponse::parse(Bytes msg) {
    ByteReader r(msg);
    DAX_CHECK(r.seek(kHeaderSize));
    DAX_TRY(auto size, r.u16());
    if (size != kStructureSize) return Error(NtStatus::InvalidParameter);
    ErrorResponse e;
    DAX_TRY(e.error_context_count, r.u8());
    DAX_CHECK(r.skip(1));
    DAX_TRY(auto byte_count, r.u32());
    DAX_TRY(auto data, r.bytes(byte_count));
    e.error_data.assign(data.begin(), data.end());
    return e;
}

void ErrorResponse::serialize(ByteWriter& w) const {
    w.u16(kStructureSize);
    w.u8(error_context_count);
    w.u8(0);
    w.u32(uint32_t(error_data.size()));
    if (error_data.empty())
        w.u8(0);  // MS-SMB2 2.2.2 <5>: the byte StructureSize 9 counts
    else
        w.bytes(error_data);
}

Result<std::vector<ErrorContext>> parse_error_contexts(Bytes error_data, uint8_t count) {
    ByteReader r(error_data);
    std::vector<ErrorContext> v;
    uint64_t pos = 0;
    for (uint8_t i = 0; i < count; ++i) {
        if (i > 0) pos = (pos + 7) & ~uint64_t(7);  // MS-SMB2 2.2.2: 8-aligned contexts
        DAX_TRY(auto hdr, r.slice(pos, kContextHeaderSize));
        uint32_t len = load_le32(hdr.data());
        ErrorContext c;
        c.error_id = load_le32(hdr.data() + 4);
        DAX_TRY(auto data, r.slice(pos + kContextHeaderSize, len));
        c.data.assign(data.begin(), data.end());
        v.push_back(std::move(c));
        pos += kContextHeaderSize + len;
    }
    return v;
}

void serialize_error_contexts(const std::vector<ErrorContext>& contexts, ByteWriter& w) {
    size_t start = w.size();
    for (size_t i = 0; i < contexts.size(); ++i) {
        if (i > 0) w.zeros((8 - (w.size() - start) % 8) % 8);
        w.u32(uint32_t(contexts[i].data.size()));
        w.u32(contexts[i].error_id);
        w.bytes(contexts[i].data);
    }
}

ErrorResponse make_error_response(const std::vector<ErrorContext>& contexts) {
    ErrorResponse e;
    e.error_context_count = uint8_t(contexts.size());
    ByteWriter w(e.error_data);
    serialize_error_contexts(contexts, w);
    return e;
}

ErrorResponse make_error_response(ByteVector data, bool dialect_311) {
    if (dialect_311 && !data.empty())
        return make_error_response({ErrorContext{error_id::kDefault, std::move(data)}});
    ErrorResponse e;
    e.error_data = std::move(data);
    return e;
}

ErrorResponse make_buffer_too_small_error(uint32_t required_size, bool dialect_311) {
    ByteVector v;
    ByteWriter(v).u32(required_size);
    return make_error_response(std::move(v), dialect_311);
}

ErrorResponse make_bad_cluster_dialect_error(uint16_t max_cluster_dialect, bool dialect_311) {
    ByteVector v;
    ByteWriter(v).u16(max_cluster_dialect);
    return make_error_response(std::move(v), dialect_311);
}

MoveDstIpAddr MoveDstIpAddr::v4(std::array<uint8_t, 4> a) {
    MoveDstIpAddr m;
    m.type = kTypeV4;
    for (size_t i = 0; i < 4; ++i)
        m.address[i] = a[i];
    return m;
}

MoveDstIpAddr MoveDstIpAddr::v6(std::array<uint8_t, 16> a) {
    MoveDstIpAddr m;
    m.type = kTypeV6;
    m.address = a;
    return m;
}

Result<ShareRedirectErrorContext> ShareRedirectErrorContext::decode(Bytes data) {
    ByteReader r(data);
    DAX_TRY(auto size, r.u32());
    if (size != kStructureSize) return Error(NtStatus::InvalidParameter);
    ShareRedirectErrorContext c;
    DAX_TRY(c.notification_type, r.u32());
    DAX_TRY(auto name_offset, r.u32());
    DAX_TRY(auto name_length, r.u32());
    DAX_CHECK(r.skip(2));  // Reserved
    DAX_TRY(c.target_type, r.u16());
    DAX_TRY(auto count, r.u32());
    if (r.remaining() / kIpAddrSize < count) return Error(NtStatus::InvalidParameter);
    for (uint32_t i = 0; i < count; ++i) {
        MoveDstIpAddr a;
        DAX_TRY(a.type, r.u32());
        DAX_CHECK(r.skip(4));  // Reserved
        DAX_TRY(auto addr, r.array<16>());
        if (a.type == MoveDstIpAddr::kTypeV4) {
            for (size_t j = 0; j < 4; ++j)
                a.address[j] = uint8_t(addr[j]);  // Reserved2 ignored
        } else if (a.type == MoveDstIpAddr::kTypeV6) {
            for (size_t j = 0; j < 16; ++j)
                a.address[j] = uint8_t(addr[j]);
        } else {
            return Error(NtStatus::InvalidParameter);
        }
        c.ip_addresses.push_back(a);
    }
    DAX_TRY(auto name, r.slice(name_offset, name_length));
    auto s = utf16le_to_utf8(name);
    if (!s) return Error(NtStatus::InvalidParameter);
    c.resource_name = std::move(s).value();
    return c;
}

ByteVector ShareRedirectErrorContext::encode() const {
    ByteVector v;
    ByteWriter w(v);
    ByteVector name = utf8_to_utf16le(resource_name);
    w.u32(kStructureSize);
    w.u32(notification_type);
    w.u32(uint32_t(kFixedSize + kIpAddrSize * ip_addresses.size()));  // ResourceNameOffset
    w.u32(uint32_t(name.size()));
    w.u16(0);  // Reserved
    w.u16(target_type);
    w.u32(uint32_t(ip_addresses.size()));
    for (const auto& a : ip_addresses) {
        w.u32(a.type);
        w.u32(0);  // Reserved
        if (a.type == MoveDstIpAddr::kTypeV4) {
            for (size_t j = 0; j < 4; ++j)
                w.u8(a.address[j]);
            w.zeros(12);  // Reserved2
        } else {
            for (uint8_t b : a.address)
                w.u8(b);
        }
    }
    w.bytes(name);
    return v;
}

ErrorResponse make_share_redirect_error(const ShareRedirectErrorContext& ctx) {
    return make_error_response({ErrorContext{error_id::kShareRedirect, ctx.encode()}});
}

ByteVector SymlinkErrorResponse::encode() const {
    ByteVector sub = utf8_to_utf16le(substitute_name);
    ByteVector print = utf8_to_utf16le(print_name);
    size_t path_buffer = sub.size() + print.size();
    ByteVector v;
    ByteWriter w(v);
    w.u32(uint32_t(kFixedSize - 4 + path_buffer));  // SymLinkLength: all but itself
    w.u32(kSymLinkErrorTag);
    w.u32(kReparseTagSymlink);
    w.u16(uint16_t(path_buffer + 12));  // ReparseDataLength: PathBuffer + the 12 bytes below
    w.u16(unparsed_path_length);
    w.u16(0);  // SubstituteNameOffset (from PathBuffer)
    w.u16(uint16_t(sub.size()));
    w.u16(uint16_t(sub.size()));  // PrintNameOffset
    w.u16(uint16_t(print.size()));
    w.u32(flags);
    w.bytes(sub);
    w.bytes(print);
    return v;
}

Result<SymlinkErrorResponse> SymlinkErrorResponse::decode(Bytes data) {
    ByteReader r(data);
    DAX_TRY(auto symlink_length, r.u32());
    DAX_TRY(auto tag, r.u32());
    DAX_TRY(auto reparse_tag, r.u32());
    if (tag != kSymLinkErrorTag || reparse_tag != kReparseTagSymlink)
        return Error(NtStatus::InvalidParameter);
    SymlinkErrorResponse s;
    DAX_CHECK(r.skip(2));  // ReparseDataLength
    DAX_TRY(s.unparsed_path_length, r.u16());
    DAX_TRY(auto sub_off, r.u16());
    DAX_TRY(auto sub_len, r.u16());
    DAX_TRY(auto print_off, r.u16());
    DAX_TRY(auto print_len, r.u16());
    DAX_TRY(s.flags, r.u32());
    // PathBuffer runs to the end of the structure as given by SymLinkLength.
    if (symlink_length < kFixedSize - 4) return Error(NtStatus::InvalidParameter);
    DAX_TRY(auto path_buffer, r.slice(kFixedSize, uint64_t(symlink_length) + 4 - kFixedSize));
    ByteReader pb(path_buffer);
    DAX_TRY(auto sub, pb.slice(sub_off, sub_len));
    DAX_TRY(auto print, pb.slice(print_off, print_len));
    auto sub8 = utf16le_to_utf8(sub);
    auto print8 = utf16le_to_utf8(print);
    if (!sub8 || !print8) return Error(NtStatus::InvalidParameter);
    s.substitute_name = std::move(sub8).value();
    s.print_name = std::move(print8).value();
    return s;
}

}  // namespace daxsmbd::protocol
