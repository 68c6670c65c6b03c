// SMB2 IOCTL codec and FSCTL payloads (protocol/ioctl.h): MS-SMB2 2.2.31 / 2.2.32, the
// VALIDATE_NEGOTIATE_INFO exchange (2.2.31.4 / 2.2.32.6) and NETWORK_INTERFACE_INFO (2.2.32.5,
// digest 6.10).
#include <gtest/gtest.h>

#include <string>

#include "protocol/ioctl.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header() {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::Ioctl;
    h.serialize(w);
    return v;
}

ByteVector message(const ByteVector& body) {
    ByteVector v = header();
    v.insert(v.end(), body.begin(), body.end());
    return v;
}

template <class T>
ByteVector serialize(const T& x) {
    ByteVector v = header();
    ByteWriter w(v);
    x.serialize(w);
    return v;
}

template <class T>
ByteVector encode(const T& x) {
    ByteVector v;
    ByteWriter w(v);
    x.encode(w);
    return v;
}

template <class T>
void expect_prefixes_rejected(const ByteVector& msg) {
    ASSERT_TRUE(T::parse(msg).ok());
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(T::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter) << n;
}

// VALIDATE_NEGOTIATE_INFO as a 3.0.2 client sends it: FileId all-ones, IS_FSCTL, MaxOutput 24.
const ByteVector kVniInput =
    hex("7f000000"                          // Capabilities
        "00112233445566778899aabbccddeeff"  // ClientGuid
        "0100"                              // SecurityMode SIGNING_ENABLED
        "0400"                              // DialectCount 4
        "0202 1002 0003 0203");             // 2.0.2, 2.1, 3.0, 3.0.2

const ByteVector kVniRequestBody =
    hex("3900"                               // StructureSize 57
        "0000"                               // Reserved
        "04021400"                           // CtlCode FSCTL_VALIDATE_NEGOTIATE_INFO
        "ffffffffffffffff ffffffffffffffff"  // FileId
        "78000000"                           // InputOffset 0x78
        "20000000"                           // InputCount 32
        "00000000"                           // MaxInputResponse
        "00000000"                           // OutputOffset
        "00000000"                           // OutputCount
        "18000000"                           // MaxOutputResponse 24
        "01000000"                           // Flags IS_FSCTL
        "00000000");                         // Reserved2

ByteVector vni_request() {
    ByteVector v = message(kVniRequestBody);
    v.insert(v.end(), kVniInput.begin(), kVniInput.end());
    return v;
}

}  // namespace

TEST(IoctlTest, ParsesValidateNegotiateRequest) {
    auto msg = vni_request();
    auto r = IoctlRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->ctl_code, fsctl::kValidateNegotiateInfo);
    EXPECT_TRUE(r->file_id.is_related_placeholder());
    EXPECT_EQ(r->flags, ioctl_flags::kIsFsctl);
    EXPECT_EQ(r->max_output_response, 24u);
    auto vni = ValidateNegotiateInfoRequest::decode(r->input);
    ASSERT_TRUE(vni.ok());
    EXPECT_EQ(vni->capabilities, 0x7fu);
    EXPECT_EQ(vni->guid[15], std::byte{0xff});
    EXPECT_EQ(vni->security_mode, 1);
    EXPECT_EQ(vni->dialects, (std::vector<uint16_t>{0x0202, 0x0210, 0x0300, 0x0302}));
    EXPECT_EQ(encode(*vni), kVniInput);
    EXPECT_EQ(serialize(*r), msg);
    expect_prefixes_rejected<IoctlRequest>(msg);
}

