// NDR 2.0 writer/reader (protocol/ndr.h): alignment, strings, pointer deferral order, and the
// reader's rejection of malformed octet streams. Expected bytes are built by hand from C706
// chapter 14.
#include <gtest/gtest.h>

#include <string>

#include "protocol/ndr.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;
using namespace daxsmbd::protocol::rpc;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

}  // namespace

TEST(Ndr, PrimitivesAlignRelativeToStubStart) {
    // Five bytes already in the buffer (a PDU header, say): alignment must ignore them.
    ByteVector out(5, std::byte{0xEE});
    NdrWriter w(out);
    w.u8(0x01);
    w.u16(0x0302);  // pad 1
    w.u32(0x07060504);
    w.u8(0x08);
    w.u64(0x1817161514131211ull);  // pad 7 to offset 16
    EXPECT_EQ(w.size(), 24u);
    ByteVector expected(5, std::byte{0xEE});
    auto body = hex("01 00 0203 04050607 08 00000000000000 1112131415161718");
    expected.insert(expected.end(), body.begin(), body.end());
    EXPECT_EQ(out, expected);

    NdrReader r(Bytes(out).subspan(5));
    EXPECT_EQ(*r.u8(), 0x01);
    EXPECT_EQ(*r.u16(), 0x0302);
    EXPECT_EQ(*r.u32(), 0x07060504u);
    EXPECT_EQ(*r.u8(), 0x08);
    EXPECT_EQ(*r.u64(), 0x1817161514131211ull);
    EXPECT_EQ(r.remaining(), 0u);
}

TEST(Ndr, ReaderNeedsThePaddingToBePresent) {
    auto data = hex("01 0000");  // u8 then only 2 bytes: the u32 after it cannot be aligned+read
    NdrReader r(data);
    ASSERT_TRUE(r.u8().ok());
    EXPECT_EQ(r.u32().status(), NtStatus::InvalidParameter);
    auto one = hex("01");  // the reader borrows its buffer: keep it alive
    NdrReader r2(one);
    ASSERT_TRUE(r2.u8().ok());
    EXPECT_FALSE(r2.align(4).ok());
}

TEST(Ndr, ConformantVaryingWideString) {
    ByteVector out;
    NdrWriter w(out);
    w.wstring("ab");
    // max_count 3, offset 0, actual_count 3 (the NUL counts), "a" "b" NUL in UTF-16LE.
    EXPECT_EQ(out, hex("03000000 00000000 03000000 6100 6200 0000"));
    NdrReader r(out);
    EXPECT_EQ(*r.wstring(), "ab");
    EXPECT_EQ(r.remaining(), 0u);
}

TEST(Ndr, EmptyStringStillCarriesItsTerminator) {
    ByteVector out;
    NdrWriter w(out);
    w.wstring("");
    EXPECT_EQ(out, hex("01000000 00000000 01000000 0000"));
    NdrReader r(out);
    EXPECT_EQ(*r.wstring(), "");
}

TEST(Ndr, NonAsciiStringIsUtf16) {
    ByteVector out;
    NdrWriter w(out);
    w.wstring("\xC3\xA9");  // U+00E9
    EXPECT_EQ(out, hex("02000000 00000000 02000000 e900 0000"));
}

TEST(Ndr, TopLevelUniquePointerReferentFollowsImmediately) {
    ByteVector out;
    NdrWriter w(out);
    w.unique_wstring(std::string_view("x"));
    w.u32(0xAABBCCDD);
    w.unique_wstring(std::nullopt);
    EXPECT_EQ(out, hex("00000200 02000000 00000000 02000000 7800 0000"
                       "ddccbbaa 00000000"));
    NdrReader r(out);
    std::optional<std::string> a, b;
    ASSERT_TRUE(r.unique_wstring(a).ok());
    EXPECT_EQ(*r.u32(), 0xAABBCCDDu);
    ASSERT_TRUE(r.unique_wstring(b).ok());
    EXPECT_EQ(a, "x");
    EXPECT_FALSE(b.has_value());
}

TEST(Ndr, EmbeddedPointersAreDeferredToTheEndOfTheConstruct) {
    // struct { [unique,string] wchar_t* a; DWORD x; [unique,string] wchar_t* b; }
    ByteVector out;
    NdrWriter w(out);
    w.construct([&] {
        w.unique_wstring(std::string_view("a"));
        w.u32(7);
        w.unique_wstring(std::string_view("bc"));
    });
    EXPECT_EQ(out, hex("00000200 07000000 04000200"                    // the struct's scalars
                       "02000000 00000000 02000000 6100 0000"          // *a
                       "03000000 00000000 03000000 6200 6300 0000"));  // *b
    NdrReader r(out);
    std::optional<std::string> a, b;
    uint32_t x = 0;
    ASSERT_TRUE(r.construct([&]() -> Status {
                     DAX_CHECK(r.unique_wstring(a));
                     DAX_TRY(x, r.u32());
                     // Deferred: nothing is read into `a` until the construct ends.
                     EXPECT_FALSE(a.has_value());
                     return r.unique_wstring(b);
                 }).ok());
    EXPECT_EQ(a, "a");
    EXPECT_EQ(x, 7u);
    EXPECT_EQ(b, "bc");
    EXPECT_EQ(r.remaining(), 0u);
}

