// The binned series the HTML report plots (analysis/series.h, aggregate.json "series"): exact
// against the operations in trace.sqlite, bin by bin, and against the counters; the duration
// histograms against the durations themselves.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/kernel_names.h"
#include "analysis/series.h"
#include "analysis/synthetic_experiment.h"
#include "analysis_test_util.h"
#include "support/temp_dir.h"

namespace sigmatrace::test {
namespace {

using analysis::latency_bucket;
using analysis::latency_bucket_lower_ns;

TEST(LatencyBuckets, FourPerPowerOfTwoWithExactEdges) {
  EXPECT_EQ(latency_bucket(-5), 0u);
  EXPECT_EQ(latency_bucket(0), 0u);
  EXPECT_EQ(latency_bucket(1), 0u);
  EXPECT_EQ(latency_bucket(2), 4u);
  EXPECT_EQ(latency_bucket(3), 6u);
  EXPECT_EQ(latency_bucket(1024), 40u);
  EXPECT_EQ(latency_bucket(1279), 40u);
  EXPECT_EQ(latency_bucket(1280), 41u);
  EXPECT_EQ(latency_bucket(int64_t{1} << 62), analysis::kLatencyBuckets - 1);
  // Every bucket from 4 ns on starts where latency_bucket cuts, and holds what is below the next.
  for (unsigned b = 8; b + 1 < analysis::kLatencyBuckets; ++b) {
    const auto lo = static_cast<int64_t>(latency_bucket_lower_ns(b));
    const auto hi = static_cast<int64_t>(latency_bucket_lower_ns(b + 1));
    EXPECT_EQ(latency_bucket(lo), b) << lo;
    EXPECT_EQ(latency_bucket(hi - 1), b) << hi - 1;
  }
}

// The names NVSHMEM's and our kernels had on the H200 (cuFuncGetName), as the report labels them.
TEST(KernelNames, DemangledWithoutPrefixOrParameters) {
  using analysis::readable_kernel_name;
  EXPECT_EQ(readable_kernel_name("__nv_static_32__d5794c9a_14_nvshmem_ops_cu_main__ZN43_GLOBAL__N__d5794c9a_14_nvshmem_ops_cu_main15"
                                 "exchange_kernelEPNS_4HeapEPcS2_S2_PNS_7FetchedEmiii"),
            "exchange_kernel");
  EXPECT_EQ(readable_kernel_name("_Z36barrier_on_stream_kernel_threadgroupIL13threadgroup_t1EEvii"),
            "barrier_on_stream_kernel_threadgroup<(threadgroup_t)1>");
  EXPECT_EQ(readable_kernel_name("_Z6k_pingPmS_i"), "k_ping");
  EXPECT_EQ(readable_kernel_name("plain_c_kernel"), "plain_c_kernel");
  EXPECT_EQ(readable_kernel_name("_Znot a symbol"), "_Znot a symbol");
}

// A persistent kernel's operations, in time order: data, then control (its barrier), level after
// level; then a second launch of it. Out of file order within the reorder window, as a poller
// that parses several QPs' batches writes them.
TEST(KernelPhases, RunsOfOneKindPerLaunchInTimeOrder) {
  analysis::KernelPhases k;
  analysis::KernelPhaseBuilder b;
  struct Op {
    int64_t ts;
    uint64_t launch;
    bool data;
    uint64_t bytes;
  };
  const std::vector<Op> in_time = {{100, 1, true, 4096}, {110, 1, true, 4096}, {120, 1, false, 8}, {130, 1, false, 0},
                                   {200, 1, true, 512},  {210, 1, false, 8},   {300, 2, false, 8}, {310, 2, true, 64}};
  // File order: pairs swapped, the op ids still those of time order (as the poller parsed them).
  const size_t order[] = {1, 0, 3, 2, 5, 4, 7, 6};
  for (size_t i : order) b.add(&k, in_time[i].ts, i, in_time[i].launch, in_time[i].data, 1, in_time[i].bytes);
  b.finish();
  ASSERT_EQ(k.phases.size(), 6u);
  const bool data[] = {true, false, true, false, false, true};
  const uint64_t ops[] = {2, 2, 1, 1, 1, 1}, bytes[] = {8192, 8, 512, 8, 8, 64};
  const int64_t first[] = {100, 120, 200, 210, 300, 310}, last[] = {110, 130, 200, 210, 300, 310};
  const uint32_t launch[] = {0, 0, 0, 0, 1, 1};
  for (size_t i = 0; i < k.phases.size(); ++i) {
    EXPECT_EQ(k.phases[i].data, data[i]) << i;
    EXPECT_EQ(k.phases[i].ops, ops[i]) << i;
    EXPECT_EQ(k.phases[i].bytes, bytes[i]) << i;
    EXPECT_EQ(k.phases[i].first_ns, first[i]) << i;
    EXPECT_EQ(k.phases[i].last_ns, last[i]) << i;
    EXPECT_EQ(k.phases[i].launch, launch[i]) << i << ": a control phase in a new launch is a new phase";
  }
  EXPECT_EQ(k.launches, 2u);
  EXPECT_EQ(k.ops_out_of_order, 0u) << "the window put them in order";
  EXPECT_EQ(k.dropped, 0u);
}

TEST(KernelPhases, BoundedAndLateOperationsCounted) {
  analysis::KernelPhases k;
  analysis::KernelPhaseBuilder b;
  const size_t phases = analysis::kMaxKernelPhases + 3;
  uint64_t id = 0;
  for (size_t p = 0; p < phases; ++p)
    for (int op = 0; op < 2; ++op, ++id) b.add(&k, static_cast<int64_t>(id * 10), id, 7, p % 2 == 0, 1, 16);
  b.finish();
  EXPECT_EQ(k.phases.size(), analysis::kMaxKernelPhases);
  EXPECT_EQ(k.dropped, 3u);
  EXPECT_EQ(k.phases.back().ops, 2u) << "the last phase kept is whole; the dropped ones do not grow it";

  // An operation older than everything the window still holds is placed late, and counted.
  analysis::KernelPhases late;
  analysis::KernelPhaseBuilder b2;
  for (uint64_t i = 0; i <= analysis::kPhaseReorderOps; ++i) b2.add(&late, static_cast<int64_t>(1000 + i), i, 1, true, 1, 16);
  b2.add(&late, 5, analysis::kPhaseReorderOps + 1, 1, true, 1, 16);
  b2.finish();
  EXPECT_EQ(late.ops_out_of_order, 1u);
  ASSERT_EQ(late.phases.size(), 1u);
  EXPECT_EQ(late.phases[0].ops, analysis::kPhaseReorderOps + 2);
}

analysis::SyntheticSpec spec(bool full) {
  analysis::SyntheticSpec s;
  s.processes = 4;
  s.hosts = 2;
  s.qps_per_pair = 2;
  s.messages_per_qp = 40;
  s.opcodes = {2 /*SEND*/, 0 /*WRITE*/, 4 /*READ*/, 6 /*ATOMIC_FA*/};
  s.full_mode = full;
  return s;
}

const char* kTraffic = "opcode NOT IN ('RECV', 'LOCAL_INV', 'BIND_MW', 'UNKNOWN', 'NOP')";

// Every host's bytes and operations, bin by bin, are the operations of trace.sqlite posted in it.
void expect_bins_are_the_operations(const std::string& dir, const nlohmann::json& series) {
  const int64_t start = series["start_ns"].get<int64_t>(), width = series["bin_ns"].get<int64_t>();
  const size_t bins = series["bins"].get<size_t>();
  ASSERT_GE(bins, 1u);
  ASSERT_LE(bins, analysis::kSeriesBins);
  ASSERT_FALSE(series["hosts"].empty());
  const std::string db = dir + "/trace.sqlite";
  for (const auto& h : series["hosts"]) {
    const std::string host = h["host"].get<std::string>(), layer = h["layer"].get<std::string>();
    std::vector<uint64_t> bytes(bins, 0), ops(bins, 0);
    for (const std::string& row :
         sql_rows(db, "SELECT (ts_ns - " + std::to_string(start) + ") / " + std::to_string(width) + ", SUM(bytes), SUM(wr_count) FROM op JOIN process USING(process_id)"
                      " WHERE host = '" + host + "' AND layer = '" + layer + "' AND " + kTraffic + " GROUP BY 1")) {
      const size_t bar = row.find('|'), bar2 = row.find('|', bar + 1);
      const size_t b = std::stoul(row.substr(0, bar));
      ASSERT_LT(b, bins) << "an operation of " << host << " falls after the series' window";
      bytes[b] = std::stoull(row.substr(bar + 1, bar2 - bar - 1));
      ops[b] = std::stoull(row.substr(bar2 + 1));
    }
    EXPECT_EQ(h["bytes"].get<std::vector<uint64_t>>(), bytes) << host;
    EXPECT_EQ(h["ops"].get<std::vector<uint64_t>>(), ops) << host;
  }
}

TEST(Series, FullModeBinsAndTotalsAreExact) {
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), spec(true));
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  const nlohmann::json& a = run.aggregate_json;
  const nlohmann::json& s = a["series"];
  expect_bins_are_the_operations(dir.path(), s);

