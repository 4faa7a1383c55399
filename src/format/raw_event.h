// The in-memory record the profiler's hot path appends to a thread's chunk: fixed header + 8-byte
// words, no encoding work. The writer thread turns these into the compact on-disk form
// (chunk_codec.h). A bytes field occupies one length word followed by the bytes padded to 8.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sigmatrace::format {

struct RawEventHeader {
  uint64_t tsc;
  uint16_t type;
  uint16_t words;  // payload words that follow this header
  uint32_t reserved;
};
static_assert(sizeof(RawEventHeader) == 16);

constexpr uint32_t raw_event_bytes(uint32_t words) { return sizeof(RawEventHeader) + 8 * words; }
constexpr uint32_t words_for_bytes(uint32_t n) { return 1 + (n + 7) / 8; }

// Whole records in raw[0, bytes): the writer counts what a thread has buffered without sealing it.
inline uint64_t count_raw_events(const uint8_t* raw, size_t bytes) {
  uint64_t n = 0;
  for (size_t off = 0; off + sizeof(RawEventHeader) <= bytes; ++n) {
    RawEventHeader h;
    __builtin_memcpy(&h, raw + off, sizeof h);
    size_t len = raw_event_bytes(h.words);
    if (off + len > bytes) break;
    off += len;
  }
  return n;
}

}  // namespace sigmatrace::format
