// libFuzzer target for protocol/srvsvc.h and protocol/ndr.h: the dispatcher on every served
// opnum, every stub parser, and parse -> serialize -> parse round trips of what parsed.
#include <cstddef>
#include <cstdint>

#include "protocol/srvsvc.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::protocol::rpc;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

const StaticSrvsvcProvider& provider() {
    static const StaticSrvsvcProvider p(
        {{"IPC$", stype::kIpc | stype::kSpecial, "IPC Service", "", 0, kUnlimitedUses, 0, 0},
         {"data", stype::kDiskTree, "Data", "C:\\data", 0, 10, 1, 0x30},
         {"donn\xC3\xA9"
          "es",
          stype::kDiskTree, "", "C:\\d", 0, kUnlimitedUses, 0, 0}},
        ServerInfo{kPlatformIdNt, "FUZZ", 10, 0, sv_type::kDefault, "fuzz"});
    return p;
}

template <class T>
void round_trip(Bytes data) {
    auto a = T::parse(data);
    if (!a) return;
    auto bytes = a->serialize();
    auto b = T::parse(bytes);
    check(b.ok());
    check(b->serialize() == bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t size) {
    Bytes data(reinterpret_cast<const std::byte*>(raw), size);
    for (uint16_t opnum : {srvsvc_opnum::kNetrShareEnum, srvsvc_opnum::kNetrShareGetInfo,
                           srvsvc_opnum::kNetrServerGetInfo}) {
        auto r = srvsvc_dispatch(opnum, data, provider());
        // Whatever the server answers must decode with our own client-side parsers.
        if (r && opnum == srvsvc_opnum::kNetrShareEnum)
            check(NetrShareEnumResponse::parse(*r).ok());
        if (r && opnum == srvsvc_opnum::kNetrShareGetInfo)
            check(NetrShareGetInfoResponse::parse(*r).ok());
        if (r && opnum == srvsvc_opnum::kNetrServerGetInfo)
            check(NetrServerGetInfoResponse::parse(*r).ok());
    }
    round_trip<NetrShareEnumRequest>(data);
    round_trip<NetrShareEnumResponse>(data);
    round_trip<NetrShareGetInfoRequest>(data);
    round_trip<NetrShareGetInfoResponse>(data);
    round_trip<NetrServerGetInfoRequest>(data);
    round_trip<NetrServerGetInfoResponse>(data);
    return 0;
}
