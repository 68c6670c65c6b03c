// SMB2 QUERY_DIRECTORY codec (protocol/query_directory.h), against MS-SMB2 2.2.33 / 2.2.34.
#include <gtest/gtest.h>

#include <string>

#include "protocol/file_info.h"
#include "protocol/query_directory.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header() {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::QueryDirectory;
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

const ByteVector kRequestBody =
    hex("2100"                               // StructureSize 33
        "25"                                 // FileIdBothDirectoryInformation
        "01"                                 // RESTART_SCANS
        "00000000"                           // FileIndex
        "0100000000000000 0200000000000000"  // FileId
        "6000"                               // FileNameOffset 0x60
        "0200"                               // FileNameLength 2
        "00000100"                           // OutputBufferLength 65536
        "2a00");                             // "*"

}  // namespace

TEST(QueryDirectoryTest, ParsesGoldenRequest) {
    auto msg = message(kRequestBody);
    auto r = QueryDirectoryRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->file_information_class, file_info_class::kFileIdBothDirectoryInformation);
    EXPECT_EQ(r->flags, query_directory_flags::kRestartScans);
    EXPECT_EQ(r->file_id, (FileId{1, 2}));
    EXPECT_EQ(r->pattern, "*");
    EXPECT_EQ(r->output_buffer_length, 65536u);
    EXPECT_EQ(serialize(*r), msg);
    expect_prefixes_rejected<QueryDirectoryRequest>(msg);
}

TEST(QueryDirectoryTest, RejectsBadPatternRange) {
    auto body = kRequestBody;
    body[24] = std::byte{0x58};  // FileNameOffset inside the fixed part
    EXPECT_EQ(QueryDirectoryRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
    body = kRequestBody;
    body[26] = std::byte{0x03};  // odd FileNameLength
    EXPECT_EQ(QueryDirectoryRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
}

TEST(QueryDirectoryTest, EmptyPatternRoundTrip) {
    QueryDirectoryRequest req;
    req.file_information_class = file_info_class::kFileNamesInformation;
    req.flags = query_directory_flags::kReopen;
    req.output_buffer_length = 1024;
    auto msg = serialize(req);
    ASSERT_EQ(msg.size(), kHeaderSize + 33);  // one Buffer byte
    auto r = QueryDirectoryRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->pattern, "");
    EXPECT_EQ(r->flags, query_directory_flags::kReopen);
}

TEST(QueryDirectoryTest, ResponseGolden) {
    ByteVector entries = hex("0000000000000000 0200000061006200");
    QueryDirectoryResponse rsp{entries};
    auto msg = serialize(rsp);
    EXPECT_EQ(msg, message(hex("0900 4800 10000000 0000000000000000 0200000061006200")));
    auto r = QueryDirectoryResponse::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(ByteVector(r->buffer.begin(), r->buffer.end()), entries);
    expect_prefixes_rejected<QueryDirectoryResponse>(msg);
}
