#include "tests/client/smb2_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "auth/crypto.h"
#include "auth/spnego.h"
#include "protocol/transform.h"

namespace daxsmbd::client {

using namespace protocol;
using Clock = std::chrono::steady_clock;

namespace {

int remaining_ms(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return 0;
    return int(std::min<int64_t>(left.count(), 1 << 30));
}

std::optional<auth::SigningAlgorithm> algorithm_of(uint16_t id) {
    switch (id) {
        case signing_algorithm::kHmacSha256:
            return auth::SigningAlgorithm::HmacSha256;
        case signing_algorithm::kAesCmac:
            return auth::SigningAlgorithm::AesCmac;
        case signing_algorithm::kAesGmac:
            return auth::SigningAlgorithm::AesGmac;
        default:
            return std::nullopt;
    }
}

}  // namespace

Result<ErrorResponse> RawReply::error_body() const {
    if (!from_server) return Error(status);
    return ErrorResponse::parse(msg);
}

Smb2Client::Smb2Client(ClientOptions options) : opts_(std::move(options)), writer_(tx_, 0) {
    bool zero = std::all_of(opts_.client_guid.begin(), opts_.client_guid.end(),
                            [](std::byte b) { return b == std::byte{0}; });
    if (zero) auth::random_bytes(opts_.client_guid);
}

Smb2Client::~Smb2Client() {
    disconnect();
}

// ---- socket ------------------------------------------------------------------------------------

Status Smb2Client::connect(const std::string& host, uint16_t port) {
    disconnect();
    host_ = host;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::string port_text = std::to_string(port);
    if (::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res) != 0 || !res)
        return Error(NtStatus::BadNetworkName);
    auto deadline = Clock::now() + opts_.timeout;
    NtStatus last = local_status::kDisconnected;
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                          ai->ai_protocol);
        if (fd < 0) continue;
        if (opts_.receive_buffer > 0)
            ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &opts_.receive_buffer,
                         sizeof opts_.receive_buffer);
        if (!opts_.source_address.empty() && !bind_source(fd, ai->ai_family)) {
            ::close(fd);
            last = NtStatus::InvalidParameter;
            continue;
        }
        int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            rc = ::poll(&p, 1, remaining_ms(deadline));
            if (rc == 1) {
                int err = 0;
                socklen_t len = sizeof err;
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
                rc = err ? -1 : 0;
            } else {
                if (rc == 0) last = local_status::kTimeout;
                rc = -1;
            }
        }
        if (rc != 0) {
            ::close(fd);
            continue;
        }
        // Blocking from here on; receives wait in poll() with the deadline, sends are bounded
        // by SO_SNDTIMEO, so that no call can hang on a server that stopped reading.
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        timeval tv{};
        tv.tv_sec = opts_.timeout.count() / 1000;
        tv.tv_usec = (opts_.timeout.count() % 1000) * 1000;
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        fd_ = fd;
        break;
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) return Error(last);
    return {};
}

Status Smb2Client::attach(std::unique_ptr<MessageLink> link, std::string host) {
    disconnect();
    if (!link || !link->connected()) return Error(local_status::kDisconnected);
    link_ = std::move(link);
    host_ = std::move(host);
    return {};
}

bool Smb2Client::bind_source(int fd, int family) const {
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        if (::inet_pton(AF_INET, opts_.source_address.c_str(), &a->sin_addr) != 1) return false;
        len = sizeof *a;
    } else if (family == AF_INET6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        if (::inet_pton(AF_INET6, opts_.source_address.c_str(), &a->sin6_addr) != 1) return false;
        len = sizeof *a;
    } else {
        return false;
    }
    return ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0;
}

void Smb2Client::disconnect() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    link_.reset();
    link_pending_.reset();
    last_invalidated_rkey_.reset();
    dialect_ = Dialect::None;
    negotiated_ = NegotiateResponse{};
    multi_credit_ = false;
    signing_algorithm_id_.reset();
    cipher_id_ = 0;
    encrypted_trees_.clear();
    conn_preauth_.reset();
    client_signing_required_ = false;
    session_ = Session{};
    tree_id_ = 0;
    next_mid_ = 0;
    credits_ = 1;
    total_granted_ = 0;
    unsolicited_ = 0;
    stash_.clear();
}

Status Smb2Client::write_all(const void* p, size_t n) {
    if (fd_ < 0) return Error(local_status::kDisconnected);
    auto* b = static_cast<const char*>(p);
    while (n) {
        ssize_t k = ::send(fd_, b, n, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) continue;
            NtStatus s = (errno == EAGAIN || errno == EWOULDBLOCK) ? local_status::kTimeout
                                                                   : local_status::kDisconnected;
            if (s == local_status::kDisconnected) {
                ::close(fd_);
                fd_ = -1;
            }
            return Error(s);
        }
        b += k;
        n -= size_t(k);
    }
    return {};
}

Status Smb2Client::read_exact(std::byte* p, size_t n, Clock::time_point deadline) {
    while (n) {
        if (fd_ < 0) return Error(local_status::kDisconnected);
        // Data that is already there is taken without a poll() first: the body of a frame
        // usually arrives with its header, and the load generator reads many frames.
        ssize_t k = ::recv(fd_, p, n, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd pf{fd_, POLLIN, 0};
            int rc = ::poll(&pf, 1, remaining_ms(deadline));
            if (rc < 0 && errno == EINTR) continue;
            if (rc == 0) return Error(local_status::kTimeout);
            continue;
        }
        if (k <= 0) {
            ::close(fd_);
            fd_ = -1;
            return Error(local_status::kDisconnected);
        }
        p += k;
        n -= size_t(k);
    }
    return {};
}

Status Smb2Client::send_raw(Bytes bytes) {
    if (link_) return link_->send(bytes);  // a link has no byte stream: one message
    return write_all(bytes.data(), bytes.size());
}

