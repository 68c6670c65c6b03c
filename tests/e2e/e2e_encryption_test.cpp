// End-to-end: SMB3 encryption (MS-SMB2 3.1.4.3, 3.3.4.1.4, 3.3.5.2.1.1) and its enforcement
// (3.3.5.2.9, 3.3.5.2.11, 3.3.5.5.3, 3.3.5.7) with daxsmbd's own client against the real
// server: every cipher, 3.0 AES-128-CCM, the server's cipher preference, "smb encrypt" globally
// and per share, compounds in one TRANSFORM, 8 MiB encrypted I/O, and TRANSFORM messages that
// must be dropped.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "protocol/access_mask.h"
#include "protocol/transform.h"
#include "server/server.h"
#include "tests/client/smb2_client.h"
#include "tests/client/test_server.h"
#include "tests/e2e/e2e_support.h"

namespace daxsmbd::client {
namespace {

using namespace protocol;
using namespace std::chrono_literals;

constexpr uint32_t kRw =
    access_mask::kFileGenericRead | access_mask::kFileGenericWrite | access_mask::kDelete;

NegotiateOptions offer(uint16_t dialect, std::vector<uint16_t> ciphers) {
    NegotiateOptions n;
    n.dialects = {dialect};
    n.ciphers = std::move(ciphers);
    if (dialect != dialect::k311) n.capabilities |= global_caps::kEncryption;
    return n;
}

// Default server ("smb encrypt" if_required) plus a share [secret] with "smb encrypt =
// required" and a share [wish] with "desired".
class E2eEncryption : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        TestServer::Options o;
        o.configure = [](server::Config& c) {
            for (auto [name, policy] : {std::pair{"secret", server::EncryptPolicy::Required},
                                        std::pair{"wish", server::EncryptPolicy::Desired}}) {
                server::ShareConfig sh = c.shares.front();
                sh.name = name;
                sh.encrypt = policy;
                c.shares.push_back(sh);
            }
        };
        server_ = new TestServer(o);
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->error(); }

    static std::unique_ptr<Smb2Client> logged_in(const NegotiateOptions& n, bool encrypt,
                                                 ClientOptions o = {}) {
        o.encrypt = encrypt;
        auto c = std::make_unique<Smb2Client>(o);
        EXPECT_TRUE(c->connect("127.0.0.1", server_->port()));
        EXPECT_STATUS(c->negotiate(n), NtStatus::Success);
        EXPECT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
        return c;
    }

    static TestServer* server_;
};
TestServer* E2eEncryption::server_ = nullptr;

// Write, read back and close a small file with every reply encrypted.
void encrypted_round_trip(Smb2Client& c, const std::string& name) {
    auto cr = c.open(name, kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    EXPECT_TRUE(cr.encrypted);
    std::string text = "sealed " + name;
    auto w = c.write(cr.body.file_id, 0, as_bytes(text.data(), text.size()));
    ASSERT_STATUS(w, NtStatus::Success);
    EXPECT_TRUE(w.encrypted);
    auto r = c.read(cr.body.file_id, 0, 4096);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_TRUE(r.encrypted);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.body.data.data()), r.body.data.size()),
              text);
    auto cl = c.close(cr.body.file_id);
    EXPECT_STATUS(cl, NtStatus::Success);
    EXPECT_TRUE(cl.encrypted);
}

// ---- every cipher ------------------------------------------------------------------------------

class E2eCipher : public E2eEncryption, public ::testing::WithParamInterface<uint16_t> {};

TEST_P(E2eCipher, EncryptedSessionRoundTrip) {
    auto c = logged_in(offer(dialect::k311, {GetParam()}), true);
    ASSERT_EQ(c->cipher(), GetParam());
    ASSERT_TRUE(c->can_encrypt());
    // An encrypted 3.1.1 TREE_CONNECT needs no signature (MS-SMB2 3.3.5.7).
    auto t = c->tree_connect("data");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.encrypted);
    EXPECT_FALSE(t.header.is_signed());
    encrypted_round_trip(*c, "cipher-" + std::to_string(GetParam()) + ".txt");
}

INSTANTIATE_TEST_SUITE_P(AllCiphers, E2eCipher,
                         ::testing::Values(cipher::kAes128Ccm, cipher::kAes128Gcm,
                                           cipher::kAes256Ccm, cipher::kAes256Gcm));

