// Chunk payloads: raw in-memory records -> compact varint/delta encoding -> compression, and back.
// The encoding side runs on the profiler's writer thread and never allocates (caller's buffers).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "format/field_deltas.h"
#include "format/file_layout.h"
#include "format/schema.h"

namespace sigmatrace::format {

// Largest compact size that raw_bytes of raw records can encode to.
constexpr size_t compact_bound(size_t raw_bytes) { return raw_bytes + raw_bytes / 4 + 64; }

struct EncodeResult {
  size_t compact_bytes = 0;
  uint32_t events = 0;
  uint32_t malformed = 0;  // raw records that did not match the built-in schema (skipped, counted)
};

// Encodes the raw records in [raw, raw+raw_bytes) against the built-in schema, in
// ChunkEncoding::field_deltas.
EncodeResult encode_raw_events(const uint8_t* raw, size_t raw_bytes, uint64_t first_tsc, uint8_t* out, size_t out_cap);

size_t compress_bound(Codec codec, size_t n);
// Returns the compressed size, or 0 on failure.
size_t compress(Codec codec, int level, const uint8_t* in, size_t n, uint8_t* out, size_t cap);
// Returns true when exactly expected bytes were produced.
bool decompress(Codec codec, const uint8_t* in, size_t n, uint8_t* out, size_t expected);

// The same, keeping the zstd context between calls (creating one per chunk cost a twentieth of
// the analysis' time). One per reader; not thread-safe.
class Decompressor {
 public:
  Decompressor() = default;
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
  ~Decompressor();
  bool run(Codec codec, const uint8_t* in, size_t n, uint8_t* out, size_t expected);

 private:
  void* zstd_ = nullptr;  // ZSTD_DCtx
};
const char* codec_name(Codec c);

constexpr int kMaxFields = int(kMaxEventFields);

struct DecodedEvent {
  uint16_t type = 0;
  uint64_t tsc = 0;
  const TypeDesc* desc = nullptr;  // null when the file's schema does not describe this type
  int field_count = 0;
  uint64_t values[kMaxFields]{};   // u64, or i64 as two's complement; 0 for bytes fields
  std::string_view bytes[kMaxFields];  // meaningful for bytes fields only
  int64_t as_i64(int i) const { return static_cast<int64_t>(values[i]); }
};

// Iterates the events of one decompressed chunk payload.
class ChunkEventDecoder {
 public:
  // With a filter (indexed by type id; ids beyond its size count as wanted), events of unwanted
  // types come back with their type, desc and tsc but no fields (field_count 0): their fields are
  // skipped without being decoded, which makes a pass that looks for a few types much cheaper.
  ChunkEventDecoder(const ChunkHeader& header, const uint8_t* payload, size_t n, const Schema* schema,
                    const std::vector<bool>* wanted = nullptr)
      : ChunkEventDecoder(payload, n, header.first_tsc, static_cast<ChunkEncoding>(header.encoding), schema, wanted) {}
  // A payload without its header (tests, tools): the time base and encoding given.
  ChunkEventDecoder(const uint8_t* payload, size_t n, uint64_t first_tsc, ChunkEncoding encoding, const Schema* schema,
                    const std::vector<bool>* wanted = nullptr)
      : p_(payload), end_(payload + n), tsc_(first_tsc), schema_(schema), wanted_(wanted),
        deltas_on_(encoding == ChunkEncoding::field_deltas), failed_(encoding > ChunkEncoding::field_deltas) {}
  // False at the end or on a malformed event (then failed() is true; the rest of the chunk is lost).
  // An encoding this build does not know fails at once.
  bool next(DecodedEvent* ev);
  bool failed() const { return failed_; }
  size_t remaining_bytes() const { return static_cast<size_t>(end_ - p_); }

 private:
  // How to decode one type, prepared once per chunk: Schema::lookup is a linear search and the
  // per-field kind switch mispredicts; both were most of the analysis' decoding time.
  struct TypePlan {
    const TypeDesc* desc = nullptr;
    uint32_t i64_mask = 0;  // fields to zigzag-decode
    uint32_t fields = 0;    // desc->fields.size(), which costs a division
    bool plain = false;     // no bytes field: the fast path applies
    bool wanted = true;     // false: fields skipped (filter)
  };
  const TypePlan* lookup(uint64_t type);
  bool decode_general(const TypePlan& plan, const uint8_t* p, DecodedEvent* ev);
  const uint8_t* p_;
  const uint8_t* end_;
  uint64_t tsc_;
  const Schema* schema_;
  const std::vector<bool>* wanted_ = nullptr;
  bool deltas_on_;
  bool failed_;
  TypePlan plans_[64];  // direct-mapped by type id
  FieldDeltaTable deltas_;
};

}  // namespace sigmatrace::format
