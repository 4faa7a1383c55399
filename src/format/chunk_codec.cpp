// Compact event encoding (type, zigzag tsc delta, fields as varints / length-prefixed bytes) and
// the zstd / lz4 codecs, both linked statically into the profiler.
#include "format/chunk_codec.h"

#include <lz4.h>
#include <zstd.h>

#include <cstring>

#include "format/raw_event.h"
#include "format/varint.h"

namespace sigmatrace::format {

EncodeResult encode_raw_events(const uint8_t* raw, size_t raw_bytes, uint64_t first_tsc, uint8_t* out, size_t out_cap) {
  EncodeResult r;
  const uint8_t* p = raw;
  const uint8_t* end = raw + raw_bytes;
  uint8_t* o = out;
  uint8_t* o_end = out + out_cap;
  uint64_t prev_tsc = first_tsc;
  FieldDeltaTable deltas;
  while (p + sizeof(RawEventHeader) <= end) {
    RawEventHeader h;
    std::memcpy(&h, p, sizeof h);
    const uint8_t* words = p + sizeof h;
    const uint8_t* next = words + 8ull * h.words;
    if (next > end) {  // a torn record can only be a bug; stop rather than read past the chunk
      ++r.malformed;
      break;
    }
    p = next;
    const EventSpec* spec = find_builtin_spec(h.type);
    if (spec && !spec->has_bytes) {
      // Integer fields only (nearly every record): each field as the zigzag varint of its change
      // since the previous event of its type, so a counter, an address walking through a buffer
      // or a repeated QP number takes one byte; no per-field dispatch.
      if (h.words != spec->field_count || o + 13 + 10ull * h.words > o_end) {
        ++r.malformed;
        continue;
      }
      o = varint_put(o, h.type);
      o = varint_put(o, zigzag_encode(static_cast<int64_t>(h.tsc - prev_tsc)));
      prev_tsc = h.tsc;
      uint64_t* prev = deltas.previous(h.type, h.words);
      for (uint32_t f = 0; f < h.words; ++f) {
        uint64_t v;
        std::memcpy(&v, words + 8 * f, 8);
        o = varint_put(o, zigzag_encode(static_cast<int64_t>(v - prev[f])));
        prev[f] = v;
      }
      ++r.events;
      continue;
    }
    // Validate the record against its spec before emitting anything.
    bool ok = spec != nullptr;
    uint32_t w = 0;
    for (int f = 0; ok && f < spec->field_count; ++f) {
      if (w >= h.words) {
        ok = false;
        break;
      }
      if (spec->fields[f].kind == FieldKind::bytes) {
        uint64_t len;
        std::memcpy(&len, words + 8 * w, 8);
        if (len > 0xffff || w + words_for_bytes(static_cast<uint32_t>(len)) > h.words) ok = false;
        else w += words_for_bytes(static_cast<uint32_t>(len));
      } else {
        ++w;
      }
    }
    if (!ok || w != h.words || o + 13 + 10ull * h.words > o_end) {
      ++r.malformed;
      continue;
    }
    o = varint_put(o, h.type);
    o = varint_put(o, zigzag_encode(static_cast<int64_t>(h.tsc - prev_tsc)));
    prev_tsc = h.tsc;
    w = 0;
    for (int f = 0; f < spec->field_count; ++f) {
      uint64_t v;
      std::memcpy(&v, words + 8 * w, 8);
      switch (spec->fields[f].kind) {
        case FieldKind::u64: o = varint_put(o, v); ++w; break;
        case FieldKind::i64: o = varint_put(o, zigzag_encode(static_cast<int64_t>(v))); ++w; break;
        case FieldKind::bytes:
          o = varint_put(o, v);
          std::memcpy(o, words + 8 * (w + 1), v);
          o += v;
          w += words_for_bytes(static_cast<uint32_t>(v));
          break;
      }
    }
    ++r.events;
  }
  r.compact_bytes = static_cast<size_t>(o - out);
  return r;
}

size_t compress_bound(Codec codec, size_t n) {
  switch (codec) {
    case Codec::zstd: return ZSTD_compressBound(n);
    case Codec::lz4: return static_cast<size_t>(LZ4_compressBound(static_cast<int>(n)));
    case Codec::none: return n;
  }
  return n;
}

size_t compress(Codec codec, int level, const uint8_t* in, size_t n, uint8_t* out, size_t cap) {
  switch (codec) {
    case Codec::zstd: {
      size_t r = ZSTD_compress(out, cap, in, n, level);
      return ZSTD_isError(r) ? 0 : r;
    }
    case Codec::lz4: {
      int r = LZ4_compress_default(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out), static_cast<int>(n),
                                   static_cast<int>(cap));
      return r > 0 ? static_cast<size_t>(r) : 0;
    }
    case Codec::none:
      if (cap < n) return 0;
      std::memcpy(out, in, n);
      return n;
  }
  return 0;
}