Status Smb2Client::send_frame(Bytes msg) {
    if (link_) return link_->send(msg);  // MS-SMB2 2.1: SMB Direct has no framing header
    if (msg.size() > 0xFFFFFF) return Error(NtStatus::InvalidParameter);
    std::array<uint8_t, 4> hdr{0, uint8_t(msg.size() >> 16), uint8_t(msg.size() >> 8),
                               uint8_t(msg.size())};
    DAX_CHECK(write_all(hdr.data(), hdr.size()));
    return write_all(msg.data(), msg.size());
}

Result<Bytes> Smb2Client::receive_from_link(Clock::time_point deadline) {
    std::optional<MessageLink::Message> m = std::move(link_pending_);
    link_pending_.reset();
    if (!m) {
        auto got = link_->receive(deadline);
        if (!got) return Error(got.status());
        m = std::move(*got);
    }
    rx_link_ = std::move(m->bytes);
    rx_invalidated_rkey_ = m->invalidated_rkey;
    if (m->invalidated_rkey) last_invalidated_rkey_ = m->invalidated_rkey;
    ++frames_received_;
    return Bytes(rx_link_);
}

Result<Bytes> Smb2Client::receive_frame(Clock::time_point deadline) {
    if (link_) return receive_from_link(deadline);
    std::array<std::byte, 4> hdr;
    DAX_CHECK(read_exact(hdr.data(), 4, deadline));
    // MS-SMB2 2.1: byte 0 is zero, then a 24-bit big-endian length.
    if (hdr[0] != std::byte{0}) return Error(local_status::kBadResponse);
    size_t len = size_t(hdr[1]) << 16 | size_t(hdr[2]) << 8 | size_t(hdr[3]);
    if (len > rx_cap_) {
        size_t cap = std::max(len, std::min<size_t>(rx_cap_ * 2, 1 << 24));
        rx_ = std::make_unique_for_overwrite<std::byte[]>(cap);
        rx_cap_ = cap;
    }
    DAX_CHECK(read_exact(rx_.get(), len, deadline));
    ++frames_received_;
    return Bytes(rx_.get(), len);
}

Result<Bytes> Smb2Client::receive_raw() {
    return receive_frame(Clock::now() + opts_.timeout);
}

Result<Bytes> Smb2Client::receive_raw(std::chrono::milliseconds timeout) {
    return receive_frame(Clock::now() + timeout);
}

Smb2Client::PeerState Smb2Client::wait_closed(std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    if (link_) {
        // The message that arrived is kept for the next receive (what MSG_PEEK does on TCP).
        if (link_pending_) return PeerState::Data;
        auto m = link_->receive(deadline);
        if (m) {
            link_pending_ = std::move(*m);
            return PeerState::Data;
        }
        return m.status() == local_status::kTimeout ? PeerState::Timeout : PeerState::Closed;
    }
    if (fd_ < 0) return PeerState::Closed;
    for (;;) {
        pollfd pf{fd_, POLLIN, 0};
        int rc = ::poll(&pf, 1, remaining_ms(deadline));
        if (rc < 0 && errno == EINTR) continue;
        if (rc == 0) return PeerState::Timeout;
        std::byte b;
        ssize_t k = ::recv(fd_, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) {
            ::close(fd_);
            fd_ = -1;
            return PeerState::Closed;
        }
        return PeerState::Data;
    }
}

// ---- send path ---------------------------------------------------------------------------------

uint16_t Smb2Client::charge_for(uint64_t payload) const {
    // MS-SMB2 3.2.4.1.5: 2.0.2 sends CreditCharge 0; without multi-credit support every request
    // costs one credit; otherwise one per started 64 KiB of payload (at least one).
    if (dialect_ == Dialect::None || dialect_ == Dialect::Smb202) return 0;
    if (!multi_credit_ || payload == 0) return 1;
    uint64_t n = (payload - 1) / 65536 + 1;
    return uint16_t(std::min<uint64_t>(n, 0xFFFF));
}

void Smb2Client::begin_message() {
    tx_.clear();
    tx_.resize(4);  // Direct TCP header, filled by finish_message()
    tx_elems_.clear();
    tx_error_ = NtStatus::Success;
}

uint64_t Smb2Client::add_element(Command cmd, const CallOptions& co) {
    size_t start = tx_.size();
    if (!tx_elems_.empty()) {
        // MS-SMB2 3.2.4.1.4: every element of a chain starts 8-byte aligned; the previous
        // element's NextCommand is the distance between the two headers.
        size_t pad = (8 - (start - 4) % 8) % 8;
        tx_.resize(start + pad, std::byte{0});
        start += pad;
        auto& prev = tx_elems_.back();
        store_le32(tx_.data() + prev.start + kNextCommandOffset, uint32_t(start - prev.start));
    }
    writer_.set_base(start);

    uint16_t charge = co.credit_charge ? *co.credit_charge : charge_for(co.payload);
    uint64_t ids = std::max<uint64_t>(charge, 1);
    uint64_t mid;
    if (co.message_id) {
        mid = *co.message_id;
    } else {
        if (credits_ < ids) tx_error_ = local_status::kNoCredits;
        mid = next_mid_;
        next_mid_ += ids;
        credits_ -= std::min(credits_, ids);
    }

    Header h;
    h.credit_charge = charge;
    h.command = cmd;
    if (co.credit_request) {
        h.credits = *co.credit_request;
    } else {
        uint64_t missing = credits_ < opts_.credit_target ? opts_.credit_target - credits_ : 0;
        h.credits = uint16_t(std::clamp<uint64_t>(ids + missing, 1, 0xFFFF));
    }
    h.flags = co.extra_flags | (co.related ? flags::kRelatedOperations : 0);
    h.status = co.channel_sequence;
    h.message_id = mid;
    h.process_id = 0xFEFF;
    bool no_tree = cmd == Command::Negotiate || cmd == Command::SessionSetup ||
                   cmd == Command::Logoff || cmd == Command::TreeConnect;
    h.tree_id = co.tree_id ? *co.tree_id : (no_tree ? 0 : tree_id_);
    h.session_id = co.session_id ? *co.session_id : (cmd == Command::Negotiate ? 0 : session_.id);
    h.serialize(writer_);

    // Signing (MS-SMB2 3.2.4.1.1): when the session requires it, when asked to, and for a 3.1.1
    // TREE_CONNECT, which the server refuses unsigned (3.3.5.7).
    // Encryption (MS-SMB2 3.2.4.1.8): when asked to, when the session or the tree wants it.
    bool encrypt = false;
    if (co.encrypt) {
        encrypt = *co.encrypt;
    } else if (h.session_id == session_.id && cmd != Command::Negotiate &&
               cmd != Command::SessionSetup) {
        encrypt = wants_encryption(h.tree_id);
    }
    // An encrypted message is not signed (MS-SMB2 3.2.4.1.1), unless a test insists.
    bool sign = false;
    if (co.sign) {
        sign = *co.sign;
    } else if (!encrypt && session_.valid && session_.signer && h.session_id == session_.id &&
               cmd != Command::Negotiate && cmd != Command::SessionSetup) {
        sign = session_.signing_required || opts_.force_sign ||
               (dialect_ == Dialect::Smb311 && cmd == Command::TreeConnect);
    }
    tx_elems_.push_back(TxElement{start, mid, sign, cmd == Command::Cancel, encrypt});
    return mid;
}

