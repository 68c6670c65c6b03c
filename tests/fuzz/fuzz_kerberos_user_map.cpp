// libFuzzer target for the Kerberos user map parser (auth/kerberos_user_map.cpp): any text
// parses or fails with a message naming the origin; whatever parses maps its own principals.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "auth/kerberos_user_map.h"

using namespace daxsmbd::auth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto r = KerberosUserMap::parse(text, "fuzz", "EXAMPLE.COM");
    if (auto* e = std::get_if<KerberosUserMap::ParseError>(&r)) {
        if (e->message.rfind("fuzz:", 0) != 0) std::abort();
        return 0;
    }
    const auto& m = std::get<KerberosUserMap>(r);
    // The mapping itself never fails on arbitrary principals.
    (void)m.map(text);
    (void)m.map(std::string(text) + "@EXAMPLE.COM");
    return 0;
}
