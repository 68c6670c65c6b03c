// MS-SMBD codec (smbdirect/smbd_codec.h). Golden values from the protocol examples of MS-SMBD
// section 4 (4.1 connection establishment, 4.2 a 500-byte send, 4.3 a 64 KiB fragmented send,
// 4.4 a buffer descriptor), and the receive validations of 3.1.5.6-3.1.5.8.
#include <gtest/gtest.h>

#include <string>

#include "smbdirect/smbd_codec.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::smbdirect;
using protocol::load_le32;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

// MS-SMBD 4.1: version 1.0, 10 credits, 1 KiB sends and receives, 128 KiB reassembly.
const ByteVector kExampleNegotiateRequest =
    hex("0001 0001 0000 0a00"  // MinVersion, MaxVersion, Reserved, CreditsRequested
        "00040000 00040000"    // PreferredSendSize 1024, MaxReceiveSize 1024
        "00000200");           // MaxFragmentedSize 131072

// MS-SMBD 4.1: the peer's answer, 10 credits granted and requested, 1 MiB RDMA size.
const ByteVector kExampleNegotiateResponse =
    hex("0001 0001 0001 0000"  // MinVersion, MaxVersion, NegotiatedVersion, Reserved
        "0a00 0a00 00000000"   // CreditsRequested, CreditsGranted, Status
        "00001000"             // MaxReadWriteSize 1 MiB
        "00040000 00040000"    // PreferredSendSize, MaxReceiveSize
        "00000200");           // MaxFragmentedSize

SmbdConfig example_config() {
    SmbdConfig c;
    c.send_credit_target = 10;
    c.max_send_size = 1024;
    c.max_receive_size = 1024;
    c.max_fragmented_recv_size = 0x20000;
    c.max_read_write_size = 0x100000;
    return c;
}

ByteVector data_message(uint16_t requested, uint16_t granted, uint32_t remaining, Bytes payload,
                        uint16_t flags = 0) {
    ByteVector out;
    DataTransferHeader h;
    h.credits_requested = requested;
    h.credits_granted = granted;
    h.flags = flags;
    h.remaining_data_length = remaining;
    write_data_transfer(out, h, payload);
    return out;
}

// A hand-built header with arbitrary offset/length fields.
ByteVector raw_message(uint16_t requested, uint32_t remaining, uint32_t offset, uint32_t length,
                       size_t total) {
    ByteVector v(total);
    protocol::store_le16(v.data(), requested);
    protocol::store_le32(v.data() + 8, remaining);
    protocol::store_le32(v.data() + 12, offset);
    protocol::store_le32(v.data() + 16, length);
    return v;
}

ByteVector pattern(size_t n) {
    ByteVector v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = std::byte(i * 13 + 1);
    return v;
}

}  // namespace

TEST(SmbdNegotiate, ExampleRequestParsesAndRoundTrips) {
    auto q = NegotiateRequest::parse(kExampleNegotiateRequest);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->min_version, 0x0100);
    EXPECT_EQ(q->max_version, 0x0100);
    EXPECT_EQ(q->credits_requested, 10);
    EXPECT_EQ(q->preferred_send_size, 1024u);
    EXPECT_EQ(q->max_receive_size, 1024u);
    EXPECT_EQ(q->max_fragmented_size, 131072u);
    ByteVector out;
    q->serialize(out);
    EXPECT_EQ(out, kExampleNegotiateRequest);
}

TEST(SmbdNegotiate, ServerAnswersTheExampleLikeTheSpec) {
    auto o = accept_negotiate(kExampleNegotiateRequest, example_config(), 10);
    ASSERT_TRUE(o.ok());
    ASSERT_TRUE(o->parameters);
    ByteVector out;
    o->response.serialize(out);
    EXPECT_EQ(out, kExampleNegotiateResponse);
    EXPECT_EQ(out.size(), kNegotiateResponseSize);
    EXPECT_EQ(o->parameters->max_send_size, 1024u);
    EXPECT_EQ(o->parameters->max_receive_size, 1024u);
    EXPECT_EQ(o->parameters->max_fragmented_send_size, 131072u);
    EXPECT_EQ(o->parameters->max_fragmented_recv_size, 131072u);
    EXPECT_EQ(o->parameters->receive_credit_target, 10);
}