void Smb2Client::finish_message() {
    for (size_t i = 0; i < tx_elems_.size(); ++i) {
        auto& e = tx_elems_[i];
        if (!e.sign) continue;
        size_t end = i + 1 < tx_elems_.size() ? tx_elems_[i + 1].start : tx_.size();
        if (!session_.signer) {
            tx_error_ = NtStatus::NotSupported;  // no key to sign with
            continue;
        }
        // MS-SMB2 3.1.4.1: the signature covers the element including its padding.
        MutableBytes elem(tx_.data() + e.start, end - e.start);
        store_le32(elem.data() + kFlagsOffset,
                   load_le32(elem.data() + kFlagsOffset) | flags::kSigned);
        std::memset(elem.data() + kSignatureOffset, 0, 16);
        std::array<Bytes, 1> frags{Bytes(elem)};
        auto sig = session_.signer->sign(frags, e.mid, false, e.cancel);
        std::memcpy(elem.data() + kSignatureOffset, sig.data(), 16);
    }
    bool encrypt = std::any_of(tx_elems_.begin(), tx_elems_.end(),
                               [](const TxElement& e) { return e.encrypt; });
    if (encrypt) {
        // One TRANSFORM_HEADER around the whole message (MS-SMB2 3.2.4.1.8).
        if (!session_.encryption) {
            tx_error_ = NtStatus::NotSupported;
        } else {
            tx_.insert(tx_.begin() + 4, TransformHeader::kSize, std::byte{0});
            MutableBytes plain(tx_.data() + 4 + TransformHeader::kSize,
                               tx_.size() - 4 - TransformHeader::kSize);
            std::span<std::byte, TransformHeader::kSize> th(tx_.data() + 4, TransformHeader::kSize);
            if (!session_.encryption->seal(session_.id, std::span<const MutableBytes>(&plain, 1),
                                           th))
                tx_error_ = NtStatus::InvalidParameter;
        }
    }
    size_t n = tx_.size() - 4;
    if (n > 0xFFFFFF) tx_error_ = NtStatus::InvalidParameter;
    tx_[0] = std::byte{0};
    tx_[1] = std::byte(n >> 16);
    tx_[2] = std::byte(n >> 8);
    tx_[3] = std::byte(n);
}

Status Smb2Client::flush_message() {
    if (tx_error_ != NtStatus::Success) return Error(tx_error_);
    // MS-SMB2 2.1: over SMB Direct the message goes without the Direct TCP header.
    if (link_) return link_->send(Bytes(tx_).subspan(4));
    return write_all(tx_.data(), tx_.size());
}

Status Smb2Client::sign_message(MutableBytes msg) {
    if (!session_.signer) return Error(NtStatus::NotSupported);
    if (msg.size() < kHeaderSize) return Error(NtStatus::InvalidParameter);
    store_le32(msg.data() + kFlagsOffset, load_le32(msg.data() + kFlagsOffset) | flags::kSigned);
    std::memset(msg.data() + kSignatureOffset, 0, 16);
    std::array<Bytes, 1> frags{Bytes(msg)};
    bool is_cancel = load_le16(msg.data() + 12) == uint16_t(Command::Cancel);
    auto sig = session_.signer->sign(frags, load_le64(msg.data() + 24), false, is_cancel);
    std::memcpy(msg.data() + kSignatureOffset, sig.data(), 16);
    return {};
}

Status Smb2Client::cancel(uint64_t message_id, std::optional<uint64_t> async_id) {
    begin_message();
    writer_.set_base(4);
    Header h;
    h.command = Command::Cancel;
    h.message_id = message_id;
    h.session_id = session_.id;
    if (async_id) {
        h.flags = flags::kAsyncCommand;
        h.async_id = *async_id;
    } else {
        h.tree_id = tree_id_;
        h.process_id = 0xFEFF;
    }
    h.serialize(writer_);
    writer_.u16(4);  // StructureSize (MS-SMB2 2.2.30)
    writer_.u16(0);
    bool encrypt = wants_encryption(tree_id_);
    bool sign = !encrypt && session_.valid && session_.signer &&
                (session_.signing_required || opts_.force_sign);
    tx_elems_.push_back(TxElement{4, message_id, sign, true, encrypt});
    finish_message();
    return flush_message();
}

// ---- receive path ------------------------------------------------------------------------------

RawReply Smb2Client::local_failure(NtStatus s) {
    RawReply r;
    r.status = s;
    r.from_server = false;
    return r;
}

bool Smb2Client::wants_encryption(uint32_t tree_id) const {
    if (!session_.valid || !session_.encryption) return false;
    return opts_.encrypt || session_.encrypt_data || encrypted_trees_.count(tree_id) != 0;
}

