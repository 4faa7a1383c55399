// What trace.pftrace holds when asked for part of an experiment (export/timeline_selection.h): a
// time window, some ranks or hosts, some layers, and the size budget beyond which operations are
// only counted. The timeline stays valid in each case, and what was left out is counted.
#include <gtest/gtest.h>

#include "analysis/synthetic_experiment.h"
#include "analysis_run/analysis_run.h"
#include "analysis/analysis_test_util.h"
#include "export/timeline_selection.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"

namespace sigmatrace::test {
namespace {

using exporter::TimelineRequest;

TEST(TimelineOptions, WindowsAndRankListsParseOrFail) {
  TimelineRequest r;
  ASSERT_TRUE(exporter::parse_time_window("1.5:2", &r));
  EXPECT_EQ(*r.from_s, 1.5);
  EXPECT_EQ(*r.to_s, 2.0);
  ASSERT_TRUE(exporter::parse_time_window(":0.25", &r));
  EXPECT_FALSE(r.from_s.has_value());
  EXPECT_EQ(*r.to_s, 0.25);
  for (const char* bad : {"", ":", "1", "a:b", "1:2:3", "1.5x:2"}) EXPECT_FALSE(exporter::parse_time_window(bad, &r)) << bad;
  std::vector<long> ranks;
  ASSERT_TRUE(exporter::parse_rank_list("0,2,4-6", &ranks));
  EXPECT_EQ(ranks, (std::vector<long>{0, 2, 4, 5, 6}));
  for (const char* bad : {"", "x", "3-1", "1,", "-2", "1-"}) {
    std::vector<long> v;
    EXPECT_FALSE(exporter::parse_rank_list(bad, &v)) << bad;
  }
}

class TimelineSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec.processes = 4;
    spec.hosts = 2;
    spec.messages_per_qp = 2000;
    analysis::write_synthetic_experiment(dir.path(), spec);
  }
  exporter::AnalysisRun analyze(const TimelineRequest& t) {
    exporter::AnalysisOptions o;
    o.dir = dir.path();
    o.timeline = t;
    exporter::AnalysisRun run = exporter::run_analysis(o);
    EXPECT_TRUE(run.ok) << run.error;
    report = check_timeline(dir / "trace.pftrace", "");
    for (const std::string& p : report.problems) ADD_FAILURE() << p << "\n  " << report.summary();
    return run;
  }
  TempDir dir;
  analysis::SyntheticSpec spec;
  TimelineReport report;
};

TEST_F(TimelineSelectionTest, TheWholeExperimentByDefault) {
  exporter::AnalysisRun run = analyze(TimelineRequest{});
  EXPECT_TRUE(run.aggregate_json["timeline"]["complete"].get<bool>());
  EXPECT_EQ(run.timeline_left_out + run.timeline_summarised, 0u);
  EXPECT_EQ(report.processes, 4u);
  EXPECT_EQ(report.flow_starts_without_end, 0u);
}

TEST_F(TimelineSelectionTest, AWindowKeepsOnlyItsEventsAndCountsTheRest) {
  exporter::AnalysisRun all = analyze(TimelineRequest{});
  const uint64_t all_slices = report.slices;
  const double span_s = static_cast<double>(all.model->end_ns - all.model->start_ns) / 1e9;
  TimelineRequest t;
  t.from_s = span_s * 0.25, t.to_s = span_s * 0.5;
  exporter::AnalysisRun run = analyze(t);
  const int64_t from = run.model->start_ns + static_cast<int64_t>(*t.from_s * 1e9), to = run.model->start_ns + static_cast<int64_t>(*t.to_s * 1e9);
  EXPECT_GE(report.first_ts, from - 1);
  // Slices that begin in the window end where their operation ended.
  EXPECT_LE(report.first_ts, to);
  EXPECT_GT(report.slices, all_slices / 8);
  EXPECT_LT(report.slices, all_slices / 2);
  EXPECT_GT(run.timeline_left_out, 0u);
  EXPECT_FALSE(run.aggregate_json["timeline"]["complete"].get<bool>());
  EXPECT_EQ(run.aggregate_json["timeline"]["from_ns"].get<int64_t>(), from);
  // The SQL and JSON outputs stay complete.
  EXPECT_EQ(sql_int(dir / "trace.sqlite", "SELECT COUNT(*) FROM op"), sql_int(dir / "trace.sqlite", "SELECT COUNT(*) FROM op_row"));
  EXPECT_EQ(run.aggregate_json["events"], all.aggregate_json["events"]);
}

TEST_F(TimelineSelectionTest, RanksHostsAndLayersChooseTheProcessesAndTracks) {
  TimelineRequest t;
  t.ranks = {0, 2};
  exporter::AnalysisRun two = analyze(t);
  EXPECT_EQ(report.processes, 2u);
  // The other processes' events are counted as left out, with those of the two outside the timeline.
  uint64_t others = 0;
  for (const analysis::ProcessRow& p : two.model->processes)
    if (p.rank != 0 && p.rank != 2) others += p.file->events;
  EXPECT_GT(others, 0u);
  EXPECT_EQ(two.aggregate_json["timeline"]["events_left_out"].get<uint64_t>(), others + two.timeline_left_out);
  t.ranks.clear();
  t.hosts = {"node1"};
  analyze(t);
  EXPECT_EQ(report.processes, 2u);
  t.hosts.clear();
  t.layers = {"ucx"};  // a verbs experiment: only the counters and descriptors remain
  exporter::AnalysisRun run = analyze(t);
  EXPECT_EQ(report.slices, 0u);
  EXPECT_GT(report.counters, 0u);
  EXPECT_GT(run.timeline_left_out, run.pass.events / 2);  // every WR and completion
}

TEST_F(TimelineSelectionTest, TheBudgetCutsPerOperationDetailAndSaysSo) {
  exporter::AnalysisRun all = analyze(TimelineRequest{});
  const uint64_t events = all.pass.events, all_slices = report.slices;
  TimelineRequest t;
  t.budget_events = events / 4;
  exporter::AnalysisRun run = analyze(t);
  const nlohmann::json& j = run.aggregate_json["timeline"];
  ASSERT_TRUE(j.contains("detail_end_ns"));
  EXPECT_GT(run.timeline_summarised, events / 2);
  // About the budget's worth of events is drawn (events are spread evenly in this experiment).
  EXPECT_NEAR(static_cast<double>(report.slices), static_cast<double>(t.budget_events), 0.1 * static_cast<double>(t.budget_events));
  EXPECT_LE(report.first_ts, j["detail_end_ns"].get<int64_t>());
  const std::string text = uncompressed_pftrace(dir / "trace.pftrace");
  EXPECT_NE(text.find("timeline budget: per-operation detail ends here"), std::string::npos);
  EXPECT_NE(text.find("operations/s rank 0"), std::string::npos);
  t.budget_events = 0;  // no limit
  analyze(t);
  EXPECT_EQ(report.slices, all_slices);
}

TEST_F(TimelineSelectionTest, ARankOrHostTheExperimentLacksIsAnError) {
  for (int k = 0; k < 3; ++k) {
    exporter::AnalysisOptions o;
    o.dir = dir.path();
    if (k == 0) o.timeline.ranks = {7};
    if (k == 1) o.timeline.hosts = {"nosuch"};
    if (k == 2) o.timeline.layers = {"tcp"};
    exporter::AnalysisRun run = exporter::run_analysis(o);
    EXPECT_FALSE(run.ok);
    EXPECT_EQ(run.error.find('\n'), std::string::npos);
    EXPECT_FALSE(run.error.empty());
  }
}

}  // namespace
}  // namespace sigmatrace::test
