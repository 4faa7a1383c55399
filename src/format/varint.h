// LEB128 variable-length integers and zigzag mapping, the compact integer encoding of trace payloads.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sigmatrace::format {

inline uint64_t zigzag_encode(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t zigzag_decode(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Writes v at p (room for 10 bytes required); returns the byte after it.
inline uint8_t* varint_put(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Reads a varint from [p, end). Returns nullptr when the input ends early or the value is over-long.
inline const uint8_t* varint_get(const uint8_t* p, const uint8_t* end, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return p;
    }
  }
  return nullptr;
}

constexpr size_t kVarintMaxBytes = 10;

}  // namespace sigmatrace::format
