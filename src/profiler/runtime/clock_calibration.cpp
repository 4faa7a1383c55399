// See clock_calibration.h. Called by the writer thread and at start-up, never on a hot path.
#include "profiler/runtime/clock_calibration.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "profiler/runtime/tsc.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace sigmatrace::profiler {

namespace {
// Written once at start-up, before the writer thread exists; read by whoever takes a sample.
int64_t g_skew_offset_ns = 0;
double g_skew_drift_ppm = 0;
uint64_t g_skew_origin_ns = 0;  // the wall clock when the skew began (0: no skew)
}  // namespace

void skew_clock_samples(int64_t offset_ns, double drift_ppm) {
  g_skew_origin_ns = take_clock_sample().realtime_ns;
  g_skew_offset_ns = offset_ns;
  g_skew_drift_ppm = drift_ppm;
}

ClockSample take_clock_sample() {
  ClockSample best{};
  uint64_t best_width = ~0ull;
  for (int attempt = 0; attempt < 5; ++attempt) {
    timespec rt, mono;
    uint64_t t0 = read_tsc();
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    uint64_t t1 = read_tsc();
    if (t1 - t0 < best_width) {
      best_width = t1 - t0;
      best.tsc = t0 + (t1 - t0) / 2;
      best.realtime_ns = static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + static_cast<uint64_t>(rt.tv_nsec);
      best.monotonic_ns = static_cast<uint64_t>(mono.tv_sec) * 1000000000ull + static_cast<uint64_t>(mono.tv_nsec);
    }
  }
  if (g_skew_origin_ns) {
    const double since = static_cast<double>(static_cast<int64_t>(best.realtime_ns - g_skew_origin_ns));
    best.realtime_ns += static_cast<uint64_t>(g_skew_offset_ns + static_cast<int64_t>(since * g_skew_drift_ppm * 1e-6));
  }
  return best;
}

bool tsc_is_invariant() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u && __get_cpuid(0x80000007u, &a, &b, &c, &d) &&
      (d & (1u << 8)))
    return true;
  // Hypervisors often hide the CPUID bit but the kernel still vouches for the TSC.
  int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  return strstr(buf, " constant_tsc") && strstr(buf, " nonstop_tsc");
#else
  return true;  // the aarch64 generic timer is architecturally constant
#endif
}

}  // namespace sigmatrace::profiler
