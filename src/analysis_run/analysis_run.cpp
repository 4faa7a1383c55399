// See analysis_run.h.
#include "analysis_run/analysis_run.h"

#include <chrono>
#include <filesystem>

#include "export/json_aggregates.h"
#include "export/perfetto_writer.h"
#include "format/experiment_layout.h"
#ifdef SIGMATRACE_HAVE_SQLITE
#include "export/sqlite_writer.h"
#endif

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;

// What trace.pftrace holds, for aggregate.json and the summary.
nlohmann::json timeline_json(const TimelineSelection& s, const ExperimentModel& m, uint64_t left_out, uint64_t summarised) {
  nlohmann::json j;
  size_t processes = 0;
  for (size_t i = 0; i < s.process.size() && i < m.processes.size(); ++i) {
    if (s.process[i]) ++processes;
    else left_out += m.processes[i].file->events;  // a process not chosen: all its events
  }
  j["processes"] = processes;
  j["events_left_out"] = left_out;       // outside the window, the layers or the processes chosen
  j["events_summarised"] = summarised;   // after the budget's cut-off: in the counters only
  j["budget_events"] = s.budget_events;
  if (s.from_ns > m.start_ns) j["from_ns"] = s.from_ns;
  if (s.to_ns < m.end_ns) j["to_ns"] = s.to_ns;
  if (s.detail_end_ns < m.end_ns) j["detail_end_ns"] = s.detail_end_ns;
  j["complete"] = !s.active;
  return j;
}

namespace {

bool make_directories(const std::string& path, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (!ec) return true;
  *error = "cannot create " + path + ": " + ec.message();
  return false;
}
}  // namespace

std::string output_list(const AnalysisRun& run) {
  std::string files;
  for (const std::string& f : run.outputs) files += (files.empty() ? "" : ", ") + f;
  return files;
}

bool run_first_pass(const std::string& dir, unsigned threads, Progress* progress, AnalysisRun* run, analysis::ClockSyncMode clock_sync) {
  auto t0 = std::chrono::steady_clock::now();
  if (progress) {
    // The first pass reads every trace file: its progress is over their sizes.
    uint64_t bytes = 0;
    for (const std::string& f : format::list_trace_files(dir)) {
      std::error_code ec;
      const uintmax_t n = std::filesystem::file_size(f, ec);
      if (!ec) bytes += n;
    }
    progress->total_bytes = bytes;
    progress->pass = 1;
  }
  run->model = std::make_unique<ExperimentModel>(build_experiment_model(dir, threads, progress ? &progress->bytes_done : nullptr, clock_sync));
  const ExperimentModel& m = *run->model;
  run->first_pass_s = seconds_since(t0);
  if (m.scan.files.empty()) {
    run->error = dir + " holds no trace files (*.sgt)";
    return false;
  }
  if (m.processes.empty()) {
    run->error = "none of the " + std::to_string(m.scan.files.size()) + " trace files in " + dir + " is usable";
    if (!m.scan.skipped.empty()) run->error += " (" + m.scan.skipped.front() + ")";
    return false;
  }
  return true;
}

