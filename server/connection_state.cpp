#include "server/connection_state.h"

namespace daxsmbd::server {

using namespace protocol;

ConnectionLog::~ConnectionLog() {
    if (auto n = limiter_.take_suppressed())
        log_info(prefix_, "suppressed ", n, " similar lines before the connection closed");
}

std::optional<uint64_t> ConnectionLog::admit_refusal() const {
    const auto now = LogRateLimiter::Clock::now();
    auto mine = limiter_.admit(now);
    if (!mine.write) return std::nullopt;
    if (!address_limits_) return mine.suppressed;
    auto theirs = address_limits_->admit(address_, now);
    if (!theirs.write) {
        limiter_.add_suppressed(mine.suppressed + 1);
        return std::nullopt;
    }
    return mine.suppressed + theirs.suppressed;
}

auth::SigningAlgorithm ConnectionState::signing_algorithm() const {
    // MS-SMB2 3.1.4.1: 2.x HMAC-SHA256; 3.0/3.0.2 AES-CMAC; 3.1.1 the negotiated algorithm,
    // AES-CMAC when no SIGNING_CAPABILITIES context was exchanged.
    if (!is_smb3(state.dialect)) return auth::SigningAlgorithm::HmacSha256;
    if (state.dialect == Dialect::Smb311 && state.signing_algorithm_id) {
        switch (*state.signing_algorithm_id) {
            case 0:
                return auth::SigningAlgorithm::HmacSha256;
            case 2:
                return auth::SigningAlgorithm::AesGmac;
            default:
                return auth::SigningAlgorithm::AesCmac;
        }
    }
    return auth::SigningAlgorithm::AesCmac;
}

Channel* ConnectionState::channel(uint64_t session_id) {
    auto it = channels.find(session_id);
    if (it == channels.end()) return nullptr;
    // The entry of an ended session stays (without the session's state) until the connection
    // closes or makes a new session: its signer answers requests that still name the session.
    if (it->second.session->state == Session::State::Deleted) return nullptr;
    return &it->second;
}

}  // namespace daxsmbd::server
