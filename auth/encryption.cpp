#include "auth/encryption.h"

#include <cstring>

#include "auth/crypto.h"
#include "auth/kdf.h"

namespace daxsmbd::auth {

using protocol::TransformHeader;

const char* cipher_name(uint16_t cipher) {
    switch (cipher) {
        case cipher_id::kNone:
            return "none";
        case cipher_id::kAes128Ccm:
            return "AES-128-CCM";
        case cipher_id::kAes128Gcm:
            return "AES-128-GCM";
        case cipher_id::kAes256Ccm:
            return "AES-256-CCM";
        case cipher_id::kAes256Gcm:
            return "AES-256-GCM";
        default:
            return "unknown";
    }
}

NonceSequence::NonceSequence() {
    random_bytes(prefix_);
}

Result<SessionEncryption> SessionEncryption::create(uint16_t cipher, Bytes seal_key, Bytes open_key,
                                                    std::shared_ptr<NonceSequence> nonces) {
    DAX_TRY(auto s, Cipher::create(cipher, seal_key));
    DAX_TRY(auto o, Cipher::create(cipher, open_key));
    if (!nonces) nonces = std::make_shared<NonceSequence>();
    return SessionEncryption(std::move(s), std::move(o), std::move(nonces));
}

SessionEncryption::SessionEncryption(Cipher seal, Cipher open,
                                     std::shared_ptr<NonceSequence> nonces)
    : seal_(std::move(seal)), open_(std::move(open)), nonces_(std::move(nonces)) {}

SessionEncryption::SessionEncryption(SessionEncryption&& o) noexcept = default;
SessionEncryption& SessionEncryption::operator=(SessionEncryption&& o) noexcept = default;

Status SessionEncryption::seal(uint64_t session_id, std::span<const MutableBytes> fragments,
                               std::span<std::byte, TransformHeader::kSize> header) {
    size_t total = 0;
    for (auto f : fragments)
        total += f.size();
    if (total == 0 || total > UINT32_MAX) return Error(NtStatus::InvalidParameter);
    // MS-SMB2 3.1.4.3: the nonce MUST NOT repeat for the key. The counter never wraps: at its
    // end the session can no longer send (Samba disconnects the same way).
    uint64_t n = nonces_->next();
    if (n == UINT64_MAX) return Error(NtStatus::InsufficientResources);
    TransformHeader th;
    protocol::store_le64(th.nonce.data(), n);
    // CCM uses 11 nonce bytes, GCM 12; the rest stay zero (MS-SMB2 2.2.41).
    std::memcpy(th.nonce.data() + 8, nonces_->prefix().data(), seal_.nonce_size() - 8);
    th.original_message_size = uint32_t(total);
    th.flags = protocol::transform_flags::kEncrypted;
    th.session_id = session_id;
    th.serialize_to(header);
    std::array<std::byte, 16> tag{};
    DAX_CHECK(
        seal_.encrypt(Bytes(th.nonce),
                      Bytes(header).subspan(TransformHeader::kAadOffset, TransformHeader::kAadSize),
                      fragments, tag));
    std::memcpy(header.data() + 4, tag.data(), 16);
    return {};
}

Status SessionEncryption::open(MutableBytes msg) {
    DAX_TRY(auto th, TransformHeader::parse(msg));
    // MS-SMB2 3.3.5.2.1.1: Flags (3.1.1) / EncryptionAlgorithm (3.0.x) must be 1, and the
    // message must carry exactly OriginalMessageSize bytes of ciphertext.
    if (th.flags != protocol::transform_flags::kEncrypted) return Error(NtStatus::InvalidParameter);
    if (msg.size() <= TransformHeader::kSize ||
        th.original_message_size != msg.size() - TransformHeader::kSize)
        return Error(NtStatus::InvalidParameter);
    Bytes aad = Bytes(msg).subspan(TransformHeader::kAadOffset, TransformHeader::kAadSize);
    return open_.decrypt(Bytes(th.nonce), aad, msg.subspan(TransformHeader::kSize),
                         Bytes(th.signature));
}

}  // namespace daxsmbd::auth