TEST(SmbdNegotiate, SizesAreTheMinimumOfBothSides) {
    auto req = kExampleNegotiateRequest;
    protocol::store_le32(req.data() + 8, 64);    // peer prefers to send 64-byte messages
    protocol::store_le32(req.data() + 12, 500);  // and receives at most 500
    auto o = accept_negotiate(req, SmbdConfig{}, 255);
    ASSERT_TRUE(o.ok());
    ASSERT_TRUE(o->parameters);
    // MaxReceiveSize = max(128, min(1364, 64)); MaxSendSize = min(1364, 500).
    EXPECT_EQ(o->parameters->max_receive_size, 128u);
    EXPECT_EQ(o->parameters->max_send_size, 500u);
    EXPECT_EQ(o->response.max_receive_size, 128u);
    EXPECT_EQ(o->response.preferred_send_size, 500u);  // <= the request's MaxReceiveSize
    EXPECT_EQ(o->response.credits_requested, 255);
    EXPECT_EQ(o->response.credits_granted, 255);
    EXPECT_EQ(o->response.max_read_write_size, 8u * 1024 * 1024);
    EXPECT_EQ(o->response.max_fragmented_size, 1024u * 1024);
}

TEST(SmbdNegotiate, VersionRangeMustIncludeOnePointZero) {
    auto req = kExampleNegotiateRequest;
    protocol::store_le16(req.data(), 0x0200);
    protocol::store_le16(req.data() + 2, 0x0200);
    auto o = accept_negotiate(req, example_config(), 10);
    ASSERT_TRUE(o.ok());
    EXPECT_FALSE(o->parameters);
    ByteVector out;
    o->response.serialize(out);
    // MS-SMBD 3.1.5.3: versions and Status STATUS_NOT_SUPPORTED, everything else zero.
    EXPECT_EQ(out, hex("0001 0001 0000 0000 0000 0000 bb0000c0 00000000 00000000 00000000"
                       "00000000"));

    // A range that contains 1.0 is accepted.
    protocol::store_le16(req.data(), 0x0100);
    o = accept_negotiate(req, example_config(), 10);
    ASSERT_TRUE(o.ok());
    EXPECT_TRUE(o->parameters);
    EXPECT_EQ(o->response.negotiated_version, 0x0100);
}

TEST(SmbdNegotiate, InvalidRequestsDropTheConnection) {
    EXPECT_EQ(
        accept_negotiate(Bytes(kExampleNegotiateRequest).first(19), example_config(), 10).status(),
        kDisconnect);
    struct Case {
        size_t offset;
        uint32_t value;
        bool u16;
    } cases[] = {
        {6, 0, true},         // CreditsRequested 0
        {12, 127, false},     // MaxReceiveSize < 128
        {16, 131071, false},  // MaxFragmentedSize < 128 KiB
    };
    for (auto c : cases) {
        auto req = kExampleNegotiateRequest;
        if (c.u16)
            protocol::store_le16(req.data() + c.offset, uint16_t(c.value));
        else
            protocol::store_le32(req.data() + c.offset, c.value);
        EXPECT_EQ(accept_negotiate(req, example_config(), 10).status(), kDisconnect) << c.offset;
    }
    // The boundary values themselves are fine.
    auto req = kExampleNegotiateRequest;
    protocol::store_le32(req.data() + 12, 128);
    EXPECT_TRUE(accept_negotiate(req, example_config(), 10).ok());
}

TEST(SmbdNegotiate, NoReceivesPostedIsAFailureResponse) {
    auto o = accept_negotiate(kExampleNegotiateRequest, example_config(), 0);
    ASSERT_TRUE(o.ok());
    EXPECT_FALSE(o->parameters);
    EXPECT_EQ(o->response.status, to_u32(NtStatus::InsufficientResources));
    EXPECT_EQ(o->response.credits_granted, 0);
}

TEST(SmbdNegotiate, InitiatorChecksTheResponse) {
    auto p = check_negotiate_response(kExampleNegotiateResponse, example_config());
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->send_credits, 10);
    EXPECT_EQ(p->receive_credit_target, 10);
    EXPECT_EQ(p->max_send_size, 1024u);
    EXPECT_EQ(p->max_receive_size, 1024u);
    EXPECT_EQ(p->max_read_write_size, 0x100000u);
    EXPECT_EQ(p->max_fragmented_send_size, 0x20000u);

    struct Case {
        size_t offset;
        uint32_t value;
        bool u16;
    } bad[] = {
        {4, 0x0200, true},        // NegotiatedVersion
        {8, 0, true},             // CreditsRequested
        {10, 0, true},            // CreditsGranted
        {12, 0xC00000BB, false},  // Status
        {20, 2048, false},        // PreferredSendSize > our MaxReceiveSize
        {24, 100, false},         // MaxReceiveSize < 128
        {28, 1000, false},        // MaxFragmentedSize < 128 KiB
    };
    for (auto c : bad) {
        auto resp = kExampleNegotiateResponse;
        if (c.u16)
            protocol::store_le16(resp.data() + c.offset, uint16_t(c.value));
        else
            protocol::store_le32(resp.data() + c.offset, c.value);
        EXPECT_EQ(check_negotiate_response(resp, example_config()).status(), kDisconnect)
            << c.offset;
    }
    EXPECT_EQ(check_negotiate_response(Bytes(kExampleNegotiateResponse).first(31), example_config())
                  .status(),
              kDisconnect);
}