TEST_F(E2eEncryption, ServerPreferenceDecides) {
    // Samba's default order: AES-128-GCM, AES-128-CCM, AES-256-GCM, AES-256-CCM.
    auto c = std::make_unique<Smb2Client>();
    ASSERT_TRUE(c->connect("127.0.0.1", server_->port()));
    auto r = c->negotiate(offer(dialect::k311, {cipher::kAes256Ccm, cipher::kAes256Gcm,
                                                cipher::kAes128Ccm, cipher::kAes128Gcm}));
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_EQ(c->cipher(), cipher::kAes128Gcm);
    auto c2 = std::make_unique<Smb2Client>();
    ASSERT_TRUE(c2->connect("127.0.0.1", server_->port()));
    ASSERT_STATUS(c2->negotiate(offer(dialect::k311, {cipher::kAes256Ccm, cipher::kAes256Gcm})),
                  NtStatus::Success);
    EXPECT_EQ(c2->cipher(), cipher::kAes256Gcm);
    // Nothing in common: cipher 0, and the session has no keys to encrypt with.
    auto c3 = logged_in(offer(dialect::k311, {0x0009}), false);
    EXPECT_EQ(c3->cipher(), 0);
    EXPECT_FALSE(c3->can_encrypt());
}

TEST_F(E2eEncryption, Smb30UsesAes128Ccm) {
    for (auto d : {dialect::k300, dialect::k302}) {
        SCOPED_TRACE(d);
        ClientOptions o;
        o.encrypt = true;
        auto c = std::make_unique<Smb2Client>(o);
        ASSERT_TRUE(c->connect("127.0.0.1", server_->port()));
        auto n = c->negotiate(offer(d, {}));
        ASSERT_STATUS(n, NtStatus::Success);
        // MS-SMB2 3.3.5.4: SMB2_GLOBAL_CAP_ENCRYPTION for a 3.0.x client that set it.
        EXPECT_TRUE(n.body.capabilities & global_caps::kEncryption);
        ASSERT_EQ(c->cipher(), cipher::kAes128Ccm);
        ASSERT_STATUS(c->session_setup("alice", "pw"), NtStatus::Success);
        auto t = c->tree_connect("data");
        ASSERT_STATUS(t, NtStatus::Success);
        EXPECT_TRUE(t.encrypted);
        encrypted_round_trip(*c, "smb30-" + std::to_string(d) + ".txt");
    }
    // Without the capability from the client: not advertised, nothing to encrypt with.
    NegotiateOptions plain;
    plain.dialects = {dialect::k300};
    auto c = logged_in(plain, false);
    EXPECT_FALSE(c->negotiate_response().capabilities & global_caps::kEncryption);
    EXPECT_FALSE(c->can_encrypt());
}

// ---- share encryption ("smb encrypt" per share) ------------------------------------------------

TEST_F(E2eEncryption, RequiredShareRefusesAClientThatCannotEncrypt) {
    // 3.1.1 without a common cipher, and 2.1 (no encryption at all): MS-SMB2 3.3.5.7.
    NegotiateOptions no_cipher;
    no_cipher.dialects = {dialect::k311};
    NegotiateOptions smb21;
    smb21.dialects = {dialect::k210};
    for (const auto& n : {no_cipher, smb21}) {
        auto c = logged_in(n, false);
        EXPECT_STATUS(c->tree_connect("secret"), NtStatus::AccessDenied);
        // The other shares still work for this client.
        EXPECT_STATUS(c->tree_connect("data"), NtStatus::Success);
        auto w = c->tree_connect("wish");  // "desired": clear when the client cannot encrypt
        ASSERT_STATUS(w, NtStatus::Success);
        EXPECT_FALSE(w.body.share_flags & share_flags::kEncryptData);
    }
}

TEST_F(E2eEncryption, RequiredShareRefusesUnencryptedRequests) {
    auto c = logged_in(offer(dialect::k311, {cipher::kAes128Gcm}), false);
    // The TREE_CONNECT itself may be clear (signed); the response names the requirement.
    auto t = c->tree_connect("secret");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.body.share_flags & share_flags::kEncryptData);
    // MS-SMB2 3.3.5.2.11: a clear request on that tree is refused, and even that answer is
    // encrypted (the tree's responses never go out in clear).
    CreateRequest req;
    req.name = "clear.txt";
    req.desired_access = kRw;
    req.share_access = share_access::kAll;
    req.create_disposition = create_disposition::kOverwriteIf;
    CallOptions clear;
    clear.encrypt = false;
    clear.sign = true;
    auto denied = c->create(req, clear);
    EXPECT_STATUS(denied, NtStatus::AccessDenied);
    EXPECT_TRUE(denied.encrypted);
    // The client follows SMB2_SHAREFLAG_ENCRYPT_DATA: encrypted requests work.
    encrypted_round_trip(*c, "secret.txt");
    struct stat st;
    EXPECT_NE(::stat((server_->share_dir() + "/clear.txt").c_str(), &st), 0);
}

