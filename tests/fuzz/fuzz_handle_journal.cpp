// Fuzz target: the persistent handle journal's log image (server/state/handle_journal.h), as
// a restart reads it from the share's volume: record framing and handle payloads.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "server/state/handle_journal.h"

using namespace daxsmbd;
using namespace daxsmbd::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    protocol::Bytes image(reinterpret_cast<const std::byte*>(data), size);
    auto scan = scan_journal(image);
    if (scan.end > size) __builtin_trap();
    for (const auto& rec : scan.records) {
        auto h = decode_persistent_handle(rec.payload);
        if (!h) continue;
        // What decodes re-encodes to the same bytes.
        auto again = encode_persistent_handle(*h);
        if (again.size() != rec.payload.size() ||
            !std::equal(again.begin(), again.end(), rec.payload.begin()))
            __builtin_trap();
    }
    // The payload decoder on its own.
    (void)decode_persistent_handle(image);
    return 0;
}