bool Smb2Client::check_signature(MutableBytes elem, const Header& h, bool* verified,
                                 bool encrypted) {
    *verified = false;
    // A decrypted response was authenticated by its TRANSFORM tag (MS-SMB2 3.2.5.1.3).
    if (encrypted || !opts_.verify_signatures) return true;
    if (h.is_signed()) {
        if (!session_.signer || h.session_id != session_.id) return true;  // not ours to check
        std::array<std::byte, 16> sig;
        std::memcpy(sig.data(), elem.data() + kSignatureOffset, 16);
        std::memset(elem.data() + kSignatureOffset, 0, 16);
        std::array<Bytes, 1> frags{Bytes(elem)};
        bool ok = session_.signer->verify(frags, h.message_id, true, false, sig);
        std::memcpy(elem.data() + kSignatureOffset, sig.data(), 16);
        *verified = ok;
        return ok;
    }
    // MS-SMB2 3.2.5.1.3: an unsigned response on a session that requires signing is discarded,
    // except interim responses and unsolicited breaks.
    if (session_.valid && session_.signing_required && h.session_id == session_.id &&
        h.status != to_u32(NtStatus::Pending) && h.message_id != kUnsolicitedMessageId)
        return false;
    return true;
}

Result<Header> Smb2Client::absorb(Bytes elem) {
    DAX_TRY(auto h, Header::parse(elem));
    if (!h.is_response()) return Error(local_status::kBadResponse);
    credits_ += h.credits;
    total_granted_ += h.credits;
    return h;
}

RawReply Smb2Client::wait_reply(uint64_t mid, bool return_interim) {
    return wait_for(mid, return_interim);
}

RawReply Smb2Client::wait_any() {
    return wait_for(std::nullopt, false);
}

RawReply Smb2Client::wait_for(std::optional<uint64_t> want, bool return_interim) {
    auto finish = [&](MutableBytes elem, const Header& h, bool encrypted,
                      std::optional<uint32_t> invalidated_rkey) {
        RawReply r;
        r.from_server = true;
        r.header = h;
        r.status = NtStatus(h.status);
        r.msg = elem;
        r.encrypted = encrypted;
        r.invalidated_rkey = invalidated_rkey;
        if (!check_signature(elem, h, &r.signature_verified, encrypted)) {
            r.from_server = false;
            r.status = local_status::kBadSignature;
        }
        return r;
    };
    auto it = want ? stash_.find(*want) : stash_.begin();
    if (it != stash_.end()) {
        stash_hold_ = std::move(it->second.msg);
        bool encrypted = it->second.encrypted;
        std::optional<uint32_t> invalidated_rkey = it->second.invalidated_rkey;
        stash_.erase(it);
        auto h = Header::parse(stash_hold_);
        return finish(MutableBytes(stash_hold_), *h, encrypted, invalidated_rkey);
    }
    auto deadline = Clock::now() + opts_.timeout;
    for (;;) {
        auto frame = receive_frame(deadline);
        if (!frame) return local_failure(frame.status());
        const std::optional<uint32_t> invalidated_rkey =
            link_ ? rx_invalidated_rkey_ : std::nullopt;
        auto* base = const_cast<std::byte*>(frame->data());
        size_t n = frame->size();
        bool encrypted = false;
        if (n >= 4 && load_le32(base) == kTransformProtocolId) {
            // MS-SMB2 3.2.5.1.1: decrypt with the session named in the TRANSFORM_HEADER.
            auto th = TransformHeader::parse(Bytes(base, n));
            if (!th || !session_.encryption || th->session_id != session_.id)
                return local_failure(local_status::kBadResponse);
            if (!session_.encryption->open(MutableBytes(base, n)))
                return local_failure(local_status::kBadSignature);
            base += TransformHeader::kSize;
            n -= TransformHeader::kSize;
            encrypted = true;
        }
        std::optional<MutableBytes> found;
        Header found_h;
        size_t off = 0;
        while (off < n) {
            // Split the chain (MS-SMB2 3.2.5.1.9 / 2.2.1): NextCommand is 8-aligned, >= 64 and
            // inside the frame; each element's span includes its padding.
            if (n - off < kHeaderSize) return local_failure(local_status::kBadResponse);
            uint32_t next = load_le32(base + off + kNextCommandOffset);
            size_t len = n - off;
            if (next) {
                if (next % 8 || next < kHeaderSize || next > n - off)
                    return local_failure(local_status::kBadResponse);
                len = next;
            }
            MutableBytes elem(base + off, len);
            auto h = absorb(elem);
            if (!h) return local_failure(local_status::kBadResponse);
            off += len;
            if (h->message_id == kUnsolicitedMessageId) {
                ++unsolicited_;
                continue;
            }
            // Interim response (MS-SMB2 3.3.4.2): the final one follows with the same id.
            bool interim = h->status == to_u32(NtStatus::Pending) && h->is_async();
            bool wanted = !want || h->message_id == *want;
            if (interim && !(return_interim && wanted)) continue;
            if (wanted && !found) {
                found = elem;
                found_h = *h;
            } else {
                auto& st = stash_[h->message_id];
                st.msg.assign(elem.begin(), elem.end());
                st.encrypted = encrypted;
                st.invalidated_rkey = invalidated_rkey;
            }
            if (!next) break;
        }
        if (found) return finish(*found, found_h, encrypted, invalidated_rkey);
    }
}

template <class T>
Reply<T> Smb2Client::typed(RawReply raw) {
    Reply<T> r;
    static_cast<RawReply&>(r) = raw;
    if (!r.from_server) return r;
    bool must = r.status == NtStatus::Success || r.status == NtStatus::MoreProcessingRequired;
    if (must || !is_error(r.status)) {
        auto b = T::parse(r.msg);
        if (b) {
            r.body = std::move(*b);
        } else if (must) {
            r.from_server = false;
            r.status = local_status::kBadResponse;
        }
    }
    return r;
}

template <class Req, class Resp>
Reply<Resp> Smb2Client::typed_call(Command cmd, const Req& body, const CallOptions& co) {
    return typed<Resp>(call(cmd, body, co));
}