TEST_F(E2eEncryption, DesiredShareEncryptsResponsesOfClearRequests) {
    auto c = logged_in(offer(dialect::k311, {cipher::kAes128Ccm}), false);
    auto t = c->tree_connect("wish");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.body.share_flags & share_flags::kEncryptData);
    CallOptions clear;
    clear.encrypt = false;
    clear.sign = true;
    CreateRequest req;
    req.name = "wish.txt";
    req.desired_access = kRw;
    req.share_access = share_access::kAll;
    req.create_disposition = create_disposition::kOverwriteIf;
    auto cr = c->create(req, clear);
    ASSERT_STATUS(cr, NtStatus::Success);  // "desired" does not refuse clear requests...
    EXPECT_TRUE(cr.encrypted);             // ...but answers them encrypted (3.3.4.1.4)
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
    // On the plain share the same session is answered in clear.
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);
    auto e = c->echo();
    ASSERT_STATUS(e, NtStatus::Success);
    EXPECT_FALSE(e.encrypted);
}

// ---- compounds and large I/O -------------------------------------------------------------------

TEST_F(E2eEncryption, CompoundInOneTransform) {
    auto c = logged_in(offer(dialect::k311, {cipher::kAes256Gcm}), true);
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);
    std::string text = "compound payload";
    CreateRequest cr;
    cr.name = "compound-enc.txt";
    cr.desired_access = kRw;
    cr.share_access = share_access::kAll;
    cr.create_disposition = create_disposition::kOverwriteIf;
    WriteRequest w;
    w.file_id = kPlaceholderFileId;
    w.data = as_bytes(text.data(), text.size());
    ReadRequest r;
    r.file_id = kPlaceholderFileId;
    r.length = 1024;
    CloseRequest cl;
    cl.file_id = kPlaceholderFileId;
    CallOptions related;
    related.related = true;
    CallOptions related_write = related;
    related_write.payload = text.size();
    CallOptions related_read = related;
    related_read.payload = 1024;
    uint64_t frames = c->frames_received();
    auto replies = c->compound()
                       .add(Command::Create, cr)
                       .add(Command::Write, w, related_write)
                       .add(Command::Read, r, related_read)
                       .add(Command::Close, cl, related)
                       .run();
    ASSERT_EQ(replies.size(), 4u);
    for (const auto& rep : replies) {
        EXPECT_STATUS(rep, NtStatus::Success);
        EXPECT_TRUE(rep.encrypted);
    }
    // MS-SMB2 3.3.4.1.4: the four responses came in one frame, i.e. one TRANSFORM.
    EXPECT_EQ(c->frames_received() - frames, 1u);
    auto rd = replies[2].parse<ReadResponse>();
    ASSERT_TRUE(rd.ok());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(rd->data.data()), rd->data.size()), text);
}

class E2eLargeEncryptedIo : public E2eEncryption, public ::testing::WithParamInterface<uint16_t> {};

// 8 MiB (MaxReadSize/MaxWriteSize) sealed both ways: the READ data is encrypted in its own
// pool buffer (a separate gather fragment), so GCM and the streaming CCM both cover it.
TEST_P(E2eLargeEncryptedIo, MaximumSizeReadAndWrite) {
    ClientOptions o;
    o.credit_target = 512;
    auto c = logged_in(offer(dialect::k311, {GetParam()}), true, o);
    ASSERT_STATUS(c->tree_connect("data"), NtStatus::Success);
    uint32_t size = std::min(c->max_read_size(), c->max_write_size());
    ASSERT_EQ(size, 8u << 20);
    auto cr = c->open("max-sealed.bin", kRw, create_disposition::kOverwriteIf);
    ASSERT_STATUS(cr, NtStatus::Success);
    ByteVector data(size);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = std::byte((i * 151) >> 5);
    auto w = c->write(cr.body.file_id, 0, data);
    ASSERT_STATUS(w, NtStatus::Success);
    EXPECT_TRUE(w.encrypted);
    EXPECT_EQ(w.body.count, size);
    auto r = c->read(cr.body.file_id, 0, size);
    ASSERT_STATUS(r, NtStatus::Success);
    EXPECT_TRUE(r.encrypted);
    ASSERT_EQ(r.body.data.size(), size);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), r.body.data.begin()));
    EXPECT_STATUS(c->close(cr.body.file_id), NtStatus::Success);
}

