// SMB2_CREATE_CONTEXT lists (MS-SMB2 2.2.13.2, 2.2.14.2; spec digest 7.1): the generic chained
// list codec, which keeps every context (known or not) as name + data bytes, and one typed struct
// per context the server understands, each with decode(data) / encode(w).
//
// Typed decoders check the DataLength each context must have and fail with
// STATUS_INVALID_PARAMETER otherwise (MS-SMB2 3.3.5.9.x; Samba and ksmbd do the same).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/file_info.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

// Context names. Tag names are 4 ASCII bytes on the wire ("ExtA" = 45 78 74 41); GUID names are
// 16 bytes in the order the spec lists them.
namespace create_context_name {
using Tag = std::array<std::byte, 4>;
using GuidName = std::array<std::byte, 16>;
consteval Tag tag(const char (&s)[5]) {
    return {std::byte(s[0]), std::byte(s[1]), std::byte(s[2]), std::byte(s[3])};
}
inline constexpr Tag kEaBuffer = tag("ExtA");
inline constexpr Tag kSdBuffer = tag("SecD");
inline constexpr Tag kDurableHandleRequest = tag("DHnQ");
inline constexpr Tag kDurableHandleReconnect = tag("DHnC");
inline constexpr Tag kAllocationSize = tag("AlSi");
inline constexpr Tag kQueryMaximalAccess = tag("MxAc");
inline constexpr Tag kTimewarpToken = tag("TWrp");
inline constexpr Tag kQueryOnDiskId = tag("QFid");
inline constexpr Tag kRequestLease = tag("RqLs");  // v1 and v2, told apart by DataLength
inline constexpr Tag kDurableHandleRequestV2 = tag("DH2Q");
inline constexpr Tag kDurableHandleReconnectV2 = tag("DH2C");
inline constexpr GuidName kAppInstanceId = {
    std::byte{0x45}, std::byte{0xBC}, std::byte{0xA6}, std::byte{0x6A},
    std::byte{0xEF}, std::byte{0xA7}, std::byte{0xF7}, std::byte{0x4A},
    std::byte{0x90}, std::byte{0x08}, std::byte{0xFA}, std::byte{0x46},
    std::byte{0x2E}, std::byte{0x14}, std::byte{0x4D}, std::byte{0x74}};
inline constexpr GuidName kAppInstanceVersion = {
    std::byte{0xB9}, std::byte{0x82}, std::byte{0xD0}, std::byte{0xB7},
    std::byte{0x3B}, std::byte{0x56}, std::byte{0x07}, std::byte{0x4F},
    std::byte{0xA0}, std::byte{0x7B}, std::byte{0x52}, std::byte{0x4A},
    std::byte{0x81}, std::byte{0x16}, std::byte{0xA0}, std::byte{0x10}};
inline constexpr GuidName kSvhdxOpenDevice = {
    std::byte{0x9C}, std::byte{0xCB}, std::byte{0xCF}, std::byte{0x9E},
    std::byte{0x04}, std::byte{0xC1}, std::byte{0xE6}, std::byte{0x43},
    std::byte{0x98}, std::byte{0x0E}, std::byte{0x15}, std::byte{0x8D},
    std::byte{0xA1}, std::byte{0xF6}, std::byte{0xEC}, std::byte{0x83}};
// SMB2_CREATECONTEXT_RESERVED (MS-SMB2 2.2.13.2: MUST be ignored); Samba/Linux use it for
// SMB3 POSIX extensions.
inline constexpr GuidName kReserved = {
    std::byte{0x93}, std::byte{0xAD}, std::byte{0x25}, std::byte{0x50},
    std::byte{0x9C}, std::byte{0xB4}, std::byte{0x11}, std::byte{0xE7},
    std::byte{0xB4}, std::byte{0x23}, std::byte{0x83}, std::byte{0xDE},
    std::byte{0x96}, std::byte{0x8B}, std::byte{0xCD}, std::byte{0x7C}};
}  // namespace create_context_name

// One context as it travels: name and data bytes (owned copies).
struct CreateContext {
    ByteVector name;
    ByteVector data;
    bool name_is(Bytes n) const {
        return name.size() == n.size() && std::equal(name.begin(), name.end(), n.begin());
    }
    bool operator==(const CreateContext&) const = default;
};

