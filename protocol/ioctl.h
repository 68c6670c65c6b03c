// SMB2 IOCTL request and response (MS-SMB2 2.2.31, 2.2.32), FSCTL codes (MS-SMB2 2.2.31,
// MS-FSCC 2.3) and the FSCTL payloads the server handles itself.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace fsctl {
// SMB2-specific (MS-SMB2 2.2.31).
constexpr uint32_t kDfsGetReferrals = 0x00060194;
constexpr uint32_t kDfsGetReferralsEx = 0x000601B0;
constexpr uint32_t kPipePeek = 0x0011400C;
constexpr uint32_t kPipeWait = 0x00110018;
constexpr uint32_t kPipeTransceive = 0x0011C017;
constexpr uint32_t kSrvCopychunk = 0x001440F2;
constexpr uint32_t kSrvCopychunkWrite = 0x001480F2;
constexpr uint32_t kSrvEnumerateSnapshots = 0x00144064;
constexpr uint32_t kSrvRequestResumeKey = 0x00140078;
constexpr uint32_t kSrvReadHash = 0x001441BB;
constexpr uint32_t kLmrRequestResiliency = 0x001401D4;
constexpr uint32_t kQueryNetworkInterfaceInfo = 0x001401FC;
constexpr uint32_t kValidateNegotiateInfo = 0x00140204;
// File system controls (MS-FSCC 2.3 table).
constexpr uint32_t kCreateOrGetObjectId = 0x000900C0;
constexpr uint32_t kDeleteObjectId = 0x000900A0;
constexpr uint32_t kDeleteReparsePoint = 0x000900AC;
constexpr uint32_t kDuplicateExtentsToFile = 0x00098344;
constexpr uint32_t kDuplicateExtentsToFileEx = 0x000983E8;
constexpr uint32_t kFilesystemGetStatistics = 0x00090060;
constexpr uint32_t kFileLevelTrim = 0x00098208;
constexpr uint32_t kFindFilesBySid = 0x0009008F;
constexpr uint32_t kGetCompression = 0x0009003C;
constexpr uint32_t kGetIntegrityInformation = 0x0009027C;
constexpr uint32_t kGetNtfsVolumeData = 0x00090064;
constexpr uint32_t kGetRefsVolumeData = 0x000902D8;
constexpr uint32_t kGetObjectId = 0x0009009C;
constexpr uint32_t kGetReparsePoint = 0x000900A8;
constexpr uint32_t kGetRetrievalPointerCount = 0x0009042B;
constexpr uint32_t kGetRetrievalPointers = 0x00090073;
constexpr uint32_t kGetRetrievalPointersAndRefcount = 0x000903D3;
constexpr uint32_t kIsPathnameValid = 0x0009002C;
constexpr uint32_t kLmrSetLinkTrackingInformation = 0x001400EC;
constexpr uint32_t kMarkHandle = 0x000900FC;
constexpr uint32_t kOffloadRead = 0x00094264;
constexpr uint32_t kOffloadWrite = 0x00098268;
constexpr uint32_t kQueryAllocatedRanges = 0x000940CF;
constexpr uint32_t kQueryFatBpb = 0x00090058;
constexpr uint32_t kQueryFileRegions = 0x00090284;
constexpr uint32_t kQueryOnDiskVolumeInfo = 0x0009013C;
constexpr uint32_t kQuerySparingInfo = 0x00090138;
constexpr uint32_t kReadFileUsnData = 0x000900EB;
constexpr uint32_t kRecallFile = 0x00090117;
constexpr uint32_t kRefsStreamSnapshotManagement = 0x00090440;
constexpr uint32_t kSetCompression = 0x0009C040;
constexpr uint32_t kSetDefectManagement = 0x00098134;
constexpr uint32_t kSetEncryption = 0x000900D7;
constexpr uint32_t kSetIntegrityInformation = 0x0009C280;
constexpr uint32_t kSetIntegrityInformationEx = 0x00090380;
constexpr uint32_t kSetObjectId = 0x00090098;
constexpr uint32_t kSetObjectIdExtended = 0x000900BC;
constexpr uint32_t kSetReparsePoint = 0x000900A4;
constexpr uint32_t kSetSparse = 0x000900C4;
constexpr uint32_t kSetZeroData = 0x000980C8;
constexpr uint32_t kSetZeroOnDeallocation = 0x00090194;
constexpr uint32_t kSisCopyfile = 0x00090100;
constexpr uint32_t kWriteUsnCloseRecord = 0x000900EF;
}  // namespace fsctl

