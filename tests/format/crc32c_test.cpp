#include <gtest/gtest.h>

#include <cstring>

#include "format/crc32c.h"

using sigmatrace::format::crc32c;

TEST(Crc32c, MatchesTheStandardCheckValue) {
  // The CRC-32C check value of "123456789" (RFC 3720, iSCSI).
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(Crc32c, DetectsASingleBitFlip) {
  char buf[64];
  std::memset(buf, 'x', sizeof buf);
  uint32_t a = crc32c(buf, sizeof buf);
  buf[17] ^= 0x04;
  EXPECT_NE(crc32c(buf, sizeof buf), a);
}