Result<std::vector<uint64_t>> Smb2Client::Compound::send() {
    if (!started_) return Error(NtStatus::InvalidParameter);
    c_.finish_message();
    started_ = false;
    auto mids = std::move(mids_);
    mids_.clear();
    DAX_CHECK(c_.flush_message());
    return mids;
}

std::vector<OwnedReply> Smb2Client::Compound::run() {
    std::vector<OwnedReply> out;
    if (!started_) return out;
    c_.finish_message();
    auto st = c_.flush_message();
    for (auto mid : mids_) {
        OwnedReply o;
        if (!st) {
            o.status = st.status();
        } else {
            auto r = c_.wait_reply(mid);
            o.status = r.status;
            o.from_server = r.from_server;
            o.header = r.header;
            o.signature_verified = r.signature_verified;
            o.encrypted = r.encrypted;
            if (r.from_server) o.msg.assign(r.msg.begin(), r.msg.end());
            if (!r.from_server &&
                (r.status == local_status::kDisconnected || r.status == local_status::kTimeout))
                st = Error(r.status);  // the remaining responses will not come either
        }
        out.push_back(std::move(o));
    }
    started_ = false;
    mids_.clear();
    return out;
}

// ---- commands ----------------------------------------------------------------------------------

std::optional<auth::SigningAlgorithm> Smb2Client::signing_algorithm() const {
    // MS-SMB2 3.1.4.1: 2.x HMAC-SHA256, 3.0/3.0.2 AES-CMAC, 3.1.1 the negotiated algorithm
    // (AES-CMAC without a SIGNING_CAPABILITIES context).
    if (dialect_ == Dialect::None || dialect_ == Dialect::Wildcard) return std::nullopt;
    if (!is_smb3(dialect_)) return auth::SigningAlgorithm::HmacSha256;
    if (dialect_ == Dialect::Smb311 && signing_algorithm_id_)
        return algorithm_of(*signing_algorithm_id_);
    return auth::SigningAlgorithm::AesCmac;
}

Reply<NegotiateResponse> Smb2Client::negotiate(const NegotiateOptions& o) {
    NegotiateRequest req;
    req.security_mode =
        security_mode::kSigningEnabled | (o.signing_required ? security_mode::kSigningRequired : 0);
    req.capabilities = o.capabilities;
    req.client_guid = opts_.client_guid;
    req.dialects = o.dialects;
    if (req.offers(dialect::k311)) {
        // MS-SMB2 2.2.3.1: PREAUTH_INTEGRITY_CAPABILITIES is mandatory with 3.1.1.
        PreauthIntegrityCapabilities pre;
        pre.hash_algorithms = {hash_algorithm::kSha512};
        pre.salt.resize(32);
        auth::random_bytes(pre.salt);
        req.contexts.push_back(std::move(pre));
        if (!o.ciphers.empty()) req.contexts.push_back(EncryptionCapabilities{o.ciphers});
        if (!o.signing_algorithms.empty())
            req.contexts.push_back(SigningCapabilities{o.signing_algorithms});
        for (auto& c : o.extra_contexts)
            req.contexts.push_back(c);
    }
    CallOptions co;
    co.session_id = 0;
    co.sign = false;
    begin_message();
    uint64_t mid = add_element(Command::Negotiate, co);
    serialize_body(req);
    finish_message();
    // MS-SMB2 3.2.5.2 / 3.3.5.4: Connection.PreauthIntegrityHashValue over request and response.
    auth::PreauthHash h;
    h.update(Bytes(tx_).subspan(4));
    if (auto st = flush_message(); !st) return typed<NegotiateResponse>(local_failure(st.status()));
    auto r = typed<NegotiateResponse>(wait_reply(mid));
    if (!r.ok()) return r;
    dialect_ = Dialect(r.body.dialect_revision);
    negotiated_ = r.body;
    client_signing_required_ = o.signing_required;
    multi_credit_ =
        dialect_ != Dialect::Smb202 && (r.body.capabilities & global_caps::kLargeMtu) != 0;
    if (dialect_ == Dialect::Smb311) {
        h.update(r.msg);
        conn_preauth_ = h;
        if (auto* sc = find_negotiate_context<SigningCapabilities>(r.body.contexts);
            sc && !sc->algorithms.empty())
            signing_algorithm_id_ = sc->algorithms[0];
        if (auto* ec = find_negotiate_context<EncryptionCapabilities>(r.body.contexts);
            ec && ec->ciphers.size() == 1)
            cipher_id_ = ec->ciphers[0];
    } else if ((dialect_ == Dialect::Smb300 || dialect_ == Dialect::Smb302) &&
               (r.body.capabilities & global_caps::kEncryption)) {
        cipher_id_ = cipher::kAes128Ccm;  // MS-SMB2 3.2.5.2: 3.0.x encrypt with AES-128-CCM
    }
    return r;
}

Reply<SessionSetupResponse> Smb2Client::session_setup(std::string_view user,
                                                      std::string_view password,
                                                      std::string_view domain) {
    return authenticate(user, password, domain, nullptr);
}

std::optional<Smb2Client::SessionBinding> Smb2Client::session_binding() const {
    if (!session_.valid || session_.signing_key.empty()) return std::nullopt;
    SessionBinding b;
    b.id = session_.id;
    b.signing_key = session_.signing_key;
    b.signing_algorithm = session_.signing_algorithm;
    b.keys = session_.keys;
    b.cipher = cipher_id_;
    b.signing_required = session_.signing_required;
    b.encrypt_data = session_.encrypt_data;
    return b;
}

Reply<SessionSetupResponse> Smb2Client::bind_session(const SessionBinding& b, std::string_view user,
                                                     std::string_view password,
                                                     std::string_view domain) {
    return authenticate(user, password, domain, &b);
}

