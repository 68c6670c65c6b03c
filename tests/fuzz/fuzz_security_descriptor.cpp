// Fuzz target: the self-relative SECURITY_DESCRIPTOR codec (protocol/security_descriptor.h).
// Whatever parses must serialize, parse again to the same value, and survive part selection and
// merging with the AdditionalInformation taken from the first four input bytes.
#include <cstddef>
#include <cstdint>

#include "protocol/security_descriptor.h"

using namespace daxsmbd::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    uint32_t secinfo = 0;
    if (size >= 4)
        secinfo = uint32_t(data[0]) | uint32_t(data[1]) << 8 | uint32_t(data[2]) << 16 |
                  uint32_t(data[3]) << 24;
    Bytes b(reinterpret_cast<const std::byte*>(data), size);
    auto sd = SecurityDescriptor::parse(b);
    if (!sd.ok()) return 0;
    auto bytes = sd->serialize();
    if (!bytes.ok()) __builtin_trap();  // parsed ACLs always fit the format again
    auto again = SecurityDescriptor::parse(*bytes);
    // SE_SELF_RELATIVE is always written.
    SecurityDescriptor expect = *sd;
    expect.control |= sd_control::kSelfRelative;
    if (!again.ok() || !(*again == expect)) __builtin_trap();

    auto part = select_security_parts(*sd, secinfo);
    if (!part.serialize().ok()) __builtin_trap();
    if (auto merged = merge_security_parts(*sd, part, secinfo); merged.ok())
        if (!merged->serialize().ok()) __builtin_trap();
    return 0;
}
