#include "protocol/bytes.h"

namespace daxsmbd::protocol {

Result<std::string> utf16le_to_utf8(Bytes in) {
    if (in.size() % 2) return Error(NtStatus::ObjectNameInvalid);
    std::string out;
    out.reserve(in.size() / 2);
    for (size_t i = 0; i < in.size(); i += 2) {
        uint32_t cp = load_le16(in.data() + i);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (i + 3 >= in.size()) return Error(NtStatus::ObjectNameInvalid);
            uint32_t lo = load_le16(in.data() + i + 2);
            if (lo < 0xDC00 || lo > 0xDFFF) return Error(NtStatus::ObjectNameInvalid);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 2;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Error(NtStatus::ObjectNameInvalid);
        }
        if (cp < 0x80) {
            out.push_back(char(cp));
        } else if (cp < 0x800) {
            out.push_back(char(0xC0 | (cp >> 6)));
            out.push_back(char(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out.push_back(char(0xE0 | (cp >> 12)));
            out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(char(0x80 | (cp & 0x3F)));
        } else {
            out.push_back(char(0xF0 | (cp >> 18)));
            out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(char(0x80 | (cp & 0x3F)));
        }
    }
    return out;
}

void utf8_to_utf16le(std::string_view s, ByteWriter& w) {
    size_t i = 0;
    while (i < s.size()) {
        uint32_t c = uint8_t(s[i]);
        uint32_t cp;
        size_t len;
        if (c < 0x80) {
            cp = c;
            len = 1;
        } else if ((c >> 5) == 0x6 && i + 1 < s.size()) {
            cp = ((c & 0x1F) << 6) | (uint8_t(s[i + 1]) & 0x3F);
            len = 2;
        } else if ((c >> 4) == 0xE && i + 2 < s.size()) {
            cp = ((c & 0x0F) << 12) | ((uint8_t(s[i + 1]) & 0x3F) << 6) | (uint8_t(s[i + 2]) & 0x3F);
            len = 3;
        } else if ((c >> 3) == 0x1E && i + 3 < s.size()) {
            cp = ((c & 0x07) << 18) | ((uint8_t(s[i + 1]) & 0x3F) << 12) |
                 ((uint8_t(s[i + 2]) & 0x3F) << 6) | (uint8_t(s[i + 3]) & 0x3F);
            len = 4;
        } else {
            cp = 0xFFFD;  // invalid UTF-8 from the local file system: replacement character
            len = 1;
        }
        i += len;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            w.u16(uint16_t(0xD800 + (cp >> 10)));
            w.u16(uint16_t(0xDC00 + (cp & 0x3FF)));
        } else {
            w.u16(uint16_t(cp));
        }
    }
}

ByteVector utf8_to_utf16le(std::string_view s) {
    ByteVector v;
    ByteWriter w(v);
    utf8_to_utf16le(s, w);
    return v;
}

}  // namespace daxsmbd::protocol
