// Which local user an authenticated Kerberos principal logs on as. By default "name@REALM" is
// the local user "name" when REALM is the server's own realm and "name" has a single component
// (no '/': service principals such as host/x@REALM are not users). Everything else comes from
// an explicit map: lines "localuser = principal [principal ...]" (the layout of Samba's
// "username map"); an explicit entry wins over the default rule. Principals compare exactly
// (Kerberos names and realms are case-sensitive).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace daxsmbd::auth {

class KerberosUserMap {
  public:
    KerberosUserMap() = default;
    explicit KerberosUserMap(std::string realm) : realm_(std::move(realm)) {}

    // Parses the text of a map file; `origin` names it in errors ("FILE:LINE: message").
    // '#' and ';' start comment lines; principals are separated by spaces or commas.
    struct ParseError {
        std::string message;
    };
    static std::variant<KerberosUserMap, ParseError> parse(std::string_view text,
                                                           std::string_view origin,
                                                           std::string realm);

    // Adds principal -> user (a later entry for the same principal replaces the earlier one).
    void add(std::string principal, std::string local_user);

    // The local user name for `principal`, or nullopt when it maps to no one.
    std::optional<std::string> map(std::string_view principal) const;

    const std::string& realm() const { return realm_; }
    size_t size() const { return explicit_.size(); }

  private:
    std::string realm_;
    std::map<std::string, std::string, std::less<>> explicit_;
};

}  // namespace daxsmbd::auth
