// Compound splitting and the response chain writer (MS-SMB2 2.2.1 NextCommand, 3.2.4.1.4,
// 3.3.4.1.3).
#include <gtest/gtest.h>

#include "protocol/compound.h"
#include "protocol/echo.h"
#include "protocol/header.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

// One ECHO request (68 bytes) with the given NextCommand and MessageId, plus `pad` zeros.
ByteVector echo(uint32_t next, uint64_t mid, size_t pad = 0) {
    Header h;
    h.command = Command::Echo;
    h.next_command = next;
    h.message_id = mid;
    ByteVector v;
    ByteWriter w(v);
    h.serialize(w);
    EchoRequest{}.serialize(w);
    w.zeros(pad);
    return v;
}

ByteVector concat(std::initializer_list<ByteVector> parts) {
    ByteVector v;
    for (const auto& p : parts)
        v.insert(v.end(), p.begin(), p.end());
    return v;
}

}  // namespace

TEST(Compound, SingleMessage) {
    auto frame = echo(0, 1);
    auto el = split_compound(frame);
    ASSERT_TRUE(el.ok());
    ASSERT_EQ(el->size(), 1u);
    EXPECT_EQ((*el)[0].data(), frame.data());
    EXPECT_EQ((*el)[0].size(), 68u);
}

TEST(Compound, ThreeElementsWithPadding) {
    // 68-byte messages padded to 72: NextCommand 72, 72, 0; the last need not be padded.
    auto frame = concat({echo(72, 1, 4), echo(72, 2, 4), echo(0, 3)});
    auto el = split_compound(frame);
    ASSERT_TRUE(el.ok());
    ASSERT_EQ(el->size(), 3u);
    EXPECT_EQ((*el)[0].size(), 72u);  // includes its padding (signed with it)
    EXPECT_EQ((*el)[1].size(), 72u);
    EXPECT_EQ((*el)[2].size(), 68u);
    for (size_t i = 0; i < 3; ++i) {
        auto h = Header::parse((*el)[i]);
        ASSERT_TRUE(h.ok());
        EXPECT_EQ(h->message_id, i + 1);
        EXPECT_TRUE(EchoRequest::parse((*el)[i]).ok());
    }
}

TEST(Compound, MalformedNextCommand) {
    auto bad = [](const ByteVector& frame, NtStatus want = NtStatus::InvalidParameter) {
        EXPECT_EQ(split_compound(frame).status(), want);
    };
    bad(concat({echo(70, 1, 2), echo(0, 2)}));           // not 8-aligned
    bad(concat({echo(76, 1, 4), echo(0, 2)}));           // 76 % 8 != 0
    bad(concat({echo(72, 1, 4)}));                       // points at the end of the frame
    bad(concat({echo(144, 1, 4), echo(0, 2)}));          // beyond the frame
    bad(concat({echo(0xFFFFFFF8u, 1, 4), echo(0, 2)}));  // far beyond
    bad(concat({echo(56, 1, 4), echo(0, 2)}));           // inside the first header
    bad(ByteVector{});                                   // empty frame
    // The next element is shorter than a header.
    auto short_next = concat({echo(72, 1, 4), ByteVector(40, std::byte{0})});
    store_le32(short_next.data() + 72, kSmb2ProtocolId);
    bad(short_next);
    // The next element is not an SMB2 message.
    auto not_smb2 = concat({echo(72, 1, 4), echo(0, 2)});
    not_smb2[72] = std::byte{0xFD};
    bad(not_smb2);
    // Nor is the first.
    auto first = echo(0, 1);
    first[0] = std::byte{0xFF};
    bad(first);
    auto whole = echo(0, 1);
    bad(ByteVector(whole.begin(), whole.begin() + 63));  // shorter than a header
}

