// Hosts whose clocks disagree (analysis/clock_sync.h): synthetic experiments whose hosts' wall
// clocks read ahead or behind and drift by known amounts, through the whole analysis. The
// correction must find each offset and drift to within the messages' latency (2 us here), leave no
// message received before it was sent (in trace.sqlite, every one of them, not only the ones the
// estimate used), keep each process's own order, and leave clocks that agree alone.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/synthetic_experiment.h"
#include "analysis_test_util.h"
#include "support/temp_dir.h"

namespace sigmatrace::test {
namespace {

// A ring of 6 processes on 3 hosts (process r on node r % 3): node0 is the reference; node1's
// clock reads 5 ms ahead and gains 100 ppm; node2's 3 ms behind, losing 50 ppm. 200 messages of
// each kind per QP, one per ms: 200 ms, over which the drifts add 20 and -10 us.
analysis::SyntheticSpec skewed(bool skew) {
  analysis::SyntheticSpec s;
  s.processes = 6;
  s.hosts = 3;
  s.messages_per_qp = 200;
  s.message_period_ns = 1000000;
  s.opcodes = {2 /*SEND*/, 0 /*WRITE*/, 1 /*WRITE_IMM*/};
  for (int r = 0; r < s.processes; ++r) {
    analysis::SyntheticClock c = analysis::synthetic_clock_for(s, r);
    if (skew && r % 3 == 1) c.realtime_offset_ns = 5000000, c.realtime_drift_ppm = 100;
    if (skew && r % 3 == 2) c.realtime_offset_ns = -3000000, c.realtime_drift_ppm = -50;
    s.clocks.push_back(c);
  }
  return s;
}

// Messages (flows) received before they were sent, and the smallest receive - send.
std::pair<int64_t, int64_t> backward_and_min(const std::string& db) {
  const std::string join =
      " FROM op o JOIN completion c ON c.flow_id = o.flow_id WHERE o.flow_id IS NOT NULL AND c.opcode LIKE 'RECV%' AND o.opcode <> 'RECV'";
  return {sql_int(db, "SELECT SUM(c.ts_ns < o.ts_ns)" + join), sql_int(db, "SELECT MIN(c.ts_ns - o.ts_ns)" + join)};
}

TEST(ClockSync, OffsetsAndDriftsFoundAndEveryMessageForward) {
  TempDir dir;
  const analysis::SyntheticSpec spec = skewed(true);
  const analysis::SyntheticTruth truth = analysis::write_synthetic_experiment(dir.path(), spec);
  ASSERT_FALSE(truth.files.empty());
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  const nlohmann::json& c = run.aggregate_json["clock_sync"];
  EXPECT_TRUE(c["applied"].get<bool>()) << c.dump(1);
  EXPECT_GT(c["backward_before"].get<uint64_t>(), 0u);
  EXPECT_EQ(c["backward_after"].get<uint64_t>(), 0u);
  // The truth at the experiment's start (the origin): offset, and the drift in ppm.
  const int64_t origin = c["origin_ns"].get<int64_t>();
  const double want_offset[] = {0, 5000000, -3000000}, want_ppm[] = {0, 100, -50};
  for (const nlohmann::json& h : c["hosts"]) {
    const int host = h["host"].get<std::string>().back() - '0';
    ASSERT_TRUE(h["estimated"].get<bool>()) << h.dump();
    if (host == 0) {
      EXPECT_TRUE(h["reference"].get<bool>());
      continue;
    }
    // The reported offset is at the origin, on the reference's time; the truth's drift began at
    // the spec's start.
    const double truth_at_origin = want_offset[host] + want_ppm[host] * 1e-6 * static_cast<double>(origin - spec.start_ns);
    EXPECT_NEAR(h["offset_ns"].get<double>(), truth_at_origin, 2000) << h.dump();
    EXPECT_NEAR(h["drift_ppm"].get<double>(), want_ppm[host], 1.0) << h.dump();
  }
  // Every message in trace.sqlite (all of them, not only the sampled ones the estimate used)
  // arrives after it was sent, and no later than its true latency (2 us) plus the estimate's error.
  const auto [backward, min_latency] = backward_and_min(dir / "trace.sqlite");
  EXPECT_EQ(backward, 0);
  EXPECT_GE(min_latency, 0);
  EXPECT_LE(min_latency, 2000 + 2000);
  EXPECT_EQ(sql_int(dir / "trace.sqlite", "SELECT COUNT(*) FROM op WHERE flow_id IS NOT NULL AND opcode <> 'RECV'"),
            static_cast<int64_t>(truth.flows));
  // Each process's own order is kept: its operations' times still rise with their ids.
  EXPECT_EQ(sql_int(dir / "trace.sqlite",
                    "SELECT COUNT(*) FROM (SELECT ts_ns, lag(ts_ns) OVER (PARTITION BY process_id ORDER BY op_id) AS prev FROM op "
                    "WHERE opcode <> 'RECV' AND is_call = 0) WHERE ts_ns < prev"),
            0);
}

TEST(ClockSync, OffWhenAskedAndNotNeededWhenClocksAgree) {
  TempDir skewed_dir, fine_dir;
  ASSERT_FALSE(analysis::write_synthetic_experiment(skewed_dir.path(), skewed(true)).files.empty());
  ASSERT_FALSE(analysis::write_synthetic_experiment(fine_dir.path(), skewed(false)).files.empty());
  exporter::AnalysisOptions o;
  o.dir = skewed_dir.path();
  o.threads = 2;
  o.clock_sync = analysis::ClockSyncMode::off;
  exporter::AnalysisRun off = exporter::run_analysis(o);
  ASSERT_TRUE(off.ok) << off.error;
  EXPECT_FALSE(off.aggregate_json["clock_sync"]["applied"].get<bool>());
  EXPECT_GT(backward_and_min(skewed_dir / "trace.sqlite").first, 0) << "the skew is there without the correction";

  exporter::AnalysisRun fine = analyze_dir(fine_dir.path());
  ASSERT_TRUE(fine.ok) << fine.error;
  const nlohmann::json& c = fine.aggregate_json["clock_sync"];
  EXPECT_FALSE(c["applied"].get<bool>()) << c.dump(1);
  EXPECT_EQ(c["backward_before"].get<uint64_t>(), 0u);
  EXPECT_NE(c["outcome"].get<std::string>().find("not needed"), std::string::npos) << c["outcome"];
  // The estimate is still there: within the latency of zero.
  for (const nlohmann::json& h : c["hosts"]) {
    if (h["reference"].get<bool>()) continue;
    EXPECT_NEAR(h["offset_ns"].get<double>(), 0, 2000) << h.dump();
  }
}

}  // namespace
}  // namespace sigmatrace::test
