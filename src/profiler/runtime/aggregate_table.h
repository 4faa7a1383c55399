// Aggregate mode's per-thread counters: a fixed open-addressing table keyed by (kind, a, b),
// touched only by its owning thread (no atomics, no locks). When a key finds no room within a
// short probe it is counted in `overflow` instead: loss is accounted, never silent.
#pragma once
#include <cstdint>

namespace sigmatrace::profiler {

struct AggregateEntry {
  uint64_t kind;  // 0: empty
  uint64_t a;
  uint64_t b;
  uint64_t count;
  uint64_t bytes;
};

struct AggregateTable {
  static constexpr uint32_t kCapacity = 2048;  // power of two
  static constexpr uint32_t kMaxProbe = 32;
  uint64_t overflow;  // updates that found no slot
  AggregateEntry entries[kCapacity];

  // The entry of key (kind, a, b), created with zero counts if needed; null when the probe found no
  // room. Entries never move, so a caller may keep the pointer and update it directly (same thread).
  AggregateEntry* entry(uint64_t kind, uint64_t a, uint64_t b) {
    uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full) ^ kind;
    uint32_t i = static_cast<uint32_t>(h >> 40) & (kCapacity - 1);
    for (uint32_t probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & (kCapacity - 1)) {
      AggregateEntry& e = entries[i];
      if (e.kind == kind && e.a == a && e.b == b) return &e;
      if (e.kind == 0) {
        e.a = a;
        e.b = b;
        e.count = 0;
        e.bytes = 0;
        __atomic_store_n(&e.kind, kind, __ATOMIC_RELEASE);
        return &e;
      }
    }
    return nullptr;
  }

  [[gnu::always_inline]] inline void add(uint64_t kind, uint64_t a, uint64_t b, uint64_t bytes) {
    uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full) ^ kind;
    uint32_t i = static_cast<uint32_t>(h >> 40) & (kCapacity - 1);
    for (uint32_t probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & (kCapacity - 1)) {
      AggregateEntry& e = entries[i];
      if (e.kind == kind && e.a == a && e.b == b) {
        ++e.count;
        e.bytes += bytes;
        return;
      }
      if (e.kind == 0) {
        e.a = a;
        e.b = b;
        e.count = 1;
        e.bytes = bytes;
        __atomic_store_n(&e.kind, kind, __ATOMIC_RELEASE);  // publish last: the writer may read at exit
        return;
      }
    }
    ++overflow;
  }
};

}  // namespace sigmatrace::profiler
