#include "server/vfs/case_fold.h"

#include <cstdint>

namespace daxsmbd::server::vfs {

namespace {

constexpr char32_t kInvalidBase = 0xDC00;

// In a block of alternating case pairs, which parity holds the capital letter.
constexpr char32_t pair_upper(char32_t c, bool upper_is_even) {
    bool even = (c % 2) == 0;
    return even == upper_is_even ? c : c - 1;
}

}  // namespace

char32_t next_code_point(std::string_view s, size_t& i) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    size_t len;
    char32_t cp;
    char32_t min;
    if ((b0 & 0xE0) == 0xC0) {
        len = 2;
        cp = b0 & 0x1F;
        min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        len = 3;
        cp = b0 & 0x0F;
        min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        len = 4;
        cp = b0 & 0x07;
        min = 0x10000;
    } else {
        ++i;
        return kInvalidBase + b0;
    }
    if (i + len > s.size()) {
        ++i;
        return kInvalidBase + b0;
    }
    for (size_t k = 1; k < len; ++k) {
        const auto b = static_cast<uint8_t>(s[i + k]);
        if ((b & 0xC0) != 0x80) {
            ++i;
            return kInvalidBase + b0;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        ++i;
        return kInvalidBase + b0;
    }
    i += len;
    return cp;
}

bool is_valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        size_t before = i;
        char32_t cp = next_code_point(s, i);
        // A real U+DCxx can never come out of the decoder (surrogates are rejected), so this
        // value with a one-byte advance from a non-ASCII lead byte means "invalid".
        if (cp >= kInvalidBase + 0x80 && cp <= kInvalidBase + 0xFF && i == before + 1) return false;
    }
    return true;
}

size_t utf16_length(std::string_view s) {
    size_t n = 0;
    size_t i = 0;
    while (i < s.size())
        n += next_code_point(s, i) >= 0x10000 ? 2 : 1;
    return n;
}

char32_t upcase(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 0x20 : c;
    if (c < 0x100) {
        if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;
        if (c == 0xFF) return 0x178;
        if (c == 0xB5) return 0x39C;
        return c;
    }
    if (c < 0x180) {  // Latin Extended-A
        if (c <= 0x12F || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
            return pair_upper(c, true);
        if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return pair_upper(c, false);
        return c;  // 0x130, 0x131, 0x138, 0x149, 0x178, 0x17F
    }
    if (c < 0x250) {  // Latin Extended-B: only the regular pair blocks
        if (c >= 0x1CD && c <= 0x1DC) return pair_upper(c, false);
        if ((c >= 0x1DE && c <= 0x1EF) || (c >= 0x1F8 && c <= 0x21F) ||
            (c >= 0x222 && c <= 0x233) || (c >= 0x246 && c <= 0x24F))
            return pair_upper(c, true);
        return c;
    }
    if (c >= 0x370 && c < 0x400) {  // Greek and Coptic
        if (c == 0x3AC) return 0x386;
        if (c >= 0x3AD && c <= 0x3AF) return c - 0x25;
        if (c == 0x3C2) return 0x3A3;  // final sigma
        if (c >= 0x3B1 && c <= 0x3CB) return c - 0x20;
        if (c == 0x3CC) return 0x38C;
        if (c == 0x3CD || c == 0x3CE) return c - 0x3F;
        if (c >= 0x3D8 && c <= 0x3EF) return pair_upper(c, true);
        return c;
    }
    if (c >= 0x400 && c < 0x530) {  // Cyrillic + Cyrillic Supplement
        if (c >= 0x430 && c <= 0x44F) return c - 0x20;
        if (c >= 0x450 && c <= 0x45F) return c - 0x50;
        if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0))
            return pair_upper(c, true);
        if (c >= 0x4C1 && c <= 0x4CE) return pair_upper(c, false);
        if (c == 0x4CF) return 0x4C0;
        return c;
    }
    if (c >= 0x561 && c <= 0x586) return c - 0x30;                     // Armenian
    if ((c >= 0x1E00 && c <= 0x1E95) || (c >= 0x1EA0 && c <= 0x1EFF))  // Latin Ext. Additional
        return pair_upper(c, true);
    if (c >= 0x2170 && c <= 0x217F) return c - 0x10;  // small Roman numerals
    if (c >= 0x24D0 && c <= 0x24E9) return c - 0x1A;  // circled small letters
    if (c >= 0xFF41 && c <= 0xFF5A) return c - 0x20;  // fullwidth Latin
    return c;
}

bool equal_ignore_case(std::string_view a, std::string_view b) {
    size_t i = 0;
    size_t j = 0;
    while (i < a.size() && j < b.size()) {
        if (upcase(next_code_point(a, i)) != upcase(next_code_point(b, j))) return false;
    }
    return i == a.size() && j == b.size();
}

std::string ascii_upper(std::string_view s) {
    std::string out(s);
    for (char& ch : out)
        if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 0x20);
    return out;
}

}  // namespace daxsmbd::server::vfs
