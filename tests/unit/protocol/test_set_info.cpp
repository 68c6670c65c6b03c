// SMB2 SET_INFO codec (protocol/set_info.h), against MS-SMB2 2.2.39 / 2.2.40, with a rename
// buffer in the SMB2 form of MS-FSCC 2.4.42.2.
#include <gtest/gtest.h>

#include <string>

#include "protocol/file_info.h"
#include "protocol/set_info.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header() {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::SetInfo;
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

const ByteVector kRenameBody =
    hex("2100"                               // StructureSize 33
        "01"                                 // SMB2_0_INFO_FILE
        "0a"                                 // FileRenameInformation
        "1a000000"                           // BufferLength 26
        "6000"                               // BufferOffset 0x60
        "0000"                               // Reserved
        "00000000"                           // AdditionalInformation
        "0900000000000000 0a00000000000000"  // FileId
        // FILE_RENAME_INFORMATION_TYPE_2: ReplaceIfExists 1, Reserved 7, RootDirectory 0,
        // FileNameLength 6, "x\y"
        "01 00000000000000 0000000000000000 06000000 78005c007900");

}  // namespace

TEST(SetInfoTest, ParsesRename) {
    auto msg = message(kRenameBody);
    auto r = SetInfoRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->info_type, info_type::kFile);
    EXPECT_EQ(r->file_info_class, file_info_class::kFileRenameInformation);
    EXPECT_EQ(r->file_id, (FileId{9, 10}));
    ASSERT_EQ(r->buffer.size(), 26u);
    auto rename = FileRenameInfo::decode(r->buffer);
    ASSERT_TRUE(rename.ok());
    EXPECT_TRUE(rename->replace_if_exists);
    EXPECT_EQ(rename->root_directory, 0u);
    EXPECT_EQ(rename->file_name, "x\\y");
    EXPECT_EQ(serialize(*r), msg);
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(SetInfoRequest::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter)
            << n;
}

TEST(SetInfoTest, RejectsBufferInFixedPartOrPastEnd) {
    auto body = kRenameBody;
    body[8] = std::byte{0x58};
    EXPECT_EQ(SetInfoRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
    body = kRenameBody;
    body[4] = std::byte{0x1b};
    EXPECT_EQ(SetInfoRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
}

TEST(SetInfoTest, SecuritySetRoundTrip) {
    ByteVector sd = hex("01000480 00000000 00000000 00000000 00000000");
    SetInfoRequest req;
    req.info_type = info_type::kSecurity;
    req.additional_information = security_information::kDacl;
    req.file_id = {1, 2};
    req.buffer = sd;
    auto msg = serialize(req);
    EXPECT_EQ(load_le16(msg.data() + 64 + 8), 0x60);
    auto r = SetInfoRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->additional_information, security_information::kDacl);
    EXPECT_EQ(ByteVector(r->buffer.begin(), r->buffer.end()), sd);
}

TEST(SetInfoTest, Response) {
    auto msg = serialize(SetInfoResponse{});
    EXPECT_EQ(msg, message(hex("0200")));
    EXPECT_TRUE(SetInfoResponse::parse(msg).ok());
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(SetInfoResponse::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter);
}
