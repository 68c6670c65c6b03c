// DCE/RPC connection-oriented PDUs (C706 chapter 12, with the MS-RPCE 2.2.2 extensions) and a
// small per-pipe state machine (PipeSession) for RPC over SMB named pipes (ncacn_np,
// MS-RPCE 2.1.1.2): the client WRITEs a bind and READs the bind_ack, then sends requests by
// WRITE+READ or FSCTL_PIPE_TRANSCEIVE. Only what a server of unauthenticated NDR 2.0 interfaces
// needs: no security providers (the SMB session authenticates the pipe), no NDR64, no
// big-endian data representation.
//
// All PDU structs parse exactly one PDU (frag_length bytes) and serialize one PDU, with the
// C706 field names in snake_case. Malformed input is NtStatus::InvalidParameter.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol::rpc {

// C706 12.6.4 / MS-RPCE 2.2.2.10: PTYPE values.
enum class PType : uint8_t {
    Request = 0,
    Ping = 1,
    Response = 2,
    Fault = 3,
    Working = 4,
    Nocall = 5,
    Reject = 6,
    Ack = 7,
    ClCancel = 8,
    Fack = 9,
    CancelAck = 10,
    Bind = 11,
    BindAck = 12,
    BindNak = 13,
    AlterContext = 14,
    AlterContextResp = 15,
    Auth3 = 16,
    Shutdown = 17,
    CoCancel = 18,
    Orphaned = 19,
};

// C706 12.6.3.1 pfc_flags; MS-RPCE 2.2.2.3: 0x04 is PFC_SUPPORT_HEADER_SIGN on bind/bind_ack/
// alter_context/alter_context_resp and PFC_PENDING_CANCEL on the others.
namespace pfc {
constexpr uint8_t kFirstFrag = 0x01;
constexpr uint8_t kLastFrag = 0x02;
constexpr uint8_t kPendingCancel = 0x04;
constexpr uint8_t kSupportHeaderSign = 0x04;
constexpr uint8_t kConcMpx = 0x10;
constexpr uint8_t kDidNotExecute = 0x20;
constexpr uint8_t kMaybe = 0x40;
constexpr uint8_t kObjectUuid = 0x80;
}  // namespace pfc

constexpr uint8_t kRpcVersion = 5;  // MS-RPCE 3.3.1.5.1: only 5.0 is recognised
constexpr uint8_t kRpcVersionMinor = 0;
constexpr size_t kCommonHeaderSize = 16;
constexpr size_t kRequestHeaderSize = 24;  // + 16 with PFC_OBJECT_UUID
constexpr size_t kResponseHeaderSize = 24;
constexpr size_t kFaultPduSize = 32;
constexpr size_t kSecTrailerSize = 8;  // MS-RPCE 2.2.2.11
// C706 12.6.3.1 packed_drep: byte 0 = integer rep (high nibble, 1 = little-endian) | character
// rep (low nibble, 0 = ASCII); byte 1 = floating point rep (0 = IEEE).
constexpr std::array<uint8_t, 4> kDrepLittleEndian = {0x10, 0x00, 0x00, 0x00};
// C706 12.6.3.1: every implementation must accept fragments of at least this size.
constexpr uint16_t kMustRecvFragSize = 1432;
// Windows and Samba offer 4280 (captures), which we use as our default and maximum.
constexpr uint16_t kDefaultMaxFrag = 4280;

