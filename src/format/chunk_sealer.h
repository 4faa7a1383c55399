// Turns a buffer of raw records into a finished on-disk chunk (header + compact, compressed
// payload). Used by the profiler's writer thread and by offline writers (tests, generators), so
// there is one implementation of the chunk encoding. Owns its scratch buffers: no allocation per
// chunk once they have grown to size.
#pragma once
#include <cstdint>
#include <vector>

#include "format/chunk_codec.h"
#include "format/file_layout.h"

namespace sigmatrace::format {

class ChunkSealer {
 public:
  explicit ChunkSealer(size_t expected_raw_bytes = 256 * 1024) { reserve(expected_raw_bytes); }
  void reserve(size_t raw_bytes);

  struct Sealed {
    ChunkHeader header{};
    const uint8_t* payload = nullptr;  // valid until the next seal()
    size_t payload_bytes = 0;
    EncodeResult encoded;
  };
  // False when the buffer holds no valid event (nothing to write).
  bool seal(const uint8_t* raw, size_t raw_bytes, uint32_t tid, uint32_t seq, Codec codec, int level, Sealed* out);
  // Gives a sealed chunk another sequence number (chunks sealed in parallel get theirs when written).
  static void renumber(ChunkHeader* h, uint32_t seq);

 private:
  std::vector<uint8_t> compact_, compressed_;
};

}  // namespace sigmatrace::format
