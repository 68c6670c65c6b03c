// SMB2 LOCK codec (protocol/lock.h), against MS-SMB2 2.2.26 / 2.2.26.1 / 2.2.27.
#include <gtest/gtest.h>

#include <string>

#include "protocol/lock.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {

using daxsmbd::test::hex;  // tests/unit/hex.h

ByteVector header() {
    ByteVector v;
    ByteWriter w(v);
    Header h;
    h.command = Command::Lock;
    h.serialize(w);
    return v;
}

ByteVector message(const ByteVector& body) {
    ByteVector v = header();
    v.insert(v.end(), body.begin(), body.end());
    return v;
}

template <class T>
ByteVector serialize(const T& x) {
    ByteVector v = header();
    ByteWriter w(v);
    x.serialize(w);
    return v;
}

// Two elements: exclusive+fail-immediately on [0, 100), shared on [4096, 4096+1).
// LockSequenceNumber 3, LockSequenceIndex 17 -> 0x113.
const ByteVector kLockBody =
    hex("3000"                               // StructureSize 48
        "0200"                               // LockCount 2
        "13010000"                           // LockSequence
        "0a00000000000000 0b00000000000000"  // FileId
        "0000000000000000 6400000000000000 12000000 00000000"
        "0010000000000000 0100000000000000 01000000 00000000");

}  // namespace

TEST(LockTest, ParsesGoldenRequest) {
    auto msg = message(kLockBody);
    auto r = LockRequest::parse(msg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->lock_sequence, 0x113u);
    EXPECT_EQ(r->lock_sequence_number(), 3);
    EXPECT_EQ(r->lock_sequence_index(), 17u);
    EXPECT_EQ(r->file_id, (FileId{10, 11}));
    ASSERT_EQ(r->locks.size(), 2u);
    EXPECT_EQ(r->locks[0],
              (LockElement{0, 100, lock_flags::kExclusiveLock | lock_flags::kFailImmediately}));
    EXPECT_EQ(r->locks[1], (LockElement{4096, 1, lock_flags::kSharedLock}));
    EXPECT_EQ(serialize(*r), msg);
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(LockRequest::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter);
}

TEST(LockTest, SetLockSequence) {
    LockRequest req;
    req.set_lock_sequence(3, 17);
    EXPECT_EQ(req.lock_sequence, 0x113u);
    req.set_lock_sequence(0x1F, 64);  // the number keeps its low 4 bits
    EXPECT_EQ(req.lock_sequence_number(), 0xF);
    EXPECT_EQ(req.lock_sequence_index(), 64u);
}

TEST(LockTest, ZeroLockCountIsInvalidParameter) {
    auto body = kLockBody;
    body[2] = std::byte{0};
    EXPECT_EQ(LockRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
}

TEST(LockTest, LockCountPastMessageIsInvalidParameter) {
    auto body = kLockBody;
    body[2] = std::byte{0xFF};
    body[3] = std::byte{0xFF};
    EXPECT_EQ(LockRequest::parse(message(body)).status(), NtStatus::InvalidParameter);
}

TEST(LockTest, ValidFlagCombinations) {
    using namespace lock_flags;
    EXPECT_TRUE(is_valid_lock_flags(kSharedLock));
    EXPECT_TRUE(is_valid_lock_flags(kExclusiveLock | kFailImmediately));
    EXPECT_TRUE(is_valid_lock_flags(kUnlock));
    EXPECT_FALSE(is_valid_lock_flags(0));
    EXPECT_FALSE(is_valid_lock_flags(kSharedLock | kExclusiveLock));
    EXPECT_FALSE(is_valid_lock_flags(kUnlock | kFailImmediately));
    EXPECT_FALSE(is_valid_lock_flags(kUnlock | kSharedLock));
}

TEST(LockTest, Response) {
    auto msg = serialize(LockResponse{});
    EXPECT_EQ(msg, message(hex("0400 0000")));
    EXPECT_TRUE(LockResponse::parse(msg).ok());
    for (size_t n = 0; n < msg.size(); ++n)
        EXPECT_EQ(LockResponse::parse(Bytes(msg).first(n)).status(), NtStatus::InvalidParameter);
}
