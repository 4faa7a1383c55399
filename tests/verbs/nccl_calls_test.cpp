// Each verbs operation of NCCL's IB transport tied to the NCCL call whose data it moves, through
// the nccl provider (the profiler as NCCL's profiler plugin): tests/bin/nccl_net_ib_pattern drives
// the plugin as NCCL 2.28 does (one AllReduce task per iteration, its proxy steps announcing each
// receive and data write's QP and wr_id just before the post) over softnic, under `sigmatrace
// profile` in every mode. Skipped, with the reason, while build/softnic or the programs are absent.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "support/pair_runner.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"
#include "support/trace_events.h"
#include "verbs/softnic_runs.h"

using namespace sigmatrace::test;
using namespace sigmatrace::test::softnic_runs;
using sigmatrace::format::EventType;

namespace {

class NcclCalls : public ::testing::TestWithParam<std::string> {};

TEST_P(NcclCalls, EveryOperationIsTiedToTheCallWhoseDataItMoves) {
  const std::string exe = build_path("tests/bin/nccl_net_ib_pattern");
  REQUIRE_SOFTNIC_AND(exe);
  const std::string mode = GetParam();
  constexpr uint64_t kIters = 40, kBytes = 65536, kCts = 64;
  const std::vector<std::string> argv = {exe, "--iters", std::to_string(kIters), "--bytes", std::to_string(kBytes)};
  TempDir t;
  PairRun traced = run_pair_once_more_on_timeout({}, argv, mode, t / "exp");
  ASSERT_EQ(traced.client.exit_code, 0) << traced.client.out << traced.client.err;

  const std::vector<const ProcessEvents*> ranks = working_processes(traced, "nccl_net_ib_pattern");
  ASSERT_EQ(ranks.size(), 2u);
  for (const ProcessEvents* p : ranks) {
    if (mode == "aggregate") {  // the plugin asks NCCL for no event: NCCL runs as without it
      EXPECT_EQ(p->count(EventType::nccl_comm), 0u);
      EXPECT_EQ(p->count(EventType::nccl_task), 0u);
      continue;
    }
    EXPECT_EQ(p->count(EventType::nccl_comm), 1u);
    EXPECT_EQ(p->count(EventType::nccl_task), kIters);
    EXPECT_EQ(p->count(EventType::nccl_net_wr), 2 * kIters);  // each iteration's receive and data write
  }
  if (mode == "aggregate") return;

  const std::string dir = t / "exp";
  ProcessResult analyzed = analyze_experiment(dir);
  if (skipped_for_sqlite(analyzed)) GTEST_SKIP() << analyzed.err;
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  expect_valid_timeline(dir);  // with the "NCCL calls on the network" track
  ProcessResult report = run_process({build_path("bin/sigmatrace"), "report", dir});
  EXPECT_NE(report.out.find("ncclAllReduce 64.0 KiB RING/SIMPLE       80 calls       4.0 WRs  wire   64.1 KiB (x1.001)"), std::string::npos)
      << report.out;
  // Per rank and iteration: the receive and the data WRITE (+ the empty WRITE_WITH_IMM chained to
  // it, with the same wr_id) by wr_id in Full mode; the clear-to-send write by its QP; the flush
  // READ, which NCCL posts for no step, tied to nothing. Simple mode knows calls, not wr_ids.
  std::ifstream in(dir + "/aggregate.json");
  const nlohmann::json agg = nlohmann::json::parse(in);
  int with_nccl = 0;
  for (const nlohmann::json& p : agg["processes"]) {
    if (!p.contains("nccl")) continue;
    ++with_nccl;
    const nlohmann::json& n = p["nccl"];
    EXPECT_EQ(n["tasks"], kIters);
    EXPECT_EQ(n["matched_by_wr_id"], mode == "full" ? 3 * kIters : 0);
    EXPECT_EQ(n["matched_by_qp"], mode == "full" ? kIters : 4 * kIters);
    EXPECT_EQ(n["ops_attributed"], 4 * kIters);
    EXPECT_EQ(n["ops_unattributed"], kIters);
    EXPECT_EQ(n["net_events_without_task"], 0);
  }
  EXPECT_EQ(with_nccl, 2);
  ASSERT_EQ(agg["nccl_calls"].size(), 1u) << agg["nccl_calls"].dump();
  const nlohmann::json& c = agg["nccl_calls"][0];
  EXPECT_EQ(c["func"], "ncclAllReduce");
  EXPECT_EQ(c["bytes"], kBytes);
  EXPECT_EQ(c["calls"], 2 * kIters);
  EXPECT_EQ(c["calls_with_network"], 2 * kIters);
  EXPECT_EQ(c["wire_bytes"], 2 * kIters * (kBytes + kCts));
  EXPECT_EQ(c["algorithm_bytes"], 2 * kIters * kBytes);  // 2(n-1)/n of the buffer, n = 2

  auto sql = [&](const std::string& q) {
    std::vector<std::string> rows = sql_rows(dir, q);
    return rows.empty() ? std::string("(no row)") : rows[0];
  };
  // The table of calls, and call #37's operations per rank: its data WRITE to the peer, its
  // clear-to-send write, its receive; its network part from the first post to the last completion.
  EXPECT_EQ(sql("SELECT count(*), count(DISTINCT process_id), min(seq), max(seq) FROM nccl_task WHERE label LIKE 'ncclAllReduce #%'"),
            "80,2,0,39");
  EXPECT_EQ(sql("SELECT group_concat(wrs || '/' || send_wrs || '/' || recv_wrs || '/' || wire_bytes || '/' || algorithm_bytes, ' ') "
                "FROM nccl_task WHERE label = 'ncclAllReduce #37'"),
            "4/3/1/65600/65536 4/3/1/65600/65536");
  EXPECT_EQ(sql("SELECT count(*) FROM nccl_task WHERE label = 'ncclAllReduce #37' AND net_dur_ns >= 0 AND net_start_ns >= ts_ns"), "2");
  EXPECT_EQ(sql("SELECT group_concat(n, ' ') FROM (SELECT op.process_id, count(*) || ':' || sum(op.bytes) AS n FROM op "
                "JOIN nccl_task t ON op.nccl_task_id = t.task_id WHERE t.label = 'ncclAllReduce #37' AND op.opcode = 'WRITE' "
                "AND op.peer_process_id <> op.process_id GROUP BY op.process_id)"),
            mode == "full" ? "2:65600 2:65600" : "1:64 1:64");  // Simple: the data call is WRITE + WRITE_IMM
  EXPECT_EQ(sql("SELECT count(*) FROM op WHERE nccl_task_id IS NULL"), std::to_string(2 * kIters));
  EXPECT_EQ(sql("SELECT count(*) FROM op WHERE nccl_task_id IS NULL AND opcode <> 'READ'"), "0");
}

// A program whose NCCL_PROFILER_PLUGIN names another plugin (NCCL's inspector, say) keeps it: the
// nccl provider is off with the reason, no NCCL event is recorded, the verbs operations still are.
TEST(NcclCallsWithAnotherPlugin, TheProgramsOwnPluginIsLeftAlone) {
  const std::string exe = build_path("tests/bin/nccl_net_ib_pattern");
  REQUIRE_SOFTNIC_AND(exe);
  // A real library without ncclProfiler_v5: the pattern, as NCCL, finds no plugin in it.
  const std::map<std::string, std::string> env = {{"NCCL_PROFILER_PLUGIN", softnic_dir() + "/libibverbs.so.1"}};
  TempDir t;
  PairRun traced = run_pair_once_more_on_timeout({}, {exe, "--iters", "3"}, "full", t / "exp", env);
  ASSERT_EQ(traced.client.exit_code, 0) << traced.client.err;
  uint64_t posts = 0;
  for (const ProcessEvents* p : processes_named(traced.procs, "nccl_net_ib_pattern")) {
    EXPECT_EQ(p->count(EventType::nccl_comm) + p->count(EventType::nccl_task) + p->count(EventType::nccl_net_wr), 0u);
    posts += p->count(EventType::ibv_send_wr);
  }
  EXPECT_EQ(posts, 2 * 3 * 4u);  // per rank and iteration: clear-to-send, data WRITE, WRITE_WITH_IMM, flush READ
  const std::string dir = t / "exp";
  ProcessResult analyzed = analyze_experiment(dir, {"--no-perfetto"});
  if (skipped_for_sqlite(analyzed)) GTEST_SKIP() << analyzed.err;
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  EXPECT_EQ(sql_rows(dir, "SELECT DISTINCT enabled, detail FROM provider WHERE name = 'nccl'"),
            std::vector<std::string>{"0,NCCL_PROFILER_PLUGIN names another profiler plugin (" + softnic_dir() +
                                     "/libibverbs.so.1): NCCL's operations are not tied to its calls"});
}

INSTANTIATE_TEST_SUITE_P(Modes, NcclCalls, ::testing::ValuesIn(kModes), [](const auto& info) { return info.param; });

}  // namespace
