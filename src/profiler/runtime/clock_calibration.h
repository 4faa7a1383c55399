// Clock calibration samples: (TSC, CLOCK_REALTIME, CLOCK_MONOTONIC) taken together, so the
// analysis can map each process's TSC to wall-clock time (PTP-disciplined on clusters) with drift.
#pragma once
#include <cstdint>

namespace sigmatrace::profiler {

struct ClockSample {
  uint64_t tsc;           // midpoint of the TSC reads bracketing the clock reads
  uint64_t realtime_ns;
  uint64_t monotonic_ns;
};

// Best of a few attempts (narrowest TSC bracket), so a preemption does not skew a sample.
ClockSample take_clock_sample();

// True when the CPU declares an invariant TSC (CPUID 0x80000007 EDX bit 8, or the kernel's
// constant_tsc + nonstop_tsc flags).
bool tsc_is_invariant();

}  // namespace sigmatrace::profiler
