// MS-SMBD (SMB2 Remote Direct Memory Access Transport) messages: negotiate request/response,
// data transfer messages with fragmentation and reassembly, and SMB_DIRECT_BUFFER_DESCRIPTOR_V1
// lists. Pure: no verbs, no rdma_cm, no clocks; the connection code (credits, posting receives,
// timers) feeds received buffers in and sends what comes out.
//
// Receive-side validation failures are all "the receiver MUST terminate the connection"
// (MS-SMBD 3.1.5.6, 3.1.5.8) and are reported as kDisconnect.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocol/bytes.h"

namespace daxsmbd::smbdirect {

using protocol::ByteReader;
using protocol::Bytes;
using protocol::ByteVector;
using protocol::ByteWriter;
using protocol::MutableBytes;

// The status meaning "tear the RDMA connection down now, answer nothing".
constexpr NtStatus kDisconnect = NtStatus::ConnectionDisconnected;

constexpr uint16_t kProtocolVersion1 = 0x0100;       // MS-SMBD 1.7
constexpr size_t kNegotiateRequestSize = 20;         // MS-SMBD 2.2.1
constexpr size_t kNegotiateResponseSize = 32;        // MS-SMBD 2.2.2
constexpr size_t kDataTransferMinSize = 20;          // header without Padding (empty message)
constexpr uint32_t kDataTransferDataOffset = 24;     // MS-SMBD 3.1.5.4: DataOffset SHOULD be 24
constexpr size_t kBufferDescriptorV1Size = 16;       // MS-SMBD 2.2.3.1
constexpr uint32_t kMinReceiveSize = 128;            // MS-SMBD 3.1.5.6
constexpr uint32_t kMinFragmentedSize = 131072;      // MS-SMBD 3.1.5.6
constexpr uint16_t kFlagResponseRequested = 0x0001;  // SMB_DIRECT_RESPONSE_REQUESTED

// Negotiate Request (MS-SMBD 2.2.1), 20 bytes.
struct NegotiateRequest {
    uint16_t min_version = kProtocolVersion1;
    uint16_t max_version = kProtocolVersion1;
    uint16_t reserved = 0;
    uint16_t credits_requested = 0;
    uint32_t preferred_send_size = 0;
    uint32_t max_receive_size = 0;
    uint32_t max_fragmented_size = 0;

    // Layout only; shorter than 20 bytes is kDisconnect (3.1.5.6). Field values are judged by
    // accept_negotiate().
    static Result<NegotiateRequest> parse(Bytes msg);
    void serialize(ByteVector& out) const;
};

// Negotiate Response (MS-SMBD 2.2.2), 32 bytes.
struct NegotiateResponse {
    uint16_t min_version = kProtocolVersion1;
    uint16_t max_version = kProtocolVersion1;
    uint16_t negotiated_version = kProtocolVersion1;
    uint16_t reserved = 0;
    uint16_t credits_requested = 0;
    uint16_t credits_granted = 0;
    uint32_t status = 0;  // NTSTATUS
    uint32_t max_read_write_size = 0;
    uint32_t preferred_send_size = 0;
    uint32_t max_receive_size = 0;
    uint32_t max_fragmented_size = 0;

    // Layout only; shorter than 32 bytes is kDisconnect (3.1.5.7).
    static Result<NegotiateResponse> parse(Bytes msg);
    void serialize(ByteVector& out) const;
};

// Local connection parameters before negotiation (MS-SMBD 3.1.1.1). Defaults are the values of
// Windows and the Linux client/ksmbd (spec-digest 6.4), except MaxReceiveSize, which follows
// the 1364-byte norm the Linux peers adopted.
struct SmbdConfig {
    uint16_t receive_credit_max = 255;
    uint16_t send_credit_target = 255;
    uint32_t max_send_size = 1364;
    uint32_t max_receive_size = 1364;
    uint32_t max_fragmented_recv_size = 1024 * 1024;
    uint32_t max_read_write_size = 8 * 1024 * 1024;
};

// The Connection.* values that negotiation settles (MS-SMBD 3.1.5.6).
struct NegotiatedParameters {
    uint32_t max_send_size = 0;             // largest message we may send
    uint32_t max_receive_size = 0;          // largest message the peer may send us
    uint32_t max_fragmented_send_size = 0;  // largest upper-layer message we may send
    uint32_t max_fragmented_recv_size = 0;  // largest upper-layer message we accept
    uint32_t max_read_write_size = 0;
    uint16_t receive_credit_target = 0;  // peer's CreditsRequested
    uint16_t send_credits = 0;           // granted by the peer's negotiate response (initiator)
};

struct NegotiateOutcome {
    NegotiateResponse response;  // to send in every case
    // Set on success. Unset: `response` is a failure (Status != 0, other fields zero) after
    // which the connection is terminated gracefully (MS-SMBD 3.1.5.3).
    std::optional<NegotiatedParameters> parameters;
};

// Server side of MS-SMBD 3.1.5.6 for the first message received on a passive connection.
// `receive_credits` is the number of receives posted for the peer (Connection.ReceiveCredits
// after the credit processing of 3.1.5.9): it becomes CreditsGranted; 0 makes the response a
// failure with STATUS_INSUFFICIENT_RESOURCES.
//   kDisconnect                      message < 20 bytes, CreditsRequested 0,
//                                    MaxReceiveSize < 128, MaxFragmentedSize < 131072
//   failure response (NOT_SUPPORTED) version range without 0x0100
Result<NegotiateOutcome> accept_negotiate(Bytes msg, const SmbdConfig& config,
                                          uint16_t receive_credits);

// Initiator side of MS-SMBD 3.1.5.7 (our test client and the emulated provider): checks the
// response against the request that was sent; any failure is kDisconnect.
Result<NegotiatedParameters> check_negotiate_response(Bytes msg, const SmbdConfig& config);

// Data Transfer message header (MS-SMBD 2.2.3), 20 bytes (+ 4 bytes of padding when there is
// a payload at the usual offset 24).
struct DataTransferHeader {
    uint16_t credits_requested = 0;
    uint16_t credits_granted = 0;
    uint16_t flags = 0;
    uint16_t reserved = 0;
    uint32_t remaining_data_length = 0;
    uint32_t data_offset = 0;
    uint32_t data_length = 0;
};

struct DataTransferMessage {
    DataTransferHeader header;
    Bytes payload;  // points into the received buffer

