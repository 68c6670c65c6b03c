// What replay detection keeps (MS-SMB2 3.3.1.10 Open.ChannelSequence,
// Open.OutstandingRequestCount, Open.OutstandingPreRequestCount, Open.IsReplayEligible;
// 3.3.5.2.10; 3.3.5.9.10): a client whose channel failed resends its requests over another
// channel, flagged SMB2_FLAGS_REPLAY_OPERATION and with a higher ChannelSequence, and the server
// must neither run a modifying request twice nor let a stale one overtake the resent one.
//   - ChannelSequence: the per-open sequence and the requests counted under it;
//   - PendingCreates: the DH2Q CREATEs still in progress (waiting for a break), by ClientGuid
//     and CreateGuid, which a replay of them must not race.
// Both are used from every event loop (multichannel) and guard themselves.
#pragma once

#include <compare>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>

#include "protocol/header.h"

namespace daxsmbd::server {

class ChannelSequence {
  public:
    // A request counted in Open.OutstandingRequestCount; finish() it when the request ends.
    struct Ticket {
        uint64_t generation = 0;  // the sequence it was counted under (bumped at each advance)
    };

    // Open.ChannelSequence of a new open: the ChannelSequence of its CREATE.
    void reset(uint16_t sequence);

    // MS-SMB2 3.3.5.2.10 for a request on this open with `sequence` in its header: counts it
    // (the ticket) or, when it may not be counted (stale sequence; a replay while requests of an
    // earlier sequence are outstanding), nullopt. `modifies` (WRITE, SET_INFO, IOCTL): an
    // uncounted request then fails with STATUS_FILE_NOT_AVAILABLE (*refused set); others run
    // uncounted.
    std::optional<Ticket> admit(uint16_t sequence, bool replay, bool modifies, bool* refused);
    void finish(const Ticket& t);

    uint16_t sequence() const;
    uint32_t outstanding() const;
    uint32_t outstanding_before() const;  // Open.OutstandingPreRequestCount

  private:
    mutable std::mutex mu_;
    uint16_t sequence_ = 0;
    uint64_t generation_ = 0;
    uint32_t outstanding_ = 0;
    uint32_t outstanding_before_ = 0;
};

// What names a DH2Q CREATE for replay detection (MS-SMB2 3.3.5.9.10): the client's ClientGuid
// and the request's CreateGuid.
struct ReplayKey {
    protocol::Guid client{};
    protocol::Guid create_guid{};
    auto operator<=>(const ReplayKey&) const = default;
};

// What a replay of an open's DH2Q CREATE is answered from (MS-SMB2 3.3.5.9.10).
struct ReplayRecord {
    ReplayKey key;
    std::optional<protocol::Guid> lease_key;  // the lease the CREATE asked for
    uint32_t create_action = 0;               // the CreateAction of its response
};

// DH2Q CREATEs in progress (the open a replay of one would name does not exist yet).
class PendingCreates {
  public:
    // False when a CREATE with this key is already in progress.
    bool begin(const ReplayKey& key);
    void end(const ReplayKey& key);
    bool contains(const ReplayKey& key) const;

  private:
    mutable std::mutex mu_;
    std::set<ReplayKey> pending_;
};

}  // namespace daxsmbd::server
