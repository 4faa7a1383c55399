// The analysis as a whole: first pass (experiment_model: scan, clocks, topology), second pass
// (association of every file, in parallel, streaming into the exporters' sinks), then the
// aggregates. The exporters are created by the caller between the passes (they need the model).
#pragma once
#include <atomic>
#include <functional>
#include <vector>

#include "analysis/aggregates.h"
#include "analysis/association.h"
#include "analysis/experiment_model.h"
#include "analysis/records.h"

namespace sigmatrace::analysis {

struct Progress {
  std::atomic<uint64_t> bytes_done{0};
  std::atomic<int> pass{0};  // 1, 2; 3 = writing outputs
  std::atomic<uint64_t> total_bytes{0};  // of the pass under way (the sum of its files' sizes)
  std::atomic<uint64_t> total_events{0};  // known after the first pass
};

struct SecondPassResult {
  std::vector<FilePassStats> files;  // by process_id
  uint64_t events = 0;
};

// Runs association over every process (or those `only` marks, by process_id) on `threads` workers
// (0: all cores), feeding each sink.
SecondPassResult run_second_pass(const ExperimentModel& model, const std::vector<ExperimentSink*>& sinks, Aggregates* aggregates,
                                 unsigned threads, Progress* progress, const std::vector<bool>* only = nullptr);

}  // namespace sigmatrace::analysis
