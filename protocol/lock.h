// SMB2 LOCK request and response (MS-SMB2 2.2.26, 2.2.26.1, 2.2.27).
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/bytes.h"
#include "protocol/header.h"

namespace daxsmbd::protocol {

namespace lock_flags {  // SMB2_LOCK_ELEMENT.Flags
constexpr uint32_t kSharedLock = 0x00000001;
constexpr uint32_t kExclusiveLock = 0x00000002;
constexpr uint32_t kUnlock = 0x00000004;
constexpr uint32_t kFailImmediately = 0x00000010;
}  // namespace lock_flags

// The only valid Flags combinations (MS-SMB2 2.2.26.1): SHARED, EXCLUSIVE, either of them with
// FAIL_IMMEDIATELY, or UNLOCK alone.
constexpr bool is_valid_lock_flags(uint32_t f) {
    using namespace lock_flags;
    return f == kSharedLock || f == kExclusiveLock || f == (kSharedLock | kFailImmediately) ||
           f == (kExclusiveLock | kFailImmediately) || f == kUnlock;
}

struct LockElement {
    static constexpr size_t kSize = 24;
    uint64_t offset = 0;
    uint64_t length = 0;
    uint32_t flags = 0;
    bool operator==(const LockElement&) const = default;
};

struct LockRequest {
    static constexpr uint16_t kStructureSize = 48;
    // LockSequenceNumber (low 4 bits) and LockSequenceIndex (high 28 bits), kept whole; reserved
    // in 2.0.2 (MS-SMB2 2.2.26).
    uint32_t lock_sequence = 0;
    FileId file_id;
    std::vector<LockElement> locks;

    uint8_t lock_sequence_number() const { return uint8_t(lock_sequence & 0xF); }
    uint32_t lock_sequence_index() const { return lock_sequence >> 4; }
    void set_lock_sequence(uint8_t number, uint32_t index) {
        lock_sequence = (index << 4) | (number & 0xFu);
    }

    // LockCount 0 or a Locks array past the message: STATUS_INVALID_PARAMETER.
    static Result<LockRequest> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

struct LockResponse {
    static constexpr uint16_t kStructureSize = 4;
    static Result<LockResponse> parse(Bytes msg);
    void serialize(ByteWriter& w) const;
};

}  // namespace daxsmbd::protocol