Reply<SessionSetupResponse> Smb2Client::authenticate(std::string_view user,
                                                     std::string_view password,
                                                     std::string_view domain,
                                                     const SessionBinding* binding) {
    auth::SpnegoClient sp(auth::NtlmCredentials::with_password(
        std::string(user), password, std::string(domain), opts_.workstation));
    ByteVector token = sp.initial_token();
    session_ = Session{};
    tree_id_ = 0;
    // 3.1.1: Session.PreauthIntegrityHashValue starts as the connection's (MS-SMB2 3.2.5.3.1);
    // so does a binding's PreauthSession hash (3.2.4.2.3).
    std::optional<auth::PreauthHash> h;
    if (dialect_ == Dialect::Smb311 && conn_preauth_) h = *conn_preauth_;
    uint64_t sid = 0;
    // A binding's requests are signed with Session.SigningKey (MS-SMB2 3.2.4.2.3) and its
    // intermediate answers come signed with it; the final answer with the new channel's key.
    std::optional<auth::Signer> session_key_signer;
    if (binding) {
        auto signer = auth::Signer::create(binding->signing_algorithm, binding->signing_key);
        if (!signer) return typed<SessionSetupResponse>(local_failure(signer.status()));
        session_key_signer.emplace(std::move(*signer));
        sid = binding->id;
        session_.id = sid;
    }
    // Lends the session-key signer to the send path or the signature check.
    auto with_session_key = [&](auto&& fn) {
        if (!session_key_signer) return fn();
        session_.signer.emplace(std::move(*session_key_signer));
        auto result = fn();
        session_key_signer.emplace(std::move(*session_.signer));
        session_.signer.reset();
        return result;
    };
    // A failure found on this side: the session is forgotten and the reply says so.
    auto fail = [&](Reply<SessionSetupResponse>& r, NtStatus st) {
        session_ = Session{};
        r.from_server = false;
        r.status = st;
        return std::move(r);
    };
    auto signer_for = [&](Bytes key) {
        auto alg = signing_algorithm();
        return alg ? auth::Signer::create(*alg, key)
                   : Result<auth::Signer>(Error(NtStatus::NotSupported));
    };
    for (int leg = 0; leg < 8; ++leg) {
        SessionSetupRequest req;
        req.security_mode = uint8_t(client_signing_required_ ? security_mode::kSigningRequired
                                                             : security_mode::kSigningEnabled);
        if (binding) req.flags = session_setup_flags::kBinding;
        req.security_buffer = token;
        CallOptions co;
        co.session_id = sid;
        co.sign = binding != nullptr;
        begin_message();
        uint64_t mid = add_element(Command::SessionSetup, co);
        serialize_body(req);
        with_session_key([&] {
            finish_message();
            return 0;
        });
        if (h) h->update(Bytes(tx_).subspan(4));
        if (auto st = flush_message(); !st)
            return typed<SessionSetupResponse>(local_failure(st.status()));
        auto r = typed<SessionSetupResponse>(wait_reply(mid));
        if (!r.from_server) return r;
        if (binding && r.status != NtStatus::Success && opts_.verify_signatures &&
            r.header.is_signed()) {
            bool verified = false;
            const bool ok = with_session_key([&] {
                return check_signature(
                    MutableBytes(const_cast<std::byte*>(r.msg.data()), r.msg.size()), r.header,
                    &verified, r.encrypted);
            });
            r.signature_verified = verified;
            if (!ok) {
                return fail(r, local_status::kBadSignature);
            }
        }
        if (r.status == NtStatus::MoreProcessingRequired) {
            if (h) h->update(r.msg);
            sid = r.header.session_id;
            session_.id = sid;
            auto next = sp.step(r.body.security_buffer);
            if (!next) {
                r.from_server = false;
                r.status = next.status();
                return r;
            }
            token = std::move(*next);
            continue;
        }
        if (r.status != NtStatus::Success) {
            session_ = Session{};
            return r;
        }
        // Success (a binding too): the server's final token carries accept-completed and its
        // mechListMIC.
        if (!sp.done()) {
            auto fin = sp.step(r.body.security_buffer);
            if (!fin || !sp.done()) {
                return fail(r, fin ? NtStatus::LogonFailure : fin.status());
            }
        }
        if (binding) {
            // Channel.SigningKey from this authentication's session key, on 3.1.1 with the
            // binding's preauth hash (MS-SMB2 3.2.5.3.1); the session's cipher keys stay.
            auto key16 = auth::smb_session_key(sp.session_key());
            auto channel_key =
                auth::derive_channel_signing_key(dialect_, key16, h ? h->bytes() : Bytes{});
            auto signer = signer_for(channel_key);
            if (!signer) {
                return fail(r, signer.status());
            }
            session_.signer.emplace(std::move(*signer));
            session_.flags = r.body.session_flags;
            session_.signing_key = binding->signing_key;
            session_.signing_algorithm = binding->signing_algorithm;
            session_.keys = binding->keys;
            session_.signing_required =
                binding->signing_required || client_signing_required_ ||
                (negotiated_.security_mode & security_mode::kSigningRequired);
            session_.encrypt_data = binding->encrypt_data;
            if (cipher_id_ != 0 && !binding->keys.encryption_key_s2c.empty()) {
                auto enc = auth::SessionEncryption::create(
                    cipher_id_, binding->keys.decryption_key_c2s, binding->keys.encryption_key_s2c);
                if (!enc) {
                    return fail(r, enc.status());
                }
                session_.encryption.emplace(std::move(*enc));
            }
            // The final response is signed with the new Channel.SigningKey.
            bool verified = false;
            bool ok =
                !opts_.verify_signatures ||
                (r.header.is_signed() &&
                 check_signature(MutableBytes(const_cast<std::byte*>(r.msg.data()), r.msg.size()),
                                 r.header, &verified, r.encrypted));
            r.signature_verified = verified;
            if (!ok) {
                return fail(r, local_status::kBadSignature);
            }
            session_.valid = true;
            return r;
        }
        session_.id = r.header.session_id;
        session_.flags = r.body.session_flags;
        bool anonymous_or_guest =
            r.body.session_flags & (session_flags::kIsGuest | session_flags::kIsNull);
        if (!anonymous_or_guest) {
            const auto& key = sp.session_key();
            auth::SessionKeys keys;
            Bytes signing_key = key;
            if (is_smb3(dialect_)) {
                // MS-SMB2 3.2.5.3.1: keys from the session key; 3.1.1 with the preauth hash.
                keys = auth::derive_session_keys(dialect_, cipher_id_, key, {},
                                                 h ? h->bytes() : Bytes{});
                signing_key = keys.signing_key;
                if (cipher_id_ != 0) {
                    // The client seals with the server's DecryptionKey (C2S) and opens with
                    // its EncryptionKey (S2C).
                    auto enc = auth::SessionEncryption::create(cipher_id_, keys.decryption_key_c2s,
                                                               keys.encryption_key_s2c);
                    if (!enc) {
                        return fail(r, enc.status());
                    }
                    session_.encryption.emplace(std::move(*enc));
                    session_.encrypt_data = r.body.session_flags & session_flags::kEncryptData;
                }
            }
            auto signer = signer_for(signing_key);
            if (!signer) {
                return fail(r, signer.status());
            }
            session_.signer.emplace(std::move(*signer));
            session_.signing_key.assign(signing_key.begin(), signing_key.end());
            session_.signing_algorithm = *signing_algorithm();
            session_.keys = keys;
            session_.signing_required =
                client_signing_required_ ||
                (negotiated_.security_mode & security_mode::kSigningRequired);
            // MS-SMB2 3.2.5.3.1: the final response is verified with the new key; on 3.1.1 it
            // MUST be signed.
            if (opts_.verify_signatures) {
                bool verified = false;
                bool ok = r.header.is_signed()
                              ? check_signature(MutableBytes(const_cast<std::byte*>(r.msg.data()),
                                                             r.msg.size()),
                                                r.header, &verified, r.encrypted)
                              : dialect_ != Dialect::Smb311;
                r.signature_verified = verified;
                if (!ok) {
                    return fail(r, local_status::kBadSignature);
                }
            }
        }
        session_.valid = true;
        return r;
    }
    session_ = Session{};
    return typed<SessionSetupResponse>(local_failure(local_status::kBadResponse));
}

