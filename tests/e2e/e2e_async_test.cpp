// End-to-end: asynchronous operation (interim responses, CANCEL; MS-SMB2 3.3.4.2, 3.3.5.16),
// pipelined requests within the credit window, and maximum-size signed I/O, through daxsmbd's
// own client against the in-process server.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "protocol/access_mask.h"
#include "protocol/change_notify.h"
#include "protocol/notify_info.h"
#include "protocol/query_info.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
namespace am = protocol::access_mask;

constexpr uint32_t kRw = am::kFileGenericRead | am::kFileGenericWrite | am::kDelete;

class E2eAsync : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { server_ = new TestServer(); }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->error(); }

    static std::unique_ptr<Smb2Client> login(NegotiateOptions n = {}) {
        auto c = std::make_unique<Smb2Client>();
        EXPECT_TRUE(c->connect("127.0.0.1", server_->port()));
        EXPECT_STATUS(c->negotiate(n), NtStatus::Success);
        EXPECT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
        EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
        return c;
    }
    static std::string local(const std::string& name) { return server_->share_dir() + "/" + name; }

    // Opens directory `name` (created on disk first) for CHANGE_NOTIFY.
    static FileId open_dir(Smb2Client& c, const std::string& name) {
        ::mkdir(local(name).c_str(), 0755);
        auto d = c.open(name, am::kFileListDirectory | am::kFileReadAttributes | am::kSynchronize,
                        create_disposition::kOpen, create_options::kDirectoryFile);
        EXPECT_STATUS(d, NtStatus::Success);
        return d.body.file_id;
    }

    static TestServer* server_;
};
TestServer* E2eAsync::server_ = nullptr;

ChangeNotifyRequest notify_on(FileId dir) {
    ChangeNotifyRequest n;
    n.file_id = dir;
    n.output_buffer_length = 4096;
    n.completion_filter = completion_filter::kFileName | completion_filter::kDirName;
    return n;
}

TEST_F(E2eAsync, ChangeNotifyGoesAsyncAndCancelEndsIt) {
    auto c = login();
    FileId dir = open_dir(*c, "watched-cancel");
    CallOptions co;
    co.payload = 4096;
    auto mid = c->send(Command::ChangeNotify, notify_on(dir), co);
    ASSERT_TRUE(mid);
    // MS-SMB2 3.3.4.2: STATUS_PENDING, ASYNC flag and a non-zero AsyncId.
    auto interim = c->wait_reply(*mid, true);
    ASSERT_STATUS(interim, NtStatus::Pending);
    ASSERT_TRUE(interim.header.is_async());
    ASSERT_NE(interim.header.async_id, 0u);
    // MS-SMB2 3.3.5.16: CANCEL by AsyncId; the request ends with STATUS_CANCELLED.
    ASSERT_TRUE(c->cancel(*mid, interim.header.async_id));
    auto final_reply = c->wait_reply(*mid);
    EXPECT_STATUS(final_reply, NtStatus::Cancelled);
    EXPECT_TRUE(final_reply.header.is_async());
    EXPECT_EQ(final_reply.header.async_id, interim.header.async_id);
    // CANCEL has no response of its own; the connection goes on.
    EXPECT_STATUS(c->echo(), NtStatus::Success);
    EXPECT_STATUS(c->close(dir), NtStatus::Success);
}

TEST_F(E2eAsync, ChangeNotifyReportsANewFile) {
    auto c = login();
    FileId dir = open_dir(*c, "watched-add");
    CallOptions co;
    co.payload = 4096;
    auto mid = c->send(Command::ChangeNotify, notify_on(dir), co);
    ASSERT_TRUE(mid);
    ASSERT_STATUS(c->wait_reply(*mid, true), NtStatus::Pending);
    // A second connection creates a file in the watched directory.
    auto other = login();
    auto f = other->open("watched-add\\new-file.txt", kRw, create_disposition::kCreate);
    ASSERT_STATUS(f, NtStatus::Success);
    EXPECT_STATUS(other->close(f.body.file_id), NtStatus::Success);
    auto r = c->wait_reply(*mid);
    ASSERT_STATUS(r, NtStatus::Success);
    auto body = ChangeNotifyResponse::parse(r.msg);
    ASSERT_TRUE(body);
    auto changes = decode_notify_information(body->buffer);
    ASSERT_TRUE(changes);
    ASSERT_FALSE(changes->empty());
    EXPECT_EQ((*changes)[0].action, file_action::kAdded);
    EXPECT_EQ((*changes)[0].file_name, "new-file.txt");
    EXPECT_STATUS(c->close(dir), NtStatus::Success);
}

