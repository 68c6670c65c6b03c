#include "protocol/sid.h"

#include <charconv>

namespace daxsmbd::protocol {

uint64_t Sid::authority_value() const {
    uint64_t v = 0;
    for (uint8_t b : identifier_authority)
        v = (v << 8) | b;
    return v;
}

Result<Sid> Sid::read(ByteReader& r) {
    Sid sid;
    DAX_TRY(sid.revision, r.u8());
    DAX_TRY(auto count, r.u8());
    if (sid.revision != kRevision || count > kMaxSubAuthorities)
        return Error(NtStatus::InvalidParameter);
    DAX_TRY(auto auth, r.array<6>());
    for (size_t i = 0; i < 6; ++i)
        sid.identifier_authority[i] = uint8_t(auth[i]);
    sid.sub_authorities.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        DAX_TRY(auto sub, r.u32());
        sid.sub_authorities.push_back(sub);
    }
    return sid;
}

Result<Sid> Sid::parse(Bytes b) {
    ByteReader r(b);
    return read(r);
}

void Sid::serialize(ByteWriter& w) const {
    w.u8(revision);
    w.u8(uint8_t(sub_authorities.size()));
    for (uint8_t b : identifier_authority)
        w.u8(b);
    for (uint32_t s : sub_authorities)
        w.u32(s);
}

ByteVector Sid::to_bytes() const {
    ByteVector v;
    ByteWriter w(v);
    serialize(w);
    return v;
}

std::string Sid::to_string() const {
    std::string s = "S-" + std::to_string(revision) + "-";
    uint64_t auth = authority_value();
    if (auth < (uint64_t(1) << 32)) {
        s += std::to_string(auth);
    } else {
        static constexpr char kHex[] = "0123456789ABCDEF";
        s += "0x";
        for (uint8_t b : identifier_authority) {
            s.push_back(kHex[b >> 4]);
            s.push_back(kHex[b & 0xF]);
        }
    }
    for (uint32_t sub : sub_authorities)
        s += "-" + std::to_string(sub);
    return s;
}

namespace {

// Parses one unsigned number (decimal, or hex with a 0x prefix) from the front of `s`.
Result<uint64_t> take_number(std::string_view& s, uint64_t max) {
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || ptr == s.data() || v > max) return Error(NtStatus::InvalidParameter);
    s.remove_prefix(size_t(ptr - s.data()));
    return v;
}

}  // namespace

Result<Sid> Sid::from_string(std::string_view s) {
    if (s.size() < 2 || (s[0] != 'S' && s[0] != 's') || s[1] != '-')
        return Error(NtStatus::InvalidParameter);
    s.remove_prefix(2);
    DAX_TRY(auto rev, take_number(s, 0xFF));
    if (rev != kRevision || s.empty() || s[0] != '-') return Error(NtStatus::InvalidParameter);
    s.remove_prefix(1);
    DAX_TRY(auto auth, take_number(s, 0xFFFFFFFFFFFFull));
    Sid sid;
    for (int i = 5; i >= 0; --i) {
        sid.identifier_authority[size_t(i)] = uint8_t(auth);
        auth >>= 8;
    }
    while (!s.empty()) {
        if (s[0] != '-' || sid.sub_authorities.size() == kMaxSubAuthorities)
            return Error(NtStatus::InvalidParameter);
        s.remove_prefix(1);
        DAX_TRY(auto sub, take_number(s, 0xFFFFFFFFull));
        sid.sub_authorities.push_back(uint32_t(sub));
    }
    return sid;
}

Sid Sid::make(uint64_t authority, std::initializer_list<uint32_t> subs) {
    Sid sid;
    for (int i = 5; i >= 0; --i) {
        sid.identifier_authority[size_t(i)] = uint8_t(authority);
        authority >>= 8;
    }
    sid.sub_authorities.assign(subs.begin(), subs.end());
    return sid;
}

}  // namespace daxsmbd::protocol
