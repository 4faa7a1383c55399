// NVTX ranges recorded around verbs_probe's phases over softnic: every operation lands in the
// range it was posted in; a million ranges without drops; another tool's injection left alone.
// Skipped, with the reason, while build/softnic, the programs or the NVTX headers are absent.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "support/pair_runner.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"
#include "support/trace_events.h"
#include "verbs/softnic_runs.h"

using namespace sigmatrace::test;
using namespace sigmatrace::test::softnic_runs;
using sigmatrace::format::AggregateKey;
using sigmatrace::format::EventType;

namespace {

// ---- NVTX: verbs_probe inside known ranges (probe_ranges.h) -----------------------------------

class NvtxRanges : public ::testing::TestWithParam<std::string> {};

// Every operation lands in exactly the range the program posted it in, with the range's domain,
// registered-string name, nesting, and its NCCL-like payload decoded; the program's own output is
// unchanged by tracing.
TEST_P(NvtxRanges, EveryOperationLandsInItsRange) {
  const std::string exe = build_path("tests/bin/verbs_probe_nvtx");
  if (!file_exists(exe)) GTEST_SKIP() << "verbs_probe_nvtx not built (no NVTX headers from a CUDA toolkit)";
  REQUIRE_SOFTNIC_AND(exe);
  const std::string mode = GetParam();
  const std::vector<std::string> argv = {exe, "--writes", "25", "--size", "64"};
  TempDir t;
  PairRun traced = traced_like_plain(argv, mode, t / "exp");
  ASSERT_EQ(traced.client.exit_code, 0) << traced.client.err;
  const std::string dir = t / "exp";
  ProcessResult analyzed = analyze_experiment(dir);
  if (skipped_for_sqlite(analyzed)) GTEST_SKIP() << analyzed.err;
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  expect_valid_timeline(dir);
  auto sql = [&](const std::string& q) {
    std::string text;
    for (const std::string& row : sql_rows(dir, q)) text += row + "\n";
    return text;
  };
  EXPECT_EQ(sql("SELECT kind, COALESCE(domain, '-'), path, depth, ended FROM range ORDER BY range_id"),
            "start,-,probe,0,1\n"
            "push,-,probe / classic writes,1,1\n"
            "push,verbs_probe,probe / classic writes / batch 0,2,1\n"
            "push,verbs_probe,probe / classic writes / batch 1,2,1\n"
            "push,verbs_probe,probe / classic writes / batch 2,2,1\n"
            "push,verbs_probe,probe / wr api,1,1\n"
            "push,-,probe / sends,1,1\n"
            "mark,-,probe / bad rkey,1,1\n"
            "push,-,probe / bad rkey write,1,1\n");
  EXPECT_EQ(sql("SELECT payload FROM range WHERE name = 'wr api'"),
            "Communicator=12648430 Message size [bytes]=3200 Reduction operation=ncclMax\n");
  // What each range holds (each operation in its innermost range; receives in "sends").
  EXPECT_EQ(sql("SELECT r.path, o.opcode, sum(o.wr_count), sum(o.bytes) FROM op o LEFT JOIN range r USING (range_id) "
                "GROUP BY r.path, o.opcode ORDER BY r.path, o.opcode"),
            "probe / bad rkey write,WRITE,1,16\n"
            "probe / classic writes / batch 0,WRITE,10,640\n"
            "probe / classic writes / batch 1,WRITE,10,640\n"
            "probe / classic writes / batch 2,WRITE,5,320\n"
            "probe / sends,RECV,20,1280\n"
            "probe / sends,SEND,20,1280\n"
            "probe / wr api,WRITE,50,3200\n");
  EXPECT_EQ(sql("SELECT count(*) FROM op WHERE range_id IS NULL"), "0\n");
  std::ifstream a(dir + "/aggregate.json");
  const nlohmann::json j = nlohmann::json::parse(a);
  EXPECT_EQ(j["processes"][0]["nvtx"].dump(), R"({"marks":1,"not_ended":0,"ranges":8,"undecoded_payloads":0,"unmatched_ends":0})");
  bool saw_wr_api = false;
  for (const auto& r : j["nvtx_ranges"])
    if (r["name"] == "wr api") {
      saw_wr_api = true;
      EXPECT_EQ(r.dump(), R"({"bytes":3200,"count":1,"distinct_payloads":1,"domain":"verbs_probe","kernel_launches":0,"marks":0,"max_ns":)" +
                              r["max_ns"].dump() +
                              R"(,"name":"wr api","ops":50,"payloads":[{"count":1,"payload":"Communicator=12648430 Message size [bytes]=3200 Reduction operation=ncclMax"}],"processes":1,"total_ns":)" +
                              r["total_ns"].dump() + "}");
    }
  EXPECT_TRUE(saw_wr_api);
  // The summary names the ranges and the work in them.
  ProcessResult report = run_process({build_path("bin/sigmatrace"), "report", dir});
  EXPECT_NE(report.out.find("NVTX ranges by total time"), std::string::npos) << report.out;
  EXPECT_TRUE(std::regex_search(report.out, std::regex("verbs_probe / wr api +1 x +[0-9.]+ s +50 ops +3.1 KiB"))) << report.out;
  // Analysed as one shard and merged: the same ranges and the same work in them.
  ASSERT_EQ(analyze_experiment(dir, {"--shard", "0/1"}).exit_code, 0);
  ProcessResult merged = run_process({build_path("bin/sigmatrace"), "merge", dir});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  std::ifstream m(dir + "/aggregate.json");
  EXPECT_EQ(nlohmann::json::parse(m)["nvtx_ranges"], j["nvtx_ranges"]);
  EXPECT_EQ(sql_rows(dir, "SELECT count(*) FROM op WHERE range_id IS NULL"), std::vector<std::string>{"0"});
}

INSTANTIATE_TEST_SUITE_P(Modes, NvtxRanges, ::testing::Values("simple", "full"), [](const auto& info) { return info.param; });

// 10^6 ranges, two deep, a pair per microsecond (8 M events/s at its peak: ranges around real
// work come slower), recorded without a drop and every one of them found by the analysis.
TEST(NvtxRanges, AMillionRangesWithoutDrops) {
  const std::string exe = build_path("tests/bin/verbs_probe_nvtx");
  if (!file_exists(exe)) GTEST_SKIP() << "verbs_probe_nvtx not built (no NVTX headers from a CUDA toolkit)";
  REQUIRE_SOFTNIC_AND(exe);
  TempDir t;
  const std::string st = build_path("bin/sigmatrace"), dir = t / "exp";
  ProcessOptions o;
  o.unset_env = {"SIGMATRACE_MODE", "SIGMATRACE_PROVIDERS", "LD_PRELOAD", "NVTX_INJECTION64_PATH"};
  o.set_env["SIGMATRACE_RUN_ID"] = "nvtx-million";
  ProcessResult run = run_process({st, "profile", "--softnic", "-o", dir, "--", exe, "--only-ranges", "1000000", "--range-gap-ns", "1000"}, o);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "ranges=1000000\n");
  ProcessResult info = run_process({st, "info", dir});
  EXPECT_NE(info.out.find(" 0 dropped"), std::string::npos) << info.out;
  ProcessResult analyzed = analyze_experiment(dir, {"--no-perfetto"});
  if (skipped_for_sqlite(analyzed)) GTEST_SKIP() << analyzed.err;
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  EXPECT_EQ(sql_rows(dir, "SELECT name, depth, count(*), sum(ended) FROM range GROUP BY name, depth ORDER BY name"),
            (std::vector<std::string>{"inner,1,500000,500000", "outer,0,500000,500000"}));
}
// A program whose NVTX_INJECTION64_PATH names another tool's library (Nsight Systems' place) is
// left to it: no NVTX event recorded, the nvtx provider off with the reason, the output unchanged.
TEST(NvtxRanges, AnotherToolsInjectionIsLeftAlone) {
  const std::string exe = build_path("tests/bin/verbs_probe_nvtx");
  if (!file_exists(exe)) GTEST_SKIP() << "verbs_probe_nvtx not built (no NVTX headers from a CUDA toolkit)";
  REQUIRE_SOFTNIC_AND(exe);
  // A real library without NVTX's entry point: NVTX loads it, finds nothing and stays a no-op.
  const std::map<std::string, std::string> env = {{"NVTX_INJECTION64_PATH", softnic_dir() + "/libibverbs.so.1"}};
  const std::vector<std::string> argv = {exe, "--writes", "10"};
  TempDir t;
  PairRun plain = run_pair_once_more_on_timeout({}, argv, "", "", env);
  PairRun traced = run_pair_once_more_on_timeout({}, argv, "simple", t / "exp", env);
  ASSERT_EQ(traced.client.exit_code, 0) << traced.client.err;
  EXPECT_EQ(shape(traced.client.out), shape(plain.client.out));
  ASSERT_EQ(traced.procs.size(), 1u);
  const ProcessEvents& p = traced.procs[0];
  EXPECT_EQ(p.count(EventType::nvtx_begin) + p.count(EventType::nvtx_domain) + p.count(EventType::nvtx_end), 0u);
  const std::string dir = t / "exp";
  ProcessResult analyzed = analyze_experiment(dir, {"--no-perfetto"});
  if (skipped_for_sqlite(analyzed)) GTEST_SKIP() << analyzed.err;
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  EXPECT_EQ(sql_rows(dir, "SELECT enabled, detail FROM provider WHERE name = 'nvtx'"),
            std::vector<std::string>{"0,\"NVTX_INJECTION64_PATH names another tool's injection library (" + softnic_dir() +
                                     "/libibverbs.so.1): NVTX is left to it, no ranges recorded\""});
}

}  // namespace