TEST_F(E2eAsync, CloseEndsAPendingChangeNotify) {
    auto c = login();
    FileId dir = open_dir(*c, "watched-close");
    CallOptions co;
    co.payload = 4096;
    auto mid = c->send(Command::ChangeNotify, notify_on(dir), co);
    ASSERT_TRUE(mid);
    ASSERT_STATUS(c->wait_reply(*mid, true), NtStatus::Pending);
    // MS-SMB2 3.3.5.10 / MS-FSA 2.1.5.4: closing the directory completes the watch with
    // STATUS_NOTIFY_CLEANUP.
    auto close_mid = c->send(Command::Close, CloseRequest{0, dir});
    ASSERT_TRUE(close_mid);
    EXPECT_STATUS(c->wait_reply(*mid), NtStatus::NotifyCleanup);
    EXPECT_STATUS(c->wait_reply(*close_mid), NtStatus::Success);
}

// Many requests in flight at once, answered in any order, each exactly once.
// A request that would wait in the middle of a compound fails with STATUS_INTERNAL_ERROR
// instead of holding back the elements after it (Windows' behaviour, MS-SMB2 3.3.5.2.7 notes;
// smbtorture smb2.compound.interim2); the last element may still go async.
TEST_F(E2eAsync, ChangeNotifyInTheMiddleOfACompoundFailsAndTheRestRuns) {
    auto c = login();
    ::mkdir(local("compound-notify").c_str(), 0755);
    CreateRequest cr;
    cr.name = "compound-notify";
    cr.desired_access = am::kFileListDirectory | am::kFileReadAttributes | am::kSynchronize;
    cr.share_access = share_access::kAll;
    cr.create_disposition = create_disposition::kOpen;
    cr.create_options = create_options::kDirectoryFile;
    QueryInfoRequest qi;
    qi.info_type = info_type::kFile;
    qi.file_info_class = 4;  // FileBasicInformation
    qi.output_buffer_length = 4096;
    qi.file_id = kPlaceholderFileId;
    CallOptions related;
    related.related = true;
    CallOptions related_notify = related;
    related_notify.payload = 4096;
    auto replies = c->compound()
                       .add(Command::Create, cr)
                       .add(Command::ChangeNotify, notify_on(kPlaceholderFileId), related_notify)
                       .add(Command::QueryInfo, qi, related)
                       .run();
    ASSERT_EQ(replies.size(), 3u);
    EXPECT_STATUS(replies[0], NtStatus::Success);
    EXPECT_STATUS(replies[1], NtStatus::InternalError);
    EXPECT_STATUS(replies[2], NtStatus::Success);
    auto create = replies[0].parse<CreateResponse>();
    ASSERT_TRUE(create);

    // As the last element, CHANGE_NOTIFY goes async (interim response) and CANCEL ends it.
    auto mids = c->compound()
                    .add(Command::QueryInfo,
                         [&] {
                             QueryInfoRequest q = qi;
                             q.file_id = create->file_id;
                             return q;
                         }())
                    .add(Command::ChangeNotify, notify_on(create->file_id), related_notify)
                    .send();
    ASSERT_TRUE(mids);
    ASSERT_EQ(mids->size(), 2u);
    // (The client drops interim responses it is not waiting for: ask for it first.)
    auto interim = c->wait_reply((*mids)[1], true);
    ASSERT_STATUS(interim, NtStatus::Pending);
    EXPECT_STATUS(c->wait_reply((*mids)[0]), NtStatus::Success);
    ASSERT_TRUE(c->cancel((*mids)[1], interim.header.async_id));
    EXPECT_STATUS(c->wait_reply((*mids)[1]), NtStatus::Cancelled);
    EXPECT_STATUS(c->close(create->file_id), NtStatus::Success);
}

