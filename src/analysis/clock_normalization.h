// Clock normalization: each process's TSC is mapped to wall-clock (CLOCK_REALTIME) nanoseconds by a
// least-squares line through its calibration samples (clock_sync events), so that the slope absorbs
// the TSC's rate and drift against real time and all processes and nodes share one timeline.
// The anchors are kept as integers (first sample) and only the offsets from them go through
// floating point: epoch nanoseconds (~1.8e18) do not fit a double's 53-bit mantissa.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/experiment_scan.h"

namespace sigmatrace::analysis {

enum class ClockSource {
  fit,       // two or more samples: slope and offset fitted
  anchor,    // one usable sample: offset from it, slope borrowed (same host's fit, else nominal 1 ns/tick)
  none,      // no sample at all: the file header's start (start_tsc/start_realtime_ns), slope borrowed
};

struct ClockModel {
  ClockSource source = ClockSource::none;
  uint64_t anchor_tsc = 0;
  int64_t anchor_ns = 0;      // realtime ns at anchor_tsc
  double ns_per_tick = 1.0;   // slope (drift included)
  double intercept_ns = 0;    // fitted value at anchor_tsc minus anchor_ns
  size_t samples = 0;
  double max_residual_ns = 0;  // largest |sample - line| over the samples
  double rms_residual_ns = 0;
  int64_t to_ns(uint64_t tsc) const {
    double d = static_cast<double>(static_cast<int64_t>(tsc - anchor_tsc));
    return anchor_ns + static_cast<int64_t>(intercept_ns + ns_per_tick * d + (d >= 0 ? 0.5 : -0.5));
  }
};

const char* clock_source_name(ClockSource s);

// Fits the samples (any order; duplicates and non-monotonic pairs tolerated).
ClockModel fit_clock_model(std::vector<ClockSamplePoint> samples);

// Models for every process of the experiment: processes without enough samples borrow the slope of
// a fitted process on the same host (same TSC family), else the median slope of all fits, else 1.
std::vector<ClockModel> normalize_clocks(const std::vector<const FileSummary*>& files);

}  // namespace sigmatrace::analysis
