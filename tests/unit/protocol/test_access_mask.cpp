// Access mask constants and generic mapping (protocol/access_mask.h; digest 9.3).
#include <gtest/gtest.h>

#include "protocol/access_mask.h"

using namespace daxsmbd::protocol;
using namespace daxsmbd::protocol::access_mask;

TEST(AccessMaskTest, GenericMappingForFiles) {
    EXPECT_EQ(map_generic_file(kGenericRead), 0x00120089u);
    EXPECT_EQ(map_generic_file(kGenericWrite), 0x00120116u);
    EXPECT_EQ(map_generic_file(kGenericExecute), 0x001200A0u);
    EXPECT_EQ(map_generic_file(kGenericAll), 0x001F01FFu);
    EXPECT_EQ(map_generic_file(kGenericRead | kGenericWrite), 0x0012019Fu);
    // Specific bits pass through; MAXIMUM_ALLOWED and ACCESS_SYSTEM_SECURITY are left alone.
    EXPECT_EQ(map_generic_file(kDelete | kMaximumAllowed | kAccessSystemSecurity),
              kDelete | kMaximumAllowed | kAccessSystemSecurity);
    EXPECT_EQ(map_generic_file(kGenericRead | kDelete), 0x00130089u);
    EXPECT_EQ(map_generic_file(0), 0u);
}

TEST(AccessMaskTest, GenericBitsComposeFromSpecificRights) {
    // MS-SMB2 2.2.13.1.1 spells out what each generic right stands for.
    EXPECT_EQ(kFileGenericRead,
              kFileReadData | kFileReadAttributes | kFileReadEa | kSynchronize | kReadControl);
    EXPECT_EQ(kFileGenericWrite, kFileWriteData | kFileAppendData | kFileWriteAttributes |
                                     kFileWriteEa | kSynchronize | kReadControl);
    EXPECT_EQ(kFileGenericExecute,
              kFileReadAttributes | kFileExecute | kSynchronize | kReadControl);
    EXPECT_EQ(kInvalidDesiredAccess, 0x0CE0FE00u);
}
