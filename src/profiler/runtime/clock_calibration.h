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

// Testing (SIGMATRACE_DEBUG_CLOCK_SKEW): from now on the samples' wall clock reads offset_ns
// ahead and gains drift_ppm from this moment, as a host's clock that is off would. Called once at
// start-up, before the first sample.
void skew_clock_samples(int64_t offset_ns, double drift_ppm);

// True when the CPU declares an invariant TSC (CPUID 0x80000007 EDX bit 8, or the kernel's
// constant_tsc + nonstop_tsc flags).
bool tsc_is_invariant();

}  // namespace sigmatrace::profiler
