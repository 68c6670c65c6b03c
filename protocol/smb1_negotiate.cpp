#include "protocol/smb1_negotiate.h"

#include <algorithm>

#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace {
constexpr uint8_t kBufferFormatDialect = 0x02;  // MS-CIFS 2.2.4.52.1
constexpr size_t kCommandOffset = 4;
}  // namespace

bool is_smb1_negotiate(Bytes msg) {
    return msg.size() > kCommandOffset && load_le32(msg.data()) == kSmb1ProtocolId &&
           uint8_t(msg[kCommandOffset]) == kSmb1CommandNegotiate;
}

bool Smb1NegotiateRequest::lists(std::string_view dialect) const {
    return std::find(dialects.begin(), dialects.end(), dialect) != dialects.end();
}

Result<Smb1NegotiateRequest> Smb1NegotiateRequest::parse(Bytes msg) {
    if (msg.size() < kSmb1HeaderSize || !is_smb1_negotiate(msg))
        return Error(NtStatus::InvalidParameter);
    ByteReader r(msg);
    DAX_CHECK(r.seek(kSmb1HeaderSize));
    DAX_TRY(auto word_count, r.u8());
    if (word_count != 0) return Error(NtStatus::InvalidParameter);
    DAX_TRY(auto byte_count, r.u16());
    DAX_TRY(auto bytes, r.bytes(byte_count));
    Smb1NegotiateRequest req;
    size_t i = 0;
    while (i < bytes.size()) {
        if (uint8_t(bytes[i]) != kBufferFormatDialect) return Error(NtStatus::InvalidParameter);
        ++i;
        size_t start = i;
        while (i < bytes.size() && bytes[i] != std::byte{0})
            ++i;
        if (i == bytes.size()) return Error(NtStatus::InvalidParameter);  // no terminator
        req.dialects.emplace_back(reinterpret_cast<const char*>(bytes.data() + start), i - start);
        ++i;  // NUL
    }
    return req;
}

void Smb1NegotiateRequest::serialize(ByteWriter& w) const {
    // MS-CIFS 2.2.3.1 header: Protocol(4) Command(1) Status(4) Flags(1) Flags2(2) PIDHigh(2)
    // SecurityFeatures(8) Reserved(2) TID(2) PIDLow(2) UID(2) MID(2).
    w.u32(kSmb1ProtocolId);
    w.u8(kSmb1CommandNegotiate);
    w.u32(0);       // Status
    w.u8(0x18);     // Flags: CASE_INSENSITIVE | CANONICALIZED_PATHS
    w.u16(0xC801);  // Flags2: UNICODE | NT_STATUS | EXTENDED_SECURITY | LONG_NAMES
    w.zeros(2 + 8 + 2 + 2 + 2 + 2 + 2);
    w.u8(0);  // WordCount
    size_t bc = w.size();
    w.u16(0);
    for (const auto& d : dialects) {
        w.u8(kBufferFormatDialect);
        w.bytes(as_bytes(d));
        w.u8(0);
    }
    w.patch_u16(bc, uint16_t(w.size() - bc - 2));
}

}  // namespace daxsmbd::protocol
