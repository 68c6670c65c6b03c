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
        // What decodes re-encodes in the current format: to the same bytes when the record is
        // in it (the first byte is the format version; older records are read and rewritten).
        auto again = encode_persistent_handle(*h);
        if (!again.empty() && !rec.payload.empty() && rec.payload[0] == again[0] &&
            (again.size() != rec.payload.size() ||
             !std::equal(again.begin(), again.end(), rec.payload.begin())))
            __builtin_trap();
        // ... and the rewritten record decodes to what re-encodes to it again.
        auto reread = decode_persistent_handle(again);
        if (!reread) __builtin_trap();
        auto third = encode_persistent_handle(*reread);
        if (third.size() != again.size() || !std::equal(third.begin(), third.end(), again.begin()))
            __builtin_trap();
    }
    // The payload decoder on its own.
    (void)decode_persistent_handle(image);
    return 0;
}
