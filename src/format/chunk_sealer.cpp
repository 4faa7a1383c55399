// See chunk_sealer.h.
#include "format/chunk_sealer.h"

#include <cstring>

#include "format/crc32c.h"
#include "format/raw_event.h"

namespace sigmatrace::format {

void ChunkSealer::reserve(size_t raw_bytes) {
  size_t compact = compact_bound(raw_bytes);
  if (compact_.size() >= compact) return;
  compact_.resize(compact);
  size_t zb = compress_bound(Codec::zstd, compact), lb = compress_bound(Codec::lz4, compact);
  compressed_.resize(zb > lb ? zb : lb);
}

bool ChunkSealer::seal(const uint8_t* raw, size_t raw_bytes, uint32_t tid, uint32_t seq, Codec codec, int level, Sealed* out) {
  if (raw_bytes < sizeof(RawEventHeader)) return false;
  reserve(raw_bytes);
  RawEventHeader first;
  std::memcpy(&first, raw, sizeof first);
  out->encoded = encode_raw_events(raw, raw_bytes, first.tsc, compact_.data(), compact_.size());
  if (out->encoded.events == 0) return false;
  size_t n = out->encoded.compact_bytes;
  size_t stored = compress(codec, level, compact_.data(), n, compressed_.data(), compressed_.size());
  out->payload = compressed_.data();
  if (stored == 0 || (codec != Codec::none && stored >= n)) {  // incompressible: store it plain
    codec = Codec::none;
    out->payload = compact_.data();
    stored = n;
  }
  ChunkHeader& h = out->header;
  h = ChunkHeader{};
  h.magic = kChunkMagic;
  h.codec = static_cast<uint8_t>(codec);
  h.encoding = static_cast<uint8_t>(ChunkEncoding::field_deltas);
  h.tid = tid;
  h.seq = seq;
  h.event_count = out->encoded.events;
  h.raw_bytes = static_cast<uint32_t>(n);
  h.stored_bytes = static_cast<uint32_t>(stored);
  h.payload_crc = crc32c(out->payload, stored);
  h.first_tsc = first.tsc;
  h.header_crc = crc32c(&h, offsetof(ChunkHeader, header_crc));
  out->payload_bytes = stored;
  return true;
}

void ChunkSealer::renumber(ChunkHeader* h, uint32_t seq) {
  h->seq = seq;
  h->header_crc = crc32c(h, offsetof(ChunkHeader, header_crc));
}

}  // namespace sigmatrace::format
