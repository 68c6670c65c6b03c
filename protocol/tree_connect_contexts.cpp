#include "protocol/tree_connect_contexts.h"

namespace daxsmbd::protocol {

namespace {

constexpr size_t kContextHeaderSize = 8;  // ContextType(2) DataLength(2) Reserved(4)
constexpr size_t kLuidAttrSize = 12;      // LUID_ATTR_DATA: Luid(8) Attr(4)

// MS-SMB2 2.2.9.2.1.1 BLOB_DATA: BlobSize(2) BlobData[BlobSize].
Result<Bytes> read_blob(ByteReader& r) {
    DAX_TRY(auto size, r.u16());
    return r.bytes(size);
}

// MS-SMB2 2.2.9.2.1.2 SID_ATTR_DATA: a BLOB_DATA holding the SID, then Attr(4).
Result<SidAttr> read_sid_attr(ByteReader& r) {
    DAX_TRY(auto blob, read_blob(r));
    SidAttr sa;
    DAX_TRY(sa.sid, Sid::parse(blob));
    DAX_TRY(sa.attributes, r.u32());
    return sa;
}

// MS-SMB2 2.2.9.2.1.3 SID_ARRAY_DATA: SidAttrCount(2) SidAttrList[].
Result<std::vector<SidAttr>> read_sid_array(ByteReader& r) {
    DAX_TRY(auto count, r.u16());
    std::vector<SidAttr> v;
    for (uint16_t i = 0; i < count; ++i) {
        DAX_TRY(auto sa, read_sid_attr(r));
        v.push_back(std::move(sa));
    }
    return v;
}

// MS-SMB2 2.2.9.2.1.6 PRIVILEGE_ARRAY_DATA: PrivilegeCount(2), then PRIVILEGE_DATA items, each
// a BLOB_DATA whose data is a 12-byte LUID_ATTR_DATA (2.2.9.2.1.4/5).
Result<std::vector<LuidAttr>> read_privileges(ByteReader& r) {
    DAX_TRY(auto count, r.u16());
    std::vector<LuidAttr> v;
    for (uint16_t i = 0; i < count; ++i) {
        DAX_TRY(auto blob, read_blob(r));
        if (blob.size() < kLuidAttrSize) return Error(NtStatus::InvalidParameter);
        v.push_back(LuidAttr{load_le64(blob.data()), load_le32(blob.data() + 8)});
    }
    return v;
}

bool has_nul_u16(Bytes b) {
    for (size_t i = 0; i + 1 < b.size(); i += 2)
        if (load_le16(b.data() + i) == 0) return true;
    return false;
}

// UserName / Domain. MS-SMB2 2.2.9.2.1 says the offset points at a NUL-terminated UTF-16
// string; Microsoft's test client writes a u16 byte count first (spec-digest 10.1). The
// prefixed form is taken when the first u16 is a consistent byte count: an even L followed by L
// bytes that end in the (only) NUL, or L bytes followed by a NUL. Otherwise the spec form. A
// spec-form name of about c/2 characters whose first character has code c would be misread;
// no real name is in that range (user names are at most 20 characters, NetBIOS domains 15).
struct NameRead {
    std::string name;
    bool prefixed = false;
};
// A name that is not valid UTF-16 makes the context malformed (STATUS_INVALID_PARAMETER, like
// every other defect of it), not a bad object name.
Result<std::string> name_of(Bytes utf16) {
    auto name = utf16le_to_utf8(utf16);
    if (!name) return Error(NtStatus::InvalidParameter);
    return std::move(*name);
}
Result<NameRead> read_name(Bytes data, size_t off) {
    ByteReader r(data);
    DAX_TRY(auto first, r.slice(off, 2));
    uint16_t len = load_le16(first.data());
    size_t s = off + 2;
    if (len != 0 && len % 2 == 0 && s + len <= data.size()) {
        Bytes body = data.subspan(s, len);
        Bytes str{};
        bool ok = false;
        if (load_le16(body.data() + len - 2) == 0 && !has_nul_u16(body.first(len - 2))) {
            str = body.first(len - 2);  // count includes the NUL
            ok = true;
        } else if (s + len + 2 <= data.size() && load_le16(data.data() + s + len) == 0 &&
                   !has_nul_u16(body)) {
            str = body;  // count excludes the NUL
            ok = true;
        }
        if (ok) {
            DAX_TRY(auto name, name_of(str));
            return NameRead{std::move(name), true};
        }
    }
    size_t end = off;
    while (true) {
        if (end + 2 > data.size()) return Error(NtStatus::InvalidParameter);  // no NUL
        if (load_le16(data.data() + end) == 0) break;
        end += 2;
    }
    DAX_TRY(auto name, name_of(data.subspan(off, end - off)));
    return NameRead{std::move(name), false};
}

void write_blob(ByteWriter& w, Bytes b) {
    w.u16(uint16_t(b.size()));
    w.bytes(b);
}

void write_sid_attr(ByteWriter& w, const SidAttr& sa) {
    w.u16(uint16_t(sa.sid.size()));
    sa.sid.serialize(w);
    w.u32(sa.attributes);
}

void write_sid_array(ByteWriter& w, const std::vector<SidAttr>& v) {
    w.u16(uint16_t(v.size()));
    for (const auto& sa : v)
        write_sid_attr(w, sa);
}

void write_privileges(ByteWriter& w, const std::vector<LuidAttr>& v) {
    w.u16(uint16_t(v.size()));
    for (const auto& p : v) {
        w.u16(uint16_t(kLuidAttrSize));
        w.u64(p.luid);
        w.u32(p.attributes);
    }
}

void write_name(ByteWriter& w, const std::string& name, bool prefixed) {
    ByteVector utf16 = utf8_to_utf16le(name);
    if (prefixed) w.u16(uint16_t(utf16.size() + 2));
    w.bytes(utf16);
    w.u16(0);
}

}  // namespace

bool RemotedIdentityTreeConnectContext::operator==(
    const RemotedIdentityTreeConnectContext& o) const {
    return ticket_type == o.ticket_type && user == o.user && user_name == o.user_name &&
           domain == o.domain && groups == o.groups && restricted_groups == o.restricted_groups &&
           privileges == o.privileges && primary_group == o.primary_group && owner == o.owner &&
           default_dacl == o.default_dacl && device_groups == o.device_groups &&
           user_claims == o.user_claims && device_claims == o.device_claims;
}

Result<RemotedIdentityTreeConnectContext> RemotedIdentityTreeConnectContext::decode(Bytes data) {
    ByteReader r(data);
    RemotedIdentityTreeConnectContext c;
    DAX_TRY(c.ticket_type, r.u16());
    DAX_TRY(c.ticket_size, r.u16());
    if (c.ticket_type != kTicketTypeRemoted) return c;  // MS-SMB2 3.3.5.7: ignored
    uint16_t off[12];
    for (auto& o : off) {
        DAX_TRY(o, r.u16());
    }
    // Each item is read with a cursor placed at its offset; offsets into the fixed part are
    // malformed.
    auto at = [&](uint16_t o) -> Result<ByteReader> {
        if (o < kFixedSize || o >= data.size()) return Error(NtStatus::InvalidParameter);
        ByteReader sub(data);
        DAX_CHECK(sub.seek(o));
        return sub;
    };
    if (off[0]) {
        DAX_TRY(auto sub, at(off[0]));
        DAX_TRY(c.user, read_sid_attr(sub));
    }
    for (int i : {1, 2}) {
        if (!off[i]) continue;
        if (off[i] < kFixedSize) return Error(NtStatus::InvalidParameter);
        DAX_TRY(auto n, read_name(data, off[i]));
        c.length_prefixed_names = c.length_prefixed_names || n.prefixed;
        (i == 1 ? c.user_name : c.domain) = std::move(n.name);
    }
    if (off[3]) {
        DAX_TRY(auto sub, at(off[3]));
        DAX_TRY(c.groups, read_sid_array(sub));
    }
    if (off[4]) {
        DAX_TRY(auto sub, at(off[4]));
        DAX_TRY(c.restricted_groups, read_sid_array(sub));
    }
    if (off[5]) {
        DAX_TRY(auto sub, at(off[5]));
        DAX_TRY(c.privileges, read_privileges(sub));
    }
    if (off[6]) {
        DAX_TRY(auto sub, at(off[6]));
        DAX_TRY(c.primary_group, read_sid_array(sub));
    }
    if (off[7]) {  // Owner: BLOB_DATA holding a SID
        DAX_TRY(auto sub, at(off[7]));
        DAX_TRY(auto blob, read_blob(sub));
        DAX_TRY(c.owner, Sid::parse(blob));
    }
    if (off[8]) {
        DAX_TRY(auto sub, at(off[8]));
        DAX_TRY(auto blob, read_blob(sub));
        c.default_dacl = ByteVector(blob.begin(), blob.end());
    }
    if (off[9]) {
        DAX_TRY(auto sub, at(off[9]));
        DAX_TRY(c.device_groups, read_sid_array(sub));
    }
    if (off[10]) {
        DAX_TRY(auto sub, at(off[10]));
        DAX_TRY(auto blob, read_blob(sub));
        c.user_claims = ByteVector(blob.begin(), blob.end());
    }
    if (off[11]) {
        DAX_TRY(auto sub, at(off[11]));
        DAX_TRY(auto blob, read_blob(sub));
        c.device_claims = ByteVector(blob.begin(), blob.end());
    }
    return c;
}

Status RemotedIdentityTreeConnectContext::encode(ByteWriter& out) const {
    ByteVector v;
    ByteWriter w(v);
    w.u16(ticket_type);
    w.u16(0);  // TicketSize, patched
    w.zeros(24);
    size_t slot = 4;
    // Writes one item (or leaves its offset at 0) and records its offset.
    auto item = [&](bool present, auto&& write) {
        if (present) {
            if (v.size() > 0xFFFF) return;
            w.patch_u16(slot, uint16_t(v.size()));
            write();
        }
        slot += 2;
    };
    item(user.has_value(), [&] { write_sid_attr(w, *user); });
    item(user_name.has_value(), [&] { write_name(w, *user_name, length_prefixed_names); });
    item(domain.has_value(), [&] { write_name(w, *domain, length_prefixed_names); });
    item(groups.has_value(), [&] { write_sid_array(w, *groups); });
    item(restricted_groups.has_value(), [&] { write_sid_array(w, *restricted_groups); });
    item(privileges.has_value(), [&] { write_privileges(w, *privileges); });
    item(primary_group.has_value(), [&] { write_sid_array(w, *primary_group); });
    item(owner.has_value(), [&] {
        w.u16(uint16_t(owner->size()));
        owner->serialize(w);
    });
    item(default_dacl.has_value(), [&] { write_blob(w, *default_dacl); });
    item(device_groups.has_value(), [&] { write_sid_array(w, *device_groups); });
    item(user_claims.has_value(), [&] { write_blob(w, *user_claims); });
    item(device_claims.has_value(), [&] { write_blob(w, *device_claims); });
    if (v.size() > 0xFFFF) return Error(NtStatus::InvalidParameter);
    w.patch_u16(2, uint16_t(v.size()));
    out.bytes(v);
    return {};
}

Result<TreeConnectContextList> parse_tree_connect_contexts(Bytes msg, uint64_t offset,
                                                           uint16_t count) {
    ByteReader r(msg);
    TreeConnectContextList list;
    uint64_t pos = offset;
    for (uint16_t i = 0; i < count; ++i) {
        if (i > 0) pos = (pos + 7) & ~uint64_t(7);  // MS-SMB2 2.2.9.1: 8-aligned contexts
        DAX_TRY(auto hdr, r.slice(pos, kContextHeaderSize));
        uint16_t type = load_le16(hdr.data());
        uint16_t data_len = load_le16(hdr.data() + 2);
        DAX_TRY(auto data, r.slice(pos + kContextHeaderSize, data_len));
        if (type == tree_connect_context_type::kRemotedIdentity) {
            DAX_TRY(auto c, RemotedIdentityTreeConnectContext::decode(data));
            list.emplace_back(std::move(c));
        } else {
            list.emplace_back(
                UnknownTreeConnectContext{type, ByteVector(data.begin(), data.end())});
        }
        pos += kContextHeaderSize + data_len;
    }
    return list;
}

Result<uint32_t> serialize_tree_connect_contexts(const TreeConnectContextList& list,
                                                 ByteWriter& w) {
    uint32_t first = 0;
    for (size_t i = 0; i < list.size(); ++i) {
        w.align(8);
        if (i == 0) first = uint32_t(w.offset_from_base());
        size_t hdr = w.size();
        w.zeros(kContextHeaderSize);
        size_t data_start = w.size();
        uint16_t type;
        if (const auto* ri = std::get_if<RemotedIdentityTreeConnectContext>(&list[i])) {
            type = ri->kType;
            DAX_CHECK(ri->encode(w));
        } else {
            const auto& u = std::get<UnknownTreeConnectContext>(list[i]);
            type = u.type;
            w.bytes(u.data);
        }
        size_t len = w.size() - data_start;
        if (len > 0xFFFF) return Error(NtStatus::InvalidParameter);
        w.patch_u16(hdr, type);
        w.patch_u16(hdr + 2, uint16_t(len));
    }
    return first;
}

}  // namespace daxsmbd::protocol
