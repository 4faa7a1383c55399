// One complete analysis of an experiment directory: both passes, the exports streamed during the
// second pass (trace.pftrace, trace.sqlite) and aggregate.json at the end. Shared by
// `sigmatrace analyze`, the tests and the throughput benchmark.
#pragma once
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"
#include "analysis/pipeline.h"
#include "analysis_run/shards.h"
#include "export/timeline_selection.h"

namespace sigmatrace::exporter {

inline constexpr const char* kPerfettoFile = "trace.pftrace";
inline constexpr const char* kSqliteFile = "trace.sqlite";
inline constexpr const char* kAggregateFile = "aggregate.json";

struct AnalysisOptions {
  std::string dir;
  unsigned threads = 0;  // 0: all cores
  bool perfetto = true, sqlite = true, json = true;
  bool compress_perfetto = true;  // deflate trace.pftrace's packet blocks
  TimelineRequest timeline;        // what trace.pftrace holds (the other outputs are complete)
  analysis::Progress* progress = nullptr;
  // One shard of the analysis (shards.h): the second pass over its hosts' processes only, the
  // outputs in its own directory.
  ShardSpec shard;
  analysis::ClockSyncMode clock_sync = analysis::ClockSyncMode::automatic;  // hosts' clocks (clock_sync.h)
};

struct AnalysisRun {
  bool ok = false;           // false: nothing usable, or an output could not be written
  std::string error;         // one line, when !ok
  std::unique_ptr<analysis::ExperimentModel> model;
  analysis::Aggregates aggregates;
  analysis::SecondPassResult pass;
  nlohmann::json aggregate_json;
  double first_pass_s = 0, second_pass_s = 0, outputs_s = 0;
  TimelineSelection timeline;                  // as resolved
  uint64_t timeline_left_out = 0, timeline_summarised = 0;
  uint64_t sqlite_late_rows = 0;  // op/completion rows SQLite inserted after the leaf pages (sqlite_btree.h)
  bool sqlite_left_out = false;   // trace.sqlite was asked for, and this build has no SQLite
  std::string output_dir;         // where the outputs went: the experiment's, or the shard's
  std::vector<std::string> outputs;  // the files written there, by name
  std::vector<std::string> shard_hosts;
};

AnalysisRun run_analysis(const AnalysisOptions& o);

// The first pass alone (run->model, run->first_pass_s); false with run->error when the directory
// holds no usable trace file. Shared with the merge of shards (shard_merge.h).
bool run_first_pass(const std::string& dir, unsigned threads, analysis::Progress* progress, AnalysisRun* run,
                    analysis::ClockSyncMode clock_sync = analysis::ClockSyncMode::automatic);

// "aggregate.json, trace.sqlite, trace.pftrace": the files run wrote, for a summary line.
std::string output_list(const AnalysisRun& run);

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// aggregate.json's "timeline": what trace.pftrace holds of the experiment (also for merged shards).
nlohmann::json timeline_json(const TimelineSelection& s, const analysis::ExperimentModel& m, uint64_t left_out, uint64_t summarised);

}  // namespace sigmatrace::exporter