TEST(SmbdDataTransfer, Example500ByteSend) {
    auto payload = pattern(500);
    auto msg = data_message(10, 1, 0, payload);
    ASSERT_EQ(msg.size(), 524u);
    // MS-SMBD 4.2: CreditsRequested 10, CreditsGranted 1, no flags, nonfragmented,
    // DataOffset 24, DataLength 500, 4 bytes of zero padding.
    EXPECT_EQ(ByteVector(msg.begin(), msg.begin() + 24),
              hex("0a00 0100 0000 0000 00000000 18000000 f4010000 00000000"));
    auto m = DataTransferMessage::parse(msg, 0x20000);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->header.credits_requested, 10);
    EXPECT_EQ(m->header.credits_granted, 1);
    EXPECT_EQ(m->header.data_offset, 24u);
    EXPECT_EQ(ByteVector(m->payload.begin(), m->payload.end()), payload);
}

TEST(SmbdDataTransfer, EmptyMessageIs20Bytes) {
    auto msg = data_message(255, 5, 0, {}, kFlagResponseRequested);
    EXPECT_EQ(msg, hex("ff00 0500 0100 0000 00000000 00000000 00000000"));
    auto m = DataTransferMessage::parse(msg, 0x20000);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->header.flags, kFlagResponseRequested);
    EXPECT_TRUE(m->payload.empty());
}

TEST(SmbdDataTransfer, SendFieldsArePatchedLate) {
    auto msg = data_message(0, 0, 0, pattern(8));
    set_send_fields(msg, 255, 12, kFlagResponseRequested);
    auto m = DataTransferMessage::parse(msg, 0x20000);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->header.credits_requested, 255);
    EXPECT_EQ(m->header.credits_granted, 12);
    EXPECT_EQ(m->header.flags, kFlagResponseRequested);
    EXPECT_EQ(m->payload.size(), 8u);
}

TEST(SmbdDataTransfer, ReceiveValidations) {
    struct Case {
        const char* what;
        ByteVector msg;
    } cases[] = {
        {"shorter than 20 bytes", ByteVector(19)},
        {"CreditsRequested 0", raw_message(0, 0, 24, 8, 32)},
        {"DataOffset not 8-aligned", raw_message(1, 0, 28, 4, 32)},
        {"DataOffset + DataLength past the message", raw_message(1, 0, 24, 9, 32)},
        {"offset + length wraps 32 bits", raw_message(1, 0, 24, 0xFFFFFFF0, 32)},
        {"DataLength + RemainingDataLength above MaxFragmentedSize",
         raw_message(1, 0x20000 - 7, 24, 8, 32)},
        {"payload overlapping the header", raw_message(1, 0, 16, 8, 32)},
        {"empty message with a DataOffset beyond it", raw_message(1, 0, 24, 0, 20)},
    };
    for (auto& c : cases)
        EXPECT_EQ(DataTransferMessage::parse(c.msg, 0x20000).status(), kDisconnect) << c.what;
    // Limits are inclusive.
    EXPECT_TRUE(DataTransferMessage::parse(raw_message(1, 0x20000 - 8, 24, 8, 32), 0x20000).ok());
    EXPECT_TRUE(DataTransferMessage::parse(raw_message(1, 0, 32, 0, 32), 0x20000).ok());
    // A payload at a later aligned offset is legal (DataOffset MAY differ from 24).
    auto later = raw_message(1, 0, 40, 4, 44);
    auto m = DataTransferMessage::parse(later, 0x20000);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->payload.data(), later.data() + 40);
}

