// FILE_NOTIFY_INFORMATION lists (protocol/notify_info.h), against MS-FSCC 2.7.1.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/notify_info.h"
#include "tests/unit/hex.h"

using namespace daxsmbd;
using namespace daxsmbd::protocol;

namespace {
using daxsmbd::test::hex;  // tests/unit/hex.h
}  // namespace

TEST(NotifyInfoTest, RenamePairGolden) {
    std::vector<FileNotifyInformation> changes{
        {file_action::kRenamedOldName, "a.txt"},  // 12 + 10 = 22 -> padded to 24
        {file_action::kRenamedNewName, "bb"},     // 12 + 4 = 16, last one
    };
    ByteVector out;
    ByteWriter w(out);
    encode_notify_information(w, changes);
    EXPECT_EQ(out, hex("18000000 04000000 0a000000 61002e00740078007400 0000"
                       "00000000 05000000 04000000 62006200"));
    EXPECT_EQ(notify_information_size(changes), out.size());
    auto back = decode_notify_information(out);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, changes);
}

TEST(NotifyInfoTest, NextEntryOffsetIsAMultipleOfFour) {
    std::vector<FileNotifyInformation> changes;
    for (int i = 1; i <= 5; ++i)
        changes.push_back({file_action::kAdded, std::string(i, 'x')});
    ByteVector out;
    ByteWriter w(out);
    encode_notify_information(w, changes);
    size_t pos = 0, n = 0;
    while (true) {
        uint32_t next = load_le32(out.data() + pos);
        ++n;
        if (next == 0) break;
        EXPECT_EQ(next % 4, 0u);
        pos += next;
    }
    EXPECT_EQ(n, 5u);
    EXPECT_EQ(out.size() % 4, 0u);  // the last entry is padded too
    EXPECT_EQ(notify_information_size(changes), out.size());
}

TEST(NotifyInfoTest, DecodeRejectsBadChains) {
    // FileNameLength past the entry.
    EXPECT_EQ(decode_notify_information(hex("00000000 01000000 08000000 6100")).status(),
              NtStatus::InvalidParameter);
    // NextEntryOffset not a multiple of 4.
    EXPECT_EQ(decode_notify_information(hex("0e000000 01000000 02000000 6100"
                                            "00000000 01000000 02000000 6200"))
                  .status(),
              NtStatus::InvalidParameter);
    // NextEntryOffset past the buffer.
    EXPECT_EQ(decode_notify_information(hex("40000000 01000000 02000000 6100 0000")).status(),
              NtStatus::InvalidParameter);
    EXPECT_TRUE(decode_notify_information({})->empty());
}
