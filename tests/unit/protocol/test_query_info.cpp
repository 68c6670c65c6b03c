// SMB2 QUERY_INFO codec (protocol/query_info.h), against MS-SMB2 2.2.37 / 2.2.38.
#include <gtest/gtest.h>

#include <string>

#include "protocol/file_info.h"
#include "protocol/query_info.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header() {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::QueryInfo;
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
void expect_prefixes_rejected(const ByteVector& msg) {
    ASSERT_TRUE(T::parse(msg).ok());
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(T::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter) << n;
}

// A FileFullEaInformation query naming one EA ("user.x") in a FILE_GET_EA_INFORMATION list.
const ByteVector kEaQueryBody =
    hex("2900"                               // StructureSize 41
        "01"                                 // SMB2_0_INFO_FILE
        "0f"                                 // FileFullEaInformation
        "00100000"                           // OutputBufferLength 4096
        "6800"                               // InputBufferOffset 0x68
        "0000"                               // Reserved
        "0c000000"                           // InputBufferLength 12
        "00000000"                           // AdditionalInformation
        "01000000"                           // Flags SL_RESTART_SCAN
        "0700000000000000 0800000000000000"  // FileId
        "00000000 06 757365722e78 00");      // FILE_GET_EA_INFORMATION

}  // namespace

TEST(QueryInfoTest, ParsesEaQuery) {
    auto msg = message(kEaQueryBody);
    auto r = QueryInfoRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->info_type, info_type::kFile);
    EXPECT_EQ(r->file_info_class, file_info_class::kFileFullEaInformation);
    EXPECT_EQ(r->output_buffer_length, 4096u);
    EXPECT_EQ(r->flags, query_info_flags::kRestartScan);
    EXPECT_EQ(r->file_id, (FileId{7, 8}));
    auto names = FileGetEaInfo::decode(r->input);
    ASSERT_TRUE(names.ok());
    EXPECT_EQ(names->names, std::vector<std::string>{"user.x"});
    EXPECT_EQ(serialize(*r), msg);
    expect_prefixes_rejected<QueryInfoRequest>(msg);
}

TEST(QueryInfoTest, SecurityQueryWithoutInput) {
    QueryInfoRequest req;
    req.info_type = info_type::kSecurity;
    req.additional_information =
        security_information::kOwner | security_information::kGroup | security_information::kDacl;
    req.output_buffer_length = 65536;
    auto msg = serialize(req);
    ASSERT_EQ(msg.size(), kHeaderSize + 41);
    EXPECT_EQ(load_le16(msg.data() + 64 + 8), 0);  // InputBufferOffset
    auto r = QueryInfoRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->info_type, info_type::kSecurity);
    EXPECT_EQ(r->additional_information, 7u);
    EXPECT_TRUE(r->input.empty());
}

TEST(QueryInfoTest, RejectsInputInFixedPart) {
    auto body = kEaQueryBody;
    body[8] = std::byte{0x60};
    EXPECT_EQ(QueryInfoRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
}

TEST(QueryInfoTest, ResponseGolden) {
    ByteVector info = hex("0100000000000000");
    auto msg = serialize(QueryInfoResponse{info});
    EXPECT_EQ(msg, message(hex("0900 4800 08000000 0100000000000000")));
    auto r = QueryInfoResponse::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(ByteVector(r->buffer.begin(), r->buffer.end()), info);
    expect_prefixes_rejected<QueryInfoResponse>(msg);
}