AnalysisRun run_analysis(const AnalysisOptions& o) {
  AnalysisRun run;
  if (!run_first_pass(o.dir, o.threads, o.progress, &run, o.clock_sync)) return run;
  ExperimentModel& m = *run.model;

  auto t1 = std::chrono::steady_clock::now();
  // A shard: its hosts' processes only, written to its own directory.
  std::vector<uint32_t> shard_hosts;
  std::vector<bool> in_shard(m.processes.size(), true);
  run.output_dir = o.dir;
  if (o.shard.active()) {
    std::vector<std::vector<uint32_t>> groups;
    if (!shard_host_groups(m, o.shard.count, &groups, &run.error)) return run;
    shard_hosts = groups[o.shard.index];
    for (uint32_t h : shard_hosts) run.shard_hosts.push_back(m.hosts[h]);
    in_shard = shard_processes(m, shard_hosts);
    run.output_dir = shard_directory(o.dir, o.shard);
    if (!make_directories(run.output_dir, &run.error)) return run;
  }
  std::vector<ExperimentSink*> sinks;
  std::unique_ptr<PerfettoExport> perfetto;
#ifdef SIGMATRACE_HAVE_SQLITE
  std::unique_ptr<SqliteExport> sqlite;
#else
  std::unique_ptr<ExperimentSink> sqlite;  // never made: this build has no SQLite
  if (o.sqlite) run.sqlite_left_out = true;
#endif
  TimelineSelection drawn;
  if (o.perfetto) {
    if (!resolve_timeline_selection(o.timeline, m, &run.timeline, &run.error)) return run;
    // The cut-off and the flows are the whole experiment's (so that the shards' timelines join
    // up); the shard draws its own processes.
    drawn = run.timeline;
    if (o.shard.active()) {
      drawn.sharded = true;
      drawn.active = drawn.active || o.shard.count > 1;
      for (size_t p = 0; p < drawn.process.size(); ++p) drawn.process[p] = drawn.process[p] && in_shard[p];
    }
    perfetto = std::make_unique<PerfettoExport>();
    if (!perfetto->open(run.output_dir + "/" + kPerfettoFile, m, &run.aggregates, o.compress_perfetto, drawn, &run.error)) return run;
    sinks.push_back(perfetto.get());
  }
#ifdef SIGMATRACE_HAVE_SQLITE
  if (o.sqlite) {
    sqlite = std::make_unique<SqliteExport>();
    if (!sqlite->open(run.output_dir + "/" + kSqliteFile, m, &run.error)) return run;
    sinks.push_back(sqlite.get());
  }
#endif
  if (o.progress) {
    uint64_t events = 0, bytes = 0;
    for (const ProcessRow& p : m.processes)
      if (in_shard[p.process_id]) events += p.file->events, bytes += p.file->file_bytes;
    o.progress->total_events = events;
    o.progress->total_bytes = bytes;
    o.progress->bytes_done = 0;
    o.progress->pass = 2;
  }
  run.aggregates.init(m);
  SeriesExport series(m, &run.aggregates);  // the binned series the HTML report plots
  sinks.push_back(&series);
  run.pass = run_second_pass(m, sinks, &run.aggregates, o.threads, o.progress, o.shard.active() ? &in_shard : nullptr);
  Aggregates raw;
  if (o.shard.active()) raw = run.aggregates;  // what the merge adds up: finish() rolls the QPs' counters into their processes'
  run.aggregates.finish(m);
  run.second_pass_s = seconds_since(t1);

  auto t2 = std::chrono::steady_clock::now();
  if (o.progress) o.progress->pass = 3;
  run.aggregate_json = aggregates_to_json(m, run.aggregates, run.pass);
  if (perfetto) {
    if (!perfetto->finish(&run.error)) return run;
    run.timeline_left_out = perfetto->left_out(), run.timeline_summarised = perfetto->summarised();
    run.aggregate_json["timeline"] = timeline_json(drawn, m, run.timeline_left_out, run.timeline_summarised);
  }
#ifdef SIGMATRACE_HAVE_SQLITE
  if (sqlite) {
    if (!sqlite->finish(m, run.aggregates, &run.error)) return run;
    run.sqlite_late_rows = sqlite->late_rows();
  }
#endif
  if (o.shard.active())
    run.aggregate_json["shard"] = shard_section(m, o.shard, shard_hosts, in_shard, raw, run.pass, o.timeline, o.perfetto, sqlite != nullptr,
                                                run.timeline_left_out, run.timeline_summarised);
  if (o.json || o.shard.active()) {
    if (!write_json_file(run.output_dir + "/" + kAggregateFile, run.aggregate_json, &run.error)) return run;
    run.outputs.push_back(kAggregateFile);
  }
  if (sqlite) run.outputs.push_back(kSqliteFile);
  if (perfetto) run.outputs.push_back(kPerfettoFile);
  run.outputs_s = seconds_since(t2);
  run.ok = true;
  return run;
}

}  // namespace sigmatrace::exporter
