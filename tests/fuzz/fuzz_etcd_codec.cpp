// libFuzzer target: every etcd v3 JSON gateway response decoder and the base64 decoder.
#include <cstdlib>
#include <string_view>

#include "server/cluster/etcd_codec.h"

using namespace daxsmbd::cluster;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    (void)decode_range(in);
    (void)decode_put(in);
    (void)decode_txn(in);
    (void)decode_lease_grant(in);
    (void)decode_lease_keepalive(in);
    (void)decode_lease_revoke(in);
    (void)decode_watch(in);
    if (auto raw = base64_decode(in)) {
        if (base64_encode(*raw) != in) std::abort();
    }
    return 0;
}
