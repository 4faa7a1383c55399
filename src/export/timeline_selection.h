// What of an experiment goes into trace.pftrace: a time window, some hosts or ranks, some layers,
// and a size budget. The other outputs (trace.sqlite, aggregate.json) stay complete.
// - The window and the process/layer choice leave out what is outside them.
// - The budget keeps the timeline openable in the Perfetto UI: when the experiment has more
//   events than the budget, per-operation detail (slices, completions, doorbells) is kept up to
//   a cut-off time chosen so that about `budget` events come before it (events are assumed to be
//   spread evenly in time over the selected part); after it, the bytes/s and operations/s counters
//   carry on. The cut-off is marked on every process's track with what was summarised, and the
//   numbers are in aggregate.json ("timeline") and the summary.
// A flow whose other end is left out must not end where Perfetto never saw it begin, so with any
// selection active every flow id is written as a plain flow (an arrow where both ends are in).
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analysis/experiment_model.h"
#include "analysis/records.h"

namespace sigmatrace::exporter {

// As asked for (by `sigmatrace analyze` options).
struct TimelineRequest {
  std::optional<double> from_s, to_s;  // seconds since the experiment's start
  std::vector<long> ranks;             // empty: all
  std::vector<std::string> hosts;      // empty: all
  std::vector<std::string> layers;     // empty: all; of "ibv", "gpu", "ucx", "ofi"
  uint64_t budget_events = 10'000'000;  // 0: no budget
};

// One bit per layer: 1 << analysis::layer_index().
enum TimelineLayer : unsigned { kLayerIbv = 1, kLayerGpu = 2, kLayerUcx = 4, kLayerOfi = 8, kAllLayers = 15 };
inline unsigned timeline_layer_bit(const char* layer) { return 1u << analysis::layer_index(layer); }
unsigned call_layer_bit(const char* call_name);  // of a traced call, by its API's prefix

// Resolved against the experiment.
struct TimelineSelection {
  int64_t from_ns = std::numeric_limits<int64_t>::min(), to_ns = std::numeric_limits<int64_t>::max();
  std::vector<bool> process;  // by process_id
  unsigned layers = kAllLayers;
  uint64_t budget_events = 0;
  uint64_t selected_events = 0;                                // in the selected processes
  int64_t detail_end_ns = std::numeric_limits<int64_t>::max();  // per-operation detail up to here
  bool active = false;  // anything left out or summarised
  bool sharded = false;  // one shard's part (shards.h): the flows must join up with the other shards'

  bool has_process(uint32_t p) const { return p < process.size() && process[p]; }
  bool in_window(int64_t ts) const { return ts >= from_ns && ts <= to_ns; }
  bool detailed(int64_t ts) const { return in_window(ts) && ts <= detail_end_ns; }
};

// False with *error (one line) for a rank or host the experiment does not have, an unknown layer,
// or an empty window.
bool resolve_timeline_selection(const TimelineRequest& r, const analysis::ExperimentModel& m, TimelineSelection* out, std::string* error);

// "A:B", "A:" or ":B" in seconds since the start; false for anything else.
bool parse_time_window(const std::string& text, TimelineRequest* r);
// "0,2,4-7"; false for anything else.
bool parse_rank_list(const std::string& text, std::vector<long>* ranks);

}  // namespace sigmatrace::exporter
