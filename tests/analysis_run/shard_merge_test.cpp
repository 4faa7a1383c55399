// Shards of an analysis (analyze --shard K/N, then merge): the merged outputs must be what one
// analysis of the whole experiment writes — aggregate.json identical, every table of trace.sqlite
// holding the same rows, the timeline the same slices, instants, counters and flows — and the
// merge must refuse shards that do not make up one experiment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "analysis/synthetic_experiment.h"
#include "analysis_run/shard_merge.h"
#include "analysis/analysis_test_util.h"
#include "export/sqlite_table_reader.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"

namespace sigmatrace::test {
namespace {

namespace fs = std::filesystem;
using exporter::AnalysisOptions;
using exporter::AnalysisRun;
using exporter::ShardSpec;

analysis::SyntheticSpec five_hosts() {
  analysis::SyntheticSpec s;
  s.processes = 10;
  s.hosts = 5;
  s.threads_per_process = 2;
  s.all_to_all = true;
  s.messages_per_qp = 40;
  return s;
}

AnalysisRun analyze(const std::string& dir, ShardSpec shard = {}, uint64_t budget = exporter::TimelineRequest{}.budget_events) {
  AnalysisOptions o;
  o.dir = dir;
  o.threads = 2;
  o.shard = shard;
  o.timeline.budget_events = budget;
  return exporter::run_analysis(o);
}

AnalysisRun merge(const std::string& dir) {
  exporter::MergeOptions o;
  o.dir = dir;
  o.threads = 2;
  return exporter::merge_shards(o);
}

// Every row of every table, sorted (row order is not part of the result).
std::map<std::string, std::vector<std::string>> all_rows(const std::string& db) {
  std::map<std::string, std::vector<std::string>> t;
  for (const std::string& name : sql_rows(db, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")) {
    std::vector<std::string> rows = sql_rows(db, "SELECT * FROM " + name);
    std::sort(rows.begin(), rows.end());
    t[name] = rows;
  }
  return t;
}

// Analyses the experiment whole (its outputs renamed whole.*), then in `count` shards, merged.
void analyse_whole_then_sharded(const std::string& dir, unsigned count, uint64_t budget) {
  AnalysisRun whole = analyze(dir, {}, budget);
  ASSERT_TRUE(whole.ok) << whole.error;
  for (const char* f : {"aggregate.json", "trace.sqlite", "trace.pftrace"}) fs::rename(dir + "/" + f, dir + "/whole." + f);
  for (unsigned k = 0; k < count; ++k) {
    AnalysisRun shard = analyze(dir, {k, count}, budget);
    ASSERT_TRUE(shard.ok) << shard.error;
    EXPECT_EQ(shard.output_dir, dir + "/shards/" + std::to_string(k) + "-of-" + std::to_string(count));
    EXPECT_LT(shard.pass.events, whole.pass.events);  // a part of the second pass
    EXPECT_GT(shard.pass.events, 0u);
    EXPECT_TRUE(fs::exists(shard.output_dir + "/trace.sqlite"));
    EXPECT_EQ(sql_rows(shard.output_dir + "/trace.sqlite", "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  }
  AnalysisRun merged = merge(dir);
  ASSERT_TRUE(merged.ok) << merged.error;
  EXPECT_EQ(merged.pass.events, whole.pass.events);
}

// cut: the timeline budget summarised its end (then trace.sqlite's operations after the cut-off are
// no slices, and the timeline is checked on its own).
void expect_merged_equals_whole(const std::string& dir, bool cut = false) {
  nlohmann::json whole = read_json(dir + "/whole.aggregate.json"), merged = read_json(dir + "/aggregate.json");
  EXPECT_EQ(merged["merged_shards"].get<unsigned>(), 3u);
  merged.erase("merged_shards");
  EXPECT_EQ(merged, whole) << "aggregate.json of the merged shards differs from the whole analysis's";

  const std::string db = dir + "/trace.sqlite";
  EXPECT_EQ(sql_rows(db, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  auto w = all_rows(dir + "/whole.trace.sqlite"), m = all_rows(db);
  ASSERT_EQ(w.size(), m.size());
  for (const auto& [table, rows] : w) EXPECT_EQ(m[table], rows) << "table " << table;
  EXPECT_GT(m["op_row"].size(), 5000u);

  TimelineReport tw = check_timeline(dir + "/whole.trace.pftrace", cut ? "" : dir + "/whole.trace.sqlite");
  TimelineReport tm = check_timeline(dir + "/trace.pftrace", cut ? "" : db);
  EXPECT_TRUE(tw.problems.empty()) << tw.summary() << "\n" << (tw.problems.empty() ? "" : tw.problems.front());
  EXPECT_TRUE(tm.problems.empty()) << tm.summary() << "\n" << (tm.problems.empty() ? "" : tm.problems.front());
  EXPECT_EQ(tm.tracks, tw.tracks);
  EXPECT_EQ(tm.processes, tw.processes);
  EXPECT_EQ(tm.threads, tw.threads);
  EXPECT_EQ(tm.slices, tw.slices);
  EXPECT_EQ(tm.slices_with_duration, tw.slices_with_duration);
  EXPECT_EQ(tm.instants, tw.instants);
  EXPECT_EQ(tm.counters, tw.counters);
  EXPECT_EQ(tm.flows, tw.flows);
  EXPECT_EQ(tm.op_slices_checked, tw.op_slices_checked);
}

TEST(ShardMerge, MergedShardsAreTheWholeAnalysis) {
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), five_hosts());
  analyse_whole_then_sharded(dir.path(), 3, exporter::TimelineRequest{}.budget_events);
  expect_merged_equals_whole(dir.path());
}

TEST(ShardMerge, TheTimelineBudgetCutsAllShardsAtTheWholeExperimentsTime) {
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), five_hosts());
  analyse_whole_then_sharded(dir.path(), 3, 3000);
  nlohmann::json whole = read_json(dir / "whole.aggregate.json");
  EXPECT_GT(whole["timeline"]["events_summarised"].get<uint64_t>(), 0u);
  expect_merged_equals_whole(dir.path(), true);
}

TEST(ShardMerge, HostGroupsAreContiguousAndCoverEveryHost) {
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), five_hosts());
  analysis::ExperimentModel m = analysis::build_experiment_model(dir.path(), 2, nullptr);
  for (unsigned count = 1; count <= 5; ++count) {
    std::vector<std::vector<uint32_t>> groups;
    std::string error;
    ASSERT_TRUE(exporter::shard_host_groups(m, count, &groups, &error)) << error;
    ASSERT_EQ(groups.size(), count);
    uint32_t next = 0;
    for (const auto& g : groups) {
      ASSERT_FALSE(g.empty());
      for (uint32_t h : g) EXPECT_EQ(h, next++);
    }
    EXPECT_EQ(next, 5u);
  }
  std::vector<std::vector<uint32_t>> groups;
  std::string error;
  EXPECT_FALSE(exporter::shard_host_groups(m, 6, &groups, &error));
  EXPECT_EQ(error, "6 shards, but the experiment has 5 hosts (a shard is a group of hosts)");
}

// However the events lie, every group gets a host: a light first host and a heavy last one were
// once cut into {0, 1} and {} (the demo's two hosts).
TEST(ShardMerge, GroupsOfUnevenHostsAreNeverEmpty) {
  using G = std::vector<std::vector<uint32_t>>;
  EXPECT_EQ(exporter::contiguous_groups({1, 100}, 2), (G{{0}, {1}}));
  EXPECT_EQ(exporter::contiguous_groups({100, 1}, 2), (G{{0}, {1}}));
  EXPECT_EQ(exporter::contiguous_groups({100, 1, 1, 1}, 2), (G{{0}, {1, 2, 3}}));
  EXPECT_EQ(exporter::contiguous_groups({1, 1, 1, 100}, 3), (G{{0, 1}, {2}, {3}}));
  EXPECT_EQ(exporter::contiguous_groups({1, 1, 1, 1}, 2), (G{{0, 1}, {2, 3}}));
  EXPECT_EQ(exporter::contiguous_groups({0, 0, 0}, 3), (G{{0}, {1}, {2}}));
  EXPECT_EQ(exporter::contiguous_groups({5, 5, 5}, 1), (G{{0, 1, 2}}));
}

TEST(ShardMerge, ShardSpecFromTheCommandLineOrTheMpiLauncher) {
  ShardSpec s;
  std::string error;
  EXPECT_TRUE(exporter::parse_shard_spec("2/3", &s, &error));
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 3u);
  EXPECT_FALSE(exporter::parse_shard_spec("3/3", &s, &error));
  EXPECT_EQ(error, "--shard 3/3: shard 3 of 3 does not exist (K counts from 0)");
  for (const char* bad : {"", "1", "1/", "/2", "a/2", "1/2/3", "-1/2"}) {
    EXPECT_FALSE(exporter::parse_shard_spec(bad, &s, &error)) << bad;
    EXPECT_EQ(error, "--shard " + std::string(bad) + ": expected K/N (shard K of N, from 0) or mpi");
  }
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"}) unsetenv(v);
  EXPECT_FALSE(exporter::parse_shard_spec("mpi", &s, &error));
  EXPECT_EQ(error, "--shard mpi: no launcher's rank in the environment (OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)");
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_NTASKS", "4", 1);
  EXPECT_TRUE(exporter::parse_shard_spec("mpi", &s, &error)) << error;
  EXPECT_EQ(s.index, 3u);
  EXPECT_EQ(s.count, 4u);
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_NTASKS");
}

TEST(ShardMerge, RefusesShardsThatDoNotMakeUpTheExperiment) {
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), five_hosts());
  AnalysisRun r = merge(dir.path());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, dir.path() + "/shards holds no shards (written by sigmatrace analyze --shard K/N)");

  ASSERT_TRUE(analyze(dir.path(), {0, 2}).ok);
  r = merge(dir.path());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "shard 1 of 2 is missing or not finished (no " + dir.path() + "/shards/1-of-2/aggregate.json)");

  ASSERT_TRUE(analyze(dir.path(), {0, 3}).ok);
  r = merge(dir.path());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, dir.path() + "/shards holds shards of 2 and of 3 (remove the stale ones)");
  fs::remove_all(dir / "shards/0-of-3");

  // A shard cut from the experiment before it changed (a process's file grew, here: its count).
  ASSERT_TRUE(analyze(dir.path(), {1, 2}).ok);
  nlohmann::json j = read_json(dir / "shards/1-of-2/aggregate.json");
  j["shard"]["experiment"]["events"] = j["shard"]["experiment"]["events"].get<uint64_t>() + 1;
  std::ofstream(dir / "shards/1-of-2/aggregate.json") << j.dump();
  r = merge(dir.path());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "shard 1 was cut from another state of " + dir.path() + " (its files, events or times differ): analyse it again");
  EXPECT_FALSE(fs::exists(dir / "trace.sqlite"));
}

