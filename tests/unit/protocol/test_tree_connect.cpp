// TREE_CONNECT request (plain and with the 3.1.1 extension) and response (MS-SMB2 2.2.9,
// 2.2.9.1, 2.2.10).
#include <gtest/gtest.h>

#include <cctype>
#include <string_view>

#include "protocol/header.h"
#include "protocol/tree_connect.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header(Command cmd, uint32_t flags = 0) {
    Header h;
    h.command = cmd;
    h.flags = flags;
    ByteVector v;
    ByteWriter w(v);
    h.serialize(w);
    return v;
}

ByteVector concat(std::initializer_list<ByteVector> parts) {
    ByteVector v;
    for (const auto& p : parts)
        v.insert(v.end(), p.begin(), p.end());
    return v;
}

// "\\srv\share" in UTF-16LE, 22 bytes.
const char* kPathHex = "5C00 5C00 7300 7200 7600 5C00 7300 6800 6100 7200 6500";

ByteVector plain_request() {
    return concat({header(Command::TreeConnect),
                   hex("0900"    // StructureSize 9
                       "0000"    // Flags
                       "4800"    // PathOffset 72
                       "1600"),  // PathLength 22
                   hex(kPathHex)});
}

RemotedIdentityTreeConnectContext identity() {
    RemotedIdentityTreeConnectContext c;
    c.user = SidAttr{Sid::make(5, {21, 7, 8, 9, 1105}), se_group::kEnabled};
    c.user_name = "alice";
    c.domain = "CORP";
    c.groups = std::vector<SidAttr>{{Sid::make(5, {21, 7, 8, 9, 513}), 7}};
    return c;
}

ByteVector identity_bytes() {
    ByteVector v;
    ByteWriter w(v);
    EXPECT_TRUE(identity().encode(w).ok());
    return v;
}

// REDIRECT_TO_OWNER | EXTENSION_PRESENT with one remoted identity context.
ByteVector extension_request() {
    auto id = identity_bytes();
    ByteVector ctx_hdr = hex("0100 0000 00000000");
    store_le16(ctx_hdr.data() + 2, uint16_t(id.size()));
    return concat({header(Command::TreeConnect),
                   hex("0900"  // StructureSize 9
                       "0600"  // Flags REDIRECT_TO_OWNER | EXTENSION_PRESENT
                       "5800"  // PathOffset 88 = 72 + 16
                       "1600"  // PathLength 22
                       // Extension at msg offset 72:
                       "70000000"  // TreeConnectContextOffset: 88 + 22 = 110 -> 112 (msg offset)
                       "0100"      // TreeConnectContextCount
                       "00000000000000000000"),  // Reserved(10)
                   hex(kPathHex),
                   hex("0000"),  // pad to 112
                   ctx_hdr, id});
}

}  // namespace

TEST(TreeConnect, ConstantsMatchSpec) {
    EXPECT_EQ(tree_connect_flags::kClusterReconnect, 0x0001);
    EXPECT_EQ(tree_connect_flags::kRedirectToOwner, 0x0002);
    EXPECT_EQ(tree_connect_flags::kExtensionPresent, 0x0004);
    EXPECT_EQ(share_flags::kNoCaching, 0x30u);
    EXPECT_EQ(share_flags::kEncryptData, 0x8000u);
    EXPECT_EQ(share_flags::kIdentityRemoting, 0x40000u);
    EXPECT_EQ(share_flags::kIsolatedTransport, 0x200000u);
    EXPECT_EQ(share_caps::kAsymmetric, 0x80u);
    EXPECT_EQ(share_caps::kRedirectToOwner, 0x100u);
}

TEST(TreeConnect, PlainRequestGolden) {
    auto msg = plain_request();
    auto r = TreeConnectRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->flags, 0);
    EXPECT_EQ(r->path, "\\\\srv\\share");
    EXPECT_TRUE(r->contexts.empty());
    auto sp = r->share_path();
    ASSERT_TRUE(sp.ok());
    EXPECT_EQ(sp->server, "srv");
    EXPECT_EQ(sp->share, "share");

    ByteVector out = header(Command::TreeConnect);
    ByteWriter w(out, 0);
    ASSERT_TRUE(r->serialize(w).ok());
    EXPECT_EQ(out, msg);
}