bool decompress(Codec codec, const uint8_t* in, size_t n, uint8_t* out, size_t expected) {
  switch (codec) {
    case Codec::zstd: {
      size_t r = ZSTD_decompress(out, expected, in, n);
      return !ZSTD_isError(r) && r == expected;
    }
    case Codec::lz4: {
      int r = LZ4_decompress_safe(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out), static_cast<int>(n),
                                  static_cast<int>(expected));
      return r >= 0 && static_cast<size_t>(r) == expected;
    }
    case Codec::none:
      if (n != expected) return false;
      std::memcpy(out, in, n);
      return true;
  }
  return false;
}

Decompressor::~Decompressor() { ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(zstd_)); }

bool Decompressor::run(Codec codec, const uint8_t* in, size_t n, uint8_t* out, size_t expected) {
  if (codec != Codec::zstd) return decompress(codec, in, n, out, expected);
  if (!zstd_) zstd_ = ZSTD_createDCtx();
  if (!zstd_) return decompress(codec, in, n, out, expected);
  size_t r = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(zstd_), out, expected, in, n);
  return !ZSTD_isError(r) && r == expected;
}

const char* codec_name(Codec c) {
  switch (c) {
    case Codec::none: return "none";
    case Codec::zstd: return "zstd";
    case Codec::lz4: return "lz4";
  }
  return "unknown";
}

const ChunkEventDecoder::TypePlan* ChunkEventDecoder::lookup(uint64_t type) {
  if (type > 0xffff) return nullptr;
  TypePlan& slot = plans_[type % 64];
  const TypeDesc* d = schema_->lookup(static_cast<uint16_t>(type));
  if (!d || d->fields.size() > kMaxFields) return nullptr;
  slot = TypePlan{d, 0, static_cast<uint32_t>(d->fields.size()), true, !wanted_ || type >= wanted_->size() || (*wanted_)[type]};
  for (size_t f = 0; f < d->fields.size(); ++f) {
    if (d->fields[f].kind == FieldKind::i64) slot.i64_mask |= 1u << f;
    if (d->fields[f].kind == FieldKind::bytes) slot.plain = false;
  }
  return &slot;
}

namespace {
// Varint without end checks: the caller made sure 10 bytes per value are available.
inline const uint8_t* varint_get_unchecked(const uint8_t* p, uint64_t* out) {
  uint64_t b = *p++;
  if (b < 0x80) {
    *out = b;
    return p;
  }
  uint64_t v = b & 0x7f;
  for (int shift = 7; shift < 70; shift += 7) {
    b = *p++;
    v |= (b & 0x7f) << shift;
    if (b < 0x80) {
      *out = v;
      return p;
    }
  }
  return nullptr;
}
}  // namespace