namespace ioctl_flags {
constexpr uint32_t kIsIoctl = 0x00000000;
constexpr uint32_t kIsFsctl = 0x00000001;  // SMB2_0_IOCTL_IS_FSCTL
}  // namespace ioctl_flags

struct IoctlRequest {
    static constexpr uint16_t kStructureSize = 57;
    static constexpr size_t kBufferOffset = kHeaderSize + 56;  // 0x78

    uint32_t ctl_code = 0;
    FileId file_id;
    Bytes input;  // view into msg
    uint32_t max_input_response = 0;
    uint32_t max_output_response = 0;
    uint32_t flags = ioctl_flags::kIsFsctl;

    // InputOffset/InputCount (and OutputOffset/OutputCount, which a client sets to 0) outside the
    // message or inside the fixed part: STATUS_INVALID_PARAMETER (MS-SMB2 3.3.5.15).
    static Result<IoctlRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;  // input at 0x78, OutputOffset/Count 0
};

struct IoctlResponse {
    static constexpr uint16_t kStructureSize = 49;
    static constexpr size_t kBufferOffset = kHeaderSize + 48;  // 0x70

    uint32_t ctl_code = 0;
    FileId file_id;
    Bytes input;   // normally empty (MS-SMB2 2.2.32)
    Bytes output;  // views: into msg after parse, into the caller's buffer for serialize
    uint32_t flags = 0;

    static Result<IoctlResponse> parse(Bytes msg);
    // InputOffset 0x70, OutputOffset = InputOffset + InputCount rounded up to 8 (also when there
    // is no output, as Windows does; digest 6.10).
    void serialize(ByteWriter& w) const;
};

// ---- FSCTL payloads -------------------------------------------------------------------------

// VALIDATE_NEGOTIATE_INFO request (MS-SMB2 2.2.31.4; digest 2.6).
struct ValidateNegotiateInfoRequest {
    static constexpr size_t kFixedSize = 24;
    uint32_t capabilities = 0;
    Guid guid{};
    uint16_t security_mode = 0;
    std::vector<uint16_t> dialects;
    // Fewer than 24 bytes or DialectCount past the input: STATUS_INVALID_PARAMETER (the handler
    // then drops the connection, MS-SMB2 3.3.5.15.12).
    static Result<ValidateNegotiateInfoRequest> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// VALIDATE_NEGOTIATE_INFO response (MS-SMB2 2.2.32.6).
struct ValidateNegotiateInfoResponse {
    static constexpr size_t kSize = 24;
    uint32_t capabilities = 0;
    Guid guid{};
    uint16_t security_mode = 0;
    uint16_t dialect = 0;
    static Result<ValidateNegotiateInfoResponse> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const ValidateNegotiateInfoResponse&) const = default;
};

// NETWORK_INTERFACE_INFO (MS-SMB2 2.2.32.5; digest 6.10): one 152-byte entry per IP address.
namespace interface_capability {
constexpr uint32_t kRssCapable = 0x00000001;
constexpr uint32_t kRdmaCapable = 0x00000002;
}  // namespace interface_capability
namespace sockaddr_family {
constexpr uint16_t kInterNetwork = 0x0002;
constexpr uint16_t kInterNetworkV6 = 0x0017;
}  // namespace sockaddr_family

struct NetworkInterfaceInfo {
    static constexpr size_t kSize = 152;
    uint32_t if_index = 0;  // never 0; the same for all addresses of one interface
    uint32_t capability = 0;
    uint32_t reserved = 0;    // spec: 0 (Wireshark calls it RSS queue count, digest 10.10)
    uint64_t link_speed = 0;  // bits per second
    uint16_t family = sockaddr_family::kInterNetwork;
    std::array<uint8_t, 16> address{};  // network byte order; IPv4 uses the first 4 bytes
    bool operator==(const NetworkInterfaceInfo&) const = default;

    // Writes the chained entries (Next = 152 on all but the last).
    static void encode_list(ByteWriter& w, std::span<const NetworkInterfaceInfo> list);
    static Result<std::vector<NetworkInterfaceInfo>> decode_list(Bytes data);
};