TEST(Compound, ElementLimit) {
    ByteVector frame;
    for (int i = 0; i < 5; ++i) {
        auto e = echo(i == 4 ? 0 : 72, uint64_t(i), i == 4 ? 0 : 4);
        frame.insert(frame.end(), e.begin(), e.end());
    }
    EXPECT_TRUE(split_compound(frame, 5).ok());
    EXPECT_EQ(split_compound(frame, 4).status(), NtStatus::InsufficientResources);
    EXPECT_EQ(split_compound(frame, 1).status(), NtStatus::InsufficientResources);
}

TEST(Compound, WriterLinksAndPads) {
    ByteVector out(4);  // e.g. room for the TCP length prefix
    CompoundWriter cw(out);
    for (uint64_t mid = 10; mid < 13; ++mid) {
        ASSERT_TRUE(cw.begin_element().ok());
        EXPECT_EQ(cw.writer().base(), out.size());
        Header h;
        h.command = Command::Echo;
        h.flags = flags::kServerToRedir;
        h.message_id = mid;
        h.next_command = 0xDEAD;  // must be overwritten
        h.serialize(cw.writer());
        EchoResponse{}.serialize(cw.writer());
        cw.end_element();
    }
    cw.finish();
    ASSERT_EQ(cw.element_count(), 3u);
    EXPECT_EQ(out.size(), 4u + 3 * 72);
    for (size_t i = 0; i < 3; ++i) {
        const auto& e = cw.elements()[i];
        EXPECT_EQ(e.offset, 4 + 72 * i);
        EXPECT_EQ(e.length, 72u);
        uint32_t next = load_le32(out.data() + e.offset + kNextCommandOffset);
        EXPECT_EQ(next, i < 2 ? 72u : 0u);
        // Padding is zeros.
        for (size_t j = 68; j < 72; ++j)
            EXPECT_EQ(out[e.offset + j], std::byte{0});
        EXPECT_EQ(cw.element(i).size(), 72u);
    }
    // What the writer produced splits back into the same elements.
    auto el = split_compound(Bytes(out).subspan(4));
    ASSERT_TRUE(el.ok());
    ASSERT_EQ(el->size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        auto h = Header::parse((*el)[i]);
        ASSERT_TRUE(h.ok());
        EXPECT_EQ(h->message_id, 10 + i);
    }
}

TEST(Compound, WriterLastUnpadded) {
    ByteVector out;
    CompoundWriter cw(out);
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(cw.begin_element().ok());
        Header h;
        h.command = Command::Echo;
        h.serialize(cw.writer());
        EchoResponse{}.serialize(cw.writer());
    }
    cw.finish(false);
    EXPECT_EQ(out.size(), 72u + 68u);
    EXPECT_EQ(cw.elements()[1].length, 68u);
    EXPECT_EQ(load_le32(out.data() + kNextCommandOffset), 72u);
    // Body offsets are header-relative: the writer's base is the second header.
    EXPECT_EQ(cw.writer().base(), 72u);
}

TEST(Compound, WriterAlreadyAlignedElementGetsNoPadding) {
    ByteVector out;
    CompoundWriter cw(out);
    ASSERT_TRUE(cw.begin_element().ok());
    Header h;
    h.serialize(cw.writer());
    cw.writer().zeros(16);  // 80 bytes: already a multiple of 8
    ASSERT_TRUE(cw.begin_element().ok());
    h.serialize(cw.writer());
    cw.finish();
    EXPECT_EQ(cw.elements()[0].length, 80u);
    EXPECT_EQ(load_le32(out.data() + kNextCommandOffset), 80u);
    EXPECT_EQ(cw.elements()[1].offset, 80u);
}

TEST(Compound, WriterLimit) {
    ByteVector out;
    CompoundWriter cw(out, 2);
    Header h;
    ASSERT_TRUE(cw.begin_element().ok());
    h.serialize(cw.writer());
    ASSERT_TRUE(cw.begin_element().ok());
    h.serialize(cw.writer());
    EXPECT_EQ(cw.begin_element().status(), NtStatus::InsufficientResources);
    cw.finish();
    EXPECT_EQ(cw.element_count(), 2u);
}
