// The local user database: user name -> uid/gid and NT hash (MD4 of the UTF-16LE password).
// Plaintext passwords are never stored. A user without an NT hash (written as "-") cannot log on
// with NTLM; such users exist for Kerberos logons, which need the uid/gid but no password. The
// file is written atomically (temp file + rename) with mode 0600.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/result.h"

namespace daxsmbd::auth {

using NtHash = std::array<uint8_t, 16>;

// NT hash = MD4(UTF-16LE(password)) (MS-NLMP 3.3.1 NTOWFv1).
NtHash nt_hash_of_password(std::string_view password);

struct UserRecord {
    std::string name;  // as created; lookups are case-insensitive (Windows user names are)
    std::optional<NtHash> nt_hash;  // none: NTLM logons are refused (Kerberos-only user)
    uint32_t uid = 0;               // local uid files are created as (0 = the daemon's own)
    uint32_t gid = 0;
};

class UserDatabase {
  public:
    // Missing file = empty database. A malformed file or one readable by group/other is refused
    // with a message in `error`.
    static std::optional<UserDatabase> load(const std::string& path, std::string* error);

    const UserRecord* find(std::string_view name) const;  // case-insensitive
    std::vector<std::string> names() const;
    void set(UserRecord rec);  // add or replace
    bool remove(std::string_view name);
    // Writes the file atomically with mode 0600; false and `error` set on failure.
    bool save(std::string* error) const;
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    std::map<std::string, UserRecord> users_;  // key: lower-cased name
};

}  // namespace daxsmbd::auth
