// libFuzzer target for the SPNEGO/DER codecs and the SpnegoAcceptor state machine.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "auth/spnego.h"
#include "auth/userdb.h"

using namespace daxsmbd;
using namespace daxsmbd::auth;

namespace {

std::unique_ptr<AcceptorMechanism> ntlm() {
    NtHash h = nt_hash_of_password("pw");
    return std::make_unique<NtlmMechanism>(
        ServerIdentity{"SRV", "DOM", "srv.example", "example"},
        [h](std::string_view) -> std::optional<NtHash> { return h; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    protocol::Bytes in(reinterpret_cast<const std::byte*>(data), size);

    if (auto t = der::read_tlv(in); t.ok() && t->encoding.size() > size) std::abort();

    if (auto init = parse_neg_token_init(in); init.ok()) {
        // Whatever parsed re-encodes and parses back to the same mechanism list.
        auto again =
            encode_neg_token_init(init->mech_types, init->mech_token.value_or(protocol::Bytes{}),
                                  init->mech_list_mic.value_or(protocol::Bytes{}));
        auto re = parse_neg_token_init(protocol::Bytes(again.data(), again.size()));
        if (!re.ok() || re->mech_types != init->mech_types) std::abort();
    }
    if (auto resp = parse_neg_token_resp(in); resp.ok()) {
        auto again = encode_neg_token_resp(*resp);
        auto re = parse_neg_token_resp(protocol::Bytes(again.data(), again.size()));
        if (!re.ok() || re->neg_state != resp->neg_state ||
            re->supported_mech != resp->supported_mech ||
            re->response_token.has_value() != resp->response_token.has_value() ||
            re->mech_list_mic.has_value() != resp->mech_list_mic.has_value())
            std::abort();
    }

    // The acceptor, fed the input as up to three legs separated by the byte 0xFF 0xFE.
    std::vector<std::unique_ptr<AcceptorMechanism>> mechs;
    mechs.push_back(ntlm());
    SpnegoAcceptor acc(std::move(mechs));
    size_t start = 0;
    for (int leg = 0; leg < 3 && start <= size; ++leg) {
        size_t end = start;
        while (end + 1 < size && !(data[end] == 0xFF && data[end + 1] == 0xFE))
            ++end;
        if (end + 1 >= size) end = size;
        auto r = acc.step(in.subspan(start, end - start));
        if (!r.ok() || r->done) break;
        start = end + 2;
    }
    return 0;
}
