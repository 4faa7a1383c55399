// See clock_normalization.h.
#include "analysis/clock_normalization.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace sigmatrace::analysis {

const char* clock_source_name(ClockSource s) {
  switch (s) {
    case ClockSource::fit: return "fit";
    case ClockSource::anchor: return "single-sample";
    case ClockSource::none: return "header-only";
  }
  return "?";
}

ClockModel fit_clock_model(std::vector<ClockSamplePoint> samples) {
  ClockModel m;
  std::sort(samples.begin(), samples.end(), [](const ClockSamplePoint& a, const ClockSamplePoint& b) { return a.tsc < b.tsc; });
  m.samples = samples.size();
  if (samples.empty()) return m;
  m.anchor_tsc = samples.front().tsc;
  m.anchor_ns = static_cast<int64_t>(samples.front().realtime_ns);
  m.source = ClockSource::anchor;
  ClockFit f = fit_clock(samples);  // the least-squares line (experiment_scan)
  if (!f.valid) return m;
  m.source = ClockSource::fit;
  m.ns_per_tick = f.ns_per_tick;
  m.anchor_tsc = f.anchor_tsc;
  m.anchor_ns = f.anchor_realtime_ns;
  m.intercept_ns = f.intercept_ns;
  m.max_residual_ns = f.max_residual_ns;
  double sq = 0;
  for (const ClockSamplePoint& s : samples) {
    // In double, before rounding to whole ns, like the fit's own max residual.
    double t = static_cast<double>(static_cast<int64_t>(s.tsc - m.anchor_tsc));
    double r = static_cast<double>(static_cast<int64_t>(s.realtime_ns) - m.anchor_ns);
    double e = m.intercept_ns + m.ns_per_tick * t - r;
    sq += e * e;
  }
  m.rms_residual_ns = std::sqrt(sq / static_cast<double>(samples.size()));
  return m;
}

std::vector<ClockModel> normalize_clocks(const std::vector<const FileSummary*>& files) {
  std::vector<ClockModel> models;
  std::map<std::string, double> host_slope;
  std::vector<double> slopes;
  for (const FileSummary* f : files) {
    models.push_back(fit_clock_model(f->clock_samples));
    if (models.back().source == ClockSource::fit) {
      host_slope.emplace(f->meta_value("host"), models.back().ns_per_tick);
      slopes.push_back(models.back().ns_per_tick);
    }
  }
  double fallback = 1.0;
  if (!slopes.empty()) {
    std::nth_element(slopes.begin(), slopes.begin() + slopes.size() / 2, slopes.end());
    fallback = slopes[slopes.size() / 2];
  }
  for (size_t i = 0; i < files.size(); ++i) {
    ClockModel& m = models[i];
    if (m.source == ClockSource::fit) continue;
    auto it = host_slope.find(files[i]->meta_value("host"));
    m.ns_per_tick = it != host_slope.end() ? it->second : fallback;
    if (m.source == ClockSource::none) {
      // The header's start pair is one more calibration sample, written before any event.
      try {
        m.anchor_tsc = std::stoull(files[i]->meta_value("start_tsc"));
        m.anchor_ns = std::stoll(files[i]->meta_value("start_realtime_ns"));
      } catch (...) {
        m.anchor_tsc = files[i]->first_tsc;
        m.anchor_ns = 0;
      }
    }
  }
  return models;
}

}  // namespace sigmatrace::analysis