TEST(TreeConnect, PlainRequestEveryTruncationIsInvalid) {
    auto msg = plain_request();
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(TreeConnectRequest::parse(Bytes(msg).first(n)).status(),
                  NtStatus::InvalidParameter)
            << n;
}

TEST(TreeConnect, ExtensionRequestGolden) {
    auto msg = extension_request();
    auto r = TreeConnectRequest::parse(msg, true);
    ASSERT_TRUE(r.ok()) << status_name(r.status());
    EXPECT_EQ(r->flags,
              tree_connect_flags::kRedirectToOwner | tree_connect_flags::kExtensionPresent);
    EXPECT_EQ(r->path, "\\\\srv\\share");
    ASSERT_EQ(r->contexts.size(), 1u);
    auto* id = std::get_if<RemotedIdentityTreeConnectContext>(&r->contexts[0]);
    ASSERT_NE(id, nullptr);
    EXPECT_EQ(*id, identity());
    EXPECT_EQ(*id->user_name, "alice");

    ByteVector out = header(Command::TreeConnect);
    ByteWriter w(out, 0);
    ASSERT_TRUE(r->serialize(w).ok());
    EXPECT_EQ(out, msg);
}

TEST(TreeConnect, ExtensionRequestEveryTruncationIsInvalid) {
    auto msg = extension_request();
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(TreeConnectRequest::parse(Bytes(msg).first(n), true).status(),
                  NtStatus::InvalidParameter)
            << n;
}

TEST(TreeConnect, ContextOffsetRelativeToBodyIsAccepted) {
    // MS-SMB2 2.2.9.1 words the offset as relative to the TREE_CONNECT request; accept that
    // reading when the msg-offset reading does not lead to valid contexts.
    auto msg = extension_request();
    store_le32(msg.data() + 72, 112 - 64);
    auto r = TreeConnectRequest::parse(msg, true);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->contexts.size(), 1u);
    EXPECT_EQ(std::get<RemotedIdentityTreeConnectContext>(r->contexts[0]), identity());
}

TEST(TreeConnect, ContextOffsetOverlappingPathIsInvalid) {
    auto msg = extension_request();
    // 40 as a msg offset is in the header, as a body offset (104) inside the path.
    store_le32(msg.data() + 72, 40);
    EXPECT_EQ(TreeConnectRequest::parse(msg, true).status(), NtStatus::InvalidParameter);
    store_le32(msg.data() + 72, 0);
    EXPECT_EQ(TreeConnectRequest::parse(msg, true).status(), NtStatus::InvalidParameter);
    store_le32(msg.data() + 72, 0xFFFFFFF0u);
    EXPECT_EQ(TreeConnectRequest::parse(msg, true).status(), NtStatus::InvalidParameter);
}

TEST(TreeConnect, ExtensionIgnoredBefore311) {
    // Flags is reserved before 3.1.1 and MUST be ignored: no extension is read, the path is
    // taken from PathOffset (here pointing into the extension's place is not an error).
    auto msg = plain_request();
    store_le16(msg.data() + 66, tree_connect_flags::kExtensionPresent);
    auto r = TreeConnectRequest::parse(msg, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->flags, 0);
    EXPECT_EQ(r->path, "\\\\srv\\share");
    // On 3.1.1 the same bytes are a malformed extension (path at 72 < 88).
    EXPECT_EQ(TreeConnectRequest::parse(msg, true).status(), NtStatus::InvalidParameter);
}

TEST(TreeConnect, ExtensionWithoutContexts) {
    TreeConnectRequest req;
    req.flags = tree_connect_flags::kExtensionPresent;
    req.path = "\\\\10.0.0.1\\IPC$";
    ByteVector out = header(Command::TreeConnect);
    ByteWriter w(out, 0);
    ASSERT_TRUE(req.serialize(w).ok());
    EXPECT_EQ(load_le16(out.data() + 68), 88u);  // PathOffset
    EXPECT_EQ(load_le32(out.data() + 72), 0u);   // no contexts
    EXPECT_EQ(load_le16(out.data() + 76), 0u);
    auto back = TreeConnectRequest::parse(out, true);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->path, req.path);
    EXPECT_TRUE(back->contexts.empty());
}