INSTANTIATE_TEST_SUITE_P(GcmAndCcm, E2eLargeEncryptedIo,
                         ::testing::Values(cipher::kAes128Gcm, cipher::kAes256Ccm));

// ---- TRANSFORM messages that must be dropped (MS-SMB2 3.3.5.2.1.1) -----------------------------

TEST_F(E2eEncryption, TamperedTransformDisconnects) {
    auto c = logged_in(offer(dialect::k311, {cipher::kAes128Gcm}), true);
    auto msg = c->build(Command::Echo, EchoRequest{});
    ASSERT_EQ(load_le32(msg.data()), kTransformProtocolId);
    msg.back() ^= std::byte{0x01};  // the AEAD tag no longer matches
    ASSERT_TRUE(c->send_frame(msg));
    EXPECT_EQ(c->wait_closed(5s), Smb2Client::PeerState::Closed);
    // The server keeps serving everyone else.
    auto other = logged_in(offer(dialect::k311, {cipher::kAes128Gcm}), true);
    EXPECT_STATUS(other->echo(), NtStatus::Success);
}

TEST_F(E2eEncryption, TransformForUnknownSessionDisconnects) {
    auto c = logged_in(offer(dialect::k311, {cipher::kAes128Ccm}), true);
    auto msg = c->build(Command::Echo, EchoRequest{});
    store_le64(msg.data() + 44, c->session_id() ^ 0x5555);  // TRANSFORM SessionId
    ASSERT_TRUE(c->send_frame(msg));
    EXPECT_EQ(c->wait_closed(5s), Smb2Client::PeerState::Closed);
}

TEST_F(E2eEncryption, TransformWithoutNegotiatedEncryptionDisconnects) {
    auto c = logged_in(offer(dialect::k311, {}), false);
    ByteVector msg(TransformHeader::kSize + kHeaderSize);
    store_le32(msg.data(), kTransformProtocolId);
    store_le32(msg.data() + 36, kHeaderSize);
    store_le16(msg.data() + 42, 1);
    store_le64(msg.data() + 44, c->session_id());
    ASSERT_TRUE(c->send_frame(msg));
    EXPECT_EQ(c->wait_closed(5s), Smb2Client::PeerState::Closed);
}

// ---- global "smb encrypt" ----------------------------------------------------------------------

class E2eGlobalEncryption : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        TestServer::Options o;
        o.configure = [](server::Config& c) {
            c.global.encrypt = server::EncryptPolicy::Required;
            c.global.signing = server::SigningPolicy::Mandatory;
        };
        server_ = new TestServer(o);
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->error(); }
    static TestServer* server_;
};
TestServer* E2eGlobalEncryption::server_ = nullptr;

TEST_F(E2eGlobalEncryption, RequiredSessionEncryptsEverything) {
    Smb2Client c;  // encrypt = false: it follows SMB2_SESSION_FLAG_ENCRYPT_DATA
    ASSERT_TRUE(c.connect("127.0.0.1", server_->port()));
    ASSERT_STATUS(c.negotiate(offer(dialect::k311, {cipher::kAes128Gcm})), NtStatus::Success);
    auto s = c.session_setup("alice", "pw");
    ASSERT_STATUS(s, NtStatus::Success);
    // MS-SMB2 3.3.5.5.3: the flag; the final SESSION_SETUP response itself is signed.
    EXPECT_TRUE(s.body.session_flags & session_flags::kEncryptData);
    EXPECT_TRUE(s.signature_verified);
    auto t = c.tree_connect("data");
    ASSERT_STATUS(t, NtStatus::Success);
    EXPECT_TRUE(t.encrypted);
    // MS-SMB2 3.3.5.2.9: a clear request (even signed) is refused, and answered encrypted.
    CallOptions clear;
    clear.encrypt = false;
    clear.sign = true;
    auto e = c.call(Command::Echo, EchoRequest{}, clear);
    EXPECT_STATUS(e, NtStatus::AccessDenied);
    EXPECT_TRUE(e.encrypted);
    encrypted_round_trip(c, "global.txt");
}

TEST_F(E2eGlobalEncryption, ClientWithoutEncryptionGetsNoSession) {
    for (auto d : {dialect::k210, dialect::k311}) {
        SCOPED_TRACE(d);
        Smb2Client c;
        ASSERT_TRUE(c.connect("127.0.0.1", server_->port()));
        NegotiateOptions n;
        n.dialects = {d};
        ASSERT_STATUS(c.negotiate(n), NtStatus::Success);
        EXPECT_STATUS(c.session_setup("alice", "pw"), NtStatus::AccessDenied);
    }
}

}  // namespace
}  // namespace daxsmbd::client