// UUIDs are kept in their wire order (C706 Appendix A / MS-DTYP 2.3.4.2: the first three
// fields little-endian, the last eight bytes as written).
using Uuid = Guid;
namespace detail {
constexpr int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace detail

// Text form "8a885d04-1ceb-11c9-9fe8-08002b104860" -> wire order. Invalid text yields nullopt.
// constexpr so that interface identifiers are compile-time constants.
constexpr std::optional<Uuid> parse_uuid(std::string_view text) {
    if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' ||
        text[23] != '-')
        return std::nullopt;
    std::array<uint8_t, 16> in_text_order{};
    size_t n = 0;
    for (size_t i = 0; i < text.size();) {
        if (text[i] == '-') {
            ++i;
            continue;
        }
        int hi = detail::hex_digit(text[i]);
        int lo = detail::hex_digit(text[i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        in_text_order[n++] = uint8_t(hi * 16 + lo);
        i += 2;
    }
    // time_low, time_mid and time_hi_and_version are little-endian on the wire.
    constexpr size_t kWireOrder[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    Uuid u{};
    for (size_t k = 0; k < 16; ++k)
        u[k] = std::byte(in_text_order[kWireOrder[k]]);
    return u;
}
std::string uuid_to_string(const Uuid& u);

// p_syntax_id_t (C706 12.6.3.1 / MS-RPCE 2.2.2.7): if_uuid + if_version (u32: major in the low
// 16 bits, minor in the high 16 bits).
struct SyntaxId {
    Uuid uuid{};
    uint16_t version_major = 0;
    uint16_t version_minor = 0;
    bool operator==(const SyntaxId&) const = default;
    static Result<SyntaxId> read(ByteReader& r);
    void write(ByteWriter& w) const;
};

// NDR 2.0 transfer syntax (C706 Appendix I, MS-RPCE 2.2.4.12).
inline constexpr SyntaxId kNdr20Syntax{*parse_uuid("8a885d04-1ceb-11c9-9fe8-08002b104860"), 2, 0};
// NDR64 (MS-RPCE 2.2.5.1); we do not offer it, clients that propose it fall back to NDR 2.0.
inline constexpr SyntaxId kNdr64Syntax{*parse_uuid("71710533-beba-4937-8319-b5dbef9ccc36"), 1, 0};
// Bind time feature negotiation (MS-RPCE 3.3.1.5.3): a transfer syntax whose uuid starts with
// 6CB71C2C-9812-4540 and has version 1.0; the remaining eight octets are the client's
// BindTimeFeatureNegotiationBitmask (MS-RPCE 2.2.2.14). Returns the first two octets of it
// (the only defined ones) when `s` is such a syntax.
std::optional<uint16_t> bind_time_features(const SyntaxId& s);
namespace btfn {
constexpr uint16_t kSecurityContextMultiplexing = 0x0001;  // MS-RPCE 2.2.2.14
constexpr uint16_t kKeepConnectionOnOrphan = 0x0002;
}  // namespace btfn

// Common header of every connection-oriented PDU (C706 12.6.3.1), 16 bytes.
struct CommonHeader {
    uint8_t rpc_vers = kRpcVersion;
    uint8_t rpc_vers_minor = kRpcVersionMinor;
    PType ptype = PType::Request;
    uint8_t pfc_flags = pfc::kFirstFrag | pfc::kLastFrag;
    std::array<uint8_t, 4> packed_drep = kDrepLittleEndian;
    uint16_t frag_length = 0;
    uint16_t auth_length = 0;
    uint32_t call_id = 0;

    // Little-endian integers, ASCII characters and IEEE floats: the only representation this
    // server speaks (NDR stubs are decoded assuming it).
    bool drep_supported() const;
    bool version_supported() const {
        return rpc_vers == kRpcVersion && rpc_vers_minor == kRpcVersionMinor;
    }

    // Reads the 16 bytes only; frag_length is checked to be >= 16 (a frame cannot be smaller)
    // and the other fields are left for the caller to judge, so that e.g. a bind with an
    // unsupported version can still be answered with bind_nak. The integers are decoded as
    // little-endian whatever the drep says.
    static Result<CommonHeader> parse(Bytes pdu);
    void serialize(ByteWriter& w) const;
};

// sec_trailer (MS-RPCE 2.2.2.11) plus the auth token it introduces. This server accepts no
// security provider on its pipes; the struct exists so that PDUs carrying one parse cleanly
// and can be refused with the right answer.
struct AuthVerifier {
    uint8_t auth_type = 0;
    uint8_t auth_level = 0;
    uint8_t auth_pad_length = 0;
    uint8_t auth_reserved = 0;
    uint32_t auth_context_id = 0;
    Bytes auth_value;
};

// p_cont_elem_t (C706 12.6.3.1).
struct ContextElement {
    uint16_t context_id = 0;
    SyntaxId abstract_syntax;
    std::vector<SyntaxId> transfer_syntaxes;
};

// bind (11) and alter_context (14), same layout (C706 12.6.4.3, 12.6.4.1).
struct BindPdu {
    CommonHeader header;  // ptype Bind or AlterContext
    uint16_t max_xmit_frag = kDefaultMaxFrag;
    uint16_t max_recv_frag = kDefaultMaxFrag;
    uint32_t assoc_group_id = 0;
    std::vector<ContextElement> contexts;
    std::optional<AuthVerifier> auth;

    static Result<BindPdu> parse(Bytes pdu);
    ByteVector serialize() const;  // frag_length and auth_length computed
};

// p_cont_def_result_t (C706 12.6.3.1, MS-RPCE 2.2.2.4) and p_provider_reason_t.
namespace result {
constexpr uint16_t kAcceptance = 0;
constexpr uint16_t kUserRejection = 1;
constexpr uint16_t kProviderRejection = 2;
constexpr uint16_t kNegotiateAck = 3;
}  // namespace result
namespace provider_reason {
constexpr uint16_t kNotSpecified = 0;
constexpr uint16_t kAbstractSyntaxNotSupported = 1;
constexpr uint16_t kProposedTransferSyntaxesNotSupported = 2;
constexpr uint16_t kLocalLimitExceeded = 3;
}  // namespace provider_reason

// p_result_t: for negotiate_ack the reason field carries the
// BindTimeFeatureNegotiationResponseBitmask and the transfer syntax is all zero
// (MS-RPCE 3.3.1.5.3).
struct ContextResult {
    uint16_t result = result::kAcceptance;
    uint16_t reason = 0;
    SyntaxId transfer_syntax;
    bool operator==(const ContextResult&) const = default;
};

// bind_ack (12) and alter_context_resp (15), same layout (C706 12.6.4.4, 12.6.4.2): the
// secondary address is port_any_t (u16 length including the NUL, the characters), then
// padding to a 4-byte boundary before the result list.
struct BindAckPdu {
    CommonHeader header;  // ptype BindAck or AlterContextResp
    uint16_t max_xmit_frag = kDefaultMaxFrag;
    uint16_t max_recv_frag = kDefaultMaxFrag;
    uint32_t assoc_group_id = 0;
    std::string secondary_address;  // without the NUL; empty = length 0
    std::vector<ContextResult> results;

    static Result<BindAckPdu> parse(Bytes pdu);
    ByteVector serialize() const;
};

// bind_nak reject reasons (C706 12.6.3.1 p_reject_reason_t, MS-RPCE 2.2.2.5).
namespace reject_reason {
constexpr uint16_t kNotSpecified = 0;
constexpr uint16_t kTemporaryCongestion = 1;
constexpr uint16_t kLocalLimitExceeded = 2;
constexpr uint16_t kCalledPaddrUnknown = 3;
constexpr uint16_t kProtocolVersionNotSupported = 4;  // also "protocol error in bind"
constexpr uint16_t kDefaultContextNotSupported = 5;
constexpr uint16_t kUserDataNotReadable = 6;
constexpr uint16_t kNoPsapAvailable = 7;
constexpr uint16_t kAuthenticationTypeNotRecognized = 8;
constexpr uint16_t kInvalidChecksum = 9;
}  // namespace reject_reason

// bind_nak (13) (C706 12.6.4.5, MS-RPCE 2.2.2.9): reason, p_rt_versions_supported_t. We never
// send the optional extended-error Signature.
struct BindNakPdu {
    struct Version {
        uint8_t major = kRpcVersion;
        uint8_t minor = kRpcVersionMinor;
        bool operator==(const Version&) const = default;
    };
    CommonHeader header;
    uint16_t provider_reject_reason = reject_reason::kNotSpecified;
    std::vector<Version> versions{Version{}};

    static Result<BindNakPdu> parse(Bytes pdu);
    ByteVector serialize() const;  // padded to a multiple of 4 bytes
};

// request (0) (C706 12.6.4.9): stub starts at 24, or 40 with PFC_OBJECT_UUID.
struct RequestPdu {
    CommonHeader header;
    uint32_t alloc_hint = 0;
    uint16_t context_id = 0;
    uint16_t opnum = 0;
    std::optional<Uuid> object;  // present iff PFC_OBJECT_UUID
    Bytes stub;                  // excludes auth padding, sec_trailer and token
    std::optional<AuthVerifier> auth;

    static Result<RequestPdu> parse(Bytes pdu);
    ByteVector serialize() const;
};

// response (2) (C706 12.6.4.10).
struct ResponsePdu {
    CommonHeader header;
    uint32_t alloc_hint = 0;
    uint16_t context_id = 0;
    uint8_t cancel_count = 0;
    Bytes stub;

    static Result<ResponsePdu> parse(Bytes pdu);
    ByteVector serialize() const;
};

// fault (3) (C706 12.6.4.7, MS-RPCE 2.2.2.8): 32 bytes, no stub data.
struct FaultPdu {
    CommonHeader header;
    uint32_t alloc_hint = 0;
    uint16_t context_id = 0;
    uint8_t cancel_count = 0;
    uint8_t flags = 0;  // MS-RPCE 2.2.2.8: bit 0 = extended error information present
    uint32_t status = 0;

    static Result<FaultPdu> parse(Bytes pdu);
    ByteVector serialize() const;
};

// Fault status values (C706 Appendix E, MS-RPCE 2.2.2.8, 3.1.1.5.2, winerror.h).
namespace fault {
constexpr uint32_t kAccessDenied = 0x00000005;
constexpr uint32_t kBadStubData = 0x000006F7;  // RPC_X_BAD_STUB_DATA: stub did not unmarshal
constexpr uint32_t kInvalidTag = 0x1C000006;
constexpr uint32_t kFaultUnspec = 0x1C000012;
constexpr uint32_t kContextMismatch = 0x1C00001A;
constexpr uint32_t kRemoteNoMemory = 0x1C00001B;
constexpr uint32_t kOpRngError = 0x1C010002;  // nca_s_op_rng_error: no such opnum
constexpr uint32_t kUnkIf = 0x1C010003;       // nca_unk_if: no such interface/context
constexpr uint32_t kProtoError = 0x1C01000B;  // nca_proto_error
}  // namespace fault

// The fault status an interface's error becomes (see PipeSession::Dispatch).
//   NotImplemented              -> nca_s_op_rng_error (unknown opnum)
//   InvalidParameter, BadData   -> RPC_X_BAD_STUB_DATA (stub did not unmarshal)
//   AccessDenied                -> 5 (access denied)
//   NoMemory, InsufficientResources -> nca_s_fault_remote_no_memory
//   anything else               -> nca_s_fault_unspec
uint32_t fault_status_for(NtStatus s);

// Splits a response stub into response PDUs of at most `max_frag` bytes each; every fragment
// but the last carries a multiple of 8 stub bytes and alloc_hint is the stub length still to
// come, this fragment included (MS-RPCE 2.2.2.6). An empty stub gives one PDU.
std::vector<ByteVector> build_response_fragments(uint32_t call_id, uint16_t context_id, Bytes stub,
                                                 uint16_t max_frag);

// One reassembled call.
struct AssembledRequest {
    uint32_t call_id = 0;
    uint16_t context_id = 0;
    uint16_t opnum = 0;
    std::optional<Uuid> object;
    ByteVector stub;
};

// Reassembles fragmented requests (C706 12.6.2 / 12.6.4.9): the first fragment has
// PFC_FIRST_FRAG, the last PFC_LAST_FRAG, the ones in between neither; all share call_id,
// p_cont_id and opnum. A fragment out of that order, or a total above `max_stub`, is a protocol
// error (InvalidParameter) and resets the assembler.
class RequestAssembler {
  public:
    explicit RequestAssembler(size_t max_stub) : max_stub_(max_stub) {}

    // nullopt while more fragments are expected.
    Result<std::optional<AssembledRequest>> add(const RequestPdu& pdu);
    bool in_progress() const { return in_progress_; }
    void reset() {
        in_progress_ = false;
        current_ = {};
    }

  private:
    size_t max_stub_;
    bool in_progress_ = false;
    AssembledRequest current_;
};

// One open named pipe bound to one RPC interface. Pure: bytes in, bytes out, no sockets, no
// threads, no clocks; the SMB layer owns it and serialises calls to it.
//
//   write(bytes)      the data of an SMB2 WRITE (or the input of FSCTL_PIPE_TRANSCEIVE); it may
//                     hold part of a PDU, one PDU or several. Complete PDUs are processed at once
//                     and their replies queued.
//   pending_size()    size of the next reply message still to be read (0 = nothing queued);
//                     a READ with a smaller buffer gets STATUS_BUFFER_OVERFLOW with the first
//                     bytes, the rest stays for the next READ (MS-SMB2 3.3.5.12 message mode).
//   read(max)         up to `max` bytes of that message.
//
// Protocol errors the client cannot recover from (garbage framing, a request before bind,
// PDUs only a server sends, ...) queue a fault with nca_proto_error and break the session:
// every later write fails with STATUS_PIPE_BROKEN, already queued replies remain readable.
class PipeSession {
  public:
    // Runs one call of the interface: opnum + reassembled stub -> response stub. An error is
    // sent as a fault PDU with fault_status_for(error) (NotImplemented for an unknown opnum).
    using Dispatch = std::function<Result<ByteVector>(uint16_t opnum, Bytes stub)>;

    struct Interface {
        SyntaxId abstract_syntax;
        std::string secondary_address;  // port_any_t of bind_ack, e.g. "\\PIPE\\srvsvc"
        Dispatch dispatch;
    };

    struct Options {
        uint16_t max_frag = kDefaultMaxFrag;      // largest fragment we send or accept
        uint32_t assoc_group_id = 0x00005A17;     // used when the client's bind asks for a new one
        size_t max_request_stub = 256 * 1024;     // reassembled request limit
        size_t max_pending_output = 1024 * 1024;  // unread replies before writes are refused
        size_t max_contexts = 16;  // presentation contexts per pipe (MS-RPCE 3.3.1.5.6 limit)
    };

    explicit PipeSession(Interface iface);
    PipeSession(Interface iface, Options options);

    // Errors: STATUS_PIPE_BROKEN once broken; STATUS_INSUFFICIENT_RESOURCES when the client
    // lets more than Options::max_pending_output of replies pile up without reading them.
    Status write(Bytes data);
    ByteVector read(size_t max);
    size_t pending_size() const;

    // read() that also says whether the message continues past `max`, i.e. whether the SMB2
    // READ / IOCTL answers STATUS_BUFFER_OVERFLOW (MS-SMB2 3.3.5.12, 3.3.5.15.8).
    struct ReadResult {
        ByteVector data;
        bool overflow = false;
    };
    ReadResult read_message(size_t max);
    // FSCTL_PIPE_TRANSCEIVE: write `in`, then read_message(max_out). A reply of several
    // fragments is several messages: the first comes back here, the client READs the rest.
    Result<ReadResult> transceive(Bytes in, size_t max_out);
    size_t pending_messages() const { return out_.size(); }
    size_t pending_total() const { return out_bytes_; }  // all queued bytes, every message
    // The front message has been read in part (its first READ got STATUS_BUFFER_OVERFLOW).
    bool message_continues() const { return out_front_offset_ > 0; }
    // FSCTL_PIPE_PEEK: up to `max` unread bytes of the front message, not consumed.
    ByteVector peek(size_t max) const;
    bool broken() const { return broken_; }
    bool bound() const { return bound_; }
    // Fragment size negotiated at bind (what we send at most, and accept at most).
    uint16_t max_frag() const { return frag_; }

  private:
    void process_pdu(Bytes pdu);
    void on_bind(Bytes pdu, const CommonHeader& h);
    void on_request(Bytes pdu, const CommonHeader& h);
    void run_call(AssembledRequest call);
    std::vector<ContextResult> negotiate_contexts(const std::vector<ContextElement>& contexts);
    void queue(ByteVector pdu);
    void queue_fault(uint32_t call_id, uint16_t context_id, uint32_t status, uint8_t extra_flags);
    void queue_bind_nak(uint32_t call_id, uint16_t reason);
    void protocol_error(uint32_t call_id);

    Interface iface_;
    Options options_;
    ByteVector in_;
    std::deque<ByteVector> out_;
    size_t out_front_offset_ = 0;  // bytes of out_.front() already read
    size_t out_bytes_ = 0;
    bool bound_ = false;
    bool broken_ = false;
    uint16_t frag_ = kDefaultMaxFrag;
    uint32_t assoc_group_id_ = 0;
    std::vector<uint16_t> contexts_;  // accepted presentation context ids
    RequestAssembler assembler_;
};

}  // namespace daxsmbd::protocol::rpc
