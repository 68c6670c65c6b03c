// What identifies an application instance across its opens (MS-SMB2 3.3.5.9.13): the version a
// 3.1.1 client attaches to an AppInstanceId.
#pragma once

#include <compare>
#include <cstdint>

namespace daxsmbd::server {

// An application instance's version (MS-SMB2 2.2.13.2.15), ordered by its high part, then
// its low part.
struct AppInstanceVersion {
    uint64_t high = 0;
    uint64_t low = 0;
    auto operator<=>(const AppInstanceVersion&) const = default;
};

}  // namespace daxsmbd::server
