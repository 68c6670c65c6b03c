#include "protocol/access_mask.h"

namespace daxsmbd::protocol {

uint32_t map_generic_file(uint32_t mask) {
    using namespace access_mask;
    uint32_t out = mask & ~(kGenericRead | kGenericWrite | kGenericExecute | kGenericAll);
    if (mask & kGenericRead) out |= kFileGenericRead;
    if (mask & kGenericWrite) out |= kFileGenericWrite;
    if (mask & kGenericExecute) out |= kFileGenericExecute;
    if (mask & kGenericAll) out |= kFileAllAccess;
    return out;
}

}  // namespace daxsmbd::protocol