Reply<TreeConnectResponse> Smb2Client::tree_connect(std::string_view share) {
    return tree_connect(share, {});
}

Reply<TreeConnectResponse> Smb2Client::tree_connect(std::string_view share,
                                                    const TreeConnectContextList& contexts) {
    return tree_connect(share, 0, contexts);
}

Reply<TreeConnectResponse> Smb2Client::tree_connect(std::string_view share, uint16_t flags,
                                                    const TreeConnectContextList& contexts) {
    TreeConnectRequest req;
    req.path = "\\\\" + host_ + "\\" + std::string(share);
    req.flags = flags;
    if (!contexts.empty()) req.flags |= tree_connect_flags::kExtensionPresent;
    req.contexts = contexts;
    auto r = typed_call<TreeConnectRequest, TreeConnectResponse>(Command::TreeConnect, req);
    if (r.ok()) {
        tree_id_ = r.header.tree_id;
        if (r.body.share_flags & share_flags::kEncryptData)
            encrypted_trees_.insert(tree_id_);
        else
            encrypted_trees_.erase(tree_id_);
    }
    return r;
}

Result<std::optional<ShareRedirectErrorContext>> Smb2Client::share_redirect(const RawReply& reply) {
    using Found = std::optional<ShareRedirectErrorContext>;
    if (!reply.from_server || reply.status != NtStatus::BadNetworkName) return Found();
    DAX_TRY(auto body, reply.error_body());
    if (body.error_context_count == 0) return Found();
    DAX_TRY(auto contexts, parse_error_contexts(body.error_data, body.error_context_count));
    for (const auto& c : contexts) {
        if (c.error_id != error_id::kShareRedirect) continue;
        DAX_TRY(auto redirect, ShareRedirectErrorContext::decode(c.data));
        return Found(std::move(redirect));
    }
    return Found();
}

Reply<TreeDisconnectResponse> Smb2Client::tree_disconnect() {
    auto r = typed_call<TreeDisconnectRequest, TreeDisconnectResponse>(Command::TreeDisconnect,
                                                                       TreeDisconnectRequest{});
    if (r.ok()) tree_id_ = 0;
    return r;
}

Reply<LogoffResponse> Smb2Client::logoff() {
    auto r = typed_call<LogoffRequest, LogoffResponse>(Command::Logoff, LogoffRequest{});
    if (r.ok()) {
        session_ = Session{};
        tree_id_ = 0;
    }
    return r;
}

Reply<EchoResponse> Smb2Client::echo() {
    return typed_call<EchoRequest, EchoResponse>(Command::Echo, EchoRequest{});
}

Reply<CreateResponse> Smb2Client::create(const CreateRequest& req, const CallOptions& co) {
    return typed_call<CreateRequest, CreateResponse>(Command::Create, req, co);
}

Reply<CreateResponse> Smb2Client::open(std::string_view name, uint32_t desired_access,
                                       uint32_t disposition, uint32_t create_options) {
    CreateRequest req;
    req.name = std::string(name);
    req.desired_access = desired_access;
    req.share_access = share_access::kAll;
    req.create_disposition = disposition;
    req.create_options = create_options;
    return create(req);
}

Reply<CloseResponse> Smb2Client::close(FileId id, uint16_t flags) {
    CloseRequest req;
    req.flags = flags;
    req.file_id = id;
    return typed_call<CloseRequest, CloseResponse>(Command::Close, req);
}

Reply<FlushResponse> Smb2Client::flush(FileId id) {
    FlushRequest req;
    req.file_id = id;
    return typed_call<FlushRequest, FlushResponse>(Command::Flush, req);
}

Reply<ReadResponse> Smb2Client::read(FileId id, uint64_t offset, uint32_t length) {
    ReadRequest req;
    req.file_id = id;
    req.offset = offset;
    req.length = length;
    CallOptions co;
    co.payload = length;
    return typed_call<ReadRequest, ReadResponse>(Command::Read, req, co);
}

