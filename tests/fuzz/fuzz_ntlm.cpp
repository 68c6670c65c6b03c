// libFuzzer target for the NTLM message parsers: NEGOTIATE and AUTHENTICATE on the server,
// CHALLENGE on the client.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "auth/ntlm.h"
#include "auth/userdb.h"

using namespace daxsmbd;
using namespace daxsmbd::auth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    protocol::Bytes in(reinterpret_cast<const std::byte*>(data + 1), size - 1);
    const NtHash h = nt_hash_of_password("pw");
    NtlmServer server({"SRV", "DOM", "srv.example", "example"},
                      [h](std::string_view) -> std::optional<NtHash> { return h; });
    switch (data[0] % 3) {
        case 0:
            (void)server.challenge(in);
            break;
        case 1: {
            // A valid NEGOTIATE first, so that the AUTHENTICATE parser is reached. The input
            // gets the AUTHENTICATE signature so most inputs pass the header check.
            NtlmClient client(NtlmCredentials::with_password("u", "pw", "DOM", "WS"));
            auto neg = client.negotiate();
            if (!server.challenge(protocol::Bytes(neg.data(), neg.size())).ok()) __builtin_trap();
            protocol::ByteVector msg(in.begin(), in.end());
            if (msg.size() >= 12) {
                std::memcpy(msg.data(), "NTLMSSP\0", 8);
                msg[8] = std::byte{3};
                msg[9] = msg[10] = msg[11] = std::byte{0};
            }
            (void)server.authenticate(protocol::Bytes(msg.data(), msg.size()));
            break;
        }
        case 2: {
            NtlmClient client(NtlmCredentials::with_password("u", "pw", "DOM", "WS"));
            (void)client.negotiate();
            auto auth = client.authenticate(in);
            if (auth.ok()) {
                auto types = protocol::ByteVector(4, std::byte{0x30});
                (void)client.mech_list_mic_sign(protocol::Bytes(types.data(), types.size()));
            }
            break;
        }
    }
    return 0;
}