TEST(IoctlTest, ValidateNegotiateRequestRejectsShortDialectList) {
    for (size_t n = 0; n < kVniInput.size(); ++n)
        EXPECT_EQ(ValidateNegotiateInfoRequest::decode(Bytes(kVniInput).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
}

TEST(IoctlTest, ValidateNegotiateResponseInIoctlResponse) {
    ValidateNegotiateInfoResponse vni;
    vni.capabilities = 0x2f;
    vni.guid[0] = std::byte{0xAB};
    vni.security_mode = 3;
    vni.dialect = 0x0302;
    auto out = encode(vni);
    EXPECT_EQ(out, hex("2f000000 ab000000000000000000000000000000 0300 0203"));
    IoctlResponse rsp;
    rsp.ctl_code = fsctl::kValidateNegotiateInfo;
    rsp.file_id = kPlaceholderFileId;
    rsp.output = out;
    auto msg = serialize(rsp);
    EXPECT_EQ(msg, message(hex("3100 0000 04021400 ffffffffffffffff ffffffffffffffff"
                               "70000000 00000000"  // InputOffset 0x70, InputCount 0
                               "70000000 18000000"  // OutputOffset 0x70, OutputCount 24
                               "00000000 00000000"
                               "2f000000 ab000000000000000000000000000000 0300 0203")));
    auto r = IoctlResponse::parse(msg);
    ASSERT_TRUE(r.ok());
    auto back = ValidateNegotiateInfoResponse::decode(r->output);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, vni);
    expect_prefixes_rejected<IoctlResponse>(msg);
}

TEST(IoctlTest, ResponseOutputOffsetRoundedUpAfterInput) {
    ByteVector in = hex("010203"), out = hex("aabb");
    IoctlResponse rsp;
    rsp.input = in;
    rsp.output = out;
    auto msg = serialize(rsp);
    EXPECT_EQ(load_le32(msg.data() + 64 + 24), 0x70u);  // InputOffset
    EXPECT_EQ(load_le32(msg.data() + 64 + 28), 3u);
    EXPECT_EQ(load_le32(msg.data() + 64 + 32), 0x78u);  // 0x73 rounded up to 8
    auto r = IoctlResponse::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(ByteVector(r->input.begin(), r->input.end()), in);
    EXPECT_EQ(ByteVector(r->output.begin(), r->output.end()), out);
}

TEST(IoctlTest, RequestRejectsInputInsideFixedPartOrOutputPastEnd) {
    auto body = kVniRequestBody;
    body[24] = std::byte{0x70};  // InputOffset 0x70 < 0x78
    auto msg = message(body);
    msg.insert(msg.end(), kVniInput.begin(), kVniInput.end());
    EXPECT_EQ(IoctlRequest::parse(msg).status(), NtStatus::InvalidParameter);
    body = kVniRequestBody;
    body[36] = std::byte{0x78};
    body[40] = std::byte{0x40};  // OutputOffset 0x78, OutputCount 64: past the message
    msg = message(body);
    msg.insert(msg.end(), kVniInput.begin(), kVniInput.end());
    EXPECT_EQ(IoctlRequest::parse(msg).status(), NtStatus::InvalidParameter);
}

TEST(IoctlTest, NetworkInterfaceInfoLayout) {
    NetworkInterfaceInfo v4;
    v4.if_index = 2;
    v4.capability = interface_capability::kRssCapable | interface_capability::kRdmaCapable;
    v4.link_speed = 100'000'000'000ull;
    v4.family = sockaddr_family::kInterNetwork;
    v4.address = {192, 168, 1, 10};
    NetworkInterfaceInfo v6;
    v6.if_index = 2;
    v6.capability = interface_capability::kRdmaCapable;
    v6.link_speed = 100'000'000'000ull;
    v6.family = sockaddr_family::kInterNetworkV6;
    v6.address = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    std::vector<NetworkInterfaceInfo> list{v4, v6};
    ByteVector out;
    ByteWriter w(out);
    NetworkInterfaceInfo::encode_list(w, list);
    ASSERT_EQ(out.size(), 2 * 152u);
    // Entry 1: Next 152, IfIndex 2, Capability 3, Reserved 0, LinkSpeed, then SOCKADDR_STORAGE.
    EXPECT_EQ(ByteVector(out.begin(), out.begin() + 32),
              hex("98000000 02000000 03000000 00000000 00e8764817000000"
                  "0200 0000 c0a8010a"));
    for (size_t i = 32; i < 152; ++i)
        EXPECT_EQ(out[i], std::byte{0}) << i;
    // Entry 2 (last): Next 0; family 0x17, port 0, flowinfo 0, address at +8 of the storage.
    EXPECT_EQ(load_le32(out.data() + 152), 0u);
    EXPECT_EQ(load_le16(out.data() + 152 + 24), 0x17);
    EXPECT_EQ(out[152 + 24 + 8], std::byte{0xfe});
    EXPECT_EQ(out[152 + 24 + 23], std::byte{0x01});
    auto back = NetworkInterfaceInfo::decode_list(out);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, list);
}