TEST(SmbdFragments, Example64KiBPlan) {
    // MS-SMBD 4.3: MaxReceiveSize 1024 -> 1000 bytes per fragment, 536 in the last.
    auto plan = plan_fragments(65536, 1024, 0x20000);
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->size(), 66u);
    EXPECT_EQ((*plan)[0].offset, 0u);
    EXPECT_EQ((*plan)[0].length, 1000u);
    EXPECT_EQ((*plan)[0].remaining_data_length, 64536u);
    EXPECT_EQ((*plan)[1].remaining_data_length, 63536u);
    EXPECT_EQ(plan->back().offset, 65000u);
    EXPECT_EQ(plan->back().length, 536u);
    EXPECT_EQ(plan->back().remaining_data_length, 0u);
}

TEST(SmbdFragments, PlanLimits) {
    EXPECT_EQ(plan_fragments(0x20001, 1024, 0x20000).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(plan_fragments(10, 24, 0x20000).status(), NtStatus::InvalidParameter);
    auto one = plan_fragments(1000, 1024, 0x20000);
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->size(), 1u);
    EXPECT_EQ((*one)[0].remaining_data_length, 0u);
    auto empty = plan_fragments(0, 1024, 0x20000);
    ASSERT_TRUE(empty.ok());
    ASSERT_EQ(empty->size(), 1u);
    EXPECT_EQ((*empty)[0].length, 0u);
}

TEST(SmbdReassembly, SingleFragmentIsAViewIntoTheReceiveBuffer) {
    Reassembler r(0x20000);
    auto msg = data_message(10, 1, 0, pattern(500));
    auto got = r.receive(msg);
    ASSERT_TRUE(got.ok());
    ASSERT_TRUE(got->message);
    EXPECT_EQ(got->message->data(), msg.data() + 24);
    EXPECT_EQ(got->message->size(), 500u);
    EXPECT_EQ(got->header.credits_granted, 1);
    EXPECT_FALSE(r.in_progress());
}

TEST(SmbdReassembly, EmptyMessageDeliversNothing) {
    Reassembler r(0x20000);
    auto got = r.receive(data_message(10, 3, 0, {}));
    ASSERT_TRUE(got.ok());
    EXPECT_FALSE(got->message);
    EXPECT_EQ(got->header.credits_granted, 3);
}

TEST(SmbdReassembly, Example64KiBSendIsReassembled) {
    auto upper = pattern(65536);
    auto plan = plan_fragments(upper.size(), 1024, 0x20000);
    ASSERT_TRUE(plan.ok());
    Reassembler r(0x20000);
    for (size_t i = 0; i < plan->size(); ++i) {
        const auto& f = (*plan)[i];
        auto msg =
            data_message(10, 1, f.remaining_data_length, Bytes(upper).subspan(f.offset, f.length));
        EXPECT_LE(msg.size(), 1024u);
        auto got = r.receive(msg);
        ASSERT_TRUE(got.ok()) << i;
        if (i + 1 < plan->size()) {
            EXPECT_FALSE(got->message) << i;
            EXPECT_TRUE(r.in_progress());
        } else {
            ASSERT_TRUE(got->message);
            EXPECT_EQ(ByteVector(got->message->begin(), got->message->end()), upper);
        }
    }
    EXPECT_FALSE(r.in_progress());
    // The next message starts afresh.
    auto next = r.receive(data_message(10, 1, 0, pattern(3)));
    ASSERT_TRUE(next.ok());
    ASSERT_TRUE(next->message);
    EXPECT_EQ(next->message->size(), 3u);
}

TEST(SmbdReassembly, BrokenSequencesDisconnect) {
    auto p = pattern(100);
    Bytes b(p);
    {  // final fragment while bytes are still expected (MS-SMBD 3.1.5.8)
        Reassembler r(0x20000);
        ASSERT_TRUE(r.receive(data_message(1, 0, 100, b.first(50))).ok());
        EXPECT_EQ(r.receive(data_message(1, 0, 0, b.first(50))).status(), kDisconnect);
        EXPECT_FALSE(r.in_progress());
    }
    {  // more data than announced
        Reassembler r(0x20000);
        ASSERT_TRUE(r.receive(data_message(1, 0, 40, b.first(50))).ok());
        EXPECT_EQ(r.receive(data_message(1, 0, 0, b.first(50))).status(), kDisconnect);
    }
    {  // RemainingDataLength inconsistent with what was announced
        Reassembler r(0x20000);
        ASSERT_TRUE(r.receive(data_message(1, 0, 100, b.first(50))).ok());
        EXPECT_EQ(r.receive(data_message(1, 0, 70, b.first(50))).status(), kDisconnect);
    }
    {  // an empty message in the middle of a sequence ends it early
        Reassembler r(0x20000);
        ASSERT_TRUE(r.receive(data_message(1, 0, 100, b.first(50))).ok());
        EXPECT_EQ(r.receive(data_message(1, 0, 0, {})).status(), kDisconnect);
    }
    {  // the announced total exceeds what we reassemble
        Reassembler r(1000);
        EXPECT_EQ(r.receive(data_message(1, 0, 951, b.first(50))).status(), kDisconnect);
        EXPECT_TRUE(r.receive(data_message(1, 0, 950, b.first(50))).ok());
    }
}