    // MS-SMBD 3.1.5.8 checks, each failure kDisconnect: length >= 20, CreditsRequested >= 1,
    // DataOffset 8-aligned, DataOffset + DataLength <= length, DataLength +
    // RemainingDataLength <= max_fragmented_recv_size. Also refused: a payload that overlaps
    // the 20-byte header (DataOffset < 24 with DataLength > 0).
    static Result<DataTransferMessage> parse(Bytes msg, uint32_t max_fragmented_recv_size);
};

// Appends one data transfer message: 20 bytes when `payload` is empty (DataOffset and
// DataLength 0, no padding, MS-SMBD 3.1.5.4), otherwise 24 + payload with DataOffset 24.
void write_data_transfer(ByteVector& out, const DataTransferHeader& header, Bytes payload);

// Credit and flag fields are decided when a queued message is actually sent (MS-SMBD 3.1.5.1);
// this patches them in a message built earlier.
void set_send_fields(MutableBytes msg, uint16_t credits_requested, uint16_t credits_granted,
                     uint16_t flags);

// How an upper-layer message of `size` bytes is cut into data transfer messages of at most
// `max_send_size` bytes (MS-SMBD 3.1.5.4): payloads of max_send_size - 24 bytes, the
// remaining count after each. Errors: size > max_fragmented_send_size or max_send_size too
// small to carry a byte (InvalidParameter). An empty message is one empty fragment.
struct Fragment {
    size_t offset = 0;
    size_t length = 0;
    uint32_t remaining_data_length = 0;
};
Result<std::vector<Fragment>> plan_fragments(size_t size, uint32_t max_send_size,
                                             uint32_t max_fragmented_send_size);

// Reassembles received data transfer messages into upper-layer messages (MS-SMBD 3.1.5.8).
// Beyond the spec's checks, a continuation fragment's RemainingDataLength must equal what was
// still expected minus its DataLength (what every compliant sender writes, 3.1.5.4): anything
// else would splice two messages together and is kDisconnect.
class Reassembler {
  public:
    explicit Reassembler(uint32_t max_fragmented_recv_size)
        : max_fragmented_recv_size_(max_fragmented_recv_size) {}

    struct Received {
        DataTransferHeader header;  // for credit and keepalive processing
        // Set when this message completed an upper-layer message: a view into the received
        // buffer (single fragment) or into the reassembler (valid until the next receive()).
        std::optional<Bytes> message;
        // The token the RDMA provider reported invalidated while receiving this message's
        // fragments (MS-SMBD 3.1.5.8), handed over with the completed message.
        std::optional<uint32_t> invalidated_token;
    };

    // `invalidated_token`: set when the provider reports a remote invalidation for this receive.
    Result<Received> receive(Bytes msg, std::optional<uint32_t> invalidated_token = std::nullopt);

    bool in_progress() const { return remaining_ > 0 || !buffer_.empty(); }
    size_t buffered() const { return buffer_.size(); }
    uint32_t max_fragmented_recv_size() const { return max_fragmented_recv_size_; }

  private:
    uint32_t max_fragmented_recv_size_;
    uint32_t remaining_ = 0;  // Connection.FragmentReassemblyRemaining
    ByteVector buffer_;       // Connection.FragmentReassemblyBuffer
    ByteVector completed_;
    std::optional<uint32_t> token_;  // Connection.InvalidatedToken
};

// SMB_DIRECT_BUFFER_DESCRIPTOR_V1 (MS-SMBD 2.2.3.1), 16 bytes.
struct BufferDescriptorV1 {
    uint64_t offset = 0;  // provider-specific: the remote virtual address for IB/RoCE/iWARP
    uint32_t token = 0;   // steering tag (rkey)
    uint32_t length = 0;
    bool operator==(const BufferDescriptorV1&) const = default;
};

// An array of descriptors as carried in SMB2 READ/WRITE channel info (MS-SMB2 2.2.19/2.2.21):
// the length must be a nonzero multiple of 16 (else InvalidParameter, which the SMB2 layer
// returns as STATUS_INVALID_PARAMETER, MS-SMB2 3.3.5.12/3.3.5.13).
Result<std::vector<BufferDescriptorV1>> parse_buffer_descriptors(Bytes data);
void write_buffer_descriptors(std::span<const BufferDescriptorV1> list, ByteVector& out);
uint64_t total_length(std::span<const BufferDescriptorV1> list);

// The descriptors covering bytes [offset, offset + length) of the buffer the list describes,
// trimmed at both ends (MS-SMBD 3.1.4.5/3.1.4.6), skipping zero-length elements. Errors
// (InvalidParameter): the range runs past the described buffer, or an element's offset would
// wrap around 2^64.
Result<std::vector<BufferDescriptorV1>> select_range(std::span<const BufferDescriptorV1> list,
                                                     uint64_t offset, uint64_t length);

}  // namespace daxsmbd::smbdirect
