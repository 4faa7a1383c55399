// sigmatrace diff (compare/experiment_diff.h) on aggregate.json documents made by hand, so that
// every expected change is known exactly: which rows change, by how much, in which order, and
// what stays within the noise threshold.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compare/experiment_diff.h"

namespace sigmatrace::test {
namespace {

using nlohmann::json;

// Two ranks on two hosts, one RC connection: rank 0 writes `bytes0` in 100 WRITEs, rank 1 in
// 100 more of `bytes1`; each side's WRITEs took `mean` ns on average with standard deviation `sd`
// (sd < 0: no durations, as in Simple mode).
json experiment(const char* name, double bytes0, double bytes1, double mean0, double mean1, double sd) {
  json procs = json::array(), qps = json::array();
  for (int r = 0; r < 2; ++r) {
    const double bytes = r ? bytes1 : bytes0, mean = r ? mean1 : mean0;
    procs.push_back({{"process_id", r}, {"rank", r}, {"host", "h" + std::to_string(r)}, {"label", "rank " + std::to_string(r)},
                     {"by_opcode", {{"WRITE", {{"ops", 100}, {"bytes", bytes}}}}}});
    qps.push_back({{"qp_id", r}, {"process_id", r}, {"peer_process_id", 1 - r}, {"ops", 100}, {"bytes_out", bytes}, {"bytes_read", 0},
                   {"active_ns", 1e6}});
    if (sd >= 0) qps.back()["durations"] = {{"ops", 100}, {"sum_ns", 100 * mean}, {"sum_sq_ns2", 100 * (mean * mean + sd * sd)}};
  }
  return {{"format", "sigmatrace-aggregate"}, {"experiment", name}, {"processes", procs}, {"qps", qps},
          {"connections", json::array({{{"qp_a", 0}, {"qp_b", 1}, {"bytes", bytes0 + bytes1}}})},
          {"matrices", {{"host", {{"labels", {"h0", "h1", "unknown"}},
                                  {"bytes", {{0, bytes0, 0}, {bytes1, 0, 0}, {0, 0, 0}}},
                                  {"ops", {{0, 100, 0}, {100, 0, 0}, {0, 0, 0}}}}}}}};
}

std::vector<std::string> keys(const json& d) {
  std::vector<std::string> out;
  for (const json& c : d["changes"]) out.push_back(c["group"].get<std::string>() + " " + c["key"].get<std::string>());
  return out;
}

TEST(ExperimentDiff, SameRunWithinNoiseReportsNothing) {
  const json a = experiment("a", 409600, 409600, 10000, 10000, 2000);
  // 20 % slower (under the 25 % threshold); 30 % slower but from 100 operations whose spread
  // makes that within 3 standard errors (sd 200 us): jitter, not a change.
  json d = compare::diff_experiments(a, experiment("b", 409600, 409600, 12000, 12000, 2000), {});
  EXPECT_TRUE(d["changes"].empty()) << d.dump(1);
  d = compare::diff_experiments(a, experiment("b", 409600, 409600, 13000, 10000, 200000), {});
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
  EXPECT_EQ(top["changed"], json::array({"bytes", "mean_ns"}));
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
  EXPECT_EQ(d["changes"][1]["changed"], json::array({"mean_ns"}));
  // rank 0's +30 %: 3000 ns against a standard error of 70.7 ns: reported too, below rank 1's.
  EXPECT_EQ(keys(d)[2], "process pair rank 0 -> rank 1");
  // With a threshold between 30 % and the connection's 35 %, it is not.
  compare::DiffOptions strict;
  strict.threshold_percent = 33;  // the connection: +35 %
  const json s = compare::diff_experiments(experiment("a", 409600, 409600, 10000, 10000, 500),
                                           experiment("b", 409600, 409600, 13000, 14000, 500), strict);
  EXPECT_EQ(keys(s), (std::vector<std::string>{"connection rank 0 <-> rank 1 #0", "process pair rank 1 -> rank 0"}));
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
