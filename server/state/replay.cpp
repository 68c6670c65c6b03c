#include "server/state/replay.h"

namespace daxsmbd::server {

void ChannelSequence::reset(uint16_t sequence) {
    std::lock_guard lk(mu_);
    sequence_ = sequence;
}

std::optional<ChannelSequence::Ticket> ChannelSequence::admit(uint16_t sequence, bool replay,
                                                              bool modifies, bool* refused) {
    std::lock_guard lk(mu_);
    *refused = false;
    // MS-SMB2 3.3.5.2.10: the unsigned 16-bit difference tells a newer sequence (1..0x7FFF
    // ahead, wrapping past 0xFFFF) from a stale one (the rest).
    const uint16_t ahead = uint16_t(sequence - sequence_);
    const bool equal = ahead == 0;
    const bool newer = !equal && ahead <= 0x7FFF;
    // A replay (the client resends what an earlier channel may have run) is counted only while
    // nothing sent under an earlier sequence is still outstanding: it could run after it.
    const bool blocked = replay && outstanding_before_ > 0;
    if (equal && !blocked) {
        ++outstanding_;
        return Ticket{generation_};
    }
    if (newer && !blocked) {
        // The requests of the earlier sequence become the "pre" requests.
        outstanding_before_ += outstanding_;
        outstanding_ = 1;
        sequence_ = sequence;
        ++generation_;
        return Ticket{generation_};
    }
    *refused = modifies;
    return std::nullopt;
}

void ChannelSequence::finish(const Ticket& t) {
    std::lock_guard lk(mu_);
    // A request counted under an earlier sequence moved to the pre count when it advanced.
    uint32_t& count = t.generation == generation_ ? outstanding_ : outstanding_before_;
    if (count > 0) --count;
}

uint16_t ChannelSequence::sequence() const {
    std::lock_guard lk(mu_);
    return sequence_;
}

uint32_t ChannelSequence::outstanding() const {
    std::lock_guard lk(mu_);
    return outstanding_;
}

uint32_t ChannelSequence::outstanding_before() const {
    std::lock_guard lk(mu_);
    return outstanding_before_;
}

bool PendingCreates::begin(const ReplayKey& key) {
    std::lock_guard lk(mu_);
    return pending_.insert(key).second;
}

void PendingCreates::end(const ReplayKey& key) {
    std::lock_guard lk(mu_);
    pending_.erase(key);
}

bool PendingCreates::contains(const ReplayKey& key) const {
    std::lock_guard lk(mu_);
    return pending_.count(key) != 0;
}

}  // namespace daxsmbd::server
