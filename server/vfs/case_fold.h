// Case-insensitive name comparison the way Windows does it: both names are upper-cased
// code point by code point and compared (NTFS keeps an "upcase" table; there is no locale and no
// normalisation: "é" precomposed and "e" + combining acute stay different, as on Windows).
//
// Coverage of upcase() (Unicode simple uppercase mappings, BMP only): ASCII, Latin-1 Supplement
// (incl. ÿ -> Ÿ and µ -> Μ), Latin Extended-A, the regular pairs of Latin Extended-B, Greek and
// Coptic, Cyrillic (+ Supplement), Armenian, Latin Extended Additional, Roman numerals, circled
// Latin letters and fullwidth Latin. Not covered (compare exactly): everything else, including
// Georgian, Cherokee, Glagolitic and every non-BMP script. Deliberately unmapped although Unicode
// maps them: U+0131 dotless i and U+017F long s, so that "ı" or "ſ" never silently matches an
// ASCII "i" or "s" of another file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace daxsmbd::server::vfs {

// Decodes the code point starting at s[i] and advances i past it. A byte that does not start a
// valid, shortest-form UTF-8 sequence (or a surrogate / > U+10FFFF) decodes to 0xDC00 + byte and
// advances one byte, so that invalid names still compare byte-exactly and never equal a valid one.
char32_t next_code_point(std::string_view s, size_t& i);

// True when s is well-formed UTF-8 (no overlong forms, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Number of UTF-16 code units s takes on the wire (the unit of Windows' name length limits).
size_t utf16_length(std::string_view s);

// Simple uppercase mapping, see the coverage note above.
char32_t upcase(char32_t c);

// Equal after upcase() of every code point.
bool equal_ignore_case(std::string_view a, std::string_view b);

// ASCII-only upper-casing (EA names are 8-bit strings; MS-FSCC 2.4.16).
std::string ascii_upper(std::string_view s);

}  // namespace daxsmbd::server::vfs
