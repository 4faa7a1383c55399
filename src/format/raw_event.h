// The in-memory record the profiler's hot path appends to a thread's chunk: fixed header + 8-byte
// words, no encoding work. The writer thread turns these into the compact on-disk form
// (chunk_codec.h). A bytes field occupies one length word followed by the bytes padded to 8.
#pragma once
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

}  // namespace sigmatrace::format
