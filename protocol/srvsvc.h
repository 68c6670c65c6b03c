// srvsvc: the Server Service Remote Protocol (MS-SRVS) calls that share browsing needs, served
// over the "srvsvc" named pipe on IPC$ through rpc::PipeSession:
//   opnum 15 NetrShareEnum     (MS-SRVS 3.1.4.8)   levels 0, 1, 2
//   opnum 16 NetrShareGetInfo  (MS-SRVS 3.1.4.10)  levels 0, 1, 2, 501, 502, 1005
//   opnum 21 NetrServerGetInfo (MS-SRVS 3.1.4.17)  levels 100, 101
// `smbclient -L` and Windows' "net view" use NetrShareEnum level 1.
//
// The request/response structs are the NDR stubs of those calls (ndr.h), with both directions
// implemented: the server parses requests and serializes responses, tests and our own client do
// the opposite.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/dcerpc.h"
#include "protocol/ndr.h"

namespace daxsmbd::protocol::rpc {

// MS-SRVS 1.9: interface 4B324FC8-1670-01D3-1278-5A47BF6EE188 version 3.0.
inline constexpr SyntaxId kSrvsvcSyntax{*parse_uuid("4b324fc8-1670-01d3-1278-5a47bf6ee188"), 3, 0};
inline constexpr std::string_view kSrvsvcPipeName = "srvsvc";  // file name opened on IPC$
inline constexpr std::string_view kSrvsvcSecondaryAddress = "\\PIPE\\srvsvc";

namespace srvsvc_opnum {
constexpr uint16_t kNetrShareEnum = 15;
constexpr uint16_t kNetrShareGetInfo = 16;
constexpr uint16_t kNetrServerGetInfo = 21;
}  // namespace srvsvc_opnum

// MS-SRVS 2.2.2.4 share types.
namespace stype {
constexpr uint32_t kDiskTree = 0x00000000;
constexpr uint32_t kPrintQ = 0x00000001;
constexpr uint32_t kDevice = 0x00000002;
constexpr uint32_t kIpc = 0x00000003;
constexpr uint32_t kTemporary = 0x40000000;
constexpr uint32_t kSpecial = 0x80000000;  // administrative shares: IPC$, ADMIN$, C$
}  // namespace stype

// MS-SRVS 2.2.2.7 server types; the default is a Windows NT-family file server.
namespace sv_type {
constexpr uint32_t kWorkstation = 0x00000001;
constexpr uint32_t kServer = 0x00000002;
constexpr uint32_t kNt = 0x00001000;
constexpr uint32_t kServerNt = 0x00008000;
constexpr uint32_t kDefault = kWorkstation | kServer | kNt | kServerNt;  // 0x9003
}  // namespace sv_type

constexpr uint32_t kPlatformIdNt = 500;               // MS-SRVS 2.2.2.6 PLATFORM_ID_NT
constexpr uint32_t kMaxPreferredLength = 0xFFFFFFFF;  // MS-SRVS 2.2.2.2
constexpr uint32_t kUnlimitedUses = 0xFFFFFFFF;       // shi2_max_uses "no limit"

// NET_API_STATUS values returned in the stub (MS-ERREF 2.2, MS-SRVS 3.1.4).
namespace werror {
constexpr uint32_t kSuccess = 0;
constexpr uint32_t kInvalidParameter = 87;   // ERROR_INVALID_PARAMETER
constexpr uint32_t kInvalidLevel = 124;      // ERROR_INVALID_LEVEL (0x7C)
constexpr uint32_t kMoreData = 234;          // ERROR_MORE_DATA (0xEA)
constexpr uint32_t kNetNameNotFound = 2310;  // NERR_NetNameNotFound (0x906)
}  // namespace werror

struct ShareInfo {
    std::string name;
    uint32_t type = stype::kDiskTree;
    std::string comment;       // shi*_remark
    std::string path;          // levels 2/502: sent as given (Windows shows "C:\dir")
    uint32_t permissions = 0;  // shi2_permissions: ignored with user-level security
    uint32_t max_uses = kUnlimitedUses;
    uint32_t current_uses = 0;
    uint32_t flags = 0;  // shi501_flags / shi1005_flags (CSC caching, ABE, ...)
    bool operator==(const ShareInfo&) const = default;
};

// SERVER_INFO_100/101 (MS-SRVS 2.2.4.40/41). We announce version 10.0 (the Windows Server 2016+
// family whose SMB 3.1.1 behaviour we follow) unless the provider says otherwise; no client is
// known to act on it.
struct ServerInfo {
    uint32_t platform_id = kPlatformIdNt;
    std::string name;  // NetBIOS-style name, no leading backslashes
    uint32_t version_major = 10;
    uint32_t version_minor = 0;
    uint32_t type = sv_type::kDefault;
    std::string comment;
    bool operator==(const ServerInfo&) const = default;
};

// What srvsvc serves: asked at every call, so the list can depend on the configuration at that
// moment (reloads) or on the caller (a provider per session).
class SrvsvcProvider {
  public:
    virtual ~SrvsvcProvider() = default;
    virtual std::vector<ShareInfo> shares() const = 0;  // in enumeration order, IPC$ included
    virtual ServerInfo server_info() const = 0;
};

class StaticSrvsvcProvider final : public SrvsvcProvider {
  public:
    StaticSrvsvcProvider(std::vector<ShareInfo> shares, ServerInfo server)
        : shares_(std::move(shares)), server_(std::move(server)) {}
    std::vector<ShareInfo> shares() const override { return shares_; }
    ServerInfo server_info() const override { return server_; }