// SRV_COPYCHUNK_COPY (MS-SMB2 2.2.31.1) and SRV_COPYCHUNK (2.2.31.1.1).
struct SrvCopychunk {
    static constexpr size_t kSize = 24;
    uint64_t source_offset = 0;
    uint64_t target_offset = 0;
    uint32_t length = 0;
    bool operator==(const SrvCopychunk&) const = default;
};
struct SrvCopychunkCopy {
    static constexpr size_t kFixedSize = 32;
    std::array<std::byte, 24> source_key{};
    std::vector<SrvCopychunk> chunks;
    // Input shorter than 32 + ChunkCount * 24: STATUS_INVALID_PARAMETER (MS-SMB2 3.3.5.15.6).
    // The ChunkCount limit check (with the limits in the response) is the handler's.
    static Result<SrvCopychunkCopy> decode(Bytes data);
    void encode(ByteWriter& w) const;
};
// SRV_COPYCHUNK_RESPONSE (2.2.32.1).
struct SrvCopychunkResponse {
    static constexpr size_t kSize = 12;
    uint32_t chunks_written = 0;
    uint32_t chunk_bytes_written = 0;
    uint32_t total_bytes_written = 0;
    static Result<SrvCopychunkResponse> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const SrvCopychunkResponse&) const = default;
};

// SRV_REQUEST_RESUME_KEY response (2.2.32.3): ResumeKey(24) ContextLength(4)=0 and, like
// Windows, 4 zero bytes of Context: 32 bytes.
struct SrvRequestResumeKeyResponse {
    static constexpr size_t kSize = 32;
    std::array<std::byte, 24> resume_key{};
    static Result<SrvRequestResumeKeyResponse> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// SRV_SNAPSHOT_ARRAY (2.2.32.2). Snapshots are "@GMT-YYYY.MM.DD-HH.MM.SS" tokens.
struct SrvSnapshotArray {
    static constexpr size_t kFixedSize = 12;
    uint32_t number_of_snapshots = 0;
    std::vector<std::string> snapshots;
    // When the array does not fit in `max_output` bytes, writes only the 12-byte header with
    // NumberOfSnapShotsReturned 0 and SnapShotArraySize = the size needed. The empty array is
    // one UTF-16 NUL (SnapShotArraySize 2).
    void encode(ByteWriter& w, uint32_t max_output = UINT32_MAX) const;
};

// NETWORK_RESILIENCY_REQUEST (MS-SMB2 2.2.31.3): Timeout(4, ms) Reserved(4).
struct NetworkResiliencyRequest {
    static constexpr size_t kSize = 8;
    uint32_t timeout = 0;
    static Result<NetworkResiliencyRequest> decode(Bytes data);
    void encode(ByteWriter& w) const;
};

// SMB2_DUPLICATE_EXTENTS_DATA (MS-FSCC 2.3.7.2), the input of FSCTL_DUPLICATE_EXTENTS_TO_FILE
// (a reflink/FICLONERANGE on Linux): SourceFileID(16) SourceFileOffset(8) TargetFileOffset(8)
// ByteCount(8).
struct DuplicateExtentsData {
    static constexpr size_t kSize = 40;
    FileId source_file_id;
    int64_t source_file_offset = 0;
    int64_t target_file_offset = 0;
    int64_t byte_count = 0;
    static Result<DuplicateExtentsData> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const DuplicateExtentsData&) const = default;
};

// FILE_ALLOCATED_RANGE_BUFFER (MS-FSCC 2.3.51 input, 2.3.52 output entries).
struct FileAllocatedRangeBuffer {
    static constexpr size_t kSize = 16;
    int64_t file_offset = 0;
    int64_t length = 0;
    static Result<FileAllocatedRangeBuffer> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const FileAllocatedRangeBuffer&) const = default;
};

// FILE_ZERO_DATA_INFORMATION (MS-FSCC 2.3.85).
struct FileZeroDataInformation {
    static constexpr size_t kSize = 16;
    int64_t file_offset = 0;
    int64_t beyond_final_zero = 0;
    static Result<FileZeroDataInformation> decode(Bytes data);
    void encode(ByteWriter& w) const;
    bool operator==(const FileZeroDataInformation&) const = default;
};

}  // namespace daxsmbd::protocol
