#include "auth/kerberos_user_map.h"

namespace daxsmbd::auth {

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && is_space(s.back()))
        s.remove_suffix(1);
    return s;
}

// The realm part of "name@REALM": after the last unescaped '@' (RFC 4120 principal syntax
// escapes '@' inside a component with '\'). npos when there is none.
size_t realm_separator(std::string_view principal) {
    size_t at = std::string_view::npos;
    for (size_t i = 0; i < principal.size(); ++i) {
        if (principal[i] == '\\') {
            ++i;
            continue;
        }
        if (principal[i] == '@') at = i;
    }
    return at;
}

}  // namespace

std::variant<KerberosUserMap, KerberosUserMap::ParseError> KerberosUserMap::parse(
    std::string_view text, std::string_view origin, std::string realm) {
    KerberosUserMap m(std::move(realm));
    size_t pos = 0, line_no = 0;
    auto fail = [&](const std::string& msg) {
        return ParseError{std::string(origin) + ":" + std::to_string(line_no) + ": " + msg};
    };
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view line = trim(text.substr(pos, eol - pos));
        pos = eol + 1;
        ++line_no;
        if (line.empty() || line.front() == '#' || line.front() == ';') continue;
        const size_t eq = line.find('=');
        if (eq == std::string_view::npos) return fail("expected 'localuser = principal ...'");
        const std::string_view user = trim(line.substr(0, eq));
        if (user.empty()) return fail("missing local user name before '='");
        if (user.find_first_of(" \t,@/") != std::string_view::npos)
            return fail("'" + std::string(user) + "' is not a local user name");
        std::string_view rest = line.substr(eq + 1);
        size_t count = 0;
        while (!rest.empty()) {
            const size_t start = rest.find_first_not_of(" \t\r\f\v,");
            if (start == std::string_view::npos) break;
            rest.remove_prefix(start);
            const size_t end = rest.find_first_of(" \t\r\f\v,");
            std::string_view principal = rest.substr(0, end);
            rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
            const size_t at = realm_separator(principal);
            if (at == std::string_view::npos || at == 0 || at + 1 == principal.size())
                return fail("'" + std::string(principal) + "' is not a principal name@REALM");
            m.add(std::string(principal), std::string(user));
            ++count;
        }
        if (count == 0) return fail("no principal after '='");
    }
    return m;
}

void KerberosUserMap::add(std::string principal, std::string local_user) {
    explicit_.insert_or_assign(std::move(principal), std::move(local_user));
}

std::optional<std::string> KerberosUserMap::map(std::string_view principal) const {
    if (auto it = explicit_.find(principal); it != explicit_.end()) return it->second;
    const size_t at = realm_separator(principal);
    if (at == std::string_view::npos || at == 0 || realm_.empty()) return std::nullopt;
    const std::string_view name = principal.substr(0, at);
    if (principal.substr(at + 1) != realm_) return std::nullopt;
    // One component only, and nothing escaped: "host/x" or "a\@b" are not plain user names.
    if (name.find_first_of("/\\") != std::string_view::npos) return std::nullopt;
    return std::string(name);
}

}  // namespace daxsmbd::auth
