// The SMB2 sequence window of one connection (MS-SMB2 3.3.1.1, 3.3.1.2, 3.3.5.2.3): which
// MessageIds the client may use next. Ids may arrive out of order but each only once; granting
// credits extends the window upward.
#pragma once

#include <cstdint>
#include <set>

namespace daxsmbd::server {

class CreditWindow {
  public:
    // The client holds one credit at connect: MessageId 0 (MS-SMB2 3.3.1.2).
    CreditWindow() = default;

    // Consumes [message_id, message_id + charge); false if any id is outside the window or was
    // used already (the server then drops the connection, MS-SMB2 3.3.5.2.3).
    bool consume(uint64_t message_id, uint16_t charge);
    // Credits the client currently holds (ids granted and not yet used).
    uint64_t outstanding() const { return high_ - low_ - used_above_low_.size(); }
    // Grants up to `requested` more credits keeping the total the client holds <= `max_total`,
    // and at least one when the client would otherwise be left with none (3.3.1.2). Returns
    // the number granted (what goes into CreditResponse).
    uint16_t grant(uint16_t requested, uint64_t max_total);

  private:
    uint64_t low_ = 0;   // smallest id not yet used
    uint64_t high_ = 1;  // one past the largest id granted
    std::set<uint64_t> used_above_low_;
};

}  // namespace daxsmbd::server
