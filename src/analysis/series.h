// Bounded, binned series of an experiment, for the plots (sigmatrace report --html): bytes over
// time per process and layer, per QP and per GPU; doorbells over time per GPU; the distribution of
// operation durations per layer and operation class; doorbells and WQEs per kernel. Every series
// has the same time bins spanning the experiment (ExperimentModel start_ns..end_ns), so a report
// stays the same size whatever the number of events, and the shards of an analysis (which all see
// the whole model) add up bin by bin.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/experiment_model.h"
#include "analysis/kernel_phases.h"
#include "analysis/records.h"

namespace sigmatrace::analysis {

// The pass bins time finely (kSeriesFineBins over the experiment, kept sparse: only bins with
// traffic cost memory, at most 128 KiB for a QP busy throughout); aggregate.json re-bins the
// window that holds traffic into at most kSeriesBins (json_series.h), so that a run whose traffic
// fills a few milliseconds of a long setup is still drawn in detail.
inline constexpr unsigned kSeriesFineBins = 4096;
inline constexpr unsigned kSeriesBins = 200;
inline constexpr size_t kSeriesTopQps = 8;  // QPs with a series of their own: the most bytes
// A duration's natural logarithm in ns; a duration of 0 (clocks one tick apart) counts as 1 ns.
inline double log_duration(int64_t d) { return std::log(static_cast<double>(std::max<int64_t>(d, 1))); }

// Duration buckets: four per power of two (HDR-style: 2^e times 1, 1.25, 1.5, 1.75), from 1 ns;
// bucket 4e+q starts at 2^e (1 + q/4) ns (bucket 0 holds 0 and 1 ns), the last one holds
// everything from 2^36 ns (69 s) on.
inline constexpr unsigned kLatencyBuckets = 145;
unsigned latency_bucket(int64_t dur_ns);
double latency_bucket_lower_ns(unsigned bucket);

struct SeriesGeometry {
  int64_t start_ns = 0, bin_ns = 1;  // of the fine bins
  explicit SeriesGeometry(const ExperimentModel& m);
  SeriesGeometry() = default;
  unsigned bin(int64_t ts_ns) const;  // clamped into [0, kSeriesFineBins)
};

// Counts per fine bin, as (bin, count) in the order they came: a file's records come in time
// order, so consecutive ones in one bin share an entry (out of order ones add another entry for
// the bin, summed when read).
struct SparseBins {
  std::vector<std::pair<uint32_t, uint64_t>> bins;
  uint64_t total = 0;
  void add(unsigned bin, uint64_t n) {
    if (bins.empty() || bins.back().first != bin) bins.emplace_back(bin, 0);
    bins.back().second += n;
    total += n;
  }
};

// Bytes moved per bin (WRITE, SEND, atomics and READ: what the matrices count; receives are
// the peer's), with the operations that moved them.
struct BinnedTraffic {
  SparseBins bytes, ops;
  void add(unsigned bin, uint64_t n_bytes, uint64_t n_ops) {
    bytes.add(bin, n_bytes);
    ops.add(bin, n_ops);
  }
};

struct QpSeries {
  int64_t qp_id = -1;
  BinnedTraffic traffic;
};

struct GpuSeries {
  int64_t gpu = -1;
  BinnedTraffic traffic;  // its recovered operations (with WQE recovery)
  SparseBins doorbells;   // doorbells rung
};

// Operation durations (post to completion) of one layer and operation class.
struct LatencyHistogram {
  unsigned layer = 0, op_class = 0;
  std::vector<uint64_t> counts;  // kLatencyBuckets
  uint64_t ops = 0, sum_ns = 0;
  int64_t min_ns = 0, max_ns = 0;
  double sum_sq_ns2 = 0;  // of the durations squared: their spread
  // Of the durations' natural logarithms (ns) and their squares: sigmatrace diff compares
  // durations by their geometric mean, which one stall of 100 ms among 300 operations of 40 us
  // moves by 2.6 %, where it multiplies the arithmetic mean by nine.
  double sum_log_ns = 0, sum_log_sq = 0;
};

// The durations of one QP's operations (those with a completion, receives left out: theirs is
// the wait for the sender): how many, their sum, the sum of their squares, the sums of their
// logarithms and of those squared (as LatencyHistogram's) and the longest.
struct DurationSum {
  uint64_t ops = 0, sum_ns = 0;
  double sum_sq_ns2 = 0;
  double sum_log_ns = 0, sum_log_sq = 0;
  int64_t max_ns = 0;
  void add(int64_t d) {
    ++ops;
    sum_ns += static_cast<uint64_t>(d);
    sum_sq_ns2 += static_cast<double>(d) * static_cast<double>(d);
    const double l = log_duration(d);
    sum_log_ns += l, sum_log_sq += l * l;
    max_ns = std::max(max_ns, d);
  }
};

// What a kernel's launches did on one GPU: the doorbells they rang (a doorbell belongs to the
// kernel last launched on its GPU before it) and the WQEBBs and WQEs those announced; with WQE
// recovery, the operations its WQEs were, by the process each went to (a GPU-to-GPU matrix per
// kernel: an MoE layer's dispatch apart from its combine and from NVSHMEM's barriers), and its
// phases.
struct PeerTraffic {
  uint64_t ops = 0, bytes = 0;
};
struct KernelActivity {
  std::string kernel;  // "" when no launch was seen before the doorbell
  int64_t gpu = -1;
  uint64_t doorbells = 0, wqebbs = 0, wqes = 0, data_doorbells = 0, control_doorbells = 0;
  int64_t first_ns = 0, last_ns = 0;
  std::map<int64_t, PeerTraffic> to_peer;  // peer process (-1: not traced) -> what moved there
  KernelPhases phases;
};

struct ProcessSeries {
  std::array<BinnedTraffic, kLayerCount> by_layer;  // the process's operations, by layer (records.h)
  std::vector<QpSeries> qps;  // its kSeriesTopQps busiest
  uint64_t qps_without_series = 0;  // QPs that moved bytes beyond those (their series dropped)
  std::vector<GpuSeries> gpus;
  std::vector<LatencyHistogram> latency;
  std::map<int64_t, DurationSum> qp_durations;  // by qp_id
  std::deque<KernelActivity> kernels;  // a deque: the phase builder holds on to its elements
  uint64_t untimed_ops = 0;  // operations without a post time (not in any bin)
};

struct Aggregates;

// Fills Aggregates::process[pid].series while the second pass streams each file (each file
// writes its own process's series only).
class SeriesExport : public ExperimentSink {
 public:
  SeriesExport(const ExperimentModel& m, Aggregates* agg) : model_(m), agg_(agg), geometry_(m) {}
  std::unique_ptr<FileSink> open_file(uint32_t process_id) override;
  const SeriesGeometry& geometry() const { return geometry_; }

 private:
  const ExperimentModel& model_;
  Aggregates* agg_;
  SeriesGeometry geometry_;
};

}  // namespace sigmatrace::analysis
