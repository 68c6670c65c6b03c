// libFuzzer target: every etcd v3 JSON gateway response decoder, the base64 decoder, the
// endpoint URL parser, the streaming-reply splitter and the cluster's owner records. The whole
// input goes to each; the splitter also gets it cut at points taken from the input itself, and
// must find the same objects however it is cut.
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/cluster/cluster_node.h"
#include "server/cluster/etcd_codec.h"

using namespace daxsmbd::cluster;

namespace {

void split_both_ways(std::string_view in) {
    JsonObjectSplitter whole;
    std::vector<std::string> a;
    const bool ok_whole = whole.feed(in, a);
    JsonObjectSplitter pieces;
    std::vector<std::string> b;
    bool ok_pieces = true;
    size_t i = 0;
    while (i < in.size() && ok_pieces) {
        const size_t n = 1 + static_cast<unsigned char>(in[i]) % 7;
        ok_pieces = pieces.feed(in.substr(i, n), b);
        i += n;
    }
    if (ok_whole != ok_pieces || a != b) std::abort();
    if (ok_whole && whole.pending() != pieces.pending()) std::abort();
    for (const auto& object : a)
        (void)decode_watch(object);
}

}  // namespace

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
    std::string why;
    if (auto ep = parse_etcd_url(in, &why)) {
        if (ep->port == 0 || ep->host.empty()) std::abort();
    }
    split_both_ways(in);
    if (auto r = daxsmbd::server::cluster::decode_owner_record(in)) {
        auto again = daxsmbd::server::cluster::decode_owner_record(
            daxsmbd::server::cluster::encode_owner_record(*r));
        if (!again || again->node != r->node || again->addresses != r->addresses) std::abort();
    }
    return 0;
}
