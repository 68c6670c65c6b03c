#include "server/credits.h"

#include <algorithm>

namespace daxsmbd::server {

bool CreditWindow::consume(uint64_t id, uint16_t charge) {
    uint64_t n = charge == 0 ? 1 : charge;  // CreditCharge 0 counts as one id (2.0.2 clients)
    if (id == UINT64_MAX || id < low_ || id + n < id || id + n > high_) return false;
    for (uint64_t i = id; i < id + n; ++i)
        if (i != low_ && used_above_low_.count(i)) return false;
    if (id == low_ && used_above_low_.count(id)) return false;
    for (uint64_t i = id; i < id + n; ++i)
        used_above_low_.insert(i);
    while (!used_above_low_.empty() && *used_above_low_.begin() == low_) {
        used_above_low_.erase(used_above_low_.begin());
        ++low_;
    }
    return true;
}

uint16_t CreditWindow::grant(uint16_t requested, uint64_t max_total) {
    uint64_t have = outstanding();
    uint64_t room = have >= max_total ? 0 : max_total - have;
    uint64_t g = std::min<uint64_t>(requested, room);
    if (have + g == 0) g = 1;  // never leave the client without a credit
    g = std::min<uint64_t>(g, 0xFFFF);
    high_ += g;
    return uint16_t(g);
}

}  // namespace daxsmbd::server