  uint64_t moved = 0, series_bytes = 0;
  for (const auto& h : a["hosts"]) moved += h["bytes_out"].get<uint64_t>() + h["bytes_read"].get<uint64_t>();
  for (const auto& h : s["hosts"]) series_bytes += h["total_bytes"].get<uint64_t>();
  EXPECT_EQ(series_bytes, moved);
  EXPECT_EQ(s["untimed_ops"].get<uint64_t>(), 0u);

  // The busiest QPs, most bytes first, each its own operations.
  EXPECT_EQ(s["qps_with_traffic"].get<size_t>(), 16u);
  ASSERT_EQ(s["top_qps"].size(), 8u);
  for (size_t i = 1; i < s["top_qps"].size(); ++i)
    EXPECT_GE(s["top_qps"][i - 1]["total_bytes"].get<uint64_t>(), s["top_qps"][i]["total_bytes"].get<uint64_t>());
  for (const auto& q : s["top_qps"])
    EXPECT_EQ(q["total_bytes"].get<int64_t>(),
              sql_int(dir / "trace.sqlite", "SELECT SUM(bytes) FROM op WHERE qp_id = " + std::to_string(q["qp_id"].get<int64_t>()) + " AND " + kTraffic));

  // Durations: one histogram per (layer, opcode) with every operation that has one; its median
  // is the lower edge of the bucket holding the true median.
  ASSERT_FALSE(s["latency"].empty());
  for (const auto& h : s["latency"]) {
    const std::string where = " FROM op WHERE layer = '" + h["layer"].get<std::string>() + "' AND opcode = '" + h["opcode"].get<std::string>() +
                              "' AND dur_ns IS NOT NULL AND is_call = 0";
    const int64_t n = sql_int(dir / "trace.sqlite", "SELECT COUNT(*)" + where);
    EXPECT_EQ(h["ops"].get<int64_t>(), n) << h["opcode"];
    EXPECT_EQ(h["min_ns"].get<int64_t>(), sql_int(dir / "trace.sqlite", "SELECT MIN(dur_ns)" + where));
    EXPECT_EQ(h["max_ns"].get<int64_t>(), sql_int(dir / "trace.sqlite", "SELECT MAX(dur_ns)" + where));
    uint64_t in_buckets = 0;
    for (const auto& b : h["buckets"]) in_buckets += b["ops"].get<uint64_t>();
    EXPECT_EQ(in_buckets, static_cast<uint64_t>(n));
    const int64_t median = sql_int(dir / "trace.sqlite", "SELECT dur_ns" + where + " ORDER BY dur_ns LIMIT 1 OFFSET " + std::to_string((n - 1) / 2));
    const double p50 = h["p50_ns"].get<double>();
    EXPECT_LE(p50, static_cast<double>(median)) << h["opcode"];
    EXPECT_GT(p50 * 1.25, static_cast<double>(median)) << h["opcode"];
  }
}

TEST(Series, SimpleModeHasBinsButNoDurations) {
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), spec(false));
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  expect_bins_are_the_operations(dir.path(), run.aggregate_json["series"]);
  EXPECT_TRUE(run.aggregate_json["series"]["latency"].empty()) << "a post call's duration is not its operation's";
}

}  // namespace
}  // namespace sigmatrace::test
