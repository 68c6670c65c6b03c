// libFuzzer target for the persistent memory sysfs decoders (server/health/pmem_health.cpp):
// any text is a badblocks list or refused, its totals agree with a second decode, and flag words
// split without losing or inventing characters.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/health/pmem_health.h"

using namespace daxsmbd::server::health;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto bb = parse_badblocks(text);
    if (bb) {
        if (bb->ranges == 0 && bb->sectors != 0) std::abort();
        if (!(parse_badblocks(text) == bb)) std::abort();
    }
    size_t chars = 0;
    const auto words = parse_flag_words(text);
    for (const auto& w : words) {
        if (w.empty()) std::abort();
        chars += w.size();
    }
    if (chars > size) std::abort();
    for (std::string_view source : {"nfit", "papr"})
        if (failure_flags(source, words).size() > words.size()) std::abort();
    PmemHealth h;
    if (bb) h.badblocks = *bb;
    h.dimms.push_back(Nvdimm{"nmem0", "", "nfit", words, failure_flags("nfit", words), {}});
    if (h.describe().empty()) std::abort();
    if (h.needs_attention() != (h.badblocks.ranges > 0 || !h.dimms[0].failures.empty()))
        std::abort();
    return 0;
}
