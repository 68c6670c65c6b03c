#include "server/vfs/ea.h"

#include <sys/xattr.h>

#include <cerrno>

#include "server/errno_status.h"
#include "server/vfs/case_fold.h"
#include "server/vfs/metadata.h"
#include "server/vfs/xattr_util.h"

namespace daxsmbd::server::vfs {

namespace {

constexpr std::string_view kUserPrefix = "user.";
constexpr size_t kMaxXattrName = 255;  // XATTR_NAME_MAX
constexpr size_t kMaxEaValue = 65535;  // EaValueLength is 16 bits

NtStatus xattr_error(int err) {
    switch (err) {
        case ENOTSUP:
            return NtStatus::EasNotSupported;
        case ENOSPC:
        case E2BIG:
        case ERANGE:
            return NtStatus::EaTooLarge;
        default:
            return errno_to_status(err);
    }
}

// Names of all xattrs `list_xattrs` (a listxattr call: buffer, size -> size or -errno) reports;
// empty if the file system has none.
template <class ListXattrs>
Result<std::vector<std::string>> xattr_names_of(ListXattrs list_xattrs) {
    std::vector<char> buf;
    for (int attempt = 0; attempt < 8; ++attempt) {
        long n = list_xattrs(nullptr, 0);
        if (n == -ENOTSUP) return std::vector<std::string>{};
        if (n < 0) return Error(errno_to_status(static_cast<int>(-n)));
        if (n == 0) return std::vector<std::string>{};
        buf.resize(static_cast<size_t>(n));
        n = list_xattrs(buf.data(), buf.size());
        if (n == -ERANGE) continue;  // grew in between
        if (n < 0) return Error(errno_to_status(static_cast<int>(-n)));
        std::vector<std::string> names;
        size_t pos = 0;
        while (pos < static_cast<size_t>(n)) {
            std::string name(buf.data() + pos);
            pos += name.size() + 1;
            if (!name.empty()) names.push_back(std::move(name));
        }
        return names;
    }
    return Error(NtStatus::UnexpectedIoError);
}

// Names of all xattrs of fd; empty if the file system has none.
Result<std::vector<std::string>> xattr_names(int fd) {
    return xattr_names_of(
        [fd](char* buf, size_t size) { return detail::fd_listxattr(fd, buf, size); });
}

// Value of one xattr; nullopt if it vanished.
Result<std::optional<std::vector<std::byte>>> xattr_value(int fd, const std::string& name) {
    std::vector<std::byte> v;
    for (int attempt = 0; attempt < 8; ++attempt) {
        long n = detail::fd_getxattr(fd, name.c_str(), nullptr, 0);
        if (n == -ENODATA) return std::optional<std::vector<std::byte>>();
        if (n < 0) return Error(xattr_error(static_cast<int>(-n)));
        v.resize(static_cast<size_t>(n));
        if (n == 0) return std::optional<std::vector<std::byte>>(std::move(v));
        n = detail::fd_getxattr(fd, name.c_str(), v.data(), v.size());
        if (n == -ERANGE) continue;
        if (n == -ENODATA) return std::optional<std::vector<std::byte>>();
        if (n < 0) return Error(xattr_error(static_cast<int>(-n)));
        v.resize(static_cast<size_t>(n));
        return std::optional<std::vector<std::byte>>(std::move(v));
    }
    return Error(NtStatus::UnexpectedIoError);
}

// The EA name of a user xattr that is shown as an EA, or "" for one that is not.
std::string_view ea_name_of(std::string_view xattr) {
    if (xattr.substr(0, kUserPrefix.size()) != kUserPrefix) return {};
    if (xattr.substr(0, kPrivateXattrPrefix.size()) == kPrivateXattrPrefix) return {};
    std::string_view name = xattr.substr(kUserPrefix.size());
    return is_valid_ea_name(name) ? name : std::string_view{};
}

bool same_ea_name(std::string_view a, std::string_view b) {
    return ascii_upper(a) == ascii_upper(b);
}

// Writes one EA (already validated). `existing` is the xattr list of the file.
Status apply_ea(int fd, std::string_view name, std::span<const std::byte> value,
                const std::vector<std::string>& existing) {
    const std::string target = std::string(kUserPrefix) + ascii_upper(name);
    for (const auto& x : existing) {
        std::string_view en = ea_name_of(x);
        if (en.empty() || !same_ea_name(en, name)) continue;
        // Remove differently spelled duplicates; the upper-case one is overwritten or removed
        // below.
        if (x != target || value.empty()) {
            long r = detail::fd_removexattr(fd, x.c_str());
            if (r < 0 && r != -ENODATA) return Error(xattr_error(static_cast<int>(-r)));
        }
    }
    if (value.empty()) return {};
    long r = detail::fd_setxattr(fd, target.c_str(), value.data(), value.size(), 0);
    if (r < 0) return Error(xattr_error(static_cast<int>(-r)));
    return {};
}

}  // namespace

bool is_valid_ea_name(std::string_view name) {
    if (name.empty() || name.size() > 254 || kUserPrefix.size() + name.size() > kMaxXattrName)
        return false;
    for (unsigned char c : name) {
        if (c < 0x20) return false;
        switch (c) {
            case '\\':
            case '/':
            case ':':
            case '*':
            case '?':
            case '"':
            case '<':
            case '>':
            case '|':
            case ',':
            case '+':
            case '=':
            case '[':
            case ']':
            case ';':
                return false;
            default:
                break;
        }
    }
    return true;
}

namespace {

// Length of a FILE_FULL_EA_INFORMATION chain (MS-FSCC 2.4.16) of entries with these name and
// value lengths, in this order: each entry is 8 bytes + name + NUL + value, padded to 4 bytes
// except the last.
struct EaLengths {
    size_t name = 0;
    size_t value = 0;
};
uint32_t chain_size(std::span<const EaLengths> eas) {
    uint64_t total = 0;
    for (size_t i = 0; i < eas.size(); ++i) {
        uint64_t entry = 8 + eas[i].name + 1 + eas[i].value;
        if (i + 1 < eas.size()) entry = (entry + 3) & ~uint64_t{3};
        total += entry;
    }
    return total > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(total);
}

}  // namespace

uint32_t ea_list_size(std::span<const Ea> eas) {
    std::vector<EaLengths> lengths;
    lengths.reserve(eas.size());
    for (const auto& ea : eas)
        lengths.push_back({ea.name.size(), ea.value.size()});
    return chain_size(lengths);
}

Result<std::vector<Ea>> list_eas(int fd) {
    DAX_TRY(std::vector<std::string> names, xattr_names(fd));
    std::vector<Ea> out;
    for (const auto& x : names) {
        std::string_view en = ea_name_of(x);
        if (en.empty()) continue;
        DAX_TRY(auto value, xattr_value(fd, x));
        if (!value || value->size() > kMaxEaValue) continue;  // vanished / not representable
        // An empty value cannot exist as an SMB EA (length 0 means "delete").
        if (value->empty()) continue;
        out.push_back(Ea{std::string(en), std::move(*value), 0});
    }
    return out;
}

Result<std::optional<Ea>> get_ea(int fd, std::string_view name) {
    if (!is_valid_ea_name(name)) return Error(NtStatus::InvalidEaName);
    // Fast path: the canonical upper-case spelling.
    const std::string canonical = std::string(kUserPrefix) + ascii_upper(name);
    DAX_TRY(auto value, xattr_value(fd, canonical));
    if (value && !value->empty() && value->size() <= kMaxEaValue)
        return std::optional<Ea>(Ea{ascii_upper(name), std::move(*value), 0});
    DAX_TRY(std::vector<Ea> all, list_eas(fd));
    for (auto& ea : all)
        if (same_ea_name(ea.name, name)) return std::optional<Ea>(std::move(ea));
    return std::optional<Ea>();
}

Status set_ea(int fd, std::string_view name, std::span<const std::byte> value) {
    Ea ea{std::string(name), std::vector<std::byte>(value.begin(), value.end()), 0};
    return set_eas(fd, std::span<const Ea>(&ea, 1));
}

Status set_eas(int fd, std::span<const Ea> eas) {
    for (const auto& ea : eas) {
        if (!is_valid_ea_name(ea.name)) return Error(NtStatus::InvalidEaName);
        if (ea.value.size() > kMaxEaValue) return Error(NtStatus::EaTooLarge);
    }
    // Simulate the list after all changes to enforce the MS-FSA size limit up front.
    DAX_TRY(std::vector<Ea> current, list_eas(fd));
    for (const auto& ea : eas) {
        std::erase_if(current, [&](const Ea& c) { return same_ea_name(c.name, ea.name); });
        if (!ea.value.empty()) current.push_back(Ea{ascii_upper(ea.name), ea.value, 0});
    }
    if (ea_list_size(current) > kMaxEaListSize) return Error(NtStatus::EaTooLarge);

    DAX_TRY(std::vector<std::string> names, xattr_names(fd));
    for (const auto& ea : eas) {
        DAX_CHECK(apply_ea(fd, ea.name, ea.value, names));
        // Keep `names` in step with what apply_ea did (removed spellings, added canonical).
        std::erase_if(names, [&](const std::string& x) {
            std::string_view en = ea_name_of(x);
            return !en.empty() && same_ea_name(en, ea.name);
        });
        if (!ea.value.empty()) names.push_back(std::string(kUserPrefix) + ascii_upper(ea.name));
    }
    return {};
}

Result<uint32_t> ea_size(int fd) {
    DAX_TRY(std::vector<Ea> all, list_eas(fd));
    return ea_list_size(all);
}

Result<uint32_t> ea_size_at(int dirfd, std::string_view name) {
    if (name.empty() || name == "." || name == ".." ||
        name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos)
        return Error(NtStatus::ObjectNameInvalid);
    const std::string entry(name);
    DAX_TRY(std::vector<std::string> names, xattr_names_of([&](char* buf, size_t size) {
                return detail::at_llistxattr(dirfd, entry.c_str(), buf, size);
            }));
    // The EAs list_eas() would report, in the same order (the padding depends on which is last).
    std::vector<EaLengths> lengths;
    for (const auto& x : names) {
        std::string_view en = ea_name_of(x);
        if (en.empty()) continue;
        long n = detail::at_lgetxattr(dirfd, entry.c_str(), x.c_str(), nullptr, 0);
        if (n == -ENODATA) continue;  // vanished
        if (n < 0) return Error(xattr_error(static_cast<int>(-n)));
        // An empty value is no SMB EA; a longer one than EaValueLength holds is not shown.
        if (n == 0 || static_cast<size_t>(n) > kMaxEaValue) continue;
        lengths.push_back({en.size(), static_cast<size_t>(n)});
    }
    return chain_size(lengths);
}

}  // namespace daxsmbd::server::vfs