struct CreateContextList {
    std::vector<CreateContext> items;

    // `buffer` is exactly the CreateContexts region (CreateContextsOffset/Length of the CREATE).
    // Checks per context (MS-SMB2 2.2.13.2): Next a multiple of 8 and inside the region, name at
    // an 8-aligned offset >= 16 with NameLength >= 4, data (when DataLength > 0) 8-aligned, after
    // the name and inside the context. Any violation: STATUS_INVALID_PARAMETER.
    static Result<CreateContextList> parse(Bytes buffer);
    // Writes the chain: header(16), name at 16, data 8-aligned, contexts 8-aligned from the first
    // one (which the caller places 8-aligned from the SMB2 header), last Next = 0, no padding after
    // the last context.
    void serialize(ByteWriter& w) const;

    bool empty() const { return items.empty(); }
    const CreateContext* find(Bytes name) const;
    size_t count(Bytes name) const;
    void add(Bytes name, ByteVector data);
    // Encodes a typed context: `list.add(MaximalAccessResponse{...})`.
    template <class T>
    void add(const T& ctx) {
        ByteVector data;
        ByteWriter w(data);
        ctx.encode(w);
        add(Bytes(T::kName), std::move(data));
    }
    // Finds and decodes a typed context; nullopt when absent, an error when present but malformed.
    template <class T>
    Result<std::optional<T>> get() const {
        const CreateContext* c = find(Bytes(T::kName));
        if (!c) return std::optional<T>{};
        DAX_TRY(auto v, T::decode(c->data));
        return std::optional<T>(std::move(v));
    }
    bool operator==(const CreateContextList&) const = default;
};

// ---- typed contexts ------------------------------------------------------------------------

