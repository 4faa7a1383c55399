// The byte-level pieces of SQLite's file format (sqlite.org/fileformat2.html) that the B-tree
// writer and the table reader share: big-endian integers, varints, the B-tree page types.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sigmatrace::exporter::sqlite_format {

constexpr uint8_t kLeafTablePage = 13, kInteriorTablePage = 5;
constexpr uint32_t kLeafHeader = 8, kInteriorHeader = 12;
constexpr uint32_t kFileHeader = 100;  // in front of page 1's B-tree header

inline size_t varint_size(uint64_t v) {
  if (v & (uint64_t{0xff000000} << 32)) return 9;
  size_t n = 1;
  while (v >>= 7) ++n;
  return n;
}

// SQLite's varint: big-endian groups of 7 bits, the high bit set on all but the last; a 9th byte
// carries 8 bits.
inline size_t put_varint(uint8_t* p, uint64_t v) {
  if (v <= 0x7f) {
    p[0] = static_cast<uint8_t>(v);
    return 1;
  }
  if (v & (uint64_t{0xff000000} << 32)) {
    p[8] = static_cast<uint8_t>(v);
    v >>= 8;
    for (int i = 7; i >= 0; --i, v >>= 7) p[i] = static_cast<uint8_t>((v & 0x7f) | 0x80);
    return 9;
  }
  uint8_t tmp[10];
  size_t n = 0;
  for (; v; v >>= 7) tmp[n++] = static_cast<uint8_t>((v & 0x7f) | 0x80);
  tmp[0] &= 0x7f;
  for (size_t i = 0; i < n; ++i) p[i] = tmp[n - 1 - i];
  return n;
}

// Reads a varint from p (at most `avail` bytes); 0 when it runs past them.
inline size_t get_varint(const uint8_t* p, size_t avail, uint64_t* v) {
  uint64_t x = 0;
  for (size_t i = 0; i < 9 && i < avail; ++i) {
    if (i == 8) {
      *v = (x << 8) | p[8];
      return 9;
    }
    x = (x << 7) | (p[i] & 0x7f);
    if (!(p[i] & 0x80)) {
      *v = x;
      return i + 1;
    }
  }
  return 0;
}

inline void put16(uint8_t* p, uint32_t v) { p[0] = static_cast<uint8_t>(v >> 8), p[1] = static_cast<uint8_t>(v); }
inline void put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24), p[1] = static_cast<uint8_t>(v >> 16), p[2] = static_cast<uint8_t>(v >> 8), p[3] = static_cast<uint8_t>(v);
}
inline uint32_t get16(const uint8_t* p) { return uint32_t{p[0]} << 8 | p[1]; }
inline uint32_t get32(const uint8_t* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }

}  // namespace sigmatrace::exporter::sqlite_format