TEST(TreeConnect, BadPathEncodingIsInvalidParameter) {
    auto msg = plain_request();
    store_le16(msg.data() + 70, 21);  // odd length
    EXPECT_EQ(TreeConnectRequest::parse(msg).status(), NtStatus::InvalidParameter);
    msg = plain_request();
    store_le16(msg.data() + 72, 0xDC00);  // lone low surrogate
    EXPECT_EQ(TreeConnectRequest::parse(msg).status(), NtStatus::InvalidParameter);
    msg = plain_request();
    store_le16(msg.data() + 68, 64);  // path offset inside the header
    EXPECT_EQ(TreeConnectRequest::parse(msg).status(), NtStatus::InvalidParameter);
}

TEST(TreeConnect, SplitSharePath) {
    auto ok = [](std::string_view p, std::string_view server, std::string_view share) {
        auto sp = SharePath::split(p);
        ASSERT_TRUE(sp.ok()) << p;
        EXPECT_EQ(sp->server, server);
        EXPECT_EQ(sp->share, share);
    };
    ok("\\\\srv\\share", "srv", "share");
    ok("\\\\fs1.example.com\\IPC$", "fs1.example.com", "IPC$");
    ok("\\\\fe80::1%eth0\\data", "fe80::1%eth0", "data");
    ok("\\\\srv\\a\\b", "srv", "a\\b");  // left for the share lookup to refuse
    ok("\\\\\\share", "", "share");
    ok("\\\\srv\\" + std::string(80, 's'), "srv", std::string(80, 's'));
    ok("\\\\" + std::string(255, 'h') + "\\x", std::string(255, 'h'), "x");
    // Multi-byte characters count as one UTF-16 unit each.
    std::string eighty_e_acute;
    for (int i = 0; i < 80; ++i)
        eighty_e_acute += "\xC3\xA9";
    ok("\\\\srv\\" + eighty_e_acute, "srv", eighty_e_acute);

    auto bad = [](std::string_view p) {
        EXPECT_EQ(SharePath::split(p).status(), NtStatus::InvalidParameter) << p;
    };
    bad("");
    bad("share");
    bad("\\share");
    bad("\\\\srv");    // missing share
    bad("\\\\srv\\");  // empty share
    bad("//srv/share");
    bad("\\\\srv\\" + std::string(81, 's'));
    bad("\\\\" + std::string(256, 'h') + "\\x");
    bad("\\\\srv\\" + eighty_e_acute + "x");
}

TEST(TreeConnect, ResponseGolden) {
    TreeConnectResponse rsp;
    rsp.share_type = share_type::kDisk;
    rsp.share_flags = share_flags::kManualCaching | share_flags::kIdentityRemoting;
    rsp.capabilities = share_caps::kScaleout | share_caps::kRedirectToOwner;
    rsp.maximal_access = 0x001F01FF;
    ByteVector out = header(Command::TreeConnect, flags::kServerToRedir);
    ByteWriter w(out, 0);
    rsp.serialize(w);
    auto want = concat({header(Command::TreeConnect, flags::kServerToRedir),
                        hex("1000"          // StructureSize 16
                            "01"            // ShareType DISK
                            "00"            // Reserved
                            "00000400"      // ShareFlags IDENTITY_REMOTING
                            "20010000"      // Capabilities SCALEOUT | REDIRECT_TO_OWNER
                            "FF011F00")});  // MaximalAccess
    EXPECT_EQ(out, want);
    auto back = TreeConnectResponse::parse(out);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->share_type, rsp.share_type);
    EXPECT_EQ(back->share_flags, rsp.share_flags);
    EXPECT_EQ(back->capabilities, rsp.capabilities);
    EXPECT_EQ(back->maximal_access, rsp.maximal_access);
    for (size_t n = 0; n < out.size(); ++n)
        EXPECT_EQ(TreeConnectResponse::parse(Bytes(out).first(n)).status(),
                  NtStatus::InvalidParameter);
    out[64] = std::byte{9};
    EXPECT_EQ(TreeConnectResponse::parse(out).status(), NtStatus::InvalidParameter);
}