bool ChunkEventDecoder::next(DecodedEvent* ev) {
  if (failed_ || p_ >= end_) return false;
  uint64_t type, dtsc;
  const uint8_t* p = varint_get(p_, end_, &type);
  if (p) p = varint_get(p, end_, &dtsc);
  const TypePlan* plan = nullptr;
  if (p) {
    const TypePlan& cached = plans_[type % 64];
    plan = cached.desc && cached.desc->id == type ? &cached : lookup(type);
  }
  // A type missing from the file's own schema cannot be sized: the rest of the chunk is lost.
  if (!plan) {
    failed_ = true;
    return false;
  }
  const TypeDesc* desc = plan->desc;
  ev->type = static_cast<uint16_t>(type);
  ev->desc = desc;
  tsc_ += static_cast<uint64_t>(zigzag_decode(dtsc));
  ev->tsc = tsc_;
  int n = static_cast<int>(plan->fields);
  if (!plan->wanted && plan->plain && end_ - p >= 10 * n + 8) {
    // Skip n varints: count the bytes without the continuation bit, eight at a time.
    ev->field_count = 0;
    const uint8_t* limit = p + 10 * n;  // at most 10 bytes per varint; limit + 8 <= end_
    while (n > 0) {
      if (p > limit) {
        failed_ = true;
        return false;
      }
      uint64_t w;
      std::memcpy(&w, p, 8);
      uint64_t t = ~w & 0x8080808080808080ull;
      // Terminators in these 8 bytes: sum of the 0/1 bytes of t >> 7 (no popcnt instruction needed).
      int c = static_cast<int>(((t >> 7) * 0x0101010101010101ull) >> 56);
      if (c < n) {
        p += 8, n -= c;
        continue;
      }
      for (int i = 1; i < n; ++i) t &= t - 1;
      p += (__builtin_ctzll(t) >> 3) + 1;
      n = 0;
    }
    if (deltas_on_) deltas_.skipped(type);
    p_ = p;
    return true;
  }
  ev->field_count = n;
  if (!plan->plain || end_ - p < 10 * n) {
    // Near the end of the chunk (or with bytes fields) an unwanted event is decoded the careful
    // way, then presented like a skipped one.
    bool ok = decode_general(*plan, p, ev);
    if (!plan->wanted) ev->field_count = 0;
    return ok;
  }
  // Each value is finished as it is read: a second pass over ev->values, which the compiler
  // vectorises, reloaded the values just stored one by one and stalled on every event (store
  // forwarding fails for a 16-byte load of two 8-byte stores). bytes[] is left alone: this type
  // has no bytes field.
  if (deltas_on_) {
    uint64_t* prev = deltas_.previous(type, static_cast<uint32_t>(n));
    for (int f = 0; f < n; ++f) {
      uint64_t v;
      if (!(p = varint_get_unchecked(p, &v))) {
        failed_ = true;
        return false;
      }
      ev->values[f] = prev[f] += static_cast<uint64_t>(zigzag_decode(v));
    }
  } else {
    const uint32_t zigzag = plan->i64_mask;
    for (int f = 0; f < n; ++f) {
      uint64_t v;
      if (!(p = varint_get_unchecked(p, &v))) {
        failed_ = true;
        return false;
      }
      ev->values[f] = (zigzag >> f) & 1 ? static_cast<uint64_t>(zigzag_decode(v)) : v;
    }
  }
  if (!plan->wanted) ev->field_count = 0;  // decoded (too near the end to skip), shown as skipped
  p_ = p;
  return true;
}

bool ChunkEventDecoder::decode_general(const TypePlan& plan, const uint8_t* p, DecodedEvent* ev) {
  const TypeDesc* desc = plan.desc;
  // Integer-only types are stored as changes in the field-delta encoding (see field_deltas.h).
  uint64_t* prev = deltas_on_ && plan.plain ? deltas_.previous(desc->id, static_cast<uint32_t>(ev->field_count)) : nullptr;
  for (int f = 0; f < ev->field_count; ++f) {
    uint64_t v = 0;
    if (!(p = varint_get(p, end_, &v))) {
      failed_ = true;
      return false;
    }
    ev->bytes[f] = {};
    if (prev) {
      ev->values[f] = prev[f] += static_cast<uint64_t>(zigzag_decode(v));
      continue;
    }
    switch (desc->fields[f].kind) {
      case FieldKind::u64: ev->values[f] = v; break;
      case FieldKind::i64: ev->values[f] = static_cast<uint64_t>(zigzag_decode(v)); break;
      case FieldKind::bytes:
        if (v > static_cast<uint64_t>(end_ - p)) {
          failed_ = true;
          return false;
        }
        ev->values[f] = 0;
        ev->bytes[f] = std::string_view(reinterpret_cast<const char*>(p), v);
        p += v;
        break;
    }
  }
  p_ = p;
  return true;
}

}  // namespace sigmatrace::format
