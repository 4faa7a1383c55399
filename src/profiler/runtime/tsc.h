// Timestamps of the hot path: the invariant TSC, read with RDTSC (no serialisation: ordering
// against neighbouring instructions does not matter at the resolution we report).
#pragma once
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
namespace sigmatrace::profiler {
inline uint64_t read_tsc() { return __rdtsc(); }
}  // namespace sigmatrace::profiler
#elif defined(__aarch64__)
namespace sigmatrace::profiler {
inline uint64_t read_tsc() {
  uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
}  // namespace sigmatrace::profiler
#else
#error "sigmatrace needs a cycle counter: x86-64 RDTSC or aarch64 CNTVCT"
#endif