// "ExtA" request (MS-SMB2 2.2.13.2.1): FILE_FULL_EA_INFORMATION list.
struct EaBufferContext {
    static constexpr auto& kName = create_context_name::kEaBuffer;
    std::vector<FullEaEntry> entries;
    static Result<EaBufferContext> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// "SecD" request (2.2.13.2.2): a self-relative SECURITY_DESCRIPTOR, parsed by auth/.
struct SdBufferContext {
    static constexpr auto& kName = create_context_name::kSdBuffer;
    ByteVector security_descriptor;
    static Result<SdBufferContext> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// "DHnQ" request (2.2.13.2.3, 16 reserved bytes) and response (2.2.14.2.3, 8 reserved bytes).
struct DurableHandleRequest {
    static constexpr auto& kName = create_context_name::kDurableHandleRequest;
    static constexpr size_t kSize = 16;
    static Result<DurableHandleRequest> decode(Bytes data);
    void encode(ByteWriter& w) const;
};
struct DurableHandleResponse {
    static constexpr auto& kName = create_context_name::kDurableHandleRequest;
    static constexpr size_t kSize = 8;
    static Result<DurableHandleResponse> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// "DHnC" request (2.2.13.2.4).
struct DurableHandleReconnect {
    static constexpr auto& kName = create_context_name::kDurableHandleReconnect;
    static constexpr size_t kSize = 16;
    FileId file_id;
    static Result<DurableHandleReconnect> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// "AlSi" request (2.2.13.2.6).
struct AllocationSizeContext {
    static constexpr auto& kName = create_context_name::kAllocationSize;
    static constexpr size_t kSize = 8;
    uint64_t allocation_size = 0;
    static Result<AllocationSizeContext> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// "MxAc" request (2.2.13.2.5): empty, or a FILETIME the client compares with ChangeTime.
struct MaximalAccessRequest {
    static constexpr auto& kName = create_context_name::kQueryMaximalAccess;
    std::optional<int64_t> timestamp;
    static Result<MaximalAccessRequest> decode(Bytes data);
    void encode(ByteWriter& w) const;
};
// "MxAc" response (2.2.14.2.5).
struct MaximalAccessResponse {
    static constexpr auto& kName = create_context_name::kQueryMaximalAccess;
    static constexpr size_t kSize = 8;
    NtStatus query_status = NtStatus::Success;
    uint32_t maximal_access = 0;
    static Result<MaximalAccessResponse> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// "TWrp" request (2.2.13.2.7).
struct TimewarpToken {
    static constexpr auto& kName = create_context_name::kTimewarpToken;
    static constexpr size_t kSize = 8;
    int64_t timestamp = 0;
    static Result<TimewarpToken> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// "QFid" response (2.2.14.2.9): DiskFileId(8) VolumeId(8) Reserved(16). The request carries no
// data (and the server ignores any).
struct QueryOnDiskIdResponse {
    static constexpr auto& kName = create_context_name::kQueryOnDiskId;
    static constexpr size_t kSize = 32;
    uint64_t disk_file_id = 0;
    uint64_t volume_id = 0;
    static Result<QueryOnDiskIdResponse> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

namespace lease_state {
constexpr uint32_t kNone = 0x00;
constexpr uint32_t kReadCaching = 0x01;
constexpr uint32_t kHandleCaching = 0x02;
constexpr uint32_t kWriteCaching = 0x04;
}  // namespace lease_state
namespace lease_flags {
constexpr uint32_t kBreakInProgress = 0x02;
constexpr uint32_t kParentLeaseKeySet = 0x04;
}  // namespace lease_flags

// "RqLs" request and response, v1 (2.2.13.2.8 / 2.2.14.2.10, 32 bytes) and v2 (2.2.13.2.10 /
// 2.2.14.2.11, 52 bytes). decode() tells them apart by DataLength; encode() writes the layout of
// `version`.
struct LeaseContext {
    static constexpr auto& kName = create_context_name::kRequestLease;
    static constexpr size_t kSizeV1 = 32;
    static constexpr size_t kSizeV2 = 52;
    uint8_t version = 1;  // 1 or 2
    Guid lease_key{};
    uint32_t lease_state = 0;
    uint32_t flags = 0;  // LeaseFlags
    uint64_t lease_duration = 0;
    Guid parent_lease_key{};  // v2 only
    uint16_t epoch = 0;       // v2 only
    static Result<LeaseContext> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const LeaseContext&) const = default;
};

namespace durable_flags {
constexpr uint32_t kPersistent = 0x00000002;  // SMB2_DHANDLE_FLAG_PERSISTENT
}

// "DH2Q" request (2.2.13.2.11, 32 bytes).
struct DurableHandleRequestV2 {
    static constexpr auto& kName = create_context_name::kDurableHandleRequestV2;
    static constexpr size_t kSize = 32;
    uint32_t timeout = 0;  // milliseconds; 0 = server default
    uint32_t flags = 0;
    Guid create_guid{};
    static Result<DurableHandleRequestV2> decode(Bytes data);
    void encode(ByteWriter& w) const;
};
// "DH2Q" response (2.2.14.2.12, 8 bytes).
struct DurableHandleResponseV2 {
    static constexpr auto& kName = create_context_name::kDurableHandleRequestV2;
    static constexpr size_t kSize = 8;
    uint32_t timeout = 0;
    uint32_t flags = 0;
    static Result<DurableHandleResponseV2> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// "DH2C" request (2.2.13.2.12, 36 bytes). Its response is a normal CREATE response
// (2.2.14.2.13), usually carrying a DH2Q response context.
struct DurableHandleReconnectV2 {
    static constexpr auto& kName = create_context_name::kDurableHandleReconnectV2;
    static constexpr size_t kSize = 36;
    FileId file_id;
    Guid create_guid{};
    uint32_t flags = 0;
    static Result<DurableHandleReconnectV2> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// SMB2_CREATE_APP_INSTANCE_ID (2.2.13.2.13): StructureSize(2)=20 Reserved(2) AppInstanceId(16).
struct AppInstanceIdContext {
    static constexpr auto& kName = create_context_name::kAppInstanceId;
    static constexpr size_t kSize = 20;
    Guid app_instance_id{};
    static Result<AppInstanceIdContext> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// SMB2_CREATE_APP_INSTANCE_VERSION (2.2.13.2.15): StructureSize(2)=24 Reserved(2) Padding(4)
// VersionHigh(8) VersionLow(8).
struct AppInstanceVersionContext {
    static constexpr auto& kName = create_context_name::kAppInstanceVersion;
    static constexpr size_t kSize = 24;
    uint64_t version_high = 0;
    uint64_t version_low = 0;
    static Result<AppInstanceVersionContext> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
