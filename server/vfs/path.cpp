#include "server/vfs/path.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "server/errno_status.h"
#include "server/vfs/case_fold.h"
#include "server/vfs/open.h"

namespace daxsmbd::server::vfs {

namespace {

// MS-FSCC 2.1.5.2: characters never allowed in a file name (besides '\' and ':', which the
// parser consumes as separators before this check).
bool is_invalid_name_char(unsigned char c) {
    return c < 0x20 || c == '"' || c == '*' || c == '<' || c == '>' || c == '?' || c == '|' ||
           c == '/';
}

NtStatus check_stream_part(std::string_view s) {
    // MS-FSCC 2.1.5.3 / 2.1.5.4: '\', '/', ':' and NUL are illegal ('\' and ':' cannot reach
    // here).
    for (unsigned char c : s)
        if (c == '/' || c == 0) return NtStatus::ObjectNameInvalid;
    if (s.size() > kMaxComponentBytes) return NtStatus::NameTooLong;
    return NtStatus::Success;
}

std::string join(std::string_view a, std::string_view b) {
    if (a.empty()) return std::string(b);
    std::string r;
    r.reserve(a.size() + 1 + b.size());
    r.append(a).append("/").append(b);
    return r;
}

}  // namespace

std::string SmbPath::joined() const {
    std::string r;
    for (const auto& c : components) {
        if (!r.empty()) r += '/';
        r += c;
    }
    return r;
}

NtStatus check_file_name(std::string_view name) {
    if (name.empty() || name == "." || name == "..") return NtStatus::ObjectNameInvalid;
    for (unsigned char c : name)
        if (is_invalid_name_char(c) || c == '\\' || c == ':') return NtStatus::ObjectNameInvalid;
    if (name.size() > kMaxComponentBytes) return NtStatus::NameTooLong;
    return NtStatus::Success;
}

bool is_reserved_root_name(const ShareRoot& root, std::string_view name) {
    const std::string& r = root.options().reserved_root_name;
    return !r.empty() && equal_ignore_case(r, name);
}

bool is_representable_name(std::string_view name) {
    return check_file_name(name) == NtStatus::Success && is_valid_utf8(name);
}

Result<SmbPath> parse_smb_path(std::string_view path) {
    if (!is_valid_utf8(path)) return Error(NtStatus::ObjectNameInvalid);
    if (utf16_length(path) > kMaxPathUtf16) return Error(NtStatus::NameTooLong);

    SmbPath out;
    if (!path.empty() && path.front() == '\\') path.remove_prefix(1);
    if (path.empty()) return out;
    if (path.back() == '\\') {
        out.trailing_separator = true;
        path.remove_suffix(1);
        if (path.empty()) return Error(NtStatus::ObjectNameInvalid);  // "\\" = empty component
    }

    size_t start = 0;
    for (;;) {
        size_t end = path.find('\\', start);
        const bool last = end == std::string_view::npos;
        std::string_view comp = path.substr(start, last ? std::string_view::npos : end - start);
        if (comp.empty()) return Error(NtStatus::ObjectNameInvalid);

        size_t colon = comp.find(':');
        if (colon != std::string_view::npos) {
            if (!last || out.trailing_separator) return Error(NtStatus::ObjectNameInvalid);
            std::string_view base = comp.substr(0, colon);
            std::string_view rest = comp.substr(colon + 1);
            size_t colon2 = rest.find(':');
            std::string_view stream = rest.substr(0, colon2);
            std::string_view type;
            if (colon2 != std::string_view::npos) {
                type = rest.substr(colon2 + 1);
                if (type.empty() || type.find(':') != std::string_view::npos)
                    return Error(NtStatus::ObjectNameInvalid);
                if (!equal_ignore_case(type, "$DATA")) return Error(NtStatus::ObjectNameInvalid);
            } else if (stream.empty()) {
                return Error(NtStatus::ObjectNameInvalid);  // "name:" with nothing after it
            }
            if (NtStatus s = check_stream_part(stream); s != NtStatus::Success) return Error(s);
            if (NtStatus s = check_file_name(base); s != NtStatus::Success) return Error(s);
            out.components.emplace_back(base);
            out.stream_name = std::string(stream);
            out.stream_type = std::string(type);
            break;
        }

        if (comp == ".") {
            // MS-FSCC 2.1.5.1: refers to the current directory.
        } else if (comp == "..") {
            if (out.components.empty()) return Error(NtStatus::ObjectPathSyntaxBad);
            out.components.pop_back();
        } else {
            if (NtStatus s = check_file_name(comp); s != NtStatus::Success) return Error(s);
            out.components.emplace_back(comp);
        }
        if (last) break;
        start = end + 1;
    }
    return out;
}

Result<std::optional<std::string>> find_name_ignore_case(const ShareRoot& root,
                                                         std::string_view dir_rel,
                                                         std::string_view name) {
    std::string dir = dir_rel.empty() ? std::string(".") : std::string(dir_rel);
    int fd = openat2_beneath(root.fd(), dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return Error(errno_to_status_for_parent(-fd));
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
        int err = errno;
        ::close(fd);
        return Error(errno_to_status(err));
    }
    std::optional<std::string> best;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
        std::string_view n = e->d_name;
        if (n == "." || n == "..") continue;
        if (!equal_ignore_case(n, name)) continue;
        if (!best || n < *best) best = std::string(n);
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return Error(errno_to_status(err));
    return best;
}

Result<ResolvedPath> resolve_path(const ShareRoot& root, const SmbPath& path) {
    ResolvedPath out;
    if (path.is_root()) {
        out.exists = true;
        return out;
    }
    std::string prefix;  // on-disk path resolved so far
    const size_t n = path.components.size();
    for (size_t i = 0; i < n; ++i) {
        const std::string& comp = path.components[i];
        const bool last = i + 1 == n;
        if (i == 0 && is_reserved_root_name(root, comp)) return Error(NtStatus::AccessDenied);
        // Directories on the way must be directories; the final name too when the client wrote
        // a trailing backslash.
        const int flags = O_PATH | ((!last || path.trailing_separator) ? O_DIRECTORY : 0);

        std::string cand = join(prefix, comp);
        int fd = openat2_beneath(root.fd(), cand.c_str(), flags);
        if (fd < 0 && fd == -ENOENT && !root.case_sensitive()) {
            DAX_TRY(auto found, find_name_ignore_case(root, prefix, comp));
            if (found && *found != comp) {
                cand = join(prefix, *found);
                fd = openat2_beneath(root.fd(), cand.c_str(), flags);
            }
        }
        if (fd >= 0) {
            ::close(fd);
            if (last) {
                out.parent = prefix;
                out.name = cand.substr(prefix.empty() ? 0 : prefix.size() + 1);
                out.rel = std::move(cand);
                out.exists = true;
                return out;
            }
            prefix = std::move(cand);
            continue;
        }
        const int err = -fd;
        if (last && err == ENOENT) {
            out.parent = prefix;
            out.name = comp;
            out.rel = join(prefix, comp);
            out.exists = false;
            return out;
        }
        if (last && err == ENOTDIR && path.trailing_separator) {
            return Error(NtStatus::ObjectNameInvalid);
        }
        if (err == ENOENT || err == ENOTDIR) return Error(NtStatus::ObjectPathNotFound);
        return Error(errno_to_status(err));
    }
    return out;  // not reached: the loop returns on the last component
}

}  // namespace daxsmbd::server::vfs
