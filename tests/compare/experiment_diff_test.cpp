// sigmatrace diff (compare/experiment_diff.h) on aggregate.json documents made by hand, so that
// every expected change is known exactly: which rows change, by how much, in which order, and
// what stays within the noise threshold.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "compare/experiment_diff.h"

namespace sigmatrace::test {
namespace {

using nlohmann::json;

// The durations field of a QP whose operations took exactly `ns`, each.
json durations_of(const std::vector<double>& ns) {
  double sum = 0, sq = 0, log_sum = 0, log_sq = 0;
  for (double d : ns) sum += d, sq += d * d, log_sum += std::log(d), log_sq += std::log(d) * std::log(d);
  return {{"ops", ns.size()}, {"sum_ns", sum}, {"sum_sq_ns2", sq}, {"sum_log_ns", log_sum}, {"sum_log_sq", log_sq}};
}

// 100 durations of mean `mean` and standard deviation `sd`: half of them mean - sd, half mean + sd.
std::vector<double> spread(double mean, double sd) {
  std::vector<double> d(100, mean - sd);
  std::fill(d.begin() + 50, d.end(), mean + sd);
  return d;
}

// Two ranks on two hosts, one RC connection: rank 0 writes `bytes0` in 100 WRITEs, rank 1 in
// 100 more of `bytes1`; their WRITEs took `durations0` and `durations1` (empty: no durations, as
// in Simple mode).
json experiment(const char* name, double bytes0, double bytes1, const std::vector<double>& durations0, const std::vector<double>& durations1) {
  json procs = json::array(), qps = json::array();
  for (int r = 0; r < 2; ++r) {
    const double bytes = r ? bytes1 : bytes0;
    const std::vector<double>& durations = r ? durations1 : durations0;
    procs.push_back({{"process_id", r}, {"rank", r}, {"host", "h" + std::to_string(r)}, {"label", "rank " + std::to_string(r)},
                     {"by_opcode", {{"WRITE", {{"ops", 100}, {"bytes", bytes}}}}}});
    qps.push_back({{"qp_id", r}, {"process_id", r}, {"peer_process_id", 1 - r}, {"ops", 100}, {"bytes_out", bytes}, {"bytes_read", 0},
                   {"active_ns", 1e6}});
    if (!durations.empty()) qps.back()["durations"] = durations_of(durations);
  }
  return {{"format", "sigmatrace-aggregate"}, {"experiment", name}, {"processes", procs}, {"qps", qps},
          {"connections", json::array({{{"qp_a", 0}, {"qp_b", 1}, {"bytes", bytes0 + bytes1}}})},
          {"matrices", {{"host", {{"labels", {"h0", "h1", "unknown"}},
                                  {"bytes", {{0, bytes0, 0}, {bytes1, 0, 0}, {0, 0, 0}}},
                                  {"ops", {{0, 100, 0}, {100, 0, 0}, {0, 0, 0}}}}}}}};
}

// Each side's WRITEs `spread(mean, sd)` (sd < 0: no durations).
json experiment(const char* name, double bytes0, double bytes1, double mean0, double mean1, double sd) {
  if (sd < 0) return experiment(name, bytes0, bytes1, std::vector<double>{}, std::vector<double>{});
  return experiment(name, bytes0, bytes1, spread(mean0, sd), spread(mean1, sd));
}

// An aggregate.json written before durations had the sums of their logarithms.
json without_logs(json agg) {
  for (json& q : agg["qps"])
    if (q.contains("durations")) q["durations"].erase("sum_log_ns"), q["durations"].erase("sum_log_sq");
  return agg;
}

std::vector<std::string> keys(const json& d) {
  std::vector<std::string> out;
  for (const json& c : d["changes"]) out.push_back(c["group"].get<std::string>() + " " + c["key"].get<std::string>());
  return out;
}

TEST(ExperimentDiff, SameRunWithinNoiseReportsNothing) {
  const json a = experiment("a", 409600, 409600, 10000, 10000, 2000);
  // 20 % slower (under the 25 % threshold); 30 % slower but from 100 operations spread over a
  // factor of 9 (half 4.3 us, half 39 us: the logarithms' standard deviation 1.1), within 3
  // standard errors: jitter, not a change.
  json d = compare::diff_experiments(a, experiment("b", 409600, 409600, 12000, 12000, 2000), {});
  EXPECT_TRUE(d["changes"].empty()) << d.dump(1);
  std::vector<double> wide(100, 13000.0 / 3);
  std::fill(wide.begin() + 50, wide.end(), 13000.0 * 3);
  d = compare::diff_experiments(a, experiment("b", 409600, 409600, wide, spread(10000, 2000)), {});
  EXPECT_TRUE(d["changes"].empty()) << d.dump(1);
  EXPECT_EQ(d["rows_compared"].get<size_t>(), d["rows_unchanged"].get<size_t>());
  EXPECT_EQ(d["rows_compared"].get<size_t>(), 6u) << "operation kind, 2 process pairs, 2 host pairs, 1 connection";
}

TEST(ExperimentDiff, OneRanksMessagesTwiceAsLarge) {
  // Rank 1's bytes and the rows that hold them change; rank 0's do not. Its WRITEs took 5 us
  // more each: 500 us explained by its pair and the connection.
  json d = compare::diff_experiments(experiment("a", 409600, 409600, 10000, 10000, 100),
                                     experiment("b", 409600, 819200, 10000, 15000, 100), {});
  // Rows that explain no time: the larger change first (the host pair doubled, all WRITEs +50 %).
  const std::vector<std::string> want = {"process pair rank 1 -> rank 0", "connection rank 0 <-> rank 1 #0", "host pair h1 -> h0", "operation kind WRITE"};
  EXPECT_EQ(keys(d), want) << d.dump(1);
  const json& top = d["changes"][0];
  EXPECT_EQ(top["changed"], json::array({"bytes", "geomean_ns"}));
  EXPECT_EQ(top["a"]["bytes"].get<double>(), 409600);
  EXPECT_EQ(top["b"]["bytes"].get<double>(), 819200);
  EXPECT_DOUBLE_EQ(top["change_percent"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(top["explains_ns"].get<double>(), 500000);
  // Without durations (Simple mode) a row explains the time its extra bytes take at its own rate
  // in the baseline: 409600 more bytes at 409600 B per ms.
  d = compare::diff_experiments(experiment("a", 409600, 409600, 0, 0, -1), experiment("b", 409600, 819200, 0, 0, -1), {});
  EXPECT_EQ(keys(d), want) << d.dump(1);
  EXPECT_DOUBLE_EQ(d["changes"][0]["explains_ns"].get<double>(), 1e6);
}

TEST(ExperimentDiff, OneLinkSlowedRankedByTheTimeItExplains) {
  // Rank 1's WRITEs 40 % slower (4 us more each, 400 us in all), rank 0's 30 % slower.
  const json d = compare::diff_experiments(experiment("a", 409600, 409600, 10000, 10000, 500),
                                           experiment("b", 409600, 409600, 13000, 14000, 500), {});
  ASSERT_GE(d["changes"].size(), 2u) << d.dump(1);
  EXPECT_EQ(keys(d)[0], "connection rank 0 <-> rank 1 #0") << "the connection holds both sides' time: 700 us";
  EXPECT_DOUBLE_EQ(d["changes"][0]["explains_ns"].get<double>(), 100 * 4000.0 + 100 * 3000.0);
  EXPECT_EQ(keys(d)[1], "process pair rank 1 -> rank 0");
  EXPECT_DOUBLE_EQ(d["changes"][1]["explains_ns"].get<double>(), 100 * 4000.0);
  EXPECT_EQ(d["changes"][1]["changed"], json::array({"geomean_ns"}));
  // rank 0's +30 %: 3000 ns against a spread of 500: reported too, below rank 1's.
  EXPECT_EQ(keys(d)[2], "process pair rank 0 -> rank 1");
  // With a threshold between 30 % and the connection's 35 %, it is not.
  compare::DiffOptions strict;
  strict.threshold_percent = 33;  // the connection: +35 % (its geometric mean +34.9 %)
  const json s = compare::diff_experiments(experiment("a", 409600, 409600, 10000, 10000, 500),
                                           experiment("b", 409600, 409600, 13000, 14000, 500), strict);
  EXPECT_EQ(keys(s), (std::vector<std::string>{"connection rank 0 <-> rank 1 #0", "process pair rank 1 -> rank 0"}));
}

TEST(ExperimentDiff, StallsOfTheBaselineDoNotHideASlowedLink) {
  // Rank 1's link slowed by 1 ms: its WRITEs take 1.04 ms instead of 40 us. In the baseline the
  // machine stalled one WRITE of each rank for 100 ms: their arithmetic means are 1.04 ms, the
  // slowed link's, with standard errors of 1 ms; the geometric means move by 8 %, and the slowed
  // link is reported, 24 times its baseline.
  std::vector<double> stalled = spread(40000, 4000);
  stalled[0] = 100e6;
  const json a = experiment("a", 409600, 409600, stalled, stalled);
  const json b = experiment("b", 409600, 409600, spread(40000, 4000), spread(1040000, 4000));
  json d = compare::diff_experiments(a, b, {});
  ASSERT_EQ(keys(d), (std::vector<std::string>{"connection rank 0 <-> rank 1 #0", "process pair rank 1 -> rank 0"})) << d.dump(1);
  const json& pair = d["changes"][1];
  EXPECT_EQ(pair["changed"], json::array({"geomean_ns"}));
  const double gm_a = pair["a"]["geomean_ns"].get<double>(), gm_b = pair["b"]["geomean_ns"].get<double>();
  EXPECT_NEAR(gm_a, 39800 * std::exp(std::log(100e6 / 36000) / 100), 100) << "one stall in 100 moves it by 8 %";
  EXPECT_NEAR(gm_b / gm_a, 24.1, 0.1);
  // The time explained is the time spent, the stall's too: the slowed link's 100 ms against the
  // stall's 100 ms on the same link (36 us more), the connection's 99.9 ms less (rank 0's stall).
  EXPECT_DOUBLE_EQ(pair["explains_ns"].get<double>(), 36000);
  EXPECT_DOUBLE_EQ(d["changes"][0]["explains_ns"].get<double>(), 36000 - (100e6 - 36000));
  // The same two runs without the logarithms' sums (an older aggregate.json): the arithmetic
  // means are compared, and the stall hides the slowed link, which is why the logarithms are kept.
  d = compare::diff_experiments(without_logs(a), without_logs(b), {});
  EXPECT_TRUE(d["changes"].empty()) << d.dump(1);
  // ...while a change the arithmetic test can see is still found, by its mean_ns, and explains
  // the change of the sums.
  d = compare::diff_experiments(without_logs(experiment("a", 409600, 409600, 10000, 10000, 500)),
                                without_logs(experiment("b", 409600, 409600, 10000, 14000, 500)), {});
  ASSERT_EQ(keys(d), std::vector<std::string>{"process pair rank 1 -> rank 0"}) << d.dump(1);
  EXPECT_EQ(d["changes"][0]["changed"], json::array({"mean_ns"}));
  EXPECT_DOUBLE_EQ(d["changes"][0]["explains_ns"].get<double>(), 400000);
  EXPECT_FALSE(d["changes"][0]["a"].contains("geomean_ns"));
}

TEST(ExperimentDiff, RowsOfOneSideOnlyAreListed) {
  json b = experiment("b", 409600, 409600, 10000, 10000, 100);
  b["processes"][1]["by_opcode"]["READ"] = {{"ops", 3}, {"bytes", 24}};
  const json d = compare::diff_experiments(experiment("a", 409600, 409600, 10000, 10000, 100), b, {});
  ASSERT_EQ(d["only_in_experiment"].size(), 1u);
  EXPECT_EQ(d["only_in_experiment"][0]["key"], "READ");
  EXPECT_TRUE(d["only_in_baseline"].empty());
  const std::string text = compare::render_diff_text(d, 10);
  EXPECT_NE(text.find("only in the experiment: 1 rows (operation kind READ)"), std::string::npos) << text;
}

}  // namespace
}  // namespace sigmatrace::test
