// Negotiate contexts (MS-SMB2 2.2.3.1.x) and the MS-SMB2 3.3.5.4 list checks.
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/negotiate_contexts.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

// Serializes `list` after `lead` bytes of zeros (standing in for header+body) and returns the
// whole buffer and the first context offset.
std::pair<ByteVector, uint32_t> write_list(const NegotiateContextList& list, size_t lead) {
    ByteVector out(lead);
    ByteWriter w(out, 0);
    uint32_t off = serialize_negotiate_contexts(list, w);
    return {out, off};
}

NegotiateContextList every_kind() {
    PreauthIntegrityCapabilities p;
    p.hash_algorithms = {hash_algorithm::kSha512, 0x7777};
    p.salt = hex("0102030405");
    EncryptionCapabilities e;
    e.ciphers = {cipher::kAes256Gcm, cipher::kAes128Gcm, cipher::kAes256Ccm, cipher::kAes128Ccm};
    CompressionCapabilities c;
    c.flags = compression_capabilities_flags::kChained;
    c.algorithms = {compression_algorithm::kLz77, compression_algorithm::kPatternV1};
    NetnameContext n;
    n.name = "fileserver.example.com";
    TransportCapabilities t;
    t.flags = transport_capabilities_flags::kAcceptTransportLevelSecurity;
    RdmaTransformCapabilities rt;
    rt.transform_ids = {rdma_transform::kEncryption, rdma_transform::kSigning};
    SigningCapabilities s;
    s.algorithms = {signing_algorithm::kAesGmac, signing_algorithm::kAesCmac,
                    signing_algorithm::kHmacSha256};
    UnknownNegotiateContext u{negotiate_context_type::kReserved,
                              hex("93AD25509CB411E7B42383DE968BCD7C")};
    return {p, e, c, n, t, rt, s, u};
}

}  // namespace

TEST(NegotiateContexts, ConstantsMatchSpec) {
    EXPECT_EQ(negotiate_context_type::kPreauthIntegrity, 1);
    EXPECT_EQ(negotiate_context_type::kEncryption, 2);
    EXPECT_EQ(negotiate_context_type::kCompression, 3);
    EXPECT_EQ(negotiate_context_type::kNetname, 5);
    EXPECT_EQ(negotiate_context_type::kTransport, 6);
    EXPECT_EQ(negotiate_context_type::kRdmaTransform, 7);
    EXPECT_EQ(negotiate_context_type::kSigning, 8);
    EXPECT_EQ(cipher::kAes256Gcm, 4);
    EXPECT_EQ(signing_algorithm::kAesGmac, 2);
    EXPECT_EQ(compression_algorithm::kLz4, 5);
}

TEST(NegotiateContexts, GoldenEncodingOfEachContext) {
    // Each context's Data exactly as MS-SMB2 2.2.3.1.x lays it out.
    auto enc = [](const auto& c) {
        ByteVector v;
        ByteWriter w(v);
        c.encode(w);
        return v;
    };
    auto list = every_kind();
    EXPECT_EQ(enc(std::get<PreauthIntegrityCapabilities>(list[0])),
              hex("0200 0500 0100 7777 0102030405"));
    EXPECT_EQ(enc(std::get<EncryptionCapabilities>(list[1])), hex("0400 0400 0200 0300 0100"));
    EXPECT_EQ(enc(std::get<CompressionCapabilities>(list[2])), hex("0200 0000 01000000 0200 0400"));
    EXPECT_EQ(enc(NetnameContext{"ab"}), hex("6100 6200"));
    EXPECT_EQ(enc(std::get<TransportCapabilities>(list[4])), hex("01000000"));
    EXPECT_EQ(enc(std::get<RdmaTransformCapabilities>(list[5])),
              hex("0200 0000 00000000 0100 0200"));
    EXPECT_EQ(enc(std::get<SigningCapabilities>(list[6])), hex("0300 0200 0100 0000"));
}

TEST(NegotiateContexts, ListGoldenLayout) {
    // Two contexts after 100 leading bytes: first at 104, second 8-aligned after it.
    SigningCapabilities s;
    s.algorithms = {signing_algorithm::kAesCmac};
    TransportCapabilities t;
    t.flags = 1;
    auto [out, off] = write_list({s, t}, 100);
    EXPECT_EQ(off, 104u);
    ByteVector tail(out.begin() + 100, out.end());
    EXPECT_EQ(tail, hex("00000000"                        // pad 100 -> 104
                        "0800 0400 00000000 0100 0100"    // SIGNING, DataLength 4 (ends at 116)
                        "00000000"                        // pad 116 -> 120
                        "0600 0400 00000000 01000000"));  // TRANSPORT; no pad after the last
}

TEST(NegotiateContexts, RoundTripEveryKind) {
    auto list = every_kind();
    for (size_t lead : {64u, 65u, 70u, 111u, 112u}) {
        auto [out, off] = write_list(list, lead);
        EXPECT_EQ(off % 8, 0u);
        auto back = parse_negotiate_contexts(out, off, uint16_t(list.size()));
        ASSERT_TRUE(back.ok()) << lead;
        EXPECT_EQ(*back, list);
        for (size_t i = 0; i < list.size(); ++i)
            EXPECT_EQ(negotiate_context_type_of((*back)[i]), negotiate_context_type_of(list[i]));
    }
}

TEST(NegotiateContexts, EmptyListWritesNothing) {
    auto [out, off] = write_list({}, 70);
    EXPECT_EQ(off, 0u);
    EXPECT_EQ(out.size(), 70u);
    auto back = parse_negotiate_contexts(out, 0, 0);
    ASSERT_TRUE(back.ok());
    EXPECT_TRUE(back->empty());
}

