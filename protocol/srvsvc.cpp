#include "protocol/srvsvc.h"

#include <algorithm>

namespace daxsmbd::protocol::rpc {

namespace {

// Union arms as declared in MS-SRVS: a level that is an arm is marshalled as discriminant +
// pointer, any other level as the discriminant alone (the unions' empty default).
bool is_share_enum_arm(uint32_t level) {  // SHARE_ENUM_UNION, MS-SRVS 2.2.3.5
    switch (level) {
        case 0:
        case 1:
        case 2:
        case 501:
        case 502:
        case 503:
            return true;
        default:
            return false;
    }
}

bool is_share_info_arm(uint32_t level) {  // SHARE_INFO, MS-SRVS 2.2.3.6
    switch (level) {
        case 0:
        case 1:
        case 2:
        case 501:
        case 502:
        case 503:
        case 1004:
        case 1005:
        case 1006:
        case 1501:
            return true;
        default:
            return false;
    }
}

bool is_server_info_arm(uint32_t level) {  // SERVER_INFO, MS-SRVS 2.2.3.7
    static constexpr uint32_t kArms[] = {
        100,  101,  102,  103,  502,  503,  599,  1005, 1107, 1010, 1016, 1017, 1018,
        1501, 1502, 1503, 1506, 1510, 1511, 1512, 1513, 1514, 1515, 1516, 1518, 1523,
        1528, 1529, 1530, 1533, 1534, 1535, 1536, 1538, 1539, 1540, 1541, 1542, 1543,
        1544, 1545, 1546, 1547, 1548, 1549, 1550, 1552, 1553, 1554, 1555, 1556};
    return std::find(std::begin(kArms), std::end(kArms), level) != std::end(kArms);
}

// Levels whose SHARE_INFO_x layout this file knows (MS-SRVS 2.2.4.22-2.2.4.29).
bool share_level_known(uint32_t level) {
    return level == 0 || level == 1 || level == 2 || level == 501 || level == 502 || level == 1005;
}

// Smallest NDR size of one SHARE_INFO_x (its scalars), to bound array counts read off the wire.
size_t share_fixed_size(uint32_t level) {
    switch (level) {
        case 0:
            return 4;
        case 1:
            return 12;
        case 2:
            return 32;
        case 501:
            return 16;
        case 502:
            return 40;
        default:
            return 4;
    }
}

// SHARE_INFO_x scalars; the strings are embedded pointers, deferred by the writer.
void write_share(NdrWriter& w, uint32_t level, const ShareInfo& s) {
    if (level == 1005) {
        w.u32(s.flags);
        return;
    }
    w.unique_wstring(s.name);
    if (level == 0) return;
    w.u32(s.type);
    w.unique_wstring(s.comment);
    if (level == 1) return;
    if (level == 501) {
        w.u32(s.flags);
        return;
    }
    w.u32(s.permissions);
    w.u32(s.max_uses);
    w.u32(s.current_uses);
    w.unique_wstring(s.path);
    w.unique_wstring(std::nullopt);  // shi2_passwd: share-level passwords do not exist here
    if (level == 2) return;
    w.u32(0);                 // shi502_reserved: length of the security descriptor
    w.unique_ptr(false, {});  // shi502_security_descriptor: not sent (null)
}

Status read_string_ptr(NdrReader& r, std::string& out) {
    return r.unique_ptr([&r, &out]() -> Status {
        DAX_TRY(out, r.wstring());
        return {};
    });
}

Status read_share(NdrReader& r, uint32_t level, ShareInfo& s) {
    if (level == 1005) {
        DAX_TRY(s.flags, r.u32());
        return {};
    }
    DAX_CHECK(read_string_ptr(r, s.name));
    if (level == 0) return {};
    DAX_TRY(s.type, r.u32());
    DAX_CHECK(read_string_ptr(r, s.comment));
    if (level == 1) return {};
    if (level == 501) {
        DAX_TRY(s.flags, r.u32());
        return {};
    }
    DAX_TRY(s.permissions, r.u32());
    DAX_TRY(s.max_uses, r.u32());
    DAX_TRY(s.current_uses, r.u32());
    DAX_CHECK(read_string_ptr(r, s.path));
    // shi2_passwd: read for framing, not kept.
    DAX_CHECK(r.unique_ptr([&r]() -> Status {
        DAX_TRY(auto ignored, r.wstring());
        (void)ignored;
        return {};
    }));
    if (level == 2) return {};
    DAX_TRY(uint32_t sd_length, r.u32());
    // [size_is(shi502_reserved)] unsigned char*: conformant byte array, skipped.
    return r.unique_ptr([&r, sd_length]() -> Status {
        DAX_TRY(uint32_t count, r.conformant_count(1));
        if (count != sd_length) return Error(NtStatus::InvalidParameter);
        DAX_TRY(auto ignored, r.bytes(count));
        (void)ignored;
        return {};
    });
}

// SHARE_INFO_x_CONTAINER: EntriesRead, [size_is(EntriesRead)] Buffer.
Status read_container(NdrReader& r, uint32_t level, std::vector<ShareInfo>& entries) {
    DAX_TRY(uint32_t n, r.u32());
    bool present = false;
    DAX_CHECK(r.unique_ptr(
        [&r, &entries, level, n]() -> Status {
            if (!share_level_known(level) || level == 1005)
                return Error(NtStatus::InvalidParameter);
            DAX_TRY(uint32_t count, r.conformant_count(share_fixed_size(level)));
            if (count != n) return Error(NtStatus::InvalidParameter);
            entries.resize(count);  // not resized again: deferred reads point into it
            for (auto& e : entries)
                DAX_CHECK(read_share(r, level, e));
            return {};
        },
        &present));
    if (!present && n != 0) return Error(NtStatus::InvalidParameter);
    return {};
}

void write_server(NdrWriter& w, uint32_t level, const ServerInfo& s) {
    w.u32(s.platform_id);
    w.unique_wstring(s.name);
    if (level == 100) return;
    w.u32(s.version_major);
    w.u32(s.version_minor);
    w.u32(s.type);
    w.unique_wstring(s.comment);
}

Status read_server(NdrReader& r, uint32_t level, ServerInfo& s) {
    DAX_TRY(s.platform_id, r.u32());
    DAX_CHECK(read_string_ptr(r, s.name));
    if (level == 100) return {};
    DAX_TRY(s.version_major, r.u32());
    DAX_TRY(s.version_minor, r.u32());
    DAX_TRY(s.type, r.u32());
    return read_string_ptr(r, s.comment);
}

Status read_optional_u32(NdrReader& r, std::optional<uint32_t>& out) {
    out.reset();
    return r.unique_ptr([&r, &out]() -> Status {
        DAX_TRY(uint32_t v, r.u32());
        out = v;
        return {};
    });
}

// Share names compare case-insensitively (MS-SRVS 3.1.1.7 ShareList lookups); ASCII folding
// covers the names a Linux configuration holds in practice.
bool same_share_name(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

// Approximate size of one entry in the caller's output buffer, for PreferedMaximumLength
// (MS-SRVS 3.1.4.8): the 64-bit in-memory SHARE_INFO_x plus its UTF-16 strings.
size_t entry_size(uint32_t level, const ShareInfo& s) {
    auto wlen = [](const std::string& t) { return utf8_to_utf16le(t).size() + 2; };
    switch (level) {
        case 0:
            return 8 + wlen(s.name);
        case 1:
            return 24 + wlen(s.name) + wlen(s.comment);
        default:
            return 56 + wlen(s.name) + wlen(s.comment) + wlen(s.path);
    }
}

Result<ByteVector> share_enum(Bytes stub, const SrvsvcProvider& provider) {
    DAX_TRY(auto req, NetrShareEnumRequest::parse(stub));
    NetrShareEnumResponse resp;
    resp.level = req.level;
    if (req.resume_handle) resp.resume_handle = 0;
    if (req.level != 0 && req.level != 1 && req.level != 2) {
        resp.container_present = false;
        resp.status = werror::kInvalidLevel;
        return resp.serialize();
    }
    auto shares = provider.shares();
    size_t start = std::min<size_t>(req.resume_handle.value_or(0), shares.size());
    size_t end = start;
    if (req.prefered_maximum_length == kMaxPreferredLength) {
        end = shares.size();
    } else {
        // As many entries as fit, but at least one so that a resumed enumeration progresses.
        size_t used = 0;
        while (end < shares.size()) {
            size_t n = entry_size(req.level, shares[end]);
            if (end > start && used + n > req.prefered_maximum_length) break;
            used += n;
            ++end;
        }
    }
    resp.entries.assign(shares.begin() + std::ptrdiff_t(start),
                        shares.begin() + std::ptrdiff_t(end));
    resp.total_entries = uint32_t(shares.size());
    if (end < shares.size()) {
        // The resume handle is the index of the next entry: nonzero, as MS-SRVS requires.
        resp.status = werror::kMoreData;
        if (req.resume_handle) resp.resume_handle = uint32_t(end);
    }
    return resp.serialize();
}

Result<ByteVector> share_get_info(Bytes stub, const SrvsvcProvider& provider) {
    DAX_TRY(auto req, NetrShareGetInfoRequest::parse(stub));
    NetrShareGetInfoResponse resp;
    resp.level = req.level;
    if (!share_level_known(req.level)) {
        resp.status = werror::kInvalidLevel;
        return resp.serialize();
    }
    for (auto& s : provider.shares()) {
        if (same_share_name(s.name, req.net_name)) {
            resp.info = std::move(s);
            return resp.serialize();
        }
    }
    resp.status = werror::kNetNameNotFound;
    return resp.serialize();
}

Result<ByteVector> server_get_info(Bytes stub, const SrvsvcProvider& provider) {
    DAX_TRY(auto req, NetrServerGetInfoRequest::parse(stub));
    NetrServerGetInfoResponse resp;
    resp.level = req.level;
    if (req.level != 100 && req.level != 101) {
        resp.status = werror::kInvalidLevel;
        return resp.serialize();
    }
    resp.info = provider.server_info();
    return resp.serialize();
}

}  // namespace

// ---- NetrShareEnum ----

Result<NetrShareEnumRequest> NetrShareEnumRequest::parse(Bytes stub) {
    NdrReader r(stub);
    NetrShareEnumRequest q;
    DAX_CHECK(r.unique_wstring(q.server_name));
    std::vector<ShareInfo> ignored;
    DAX_CHECK(r.construct([&]() -> Status {
        DAX_TRY(q.level, r.u32());
        DAX_TRY(uint32_t tag, r.u32());
        // switch_is(Level): the discriminant must be the level (MS-RPCE 3.1.1.5.3.2.1.11).
        if (tag != q.level) return Error(NtStatus::InvalidParameter);
        if (!is_share_enum_arm(tag)) return {};
        return r.unique_ptr([&]() -> Status { return read_container(r, q.level, ignored); });
    }));
    DAX_TRY(q.prefered_maximum_length, r.u32());
    DAX_CHECK(read_optional_u32(r, q.resume_handle));
    return q;
}

ByteVector NetrShareEnumRequest::serialize() const {
    ByteVector out;
    NdrWriter w(out);
    w.unique_wstring(server_name ? std::optional<std::string_view>(*server_name) : std::nullopt);
    w.construct([&] {
        w.u32(level);
        w.u32(level);
        if (!is_share_enum_arm(level)) return;
        w.unique_ptr(true, [&w] {
            w.u32(0);                 // EntriesRead
            w.unique_ptr(false, {});  // Buffer
        });
    });
    w.u32(prefered_maximum_length);
    w.unique_ptr(resume_handle.has_value(), [&w, this] { w.u32(*resume_handle); });
    return out;
}

Result<NetrShareEnumResponse> NetrShareEnumResponse::parse(Bytes stub) {
    NdrReader r(stub);
    NetrShareEnumResponse p;
    DAX_CHECK(r.construct([&]() -> Status {
        DAX_TRY(p.level, r.u32());
        DAX_TRY(uint32_t tag, r.u32());
        if (tag != p.level) return Error(NtStatus::InvalidParameter);
        if (!is_share_enum_arm(tag)) {
            p.container_present = false;
            return {};
        }
        return r.unique_ptr([&]() -> Status { return read_container(r, p.level, p.entries); },
                            &p.container_present);
    }));
    DAX_TRY(p.total_entries, r.u32());
    DAX_CHECK(read_optional_u32(r, p.resume_handle));
    DAX_TRY(p.status, r.u32());
    return p;
}

ByteVector NetrShareEnumResponse::serialize() const {
    ByteVector out;
    NdrWriter w(out);
    w.construct([&] {  // InfoStruct: [ref] SHARE_ENUM_STRUCT, so no referent id of its own
        w.u32(level);
        w.u32(level);  // SHARE_ENUM_UNION discriminant
        if (!is_share_enum_arm(level)) return;
        w.unique_ptr(container_present, [&w, this] {
            w.u32(uint32_t(entries.size()));
            w.unique_ptr(!entries.empty(), [&w, this] {
                w.conformant_count(uint32_t(entries.size()));
                for (const auto& e : entries)
                    write_share(w, level, e);
            });
        });
    });
    w.u32(total_entries);
    w.unique_ptr(resume_handle.has_value(), [&w, this] { w.u32(*resume_handle); });
    w.u32(status);
    return out;
}

// ---- NetrShareGetInfo ----

Result<NetrShareGetInfoRequest> NetrShareGetInfoRequest::parse(Bytes stub) {
    NdrReader r(stub);
    NetrShareGetInfoRequest q;
    DAX_CHECK(r.unique_wstring(q.server_name));
    DAX_TRY(q.net_name, r.wstring());  // [in, string] wchar_t*: a [ref] pointer, no referent id
    DAX_TRY(q.level, r.u32());
    return q;
}

ByteVector NetrShareGetInfoRequest::serialize() const {
    ByteVector out;
    NdrWriter w(out);
    w.unique_wstring(server_name ? std::optional<std::string_view>(*server_name) : std::nullopt);
    w.wstring(net_name);
    w.u32(level);
    return out;
}

Result<NetrShareGetInfoResponse> NetrShareGetInfoResponse::parse(Bytes stub) {
    NdrReader r(stub);
    NetrShareGetInfoResponse p;
    DAX_CHECK(r.construct([&]() -> Status {
        DAX_TRY(p.level, r.u32());
        if (!is_share_info_arm(p.level)) return {};
        return r.unique_ptr([&]() -> Status {
            if (!share_level_known(p.level)) return Error(NtStatus::InvalidParameter);
            p.info.emplace();
            return read_share(r, p.level, *p.info);
        });
    }));
    DAX_TRY(p.status, r.u32());
    return p;
}

ByteVector NetrShareGetInfoResponse::serialize() const {
    ByteVector out;
    NdrWriter w(out);
    w.construct([&] {
        w.u32(level);  // SHARE_INFO discriminant
        if (!is_share_info_arm(level)) return;
        w.unique_ptr(info.has_value(), [&w, this] { write_share(w, level, *info); });
    });
    w.u32(status);
    return out;
}

// ---- NetrServerGetInfo ----

Result<NetrServerGetInfoRequest> NetrServerGetInfoRequest::parse(Bytes stub) {
    NdrReader r(stub);
    NetrServerGetInfoRequest q;
    DAX_CHECK(r.unique_wstring(q.server_name));
    DAX_TRY(q.level, r.u32());
    return q;
}

ByteVector NetrServerGetInfoRequest::serialize() const {
    ByteVector out;
    NdrWriter w(out);
    w.unique_wstring(server_name ? std::optional<std::string_view>(*server_name) : std::nullopt);
    w.u32(level);
    return out;
}

Result<NetrServerGetInfoResponse> NetrServerGetInfoResponse::parse(Bytes stub) {
    NdrReader r(stub);
    NetrServerGetInfoResponse p;
    DAX_CHECK(r.construct([&]() -> Status {
        DAX_TRY(p.level, r.u32());
        if (!is_server_info_arm(p.level)) return {};
        return r.unique_ptr([&]() -> Status {
            if (p.level != 100 && p.level != 101) return Error(NtStatus::InvalidParameter);
            p.info.emplace();
            return read_server(r, p.level, *p.info);
        });
    }));
    DAX_TRY(p.status, r.u32());
    return p;
}

ByteVector NetrServerGetInfoResponse::serialize() const {
    ByteVector out;
    NdrWriter w(out);
    w.construct([&] {
        w.u32(level);  // SERVER_INFO discriminant
        if (!is_server_info_arm(level)) return;
        w.unique_ptr(info.has_value(), [&w, this] { write_server(w, level, *info); });
    });
    w.u32(status);
    return out;
}

// ---- dispatch ----

Result<ByteVector> srvsvc_dispatch(uint16_t opnum, Bytes stub, const SrvsvcProvider& provider) {
    switch (opnum) {
        case srvsvc_opnum::kNetrShareEnum:
            return share_enum(stub, provider);
        case srvsvc_opnum::kNetrShareGetInfo:
            return share_get_info(stub, provider);
        case srvsvc_opnum::kNetrServerGetInfo:
            return server_get_info(stub, provider);
        default:
            return Error(NtStatus::NotImplemented);
    }
}

PipeSession make_srvsvc_pipe(std::shared_ptr<const SrvsvcProvider> provider,
                             PipeSession::Options options) {
    PipeSession::Interface iface{
        kSrvsvcSyntax, std::string(kSrvsvcSecondaryAddress),
        [provider = std::move(provider)](uint16_t opnum, Bytes stub) -> Result<ByteVector> {
            return srvsvc_dispatch(opnum, stub, *provider);
        }};
    return PipeSession(std::move(iface), options);
}

}  // namespace daxsmbd::protocol::rpc
