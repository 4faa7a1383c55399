// Clock normalization on synthetic clocks: skewed (different TSC origins), drifting (rates off by
// ppm), drift that changes over time (not a line: the residual must say so), and processes with
// one or no calibration sample.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/clock_normalization.h"
#include "analysis/synthetic_experiment.h"
#include "analysis_test_util.h"
#include "support/temp_dir.h"

namespace sigmatrace::test {
namespace {

using analysis::ClockSamplePoint;
using analysis::SyntheticClock;

constexpr int64_t kStart = 1764400000000000000;

std::vector<ClockSamplePoint> samples_of(const SyntheticClock& c, int n, int64_t span_ns) {
  std::vector<ClockSamplePoint> s;
  for (int i = 0; i < n; ++i) {
    int64_t ns = kStart + span_ns * i / std::max(1, n - 1);
    s.push_back({analysis::synthetic_tsc(c, kStart, ns), static_cast<uint64_t>(ns), 0});
  }
  return s;
}

TEST(ClockModel, SkewedAndDriftingLinearClockMapsToTheNanosecond) {
  SyntheticClock c;
  c.ghz = 2.1;
  c.drift_ppm = 37.5;
  c.tsc_at_start = 987654321012345ull;
  analysis::ClockModel m = analysis::fit_clock_model(samples_of(c, 20, 3600000000000ll));  // an hour
  ASSERT_EQ(m.source, analysis::ClockSource::fit);
  EXPECT_NEAR(m.ns_per_tick, 1.0 / (2.1 * (1 + 37.5e-6)), 1e-12);
  EXPECT_LT(m.max_residual_ns, 1.0);
  for (int64_t ns : {kStart, kStart + 1, kStart + int64_t{1234567891}, kStart + int64_t{3599999999999}})
    EXPECT_NEAR(static_cast<double>(m.to_ns(analysis::synthetic_tsc(c, kStart, ns))), static_cast<double>(ns), 1.0);
}

TEST(ClockModel, ChangingDriftShowsInTheResidual) {
  SyntheticClock c;
  c.drift_change_ppm_per_s = 0.5;  // the rate moves by 0.5 ppm per second: a curve, not a line
  analysis::ClockModel m = analysis::fit_clock_model(samples_of(c, 11, 100000000000ll));  // 100 s
  ASSERT_EQ(m.source, analysis::ClockSource::fit);
  // Quadratic error of a line through 0.5e-6/s * t^2 / 2 over 100 s: hundreds of microseconds.
  EXPECT_GT(m.max_residual_ns, 100000.0);
  EXPECT_GT(m.rms_residual_ns, 10000.0);
  EXPECT_LE(m.rms_residual_ns, m.max_residual_ns);
}

TEST(ClockModel, OneSampleOrNoneBorrowsTheSlope) {
  SyntheticClock c;
  analysis::ClockModel one = analysis::fit_clock_model(samples_of(c, 1, 0));
  EXPECT_EQ(one.source, analysis::ClockSource::anchor);
  EXPECT_EQ(one.samples, 1u);
  analysis::ClockModel none = analysis::fit_clock_model({});
  EXPECT_EQ(none.source, analysis::ClockSource::none);
}

TEST(ClockNormalization, ProcessesWithSkewAndDriftShareOneTimeline) {
  TempDir dir;
  analysis::SyntheticSpec spec;
  spec.processes = 4;
  spec.hosts = 2;
  spec.messages_per_qp = 20;
  spec.opcodes = {2};
  spec.clock_samples = 7;
  // Very different TSC origins and rates, drifts of both signs.
  spec.clocks = {{2.5, 0, 0, 5000000000ull}, {3.0, 120.0, 0, 17ull}, {1.9, -80.0, 0, 900000000000000ull}, {2.5, 15.0, 0, 123ull}};
  analysis::SyntheticTruth truth = analysis::write_synthetic_experiment(dir.path(), spec);
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  std::string db = dir / "trace.sqlite";
  // Send k of every QP is posted at start + period*(k+1) + slot; the receive completes 2 us later on
  // the peer's clock: after normalization the difference must be 2000 ns on every flow.
  EXPECT_EQ(static_cast<uint64_t>(sql_int(db, "SELECT COUNT(*) FROM op s JOIN completion c ON c.flow_id = s.flow_id "
                                              "WHERE ABS(c.ts_ns - s.ts_ns - 2000) <= 2")),
            truth.flows);
  for (int r = 0; r < 4; ++r)
    EXPECT_NEAR(static_cast<double>(sql_int(db, "SELECT MIN(ts_ns) FROM op WHERE opcode = 'SEND' AND process_id = " + std::to_string(r))),
                static_cast<double>(spec.start_ns + spec.message_period_ns), 2.0);
  // The residual of each fit is reported, in SQL and JSON.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM process WHERE clock_samples = 7 AND clock_max_residual_ns < 2"), 4);
  for (const auto& p : run.aggregate_json["processes"]) {
    EXPECT_EQ(p["clock"]["source"], "fit");
    EXPECT_LT(p["clock"]["max_residual_ns"].get<double>(), 2.0);
  }
}

TEST(ClockNormalization, ResidualOfANonLinearClockIsReported) {
  TempDir dir;
  analysis::SyntheticSpec spec;
  spec.processes = 2;
  spec.hosts = 2;
  spec.messages_per_qp = 4;
  spec.message_period_ns = 10000000000ll;  // 10 s between messages: a 60 s run
  spec.clock_samples = 9;
  spec.clocks = {{2.5, 0, 0, 1000}, {2.5, 0, 2.0 /*ppm per s*/, 1000}};
  analysis::write_synthetic_experiment(dir.path(), spec);
  // Not analyze_dir: with a clock this far off, some arrows between the two hosts run backwards
  // by design (that is what the residual reports), which the timeline check would flag.
  exporter::AnalysisOptions o;
  o.dir = dir.path();
  exporter::AnalysisRun run = exporter::run_analysis(o);
  ASSERT_TRUE(run.ok) << run.error;
  std::string db = dir / "trace.sqlite";
  EXPECT_LT(sql_int(db, "SELECT CAST(clock_max_residual_ns AS INTEGER) FROM process WHERE rank = 0"), 2);
  EXPECT_GT(sql_int(db, "SELECT CAST(clock_max_residual_ns AS INTEGER) FROM process WHERE rank = 1"), 100000);
}

TEST(ClockNormalization, FileWithoutSamplesUsesItsHeaderAndTheHostSlope) {
  TempDir dir;
  analysis::SyntheticSpec spec;
  spec.processes = 2;
  spec.hosts = 1;  // same host: rank 1 borrows rank 0's slope
  spec.clock_samples = 0;
  spec.clocks = {{1.0, 0, 0, 1000}, {1.0, 0, 0, 777777}};  // 1 tick/ns: the fallback slope is exact
  analysis::write_synthetic_experiment(dir.path(), spec);
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  std::string db = dir / "trace.sqlite";
  // No fit anywhere: the slope falls back to 1 ns/tick, anchored at the header's start pair.
  EXPECT_EQ(sql_rows(db, "SELECT clock_source, clock_samples FROM process ORDER BY rank"),
            (std::vector<std::string>{"header-only|0", "header-only|0"}));
  // Both processes post their first send one message period after the start.
  EXPECT_EQ(sql_int(db, "SELECT MIN(ts_ns) FROM op WHERE process_id = 0"), spec.start_ns + spec.message_period_ns);
  EXPECT_EQ(sql_int(db, "SELECT MIN(ts_ns) FROM op WHERE process_id = 1"), spec.start_ns + spec.message_period_ns);
}

}  // namespace
}  // namespace sigmatrace::test
