#include "server/vfs/wildcard.h"

#include <cstdint>
#include <vector>

#include "server/vfs/case_fold.h"

namespace daxsmbd::server::vfs {

namespace {

std::vector<char32_t> decode(std::string_view s, bool fold) {
    std::vector<char32_t> out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        char32_t c = next_code_point(s, i);
        out.push_back(fold ? upcase(c) : c);
    }
    return out;
}

}  // namespace

bool has_wildcards(std::string_view pattern) {
    return pattern.find_first_of("\"*<>?") != std::string_view::npos;
}

bool wildcard_match(std::string_view pattern, std::string_view name, bool case_insensitive) {
    // MS-FSA 2.1.4.4 part 1.
    if (name.empty() || pattern.empty()) return name.empty() && pattern.empty();
    if (pattern == "*" || pattern == "*.*") return true;

    const std::vector<char32_t> n = decode(name, case_insensitive);
    const size_t N = n.size();
    // A run of '*' and '<' that contains a '*' matches exactly what one '*' matches; collapsing
    // it keeps hostile patterns ("****...") cheap. Literals and '?' each need one character of
    // the name, so a pattern with more of them than the name has characters cannot match.
    std::vector<char32_t> p;
    p.reserve(pattern.size());
    size_t mandatory = 0;
    for (char32_t c : decode(pattern, case_insensitive)) {
        if ((c == '*' || c == '<') && !p.empty() && (p.back() == '*' || p.back() == '<') &&
            (c == '*' || p.back() == '*')) {
            p.back() = '*';
            continue;
        }
        if (c != '*' && c != '<' && c != '>' && c != '"') ++mandatory;
        p.push_back(c);
    }
    if (mandatory > N) return false;
    size_t last_dot = N;  // N = the name has no '.'
    for (size_t k = N; k-- > 0;) {
        if (n[k] == '.') {
            last_dot = k;
            break;
        }
    }

    // Dynamic programming from the end of the pattern: next[j] says whether p[i+1..] matches
    // n[j..]; cur[j] the same for p[i..].
    std::vector<char> next(N + 1, 0), cur(N + 1, 0);
    next[N] = 1;  // empty pattern matches only the empty rest
    for (size_t i = p.size(); i-- > 0;) {
        const char32_t c = p[i];
        switch (c) {
            case '*': {
                char any = 0;
                for (size_t j = N + 1; j-- > 0;) {
                    any |= next[j];
                    cur[j] = any;
                }
                break;
            }
            case '<': {
                // From j, '<' may end anywhere in [j, limit]: limit is just past the final dot
                // when that dot is at or after j, else the end of the name. cnt[] is a prefix
                // count of next[] so that each range test is O(1).
                std::vector<uint32_t> cnt(N + 2, 0);
                for (size_t k = 0; k <= N; ++k)
                    cnt[k + 1] = cnt[k] + (next[k] ? 1 : 0);
                for (size_t j = 0; j <= N; ++j) {
                    const size_t limit = (last_dot < N && j <= last_dot) ? last_dot + 1 : N;
                    cur[j] = cnt[limit + 1] > cnt[j] ? 1 : 0;
                }
                break;
            }
            case '?':
                for (size_t j = 0; j <= N; ++j)
                    cur[j] = j < N ? next[j + 1] : 0;
                break;
            case '>':
                for (size_t j = 0; j <= N; ++j) {
                    if (j == N)
                        cur[j] = next[N];
                    else if (n[j] == '.')
                        cur[j] = next[j] | (j + 1 == N ? next[N] : 0);
                    else
                        cur[j] = next[j + 1];
                }
                break;
            case '"':
                for (size_t j = 0; j <= N; ++j) {
                    if (j == N)
                        cur[j] = next[N];
                    else
                        cur[j] = n[j] == '.' ? next[j + 1] : 0;
                }
                break;
            default:
                for (size_t j = 0; j <= N; ++j)
                    cur[j] = (j < N && n[j] == c) ? next[j + 1] : 0;
                break;
        }
        next.swap(cur);
    }
    return next[0] != 0;
}

}  // namespace daxsmbd::server::vfs
