// libFuzzer target for the NVMe SMART / Health log page decoder (server/health/nvme_health.cpp):
// any bytes decode (512 or more) or are refused (fewer), and what decodes describes itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "server/health/nvme_health.h"

using namespace daxsmbd::server::health;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto page = std::as_bytes(std::span(data, size));
    auto s = parse_smart_log(page);
    if (bool(s) != (size >= kSmartLogSize)) std::abort();
    if (!s) return 0;
    if (s->critical_warning != data[0]) std::abort();
    if (describe_critical_warning(s->critical_warning).empty()) std::abort();
    (void)s->needs_attention();
    return 0;
}