TEST_F(E2eAsync, PipelinedRequests) {
    ClientOptions o;
    o.credit_target = 256;
    auto c = std::make_unique<Smb2Client>(o);
    ASSERT_TRUE(c->connect("127.0.0.1", server_->port()));
    ASSERT_STATUS(c->negotiate(), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);
    ASSERT_GE(c->credits(), 200u);
    auto cr = c->open("pipelined.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ByteVector data(32 * 4096);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = std::byte(i / 4096 + i);
    std::vector<uint64_t> writes;
    for (size_t i = 0; i < 32; ++i) {
        WriteRequest w;
        w.file_id = cr.body.file_id;
        w.offset = i * 4096;
        w.data = Bytes(data).subspan(i * 4096, 4096);
        CallOptions co;
        co.payload = 4096;
        auto mid = c->send(Command::Write, w, co);
        ASSERT_TRUE(mid);
        writes.push_back(*mid);
        auto echo = c->send(Command::Echo, EchoRequest{});
        ASSERT_TRUE(echo);
        writes.push_back(*echo);
    }
    // Collect in reverse order: the client stashes what arrives first.
    for (auto it = writes.rbegin(); it != writes.rend(); ++it)
        EXPECT_STATUS(c->wait_reply(*it), NtStatus::Success) << "mid " << *it;
    std::vector<uint64_t> reads;
    for (size_t i = 0; i < 32; ++i) {
        ReadRequest r;
        r.file_id = cr.body.file_id;
        r.offset = i * 4096;
        r.length = 4096;
        CallOptions co;
        co.payload = 4096;
        auto mid = c->send(Command::Read, r, co);
        ASSERT_TRUE(mid);
        reads.push_back(*mid);
    }
    for (size_t i = 0; i < 32; ++i) {
        auto r = c->wait_reply(reads[i]);
        ASSERT_STATUS(r, NtStatus::Success);
        auto body = ReadResponse::parse(r.msg);
        ASSERT_TRUE(body);
        ASSERT_EQ(body->data.size(), 4096u);
        EXPECT_TRUE(std::equal(body->data.begin(), body->data.end(), data.begin() + i * 4096))
            << "block " << i;
    }
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
}

// The largest READ and WRITE the server allows (MaxReadSize/MaxWriteSize, 8 MiB), signed with
// AES-GMAC: the signature covers the READ data that goes out as a separate gather fragment.
TEST_F(E2eAsync, MaximumSizeSignedIo) {
    ClientOptions o;
    o.credit_target = 512;
    auto c = std::make_unique<Smb2Client>(o);
    ASSERT_TRUE(c->connect("127.0.0.1", server_->port()));
    NegotiateOptions n;
    n.dialects = {dialect::k311};
    n.signing_required = true;
    ASSERT_STATUS(c->negotiate(n), NtStatus::Success);
    ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);
    ASSERT_EQ(*c->signing_algorithm(), auth::SigningAlgorithm::AesGmac);
    uint32_t size = std::min(c->max_read_size(), c->max_write_size());
    ASSERT_GE(size, 1u << 20);
    ASSERT_GE(c->credits(), (size - 1) / 65536 + 1);
    auto cr = c->open("max-signed.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ByteVector data(size);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = std::byte((i * 131) >> 3);
    auto w = c->write(cr.body.file_id, 0, data);
    ASSERT_STATUS(w, NtStatus::Success);
    EXPECT_TRUE(w.signature_verified);
    EXPECT_EQ(w.body.count, size);
    auto r = c->read(cr.body.file_id, 0, size);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_TRUE(r.signature_verified);
    ASSERT_EQ(r.body.data.size(), size);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), r.body.data.begin()));
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
}

}  // namespace
}  // namespace daxsmbd::client
