// SMB2 CREATE request/response codec (protocol/create.h). Golden bodies are written by hand from
// the MS-SMB2 2.2.13 / 2.2.14 / 2.2.13.2 layouts: a Windows-style open of "dir\file.txt" asking
// for maximal access (MxAc) and the on-disk id (QFid), and the response carrying both answers.
#include <gtest/gtest.h>

#include <string>

#include "protocol/create.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header(Command c, bool response) {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = c;
    h.message_id = 7;
    h.flags = response ? flags::kServerToRedir : 0;
    h.serialize(w);
    return v;
}

ByteVector message(Command c, bool response, const ByteVector& body) {
    ByteVector v = header(c, response);
    v.insert(v.end(), body.begin(), body.end());
    return v;
}

template <class T>
ByteVector serialize(Command c, bool response, const T& x) {
    ByteVector v = header(c, response);
    ByteWriter w(v);
    x.serialize(w);
    return v;
}

template <class T>
void expect_prefixes_rejected(const ByteVector& msg) {
    ASSERT_TRUE(T::parse(msg).ok());
    for (size_t n = 0; n < msg.size(); ++n) {
        auto r = T::parse(Bytes(msg).first(n));
        ASSERT_FALSE(r.ok()) << "prefix " << n;
        EXPECT_EQ(r.status(), NtStatus::InvalidParameter) << "prefix " << n;
    }
}

// MS-SMB2 2.2.13 body, offsets relative to the body (msg offset = 0x40 + body offset).
const ByteVector kRequestBody =
    hex("3900"              // StructureSize 57
        "00"                // SecurityFlags
        "00"                // RequestedOplockLevel NONE
        "02000000"          // ImpersonationLevel Impersonation
        "0000000000000000"  // SmbCreateFlags
        "0000000000000000"  // Reserved
        "89001200"          // DesiredAccess FILE_GENERIC_READ
        "80000000"          // FileAttributes NORMAL
        "07000000"          // ShareAccess READ|WRITE|DELETE
        "01000000"          // CreateDisposition FILE_OPEN
        "40000000"          // CreateOptions FILE_NON_DIRECTORY_FILE
        "7800"              // NameOffset 0x78
        "1800"              // NameLength 24
        "90000000"          // CreateContextsOffset 0x90 (0x78 + 24, 8-aligned)
        "2c000000"          // CreateContextsLength 44
        // 0x78: "dir\file.txt" in UTF-16LE
        "6400690072005c00660069006c0065002e00740078007400"
        // 0x90: MxAc, no data; Next = 24 (16 + 4, padded to 8)
        "18000000 1000 0400 0000 0000 00000000 4d784163 00000000"
        // 0xa8: QFid, no data, last
        "00000000 1000 0400 0000 0000 00000000 51466964");

// MS-SMB2 2.2.14 body.
const ByteVector kResponseBody =
    hex("5900"                               // StructureSize 89
        "00"                                 // OplockLevel NONE
        "00"                                 // Flags
        "01000000"                           // CreateAction FILE_OPENED
        "00b0c81e2f7cd901"                   // CreationTime
        "0010d92f408dd901"                   // LastAccessTime
        "0020ea40519ed901"                   // LastWriteTime
        "0030fb5162afd901"                   // ChangeTime
        "0010000000000000"                   // AllocationSize 4096
        "d204000000000000"                   // EndofFile 1234
        "20000000"                           // FileAttributes ARCHIVE
        "00000000"                           // Reserved2
        "1100000000000000 2200000000000000"  // FileId {0x11, 0x22}
        "98000000"                           // CreateContextsOffset 0x98
        "58000000"                           // CreateContextsLength 88
        // 0x98: MxAc response: Next 32, data at 24: QueryStatus SUCCESS, MaximalAccess 0x001F01FF
        "20000000 1000 0400 0000 1800 08000000 4d784163 00000000 00000000 ff011f00"
        // 0xb8: QFid response, last: DiskFileId, VolumeId, Reserved(16)
        "00000000 1000 0400 0000 1800 20000000 51466964 00000000"
        "efcdab8967452301 0100000000000000 00000000000000000000000000000000");

}  // namespace