  private:
    std::vector<ShareInfo> shares_;
    ServerInfo server_;
};

// ---- stubs ----

// NetrShareEnum in: ServerName [unique,string], InfoStruct (Level + SHARE_ENUM_UNION),
// PreferedMaximumLength, ResumeHandle [unique]. The input container is what the client sends
// to size the output (empty); parse checks it and drops it.
struct NetrShareEnumRequest {
    std::optional<std::string> server_name;
    uint32_t level = 1;
    uint32_t prefered_maximum_length = kMaxPreferredLength;
    std::optional<uint32_t> resume_handle;

    static Result<NetrShareEnumRequest> parse(Bytes stub);
    ByteVector serialize() const;  // with an empty container, as clients send it
};

// NetrShareEnum out: InfoStruct, TotalEntries, ResumeHandle [unique], return value.
struct NetrShareEnumResponse {
    uint32_t level = 1;
    bool container_present = true;   // false: null container pointer (errors)
    std::vector<ShareInfo> entries;  // fields beyond the level's are left default on parse
    uint32_t total_entries = 0;
    std::optional<uint32_t> resume_handle;
    uint32_t status = werror::kSuccess;

    static Result<NetrShareEnumResponse> parse(Bytes stub);
    ByteVector serialize() const;
};

// NetrShareGetInfo in: ServerName [unique,string], NetName [string] (a [ref]), Level.
struct NetrShareGetInfoRequest {
    std::optional<std::string> server_name;
    std::string net_name;
    uint32_t level = 1;

    static Result<NetrShareGetInfoRequest> parse(Bytes stub);
    ByteVector serialize() const;
};

// NetrShareGetInfo out: SHARE_INFO union (discriminant + pointer), return value.
struct NetrShareGetInfoResponse {
    uint32_t level = 1;
    std::optional<ShareInfo> info;  // nullopt = null pointer
    uint32_t status = werror::kSuccess;

    static Result<NetrShareGetInfoResponse> parse(Bytes stub);
    ByteVector serialize() const;
};

// NetrServerGetInfo in: ServerName [unique,string], Level.
struct NetrServerGetInfoRequest {
    std::optional<std::string> server_name;
    uint32_t level = 101;

    static Result<NetrServerGetInfoRequest> parse(Bytes stub);
    ByteVector serialize() const;
};

// NetrServerGetInfo out: SERVER_INFO union (discriminant + pointer), return value.
struct NetrServerGetInfoResponse {
    uint32_t level = 101;
    std::optional<ServerInfo> info;
    uint32_t status = werror::kSuccess;

    static Result<NetrServerGetInfoResponse> parse(Bytes stub);
    ByteVector serialize() const;
};

// Runs one srvsvc call: request stub -> response stub. Errors for PipeSession:
// NotImplemented for an opnum we do not serve (-> fault nca_s_op_rng_error), InvalidParameter
// when the stub does not decode (-> fault RPC_X_BAD_STUB_DATA). Failures of the call itself
// (unknown share, unsupported level) are NET_API_STATUS values inside a normal response.
Result<ByteVector> srvsvc_dispatch(uint16_t opnum, Bytes stub, const SrvsvcProvider& provider);

// A pipe session serving srvsvc with `provider`, for the srvsvc handle on IPC$.
PipeSession make_srvsvc_pipe(std::shared_ptr<const SrvsvcProvider> provider,
                             PipeSession::Options options = {});

}  // namespace daxsmbd::protocol::rpc