TEST(ShardMerge, TableReaderRefusesWhatIsNotATableBTree) {
  TempDir dir;
  std::ofstream(dir / "junk.sqlite") << std::string(4096, 'x');
  std::string error;
  EXPECT_FALSE(exporter::read_table_rows(dir / "junk.sqlite", 2, [](int64_t, const uint8_t*, uint32_t) { return true; }, &error));
  EXPECT_EQ(error, dir / "junk.sqlite" + ": not an SQLite database");
  analysis::SyntheticSpec spec = five_hosts();
  spec.messages_per_qp = 2;
  analysis::write_synthetic_experiment(dir.path(), spec);
  ASSERT_TRUE(analyze(dir.path()).ok);
  // Page 1 is the schema's B-tree, which is a table B-tree too; the index's root is not one.
  const int64_t index_root = sql_int(dir / "trace.sqlite", "SELECT rootpage FROM sqlite_schema WHERE type = 'index' LIMIT 1");
  EXPECT_FALSE(exporter::read_table_rows(dir / "trace.sqlite", static_cast<uint32_t>(index_root),
                                         [](int64_t, const uint8_t*, uint32_t) { return true; }, &error));
  EXPECT_EQ(error, dir / "trace.sqlite" + ": page " + std::to_string(index_root) + " is not a table B-tree page");
  uint64_t rows = 0;
  EXPECT_TRUE(exporter::read_table_rows(dir / "trace.sqlite", 1, [&](int64_t, const uint8_t*, uint32_t) { return ++rows, true; }, &error));
  EXPECT_EQ(static_cast<int64_t>(rows), sql_int(dir / "trace.sqlite", "SELECT count(*) FROM sqlite_schema"));
}