TEST(CreateRequestTest, ParsesGoldenRequest) {
    auto msg = message(Command::Create, false, kRequestBody);
    auto r = CreateRequest::parse(msg);
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    EXPECT_EQ(r->requested_oplock_level, oplock_level::kNone);
    EXPECT_EQ(r->impersonation_level, impersonation_level::kImpersonation);
    EXPECT_EQ(r->desired_access, access_mask::kFileGenericRead);
    EXPECT_EQ(r->file_attributes, file_attributes::kNormal);
    EXPECT_EQ(r->share_access, share_access::kAll);
    EXPECT_EQ(r->create_disposition, create_disposition::kOpen);
    EXPECT_EQ(r->create_options, create_options::kNonDirectoryFile);
    EXPECT_EQ(r->name, "dir\\file.txt");
    ASSERT_EQ(r->contexts.items.size(), 2u);
    EXPECT_TRUE(r->contexts.items[0].name_is(create_context_name::kQueryMaximalAccess));
    EXPECT_TRUE(r->contexts.items[0].data.empty());
    EXPECT_TRUE(r->contexts.items[1].name_is(create_context_name::kQueryOnDiskId));
    auto mxac = r->contexts.get<MaximalAccessRequest>();
    ASSERT_TRUE(mxac.ok());
    ASSERT_TRUE(mxac->has_value());
    EXPECT_FALSE((*mxac)->timestamp.has_value());
}

TEST(CreateRequestTest, SerializesGoldenRequest) {
    CreateRequest req;
    req.desired_access = access_mask::kFileGenericRead;
    req.file_attributes = file_attributes::kNormal;
    req.share_access = share_access::kAll;
    req.create_disposition = create_disposition::kOpen;
    req.create_options = create_options::kNonDirectoryFile;
    req.name = "dir\\file.txt";
    req.contexts.add(MaximalAccessRequest{});
    req.contexts.add(Bytes(create_context_name::kQueryOnDiskId), {});
    EXPECT_EQ(serialize(Command::Create, false, req),
              message(Command::Create, false, kRequestBody));
}

TEST(CreateRequestTest, ShareRootHasEmptyNameAndOnePaddingByte) {
    CreateRequest req;
    auto msg = serialize(Command::Create, false, req);
    ASSERT_EQ(msg.size(), kHeaderSize + 56 + 1);                // the Buffer is at least one byte
    EXPECT_EQ(load_le16(msg.data() + kHeaderSize + 44), 0x78);  // NameOffset
    EXPECT_EQ(load_le16(msg.data() + kHeaderSize + 46), 0);     // NameLength
    auto r = CreateRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->name, "");
    EXPECT_TRUE(r->contexts.empty());
}

TEST(CreateRequestTest, RejectsOddNameLength) {
    auto body = kRequestBody;
    body[46] = std::byte{0x17};  // NameLength 23
    EXPECT_EQ(CreateRequest::parse(message(Command::Create, false, body)).status(),
              NtStatus::InvalidParameter);
}

TEST(CreateRequestTest, RejectsNameInsideFixedPart) {
    auto body = kRequestBody;
    body[44] = std::byte{0x70};  // NameOffset 0x70 < 0x78
    EXPECT_EQ(CreateRequest::parse(message(Command::Create, false, body)).status(),
              NtStatus::InvalidParameter);
}

TEST(CreateRequestTest, RejectsContextsPastMessage) {
    auto body = kRequestBody;
    body[52] = std::byte{0x2d};  // CreateContextsLength 45: one byte past the end
    EXPECT_EQ(CreateRequest::parse(message(Command::Create, false, body)).status(),
              NtStatus::InvalidParameter);
}

TEST(CreateRequestTest, RejectsWrongStructureSize) {
    auto body = kRequestBody;
    body[0] = std::byte{0x38};
    EXPECT_EQ(CreateRequest::parse(message(Command::Create, false, body)).status(),
              NtStatus::InvalidParameter);
}

TEST(CreateRequestTest, RejectsUnpairedSurrogateInName) {
    auto body = kRequestBody;
    body[56] = std::byte{0x00};
    body[57] = std::byte{0xD8};  // first character 0xD800, followed by 'i'
    EXPECT_EQ(CreateRequest::parse(message(Command::Create, false, body)).status(),
              NtStatus::ObjectNameInvalid);
}

TEST(CreateRequestTest, RejectsEveryTruncation) {
    expect_prefixes_rejected<CreateRequest>(message(Command::Create, false, kRequestBody));
}

