// libFuzzer target for smbdirect/smbd_codec.h: negotiate parsing and acceptance, data transfer
// parsing, the reassembler fed a stream of messages cut from the input, buffer descriptor lists
// and range selection.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "smbdirect/smbd_codec.h"

using namespace daxsmbd;
using namespace daxsmbd::smbdirect;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t size) {
    Bytes data(reinterpret_cast<const std::byte*>(raw), size);
    SmbdConfig config;

    if (auto q = NegotiateRequest::parse(data)) {
        ByteVector out;
        q->serialize(out);
        check(out.size() == kNegotiateRequestSize &&
              std::equal(out.begin(), out.end(), data.begin()));
    }
    if (auto o = accept_negotiate(data, config, 255)) {
        if (o->parameters) {
            check(o->response.status == 0);
            check(o->parameters->max_receive_size >= kMinReceiveSize);
            check(o->parameters->max_send_size <= config.max_send_size);
        } else {
            check(o->response.status != 0);
        }
    }
    if (auto p = NegotiateResponse::parse(data)) {
        ByteVector out;
        p->serialize(out);
        check(std::equal(out.begin(), out.end(), data.begin()));
    }
    (void)check_negotiate_response(data, config);

    if (auto m = DataTransferMessage::parse(data, config.max_fragmented_recv_size)) {
        ByteVector out;
        write_data_transfer(out, m->header, m->payload);
        auto again = DataTransferMessage::parse(out, config.max_fragmented_recv_size);
        check(again.ok() && std::equal(again->payload.begin(), again->payload.end(),
                                       m->payload.begin(), m->payload.end()));
    }

    // A stream of messages: each is prefixed by one length byte (x 8) taken from the input.
    Reassembler r(1 << 16);
    size_t pos = 0;
    while (pos < data.size()) {
        size_t n = std::min(size_t(uint8_t(data[pos])) * 8, data.size() - pos - 1);
        auto got = r.receive(data.subspan(pos + 1, n),
                             pos % 3 == 0 ? std::optional<uint32_t>(uint32_t(pos)) : std::nullopt);
        pos += 1 + n;
        if (!got) break;
        if (got->message) check(got->message->size() <= (1u << 16));
    }

    if (auto list = parse_buffer_descriptors(data)) {
        ByteVector out;
        write_buffer_descriptors(*list, out);
        check(std::equal(out.begin(), out.end(), data.begin(), data.end()));
        uint64_t total = total_length(*list);
        uint64_t off = size >= 8 ? protocol::load_le64(data.data()) % (total + 2) : 0;
        uint64_t len = size >= 16 ? protocol::load_le64(data.data() + 8) % (total + 2) : 0;
        auto sel = select_range(*list, off, len);
        if (sel) check(total_length(*sel) == len);
        if (off + len <= total && !sel) {
            // Only an element whose offset would wrap may fail a range inside the buffer.
            bool wraps = false;
            for (auto& d : *list)
                wraps |= d.offset > UINT64_MAX - d.length;
            check(wraps);
        }
    }

    if (size >= 8) {
        size_t message = protocol::load_le32(data.data()) % (1 << 18);
        auto plan = plan_fragments(message, protocol::load_le16(data.data() + 4), 1 << 17);
        if (plan) {
            size_t sum = 0;
            for (auto& f : *plan) {
                check(f.offset == sum && f.remaining_data_length == message - sum - f.length);
                sum += f.length;
            }
            check(sum == message);
        }
    }
    return 0;
}