TEST(SmbdReassembly, InvalidatedTokenTravelsWithTheMessage) {
    auto p = pattern(30);
    Bytes b(p);
    Reassembler r(0x20000);
    auto first = r.receive(data_message(1, 0, 20, b.first(10)));
    ASSERT_TRUE(first.ok());
    EXPECT_FALSE(first->invalidated_token);
    auto middle = r.receive(data_message(1, 0, 10, b.subspan(10, 10)), 0xABCD);
    ASSERT_TRUE(middle.ok());
    EXPECT_FALSE(middle->invalidated_token);  // held until the message is complete
    auto last = r.receive(data_message(1, 0, 0, b.subspan(20)));
    ASSERT_TRUE(last.ok());
    ASSERT_TRUE(last->message);
    EXPECT_EQ(last->invalidated_token, 0xABCDu);
    auto after = r.receive(data_message(1, 0, 0, b.first(1)));
    ASSERT_TRUE(after.ok());
    EXPECT_FALSE(after->invalidated_token);  // cleared once handed over
}

TEST(SmbdBufferDescriptor, ExampleDescriptor) {
    // MS-SMBD 4.4: Offset 0xABCDE012, Token 0x1A00BC56, Length 1 MiB.
    auto bytes = hex("12e0cdab00000000 56bc001a 00001000");
    auto list = parse_buffer_descriptors(bytes);
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->size(), 1u);
    EXPECT_EQ((*list)[0], (BufferDescriptorV1{0xABCDE012, 0x1A00BC56, 0x100000}));
    ByteVector out;
    write_buffer_descriptors(*list, out);
    EXPECT_EQ(out, bytes);
}

TEST(SmbdBufferDescriptor, ListLengthMustBeAMultipleOf16) {
    EXPECT_EQ(parse_buffer_descriptors({}).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(parse_buffer_descriptors(ByteVector(15)).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(parse_buffer_descriptors(ByteVector(17)).status(), NtStatus::InvalidParameter);
    auto two = parse_buffer_descriptors(ByteVector(32));
    ASSERT_TRUE(two.ok());
    EXPECT_EQ(two->size(), 2u);
}

TEST(SmbdBufferDescriptor, SelectRangeTrimsFirstAndLast) {
    std::vector<BufferDescriptorV1> list{
        {0x1000, 1, 4096}, {0x9000, 2, 0}, {0x20000, 3, 8192}, {0x50000, 4, 4096}};
    EXPECT_EQ(total_length(list), 16384u);
    // Bytes 4000..13000: the last 96 of #1, all of #3, the first 712 of #4; #2 is empty.
    auto r = select_range(list, 4000, 9000);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[0], (BufferDescriptorV1{0x1000 + 4000, 1, 96}));
    EXPECT_EQ((*r)[1], (BufferDescriptorV1{0x20000, 3, 8192}));
    EXPECT_EQ((*r)[2], (BufferDescriptorV1{0x50000, 4, 712}));
    uint64_t sum = 0;
    for (auto& d : *r)
        sum += d.length;
    EXPECT_EQ(sum, 9000u);
    // Inside one element.
    auto inner = select_range(list, 5000, 100);
    ASSERT_TRUE(inner.ok());
    ASSERT_EQ(inner->size(), 1u);
    EXPECT_EQ((*inner)[0], (BufferDescriptorV1{0x20000 + 904, 3, 100}));
    // The whole buffer, and nothing at all.
    EXPECT_EQ(select_range(list, 0, 16384)->size(), 3u);
    EXPECT_TRUE(select_range(list, 16384, 0)->empty());
}

TEST(SmbdBufferDescriptor, SelectRangeRejectsWhatIsNotDescribed) {
    std::vector<BufferDescriptorV1> list{{0x1000, 1, 4096}};
    EXPECT_EQ(select_range(list, 4000, 97).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(select_range(list, UINT64_MAX, 2).status(), NtStatus::InvalidParameter);
    std::vector<BufferDescriptorV1> wrap{{UINT64_MAX - 10, 1, 4096}};
    EXPECT_EQ(select_range(wrap, 100, 1).status(), NtStatus::InvalidParameter);
}
