// libFuzzer target for protocol/dcerpc.h: every PDU parser, re-serialisation of what parsed,
// and a PipeSession fed the input in pieces (sizes taken from the input itself).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "protocol/dcerpc.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::protocol::rpc;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

Result<ByteVector> echo(uint16_t opnum, Bytes stub) {
    if (opnum == 0) return ByteVector(stub.begin(), stub.end());
    if (opnum == 1 && stub.size() >= 2) return ByteVector(load_le16(stub.data()) % 20000);
    if (opnum == 2) return Error(NtStatus::InvalidParameter);
    return Error(NtStatus::NotImplemented);
}

void parsers(Bytes data) {
    (void)CommonHeader::parse(data);
    if (auto b = BindPdu::parse(data)) {
        auto bytes = b->serialize();
        auto again = BindPdu::parse(bytes);
        check(again.ok() && again->contexts.size() == b->contexts.size());
        for (size_t i = 0; i < b->contexts.size(); ++i) {
            check(again->contexts[i].context_id == b->contexts[i].context_id);
            check(again->contexts[i].abstract_syntax == b->contexts[i].abstract_syntax);
            check(again->contexts[i].transfer_syntaxes == b->contexts[i].transfer_syntaxes);
        }
        check(again->max_xmit_frag == b->max_xmit_frag &&
              again->assoc_group_id == b->assoc_group_id);
    }
    if (auto a = BindAckPdu::parse(data)) {
        auto again = BindAckPdu::parse(a->serialize());
        check(again.ok() && again->results == a->results &&
              again->max_recv_frag == a->max_recv_frag);
    }
    if (auto n = BindNakPdu::parse(data)) {
        auto again = BindNakPdu::parse(n->serialize());
        check(again.ok() && again->provider_reject_reason == n->provider_reject_reason &&
              again->versions == n->versions);
    }
    if (auto q = RequestPdu::parse(data)) {
        auto bytes = q->serialize();  // `again` views into it
        auto again = RequestPdu::parse(bytes);
        check(again.ok() && again->opnum == q->opnum && again->object == q->object &&
              ByteVector(again->stub.begin(), again->stub.end()) ==
                  ByteVector(q->stub.begin(), q->stub.end()));
    }
    if (auto p = ResponsePdu::parse(data)) {
        auto bytes = p->serialize();
        auto again = ResponsePdu::parse(bytes);
        check(again.ok() && again->stub.size() == p->stub.size());
    }
    if (auto f = FaultPdu::parse(data)) {
        auto again = FaultPdu::parse(f->serialize());
        check(again.ok() && again->status == f->status);
    }
}

}  // namespace

constexpr SyntaxId kIface{*parse_uuid("12345678-1234-abcd-ef00-0123456789ab"), 1, 0};

void drain(PipeSession& s) {
    while (s.pending_size() > 0) {
        size_t before = s.pending_size();
        size_t max = 1 + before / 2;
        auto r = s.read_message(max);
        check(!r.data.empty() && r.overflow == (before > max));
    }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t size) {
    Bytes data(reinterpret_cast<const std::byte*>(raw), size);
    parsers(data);

    PipeSession::Options o;
    o.max_pending_output = 64 * 1024;

    // Fresh session, whole input at once: bind handling and framing.
    PipeSession fresh({kIface, "\\PIPE\\fuzz", echo}, o);
    (void)fresh.write(data);
    drain(fresh);

    // Bound session, input split at sizes the input picks: requests and reassembly.
    PipeSession s({kIface, "\\PIPE\\fuzz", echo}, o);
    BindPdu b;
    b.header.ptype = PType::Bind;
    b.contexts.push_back({0, kIface, {kNdr20Syntax}});
    check(s.write(b.serialize()).ok());
    drain(s);
    size_t pos = 0;
    while (pos < data.size()) {
        size_t chunk = std::min(1 + size_t(uint8_t(data[pos])) * 4, data.size() - pos);
        auto st = s.write(data.subspan(pos, chunk));
        pos += chunk;
        drain(s);
        if (!st) break;
    }
    return 0;
}