TEST(NegotiateContexts, DataShorterThanFixedPartIsInvalid) {
    // DataLength too short for the fixed part or for the announced arrays (MS-SMB2 3.3.5.4).
    EXPECT_EQ(PreauthIntegrityCapabilities::decode(hex("0100 00")).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(PreauthIntegrityCapabilities::decode(hex("0100 2000 0100 0000")).status(),
              NtStatus::InvalidParameter);  // salt missing
    EXPECT_EQ(EncryptionCapabilities::decode(hex("0200 0100")).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(CompressionCapabilities::decode(hex("0100 0000 000000")).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(TransportCapabilities::decode(hex("010000")).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(RdmaTransformCapabilities::decode(hex("0100 0000 00000000")).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(SigningCapabilities::decode(hex("0100")).status(), NtStatus::InvalidParameter);
}

TEST(NegotiateContexts, ZeroCountsAreInvalid) {
    EXPECT_EQ(PreauthIntegrityCapabilities::decode(hex("0000 0000")).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(EncryptionCapabilities::decode(hex("0000")).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(CompressionCapabilities::decode(hex("0000 0000 00000000")).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(RdmaTransformCapabilities::decode(hex("0000 0000 00000000")).status(),
              NtStatus::InvalidParameter);
    EXPECT_EQ(SigningCapabilities::decode(hex("0000")).status(), NtStatus::InvalidParameter);
}

TEST(NegotiateContexts, TrailingDataIsIgnored) {
    auto s = SigningCapabilities::decode(hex("0100 0200 FFFF"));
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->algorithms, std::vector<uint16_t>{signing_algorithm::kAesGmac});
}

TEST(NegotiateContexts, BadNetnameIsKeptRaw) {
    // An unpaired surrogate: the server ignores NETNAME anyway (MS-SMB2 3.3.5.4).
    auto msg = hex("0500 0200 00000000 00D8");
    auto list = parse_negotiate_contexts(msg, 0, 1);
    ASSERT_TRUE(list.ok());
    auto* u = std::get_if<UnknownNegotiateContext>(&(*list)[0]);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->type, negotiate_context_type::kNetname);
    EXPECT_EQ(u->data, hex("00D8"));
}

TEST(NegotiateContexts, NetnameDropsTerminatingNul) {
    auto n = NetnameContext::decode(hex("7300 7200 7600 0000"));
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(n->name, "srv");
}

TEST(NegotiateContexts, ParseRejectsOutOfBounds) {
    auto msg = hex("0800 0400 00000000 0100 0100");
    EXPECT_TRUE(parse_negotiate_contexts(msg, 0, 1).ok());
    EXPECT_EQ(parse_negotiate_contexts(msg, 0, 2).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(parse_negotiate_contexts(msg, 8, 1).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(parse_negotiate_contexts(msg, ~0ull - 3, 1).status(), NtStatus::InvalidParameter);
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(parse_negotiate_contexts(Bytes(msg).first(n), 0, 1).status(),
                  NtStatus::InvalidParameter);
}

TEST(NegotiateContexts, SecondContextMustBe8Aligned) {
    // A sender that packs the second context right after the first (offset 12) instead of at
    // the next 8-byte boundary (16): the reader looks at 16 and does not find SIGNING there.
    auto packed = hex("0600 0400 00000000 01000000 0800 0400 00000000 0100 0100");
    auto list = parse_negotiate_contexts(packed, 0, 2);
    ASSERT_TRUE(list.ok());
    EXPECT_EQ(find_negotiate_context<SigningCapabilities>(*list), nullptr);
    // Packed so that the aligned read runs off the end.
    auto packed2 = hex("0600 0400 00000000 01000000 0800 0400 0000FFFF 0100 0100");
    EXPECT_EQ(parse_negotiate_contexts(packed2, 0, 2).status(), NtStatus::InvalidParameter);
    auto good = hex("0600 0400 00000000 01000000 00000000 0800 0400 00000000 0100 0100");
    list = parse_negotiate_contexts(good, 0, 2);
    ASSERT_TRUE(list.ok());
    EXPECT_NE(find_negotiate_context<SigningCapabilities>(*list), nullptr);
    EXPECT_NE(find_negotiate_context<TransportCapabilities>(*list), nullptr);
    EXPECT_EQ(find_negotiate_context<EncryptionCapabilities>(*list), nullptr);
}

TEST(NegotiateContexts, ValidateRules) {
    PreauthIntegrityCapabilities p{{hash_algorithm::kSha512}, {}};
    EncryptionCapabilities e{{cipher::kAes128Gcm}};
    CompressionCapabilities c{0, {compression_algorithm::kNone}};
    RdmaTransformCapabilities r{{rdma_transform::kNone}};
    SigningCapabilities s{{signing_algorithm::kAesCmac}};
    NetnameContext n{"x"};
    UnknownNegotiateContext u{0x4242, {}};

    EXPECT_TRUE(validate_negotiate_contexts({p}).ok());
    EXPECT_TRUE(validate_negotiate_contexts({n, e, c, r, s, u, p, n, u}).ok());
    // MS-SMB2 3.3.5.4: exactly one PREAUTH...
    EXPECT_EQ(validate_negotiate_contexts({}).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(validate_negotiate_contexts({e, s}).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(validate_negotiate_contexts({p, p}).status(), NtStatus::InvalidParameter);
    // ...and at most one of each of these four.
    EXPECT_EQ(validate_negotiate_contexts({p, e, e}).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(validate_negotiate_contexts({p, c, c}).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(validate_negotiate_contexts({p, r, r}).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(validate_negotiate_contexts({p, s, s}).status(), NtStatus::InvalidParameter);
}
