#include <gtest/gtest.h>

#include "format/varint.h"

using namespace sigmatrace::format;

TEST(Varint, RoundTripsBoundaryValues) {
  const uint64_t values[] = {0, 1, 127, 128, 16383, 16384, (1ull << 32) - 1, 1ull << 32, ~0ull};
  for (uint64_t v : values) {
    uint8_t buf[kVarintMaxBytes];
    uint8_t* end = varint_put(buf, v);
    uint64_t back = 0;
    EXPECT_EQ(varint_get(buf, end, &back), end);
    EXPECT_EQ(back, v);
  }
}

TEST(Varint, SizesAreMinimal) {
  uint8_t buf[kVarintMaxBytes];
  EXPECT_EQ(varint_put(buf, 127) - buf, 1);
  EXPECT_EQ(varint_put(buf, 128) - buf, 2);
  EXPECT_EQ(varint_put(buf, ~0ull) - buf, 10);
}

TEST(Varint, TruncatedInputIsRejected) {
  uint8_t buf[kVarintMaxBytes];
  uint8_t* end = varint_put(buf, 1ull << 40);
  uint64_t v;
  EXPECT_EQ(varint_get(buf, end - 1, &v), nullptr);
}

TEST(Varint, OverlongInputIsRejected) {
  uint8_t buf[12];
  for (uint8_t& b : buf) b = 0x80;
  uint64_t v;
  EXPECT_EQ(varint_get(buf, buf + sizeof buf, &v), nullptr);
}

TEST(ZigZag, MapsSmallMagnitudesToSmallCodes) {
  EXPECT_EQ(zigzag_encode(0), 0u);
  EXPECT_EQ(zigzag_encode(-1), 1u);
  EXPECT_EQ(zigzag_encode(1), 2u);
  for (int64_t v : {int64_t{-5}, int64_t{123456789}, INT64_MIN, INT64_MAX}) EXPECT_EQ(zigzag_decode(zigzag_encode(v)), v);
}