// As an MPI job: every rank analyses its shard (K and N from Open MPI's environment), then merge.
TEST(ShardMergeCommand, MpiJobWritesOneShardPerRankAndMergeJoinsThem) {
  const std::string mpirun = find_program("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not installed (Open MPI)";
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), five_hosts());
  ProcessResult r = run_process({mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "2", SIGMATRACE_CLI, "analyze", dir.path(),
                                 "--shard", "mpi", "-j", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Five hosts of equal traffic: node0-node2 and node3-node4 (the events' midpoint falls in node2).
  EXPECT_NE(r.out.find("wrote " + dir.path() + "/shards/0-of-2 (shard 0 of 2: hosts node0,node1,node2, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + dir.path() + "/shards/1-of-2 (shard 1 of 2: hosts node3,node4, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("when every shard is written: sigmatrace merge " + dir.path()), std::string::npos);
  r = run_process({SIGMATRACE_CLI, "merge", dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("merged 2 shards into " + dir.path() + "/aggregate.json, trace.sqlite, trace.pftrace"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dropped events: 0"), std::string::npos) << r.out;
  EXPECT_EQ(sql_int(dir / "trace.sqlite", "SELECT count(DISTINCT process_id) FROM op"), 10);
  expect_valid_timeline(dir.path());
}

TEST(ShardMergeCommand, BadShardIsAUsageError) {
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), five_hosts());
  ProcessResult r = run_process({SIGMATRACE_CLI, "analyze", dir.path(), "--shard", "5/5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "sigmatrace: analyze: --shard 5/5: shard 5 of 5 does not exist (K counts from 0)\n");
  r = run_process({SIGMATRACE_CLI, "merge", "/nonexistent/sigmatrace-exp"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "sigmatrace: merge: /nonexistent/sigmatrace-exp is not an experiment directory (no such directory)\n");
}

// The progress display is drawn on a terminal (here a pseudo-terminal made by script(1)) and
// nowhere else.
TEST(AnalyzeProgress, DrawnOnATerminalOnly) {
  const std::string script = find_program("script");
  if (script.empty()) GTEST_SKIP() << "script(1) is not installed (util-linux)";
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), five_hosts());
  ProcessResult plain = run_process({SIGMATRACE_CLI, "analyze", dir.path(), "-q"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("analyze:"), std::string::npos) << plain.err;
  ProcessResult tty = run_process({script, "-qec", std::string(SIGMATRACE_CLI) + " analyze " + dir.path() + " -q", "/dev/null"});
  ASSERT_EQ(tty.exit_code, 0) << tty.out << tty.err;
  // The first line drawn names the phase; the display is wiped before the summary.
  const bool drawn = tty.out.find("\ranalyze: pass 1/2 (peers, QPs, clocks)") != std::string::npos ||
                     tty.out.find("\ranalyze: pass 2/2 (association, timeline, SQL)") != std::string::npos ||
                     tty.out.find("\ranalyze: writing outputs") != std::string::npos;
  EXPECT_TRUE(drawn) << tty.out;
  EXPECT_NE(tty.out.find("wrote " + dir.path() + "/aggregate.json"), std::string::npos) << tty.out;
}

}  // namespace
}  // namespace sigmatrace::test