TEST(CreateRequestTest, RoundTripsLeaseAndDurableV2) {
    CreateRequest req;
    req.requested_oplock_level = oplock_level::kLease;
    req.desired_access = access_mask::kMaximumAllowed;
    req.create_disposition = create_disposition::kOverwriteIf;
    req.create_options = create_options::kWriteThrough | create_options::kDeleteOnClose;
    req.name = "a\\b\\ünïcode-文件.bin";
    LeaseContext lease;
    lease.version = 2;
    lease.lease_key[0] = std::byte{0xAA};
    lease.lease_state = lease_state::kReadCaching | lease_state::kHandleCaching;
    lease.epoch = 3;
    req.contexts.add(lease);
    DurableHandleRequestV2 dh2q;
    dh2q.timeout = 60000;
    dh2q.flags = durable_flags::kPersistent;
    dh2q.create_guid[15] = std::byte{0x42};
    req.contexts.add(dh2q);
    auto msg = serialize(Command::Create, false, req);
    // Contexts start 8-aligned from the header.
    EXPECT_EQ(load_le32(msg.data() + kHeaderSize + 48) % 8, 0u);
    auto r = CreateRequest::parse(msg);
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    EXPECT_EQ(r->name, req.name);
    EXPECT_EQ(r->requested_oplock_level, oplock_level::kLease);
    EXPECT_EQ(r->create_options, req.create_options);
    EXPECT_EQ(r->contexts, req.contexts);
    auto l = r->contexts.get<LeaseContext>();
    ASSERT_TRUE(l.ok() && l->has_value());
    EXPECT_EQ(**l, lease);
    auto d = r->contexts.get<DurableHandleRequestV2>();
    ASSERT_TRUE(d.ok() && d->has_value());
    EXPECT_EQ((*d)->timeout, 60000u);
    EXPECT_EQ((*d)->flags, durable_flags::kPersistent);
    EXPECT_EQ((*d)->create_guid, dh2q.create_guid);
}

TEST(CreateResponseTest, SerializesGoldenResponse) {
    CreateResponse rsp;
    rsp.create_action = create_action::kOpened;
    rsp.creation_time = 0x01d97c2f1ec8b000;
    rsp.last_access_time = 0x01d98d402fd91000;
    rsp.last_write_time = 0x01d99e5140ea2000;
    rsp.change_time = 0x01d9af6251fb3000;
    rsp.allocation_size = 4096;
    rsp.end_of_file = 1234;
    rsp.file_attributes = file_attributes::kArchive;
    rsp.file_id = {0x11, 0x22};
    rsp.contexts.add(MaximalAccessResponse{NtStatus::Success, access_mask::kFileAllAccess});
    rsp.contexts.add(QueryOnDiskIdResponse{0x0123456789abcdef, 1});
    EXPECT_EQ(serialize(Command::Create, true, rsp), message(Command::Create, true, kResponseBody));
}

TEST(CreateResponseTest, ParsesGoldenResponse) {
    auto msg = message(Command::Create, true, kResponseBody);
    auto r = CreateResponse::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->create_action, create_action::kOpened);
    EXPECT_EQ(r->end_of_file, 1234);
    EXPECT_EQ(r->allocation_size, 4096);
    EXPECT_EQ(r->file_id, (FileId{0x11, 0x22}));
    auto mx = r->contexts.get<MaximalAccessResponse>();
    ASSERT_TRUE(mx.ok() && mx->has_value());
    EXPECT_EQ((*mx)->maximal_access, access_mask::kFileAllAccess);
    auto q = r->contexts.get<QueryOnDiskIdResponse>();
    ASSERT_TRUE(q.ok() && q->has_value());
    EXPECT_EQ((*q)->disk_file_id, 0x0123456789abcdefu);
    EXPECT_EQ((*q)->volume_id, 1u);
    expect_prefixes_rejected<CreateResponse>(msg);
}

TEST(CreateResponseTest, NoContextsMeansZeroOffset) {
    CreateResponse rsp;
    auto msg = serialize(Command::Create, true, rsp);
    ASSERT_EQ(msg.size(), kHeaderSize + 88);
    EXPECT_EQ(load_le32(msg.data() + kHeaderSize + 80), 0u);
    EXPECT_EQ(load_le32(msg.data() + kHeaderSize + 84), 0u);
    ASSERT_TRUE(CreateResponse::parse(msg).ok());
}