Reply<WriteResponse> Smb2Client::write(FileId id, uint64_t offset, Bytes data) {
    WriteRequest req;
    req.file_id = id;
    req.offset = offset;
    req.data = data;
    CallOptions co;
    co.payload = data.size();
    return typed_call<WriteRequest, WriteResponse>(Command::Write, req, co);
}

ByteVector Smb2Client::channel_info_of(std::span<const smbdirect::BufferDescriptorV1> list) {
    // MS-SMBD 2.2.3.1: Offset (8), Token (4), Length (4), little-endian.
    ByteVector out;
    ByteWriter w(out);
    for (const auto& d : list) {
        w.u64(d.offset);
        w.u32(d.token);
        w.u32(d.length);
    }
    return out;
}

Reply<ReadResponse> Smb2Client::read_channel(FileId id, uint64_t offset, uint32_t length,
                                             uint32_t channel, Bytes channel_info,
                                             const CallOptions& co) {
    ReadRequest req;
    req.file_id = id;
    req.offset = offset;
    req.length = length;
    req.channel = channel;
    req.channel_info = channel_info;
    CallOptions o = co;
    if (o.payload == 0) o.payload = length;
    return typed_call<ReadRequest, ReadResponse>(Command::Read, req, o);
}

Reply<WriteResponse> Smb2Client::write_channel(FileId id, uint64_t offset, uint32_t remaining_bytes,
                                               uint32_t channel, Bytes channel_info,
                                               const CallOptions& co) {
    // MS-SMB2 2.2.21: an RDMA write sends nothing inline, Length 0 and DataOffset 0 (what
    // WriteRequest::serialize writes for a channel without data); RemainingBytes is the length.
    WriteRequest req;
    req.file_id = id;
    req.offset = offset;
    req.channel = channel;
    req.remaining_bytes = remaining_bytes;
    req.channel_info = channel_info;
    CallOptions o = co;
    if (o.payload == 0) o.payload = remaining_bytes;
    return typed_call<WriteRequest, WriteResponse>(Command::Write, req, o);
}

namespace {

// A successful response to an _INVALIDATE request must have come with a Send with Invalidate
// of the first buffer's token (MS-SMB2 3.3.5.12/3.3.5.13, MS-SMBD 3.1.4.1): the client hands the
// buffer on, trusting that the server can no longer reach it.
template <class R>
R checked_invalidation(R r, std::span<const smbdirect::BufferDescriptorV1> buffers,
                       bool invalidate) {
    if (invalidate && r.ok() && !buffers.empty() && r.invalidated_rkey != buffers[0].token) {
        r.from_server = false;
        r.status = local_status::kBadResponse;
    }
    return r;
}

}  // namespace

Reply<ReadResponse> Smb2Client::read_rdma(FileId id, uint64_t offset, uint32_t length,
                                          std::span<const smbdirect::BufferDescriptorV1> into,
                                          bool invalidate, const CallOptions& co) {
    const ByteVector info = channel_info_of(into);
    return checked_invalidation(
        read_channel(id, offset, length, invalidate ? channel::kRdmaV1Invalidate : channel::kRdmaV1,
                     Bytes(info), co),
        into, invalidate);
}

Reply<WriteResponse> Smb2Client::write_rdma(FileId id, uint64_t offset, uint32_t length,
                                            std::span<const smbdirect::BufferDescriptorV1> from,
                                            bool invalidate, const CallOptions& co) {
    const ByteVector info = channel_info_of(from);
    return checked_invalidation(
        write_channel(id, offset, length,
                      invalidate ? channel::kRdmaV1Invalidate : channel::kRdmaV1, Bytes(info), co),
        from, invalidate);
}

Reply<QueryInfoResponse> Smb2Client::query_info(const QueryInfoRequest& req) {
    CallOptions co;
    co.payload = std::max<uint64_t>(req.output_buffer_length, req.input.size());
    return typed_call<QueryInfoRequest, QueryInfoResponse>(Command::QueryInfo, req, co);
}

Reply<QueryDirectoryResponse> Smb2Client::query_directory(const QueryDirectoryRequest& req) {
    CallOptions co;
    co.payload = req.output_buffer_length;
    return typed_call<QueryDirectoryRequest, QueryDirectoryResponse>(Command::QueryDirectory, req,
                                                                     co);
}

Reply<IoctlResponse> Smb2Client::ioctl(const IoctlRequest& req) {
    CallOptions co;
    co.payload = std::max<uint64_t>(req.input.size(), req.max_output_response);
    return typed_call<IoctlRequest, IoctlResponse>(Command::Ioctl, req, co);
}

Reply<LockResponse> Smb2Client::lock(const LockRequest& req) {
    return typed_call<LockRequest, LockResponse>(Command::Lock, req);
}

FollowedRedirect follow_share_redirect(const ShareRedirectErrorContext& redirect, uint16_t port,
                                       std::string_view user, std::string_view password,
                                       std::string_view share, uint16_t flags,
                                       const ClientOptions& options,
                                       const NegotiateOptions& negotiate) {
    FollowedRedirect f;
    f.client = std::make_unique<Smb2Client>(options);
    auto fail = [&](NtStatus st, bool from_server) {
        f.tree.status = st;
        f.tree.from_server = from_server;
        return std::move(f);
    };
    if (redirect.ip_addresses.empty()) return fail(local_status::kBadResponse, false);
    const MoveDstIpAddr& first = redirect.ip_addresses.front();
    char text[INET6_ADDRSTRLEN] = {};
    const int family = first.type == MoveDstIpAddr::kTypeV4 ? AF_INET : AF_INET6;
    if (!::inet_ntop(family, first.address.data(), text, sizeof text))
        return fail(local_status::kBadResponse, false);
    f.address = text;
    if (auto st = f.client->connect(f.address, port); !st) return fail(st.status(), false);
    auto neg = f.client->negotiate(negotiate);
    if (!neg.ok()) return fail(neg.status, neg.from_server);
    auto ss = f.client->session_setup(user, password);
    if (!ss.ok()) return fail(ss.status, ss.from_server);
    f.tree = f.client->tree_connect(share, flags, {});
    return f;
}

}  // namespace daxsmbd::client
