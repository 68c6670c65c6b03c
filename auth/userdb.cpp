#include "auth/userdb.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "auth/crypto.h"
#include "protocol/bytes.h"

namespace daxsmbd::auth {

NtHash nt_hash_of_password(std::string_view password) {
    // MS-NLMP 3.3.1: NTOWFv1 = MD4(UNICODE(Passwd)).
    ByteVector utf16 = protocol::utf8_to_utf16le(password);
    Digest16 d = md4({bytes_of(utf16)});
    NtHash h;
    std::memcpy(h.data(), d.data(), 16);
    return h;
}

namespace {

std::string lower_ascii(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return out;
}

bool valid_name(std::string_view n) {
    if (n.empty()) return false;
    for (char c : n)
        if (c == ':' || c == '\n' || c == '\r' || c == '\0') return false;
    return n.front() != '#';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool parse_u32(std::string_view s, uint32_t* out) {
    if (s.empty() || s.size() > 10) return false;
    uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + uint64_t(c - '0');
    }
    if (v > 0xFFFFFFFFull) return false;
    *out = uint32_t(v);
    return true;
}

bool parse_hash(std::string_view s, NtHash* out) {
    if (s.size() != 32) return false;
    for (size_t i = 0; i < 16; ++i) {
        int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        (*out)[i] = uint8_t(hi << 4 | lo);
    }
    return true;
}

void set_error(std::string* error, std::string msg) {
    if (error) *error = std::move(msg);
}

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data.remove_prefix(size_t(n));
    }
    return true;
}

}  // namespace

std::optional<UserDatabase> UserDatabase::load(const std::string& path, std::string* error) {
    UserDatabase db;
    db.path_ = path;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT) return db;  // a missing file is an empty database
        set_error(error, path + ": " + std::strerror(errno));
        return std::nullopt;
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) {
        set_error(error, path + ": " + std::strerror(errno));
        ::close(fd);
        return std::nullopt;
    }
    if (!S_ISREG(st.st_mode)) {
        set_error(error, path + ": not a regular file");
        ::close(fd);
        return std::nullopt;
    }
    // NT hashes are password equivalents (pass-the-hash): refuse a file others can read or write.
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        char mode[8];
        std::snprintf(mode, sizeof(mode), "%04o", unsigned(st.st_mode & 07777));
        set_error(error, path + ": permissions " + mode +
                             " give access to group/other; run chmod 600 on it");
        ::close(fd);
        return std::nullopt;
    }
    std::string text;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR) continue;
            set_error(error, path + ": " + std::strerror(errno));
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0) break;
        text.append(buf, size_t(n));
    }
    ::close(fd);

    size_t line_no = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        size_t first = line.find_first_not_of(" \t");
        if (first == std::string_view::npos || line[first] == '#') continue;
        auto bad = [&](const char* why) {
            set_error(error, path + ":" + std::to_string(line_no) + ": " + why);
        };
        // name:uid:gid:hash
        std::string_view fields[4];
        size_t count = 0;
        for (size_t start = 0;;) {
            size_t colon = line.find(':', start);
            if (count < 4) fields[count] = line.substr(start, colon - start);
            ++count;
            if (colon == std::string_view::npos) break;
            start = colon + 1;
        }
        if (count != 4) {
            bad("expected name:uid:gid:nthash");
            return std::nullopt;
        }
        UserRecord rec;
        rec.name = std::string(fields[0]);
        if (!valid_name(rec.name)) {
            bad("invalid user name");
            return std::nullopt;
        }
        if (!parse_u32(fields[1], &rec.uid) || !parse_u32(fields[2], &rec.gid)) {
            bad("uid and gid must be decimal numbers");
            return std::nullopt;
        }
        if (fields[3] != "-") {
            NtHash h;
            if (!parse_hash(fields[3], &h)) {
                bad("NT hash must be 32 hex digits or '-' (no password)");
                return std::nullopt;
            }
            rec.nt_hash = h;
        }
        std::string key = lower_ascii(rec.name);
        if (db.users_.count(key)) {
            bad("duplicate user");
            return std::nullopt;
        }
        db.users_.emplace(std::move(key), std::move(rec));
    }
    return db;
}

const UserRecord* UserDatabase::find(std::string_view name) const {
    auto it = users_.find(lower_ascii(name));
    return it == users_.end() ? nullptr : &it->second;
}

std::vector<std::string> UserDatabase::names() const {
    std::vector<std::string> out;
    out.reserve(users_.size());
    for (const auto& [key, rec] : users_)
        out.push_back(rec.name);
    return out;
}

void UserDatabase::set(UserRecord rec) {
    std::string key = lower_ascii(rec.name);
    users_.insert_or_assign(std::move(key), std::move(rec));
}

bool UserDatabase::remove(std::string_view name) {
    return users_.erase(lower_ascii(name)) > 0;
}

bool UserDatabase::save(std::string* error) const {
    if (path_.empty()) {
        set_error(error, "user database has no path");
        return false;
    }
    std::string text =
        "# daxsmbd users: name:uid:gid:nthash (MD4 of the UTF-16LE password; '-': none)\n";
    static const char hex[] = "0123456789abcdef";
    for (const auto& [key, rec] : users_) {
        if (!valid_name(rec.name)) {
            set_error(error, "invalid user name: " + rec.name);
            return false;
        }
        text += rec.name;
        text += ':' + std::to_string(rec.uid) + ':' + std::to_string(rec.gid) + ':';
        if (rec.nt_hash) {
            for (uint8_t b : *rec.nt_hash) {
                text += hex[b >> 4];
                text += hex[b & 15];
            }
        } else {
            text += '-';
        }
        text += '\n';
    }
    // Temp file in the same directory so that rename() is atomic; mkstemp creates it 0600.
    std::string tmpl = path_ + ".tmp.XXXXXX";
    int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd < 0) {
        set_error(error, tmpl + ": " + std::strerror(errno));
        return false;
    }
    auto fail = [&](const std::string& what) {
        set_error(error, what + ": " + std::strerror(errno));
        ::close(fd);
        ::unlink(tmpl.c_str());
        return false;
    };
    if (::fchmod(fd, 0600) != 0) return fail(tmpl);
    if (!write_all(fd, text)) return fail(tmpl);
    if (::fsync(fd) != 0) return fail(tmpl);
    if (::close(fd) != 0) {
        set_error(error, tmpl + ": " + std::strerror(errno));
        ::unlink(tmpl.c_str());
        return false;
    }
    if (::rename(tmpl.c_str(), path_.c_str()) != 0) {
        set_error(error, path_ + ": " + std::strerror(errno));
        ::unlink(tmpl.c_str());
        return false;
    }
    // Make the rename itself durable.
    size_t slash = path_.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return true;
}

}  // namespace daxsmbd::auth