TEST(Ndr, DeferredPointeesAreMarshalledDepthFirst) {
    // struct S { struct A* p; wchar_t* q; };  struct A { wchar_t* s; DWORD v; }
    // C706 14.3.12.3: A's own referent (*s) is part of A's representation, which precedes *q.
    ByteVector out;
    NdrWriter w(out);
    w.construct([&] {
        w.unique_ptr(true, [&] {
            w.unique_wstring(std::string_view("s"));
            w.u32(9);
        });
        w.unique_wstring(std::string_view("q"));
    });
    EXPECT_EQ(out, hex("00000200 04000200"                        // S
                       "08000200 09000000"                        // *p (A)
                       "02000000 00000000 02000000 7300 0000"     // *A.s
                       "02000000 00000000 02000000 7100 0000"));  // *q
}

TEST(Ndr, NullEmbeddedPointerHasNoReferent) {
    ByteVector out;
    NdrWriter w(out);
    w.construct([&] {
        w.unique_ptr(false, [&] { w.u32(1); });
        w.u32(2);
    });
    EXPECT_EQ(out, hex("00000000 02000000"));
}

TEST(Ndr, FullPointerMarshalsEachIdentityOnce) {
    int obj = 0;
    ByteVector out;
    NdrWriter w(out);
    w.construct([&] {
        w.full_ptr(&obj, [&] { w.u32(0x11); });
        w.full_ptr(&obj, [&] { w.u32(0x22); });  // same object: id only
        w.full_ptr(nullptr, {});
    });
    EXPECT_EQ(out, hex("00000200 00000200 00000000 11000000"));

    NdrReader r(out);
    int bodies = 0;
    uint32_t id1 = 0, id2 = 0, id3 = 1;
    ASSERT_TRUE(r.construct([&]() -> Status {
                     DAX_CHECK(r.full_ptr(
                         [&]() -> Status {
                             ++bodies;
                             return r.u32().ok() ? Status{} : Error(NtStatus::InvalidParameter);
                         },
                         &id1));
                     DAX_CHECK(r.full_ptr(
                         [&]() -> Status {
                             ++bodies;
                             return {};
                         },
                         &id2));
                     return r.full_ptr({}, &id3);
                 }).ok());
    EXPECT_EQ(bodies, 1);
    EXPECT_EQ(id1, 0x00020000u);
    EXPECT_EQ(id2, id1);
    EXPECT_EQ(id3, 0u);
}

TEST(Ndr, ConformantArrayCountIsBoundedByTheStub) {
    auto ok = hex("02000000 01000000 02000000");
    NdrReader r(ok);
    EXPECT_EQ(*r.conformant_count(4), 2u);
    // 0x40000000 elements of >= 4 bytes cannot be in a 4-byte remainder.
    auto huge = hex("00000040 00000000");
    NdrReader r2(huge);
    EXPECT_EQ(r2.conformant_count(4).status(), NtStatus::InvalidParameter);
}

TEST(Ndr, MalformedStringsAreRejected) {
    const char* cases[] = {
        "03000000 00000000 03000000 6100 6200 6300",  // no NUL terminator
        "02000000 00000000 03000000 6100 6200 0000",  // actual_count > max_count
        "03000000 01000000 02000000 6100 0000",       // nonzero offset
        "00000000 00000000 00000000",                 // no units at all: not even the NUL
        "03000000 00000000 03000000 6100 00",         // truncated
        "ffffffff 00000000 ffffffff 6100 0000",       // count far beyond the stub
        "02000000 00000000 02000000 00dc 0000",       // unpaired low surrogate
        "03000000 00000000",                          // header cut short
    };
    for (const char* c : cases) {
        auto data = hex(c);
        NdrReader r(data);
        EXPECT_EQ(r.wstring().status(), NtStatus::InvalidParameter) << c;
    }
}

TEST(Ndr, ErrorInADeferredPointeeFailsTheConstruct) {
    auto data = hex("00000200 02000000 00000000 02000000 6100 6200");  // *p lacks its NUL
    NdrReader r(data);
    std::optional<std::string> s;
    EXPECT_EQ(r.construct([&]() -> Status { return r.unique_wstring(s); }).status(),
              NtStatus::InvalidParameter);
}
