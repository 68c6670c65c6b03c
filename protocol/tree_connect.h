// SMB2 TREE_CONNECT request (with the 3.1.1 extension) and response (MS-SMB2 2.2.9, 2.2.9.1,
// 2.2.10).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/bytes.h"
#include "protocol/tree_connect_contexts.h"

namespace daxsmbd::protocol {

// Request Flags (3.1.1 only; reserved before), MS-SMB2 2.2.9.
namespace tree_connect_flags {
constexpr uint16_t kClusterReconnect = 0x0001;
constexpr uint16_t kRedirectToOwner = 0x0002;
constexpr uint16_t kExtensionPresent = 0x0004;
}  // namespace tree_connect_flags

// MS-SMB2 2.2.10 ShareType.
namespace share_type {
constexpr uint8_t kDisk = 0x01;
constexpr uint8_t kPipe = 0x02;
constexpr uint8_t kPrint = 0x03;
}  // namespace share_type

// MS-SMB2 2.2.10 ShareFlags: exactly one caching mode, plus any of the others.
namespace share_flags {
constexpr uint32_t kManualCaching = 0x00000000;
constexpr uint32_t kAutoCaching = 0x00000010;
constexpr uint32_t kVdoCaching = 0x00000020;
constexpr uint32_t kNoCaching = 0x00000030;
constexpr uint32_t kCachingMask = 0x00000030;
constexpr uint32_t kDfs = 0x00000001;
constexpr uint32_t kDfsRoot = 0x00000002;
constexpr uint32_t kRestrictExclusiveOpens = 0x00000100;
constexpr uint32_t kForceSharedDelete = 0x00000200;
constexpr uint32_t kAllowNamespaceCaching = 0x00000400;
constexpr uint32_t kAccessBasedDirectoryEnum = 0x00000800;
constexpr uint32_t kForceLevel2Oplock = 0x00001000;
constexpr uint32_t kEnableHashV1 = 0x00002000;
constexpr uint32_t kEnableHashV2 = 0x00004000;
constexpr uint32_t kEncryptData = 0x00008000;
constexpr uint32_t kIdentityRemoting = 0x00040000;
constexpr uint32_t kCompressData = 0x00100000;
constexpr uint32_t kIsolatedTransport = 0x00200000;
}  // namespace share_flags

// MS-SMB2 2.2.10 Capabilities.
namespace share_caps {
constexpr uint32_t kDfs = 0x00000008;
constexpr uint32_t kContinuousAvailability = 0x00000010;
constexpr uint32_t kScaleout = 0x00000020;
constexpr uint32_t kCluster = 0x00000040;
constexpr uint32_t kAsymmetric = 0x00000080;
constexpr uint32_t kRedirectToOwner = 0x00000100;
}  // namespace share_caps

// "\\server\share" split into its parts (MS-SMB2 2.2.9 PathOffset).
struct SharePath {
    static constexpr size_t kMaxServerChars = 255;  // "less than 256 characters"
    static constexpr size_t kMaxShareChars = 80;

    std::string server;  // UTF-8, as sent (NetBIOS name, FQDN or IP literal)
    std::string share;   // UTF-8, as sent (everything after the server's backslash)

    // The path must start with two backslashes and have a backslash after the server part;
    // an empty share, a server part of 256+ characters or a share part of 81+ characters is
    // STATUS_INVALID_PARAMETER. Characters are counted as UTF-16 code units.
    static Result<SharePath> split(std::string_view path);
};

// MS-SMB2 2.2.9, 2.2.9.1
struct TreeConnectRequest {
    static constexpr uint16_t kStructureSize = 9;
    static constexpr size_t kExtensionOffset = 72;     // msg offset of Buffer
    static constexpr size_t kExtensionFixedSize = 16;  // ContextOffset(4) Count(2) Reserved(10)

    uint16_t flags = 0;
    std::string path;  // UTF-8 "\\server\share"
    // Present only with kExtensionPresent on a 3.1.1 connection.
    TreeConnectContextList contexts;

    bool has_extension() const { return flags & tree_connect_flags::kExtensionPresent; }
    Result<SharePath> share_path() const { return SharePath::split(path); }

    // `allow_extension` = the connection's dialect is 3.1.1: Flags is reserved before 3.1.1
    // (the server MUST ignore it), so without it `flags` is returned as 0 and no extension is
    // looked for.
    // TreeConnectContextOffset: a value at or after the end of the PathName is a msg offset
    // (what Microsoft's test encoder sends, spec-digest 10.3); a smaller one is read as the
    // spec words it, from the start of the TREE_CONNECT body (+64). The contexts must start
    // after the extension and the PathName. A path that is not valid UTF-16 is
    // STATUS_INVALID_PARAMETER.
    static Result<TreeConnectRequest> parse(Bytes msg, bool allow_extension = true);
    // Without the extension flag and without contexts: path at msg offset 72. Otherwise the
    // extension (kExtensionPresent is set on the wire), PathName at msg offset 88, the contexts
    // 8-aligned after it with a msg-relative TreeConnectContextOffset.
    Status serialize(ByteWriter& w) const;
};

// MS-SMB2 2.2.10
struct TreeConnectResponse {
    static constexpr uint16_t kStructureSize = 16;

    uint8_t share_type = share_type::kDisk;
    uint32_t share_flags = 0;
    uint32_t capabilities = 0;
    uint32_t maximal_access = 0;

    static Result<TreeConnectResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