TEST(IoctlTest, CopychunkDecodeAndResponse) {
    ByteVector in =
        hex("0102030405060708090a0b0c0d0e0f101112131415161718"  // SourceKey
            "02000000 00000000"                                 // ChunkCount 2
            "0000000000000000 0000100000000000 00001000 00000000"
            "0000100000000000 0000200000000000 00000800 00000000");
    auto r = SrvCopychunkCopy::decode(in);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->source_key[23], std::byte{0x18});
    ASSERT_EQ(r->chunks.size(), 2u);
    EXPECT_EQ(r->chunks[1], (SrvCopychunk{1u << 20, 2u << 20, 1u << 19}));
    EXPECT_EQ(encode(*r), in);
    for (size_t n = 0; n < in.size(); ++n)
        EXPECT_EQ(SrvCopychunkCopy::decode(Bytes(in).first(n)).status(),
                  NtStatus::InvalidParameter);
    // A huge ChunkCount is refused before anything is allocated for it.
    in[24] = in[25] = in[26] = in[27] = std::byte{0xFF};
    EXPECT_EQ(SrvCopychunkCopy::decode(in).status(), NtStatus::InvalidParameter);
    EXPECT_EQ(encode(SrvCopychunkResponse{256, 1048576, 16777216}),
              hex("00010000 00001000 00000001"));
}

TEST(IoctlTest, ResumeKeySnapshotsRangesZeroData) {
    SrvRequestResumeKeyResponse rk;
    rk.resume_key[0] = std::byte{0x99};
    auto v = encode(rk);
    ASSERT_EQ(v.size(), 32u);
    EXPECT_EQ(load_le32(v.data() + 24), 0u);  // ContextLength
    EXPECT_EQ(SrvRequestResumeKeyResponse::decode(v)->resume_key, rk.resume_key);

    ByteVector snap;
    ByteWriter sw(snap);
    SrvSnapshotArray{}.encode(sw);
    EXPECT_EQ(snap, hex("00000000 00000000 02000000 0000"));
    SrvSnapshotArray one{1, {"@GMT-2024.01.02-03.04.05"}};
    snap.clear();
    one.encode(sw, 16);  // too small: header only, size needed reported
    EXPECT_EQ(snap, hex("01000000 00000000 34000000"));  // 24 chars * 2 + 2 + 2 = 52

    FileAllocatedRangeBuffer range{4096, 8192};
    EXPECT_EQ(encode(range), hex("0010000000000000 0020000000000000"));
    EXPECT_EQ(*FileAllocatedRangeBuffer::decode(encode(range)), range);
    EXPECT_EQ(FileAllocatedRangeBuffer::decode(ByteVector(15)).status(),
              NtStatus::InvalidParameter);
    FileZeroDataInformation zero{10, 20};
    EXPECT_EQ(*FileZeroDataInformation::decode(encode(zero)), zero);
    EXPECT_EQ(FileZeroDataInformation::decode(ByteVector(8)).status(), NtStatus::InvalidParameter);
}

TEST(IoctlTest, ResiliencyAndDuplicateExtents) {
    EXPECT_EQ(encode(NetworkResiliencyRequest{30000}), hex("30750000 00000000"));
    EXPECT_EQ(NetworkResiliencyRequest::decode(hex("30750000 00000000"))->timeout, 30000u);
    EXPECT_EQ(NetworkResiliencyRequest::decode(hex("30750000")).status(),
              NtStatus::InvalidParameter);
    DuplicateExtentsData dup{{1, 2}, 0, 65536, 1 << 20};
    auto v = encode(dup);
    EXPECT_EQ(v, hex("0100000000000000 0200000000000000 0000000000000000 0000010000000000"
                     "0000100000000000"));
    EXPECT_EQ(*DuplicateExtentsData::decode(v), dup);
    for (size_t n = 0; n < v.size(); ++n)
        EXPECT_EQ(DuplicateExtentsData::decode(Bytes(v).first(n)).status(),
                  NtStatus::InvalidParameter);
}

TEST(IoctlTest, FsctlCodesFromTheSpecs) {
    EXPECT_EQ(fsctl::kPipeTransceive, 0x0011C017u);
    EXPECT_EQ(fsctl::kQueryNetworkInterfaceInfo, 0x001401FCu);
    EXPECT_EQ(fsctl::kValidateNegotiateInfo, 0x00140204u);
    EXPECT_EQ(fsctl::kSrvCopychunkWrite, 0x001480F2u);
    EXPECT_EQ(fsctl::kQueryAllocatedRanges, 0x000940CFu);
    EXPECT_EQ(fsctl::kSetZeroData, 0x000980C8u);
}
