// See shard_merge.h.
#include "analysis_run/shard_merge.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "export/json_aggregates.h"
#ifdef SIGMATRACE_HAVE_SQLITE
#include "export/sqlite_writer.h"
#endif

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using nlohmann::json;

namespace {

struct Shard {
  std::string dir;
  json section;  // its aggregate.json's "shard"
};

// DIR/shards/K-of-N, all N of them, with their sections.
bool find_shards(const std::string& dir, std::vector<Shard>* shards, std::string* error) {
  const std::string root = dir + "/" + kShardsDirectory;
  std::map<unsigned, std::map<unsigned, std::string>> by_count;  // N -> K -> directory
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    unsigned k = 0, n = 0;
    char tail = 0;
    const std::string name = e.path().filename().string();
    if (e.is_directory() && std::sscanf(name.c_str(), "%u-of-%u%c", &k, &n, &tail) == 2) by_count[n][k] = e.path().string();
  }
  if (ec || by_count.empty()) {
    *error = root + " holds no shards (written by sigmatrace analyze --shard K/N)";
    return false;
  }
  if (by_count.size() > 1) {
    *error = root + " holds shards of " + std::to_string(by_count.begin()->first) + " and of " + std::to_string(by_count.rbegin()->first) +
             " (remove the stale ones)";
    return false;
  }
  const auto& [count, dirs] = *by_count.begin();
  for (unsigned k = 0; k < count; ++k) {
    auto it = dirs.find(k);
    const std::string d = it != dirs.end() ? it->second : shard_directory(dir, {k, count});
    const std::string path = d + "/" + kAggregateFile;
    std::ifstream in(path);
    json j = in ? json::parse(in, nullptr, false) : json();
    if (it == dirs.end() || !in || j.is_discarded() || !j.contains("shard")) {
      *error = "shard " + std::to_string(k) + " of " + std::to_string(count) + " is missing or not finished (no " + path + ")";
      return false;
    }
    if (j["shard"].value("index", count) != k || j["shard"].value("count", 0u) != count) {
      *error = path + " is not shard " + std::to_string(k) + " of " + std::to_string(count);
      return false;
    }
    shards->push_back({d, std::move(j["shard"])});
  }
  return true;
}

// The shards' trace.pftrace, one after the other.
bool concatenate(const std::vector<Shard>& shards, const std::string& out, std::string* error) {
  const std::string tmp = out + ".tmp";
  std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
  for (const Shard& s : shards) {
    std::ifstream in(s.dir + "/" + kPerfettoFile, std::ios::binary);
    if (!in) {
      *error = "cannot read " + s.dir + "/" + kPerfettoFile;
      return false;
    }
    o << in.rdbuf();
  }
  o.close();
  if (!o) {
    *error = "cannot write " + tmp;
    std::remove(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + out;
    return false;
  }
  return true;
}

// trace.sqlite from the shards': their per-event rows copied on `threads` workers, then the rest.
bool merge_sqlite(const std::vector<Shard>& shards, const ExperimentModel& m, const Aggregates& agg, unsigned threads,
                  const std::string& out, std::string* error) {
#ifndef SIGMATRACE_HAVE_SQLITE
  *error = "the shards have trace.sqlite files and this sigmatrace was built without SQLite (libsqlite3-dev): cannot merge them";
  return false;
#else
  SqliteExport db;
  if (!db.open(out, m, error)) return false;
  std::vector<std::string> errors(shards.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::min<size_t>(threads, shards.size()); ++t)
    pool.emplace_back([&] {
      for (size_t k; (k = next.fetch_add(1)) < shards.size();)
        if (!db.add_shard_rows(shards[k].dir + "/" + kSqliteFile, &errors[k]) && errors[k].empty()) errors[k] = "cannot copy its rows";
    });
  for (std::thread& t : pool) t.join();
  for (const std::string& e : errors)
    if (!e.empty()) return *error = e, false;
  for (const Shard& s : shards)
    if (!db.add_shard_tables(s.dir + "/" + kSqliteFile, error)) return false;
  return db.finish(m, agg, error);
#endif
}

}  // namespace

AnalysisRun merge_shards(const MergeOptions& o) {
  AnalysisRun run;
  run.output_dir = o.dir;
  std::vector<Shard> shards;
  if (!find_shards(o.dir, &shards, &run.error)) return run;
  const json& first = shards.front().section;
  for (const Shard& s : shards)
    if (s.section.value("timeline_request", json()) != first.value("timeline_request", json()) ||
        s.section.value("outputs", json()) != first.value("outputs", json()) ||
        s.section.value("clock_sync", "auto") != first.value("clock_sync", "auto")) {
      run.error = "shard " + std::to_string(s.section.value("index", 0u)) + " was written with other timeline, output or clock options than shard 0";
      return run;
    }
  analysis::ClockSyncMode clock_sync = analysis::ClockSyncMode::automatic;
  analysis::parse_clock_sync_mode(first.value("clock_sync", "auto"), &clock_sync);

  if (!run_first_pass(o.dir, o.threads, o.progress, &run, clock_sync)) return run;
  ExperimentModel& m = *run.model;
  const json fingerprint = experiment_fingerprint(m);
  for (const Shard& s : shards)
    if (s.section.value("experiment", json()) != fingerprint) {
      run.error = "shard " + std::to_string(s.section.value("index", 0u)) + " was cut from another state of " + o.dir +
                  " (its files, events or times differ): analyse it again";
      return run;
    }

  auto t1 = std::chrono::steady_clock::now();
  if (o.progress) o.progress->pass = 3;
  run.aggregates.init(m);
  run.pass.files.resize(m.processes.size());
  std::vector<bool> seen(m.processes.size(), false);
  for (const Shard& s : shards)
    if (!add_shard_counters(s.section, m, &run.aggregates, &run.pass, &seen, &run.error)) return run;
  for (const ProcessRow& p : m.processes)
    if (!seen[p.process_id]) {
      run.error = "no shard analysed " + process_label(p) + " on " + p.host;
      return run;
    }
  run.aggregates.finish(m);
  run.aggregate_json = aggregates_to_json(m, run.aggregates, run.pass);

  const unsigned threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  const json outputs = first.value("outputs", json::object());
  if (outputs.value("perfetto", false)) {
    if (!resolve_timeline_selection(timeline_request_from_json(first.value("timeline_request", json::object())), m, &run.timeline, &run.error))
      return run;
    for (const Shard& s : shards)
      run.timeline_left_out += s.section.value("timeline_left_out", uint64_t{0}),
          run.timeline_summarised += s.section.value("timeline_summarised", uint64_t{0});
    run.aggregate_json["timeline"] = timeline_json(run.timeline, m, run.timeline_left_out, run.timeline_summarised);
    if (!concatenate(shards, o.dir + "/" + kPerfettoFile, &run.error)) return run;
  }
  if (outputs.value("sqlite", false) && !merge_sqlite(shards, m, run.aggregates, threads, o.dir + "/" + kSqliteFile, &run.error)) return run;
  run.aggregate_json["merged_shards"] = shards.size();
  if (!write_json_file(o.dir + "/" + kAggregateFile, run.aggregate_json, &run.error)) return run;
  run.outputs.push_back(kAggregateFile);
  if (outputs.value("sqlite", false)) run.outputs.push_back(kSqliteFile);
  if (outputs.value("perfetto", false)) run.outputs.push_back(kPerfettoFile);
  run.outputs_s = seconds_since(t1);
  run.ok = true;
  return run;
}

}  // namespace sigmatrace::exporter
