// The analyze, report and sql commands as a user runs them: exit statuses, one-line errors, what is
// said about skipped and damaged files, and the sql output formats.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analysis/synthetic_experiment.h"
#include "analysis_test_util.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"

namespace sigmatrace::test {
namespace {

ProcessResult sigmatrace(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SIGMATRACE_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

analysis::SyntheticSpec small_spec() {
  analysis::SyntheticSpec s;
  s.processes = 4;
  s.hosts = 2;
  s.messages_per_qp = 4;
  return s;
}

TEST(AnalyzeCommand, MissingDirectoryIsUsageError) {
  ProcessResult r = sigmatrace({"analyze", "/nonexistent/sigmatrace-exp"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "sigmatrace: analyze: /nonexistent/sigmatrace-exp is not an experiment directory (no such directory)\n");
}

TEST(AnalyzeCommand, EmptyExperimentFails) {
  TempDir dir;
  ProcessResult r = sigmatrace({"analyze", dir.path()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sigmatrace: analyze: " + dir.path() + " holds no trace files (*.sgt)\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "aggregate.json"));
}

TEST(AnalyzeCommand, OnlyCorruptFilesFails) {
  TempDir dir;
  std::ofstream(dir / "node0.r0.p1.sgt") << "this is not a trace file at all, just text";
  ProcessResult r = sigmatrace({"analyze", dir.path()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("none of the 1 trace files in " + dir.path() + " is usable"), std::string::npos) << r.err;
}

TEST(AnalyzeCommand, DamagedExperimentAnalysesWhatIsIntactAndSaysWhatWasSkipped) {
  TempDir dir;
  analysis::SyntheticSpec spec = small_spec();
  spec.messages_per_qp = 400;
  spec.chunk_bytes = 4096;  // many chunks, so a truncated file keeps some
  analysis::SyntheticTruth truth = analysis::write_synthetic_experiment(dir.path(), spec);
  // Rank 3's file loses its second half (killed while writing); a garbage file sits next to them.
  std::string victim = truth.files[3];
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) / 2);
  std::ofstream(dir / "node9.r9.p9.sgt") << "garbage";
  ProcessResult r = sigmatrace({"analyze", dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("skipped files (unusable):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node9.r9.p9.sgt"), std::string::npos);
  EXPECT_NE(r.out.find(victim + ": no end record"), std::string::npos) << r.out;
  nlohmann::json a = read_json(dir / "aggregate.json");
  EXPECT_EQ(a["processes"].size(), 4u);
  EXPECT_EQ(a["skipped_files"].size(), 1u);
  ASSERT_EQ(a["damage"].size(), 1u);
  EXPECT_EQ(a["damage"][0]["file"], victim);
  EXPECT_EQ(a["damage"][0]["complete"], false);
  EXPECT_EQ(sql_int(dir / "trace.sqlite", "SELECT COUNT(*) FROM skipped_file"), 1);
  EXPECT_EQ(sql_int(dir / "trace.sqlite", "SELECT complete FROM process WHERE rank = 3"), 0);
  // Intact processes are complete: rank 0 sent what the generator says.
  EXPECT_EQ(a["matrices"]["rank"]["bytes"][0][1].get<uint64_t>(), truth.bytes[0][1]);
}

TEST(ReportCommand, PrintsTheSummaryAnalyzePrinted) {
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), small_spec());
  ProcessResult before = sigmatrace({"report", dir.path()});
  EXPECT_EQ(before.exit_code, 1);
  EXPECT_EQ(before.err, "sigmatrace: report: no " + dir.path() + "/aggregate.json (run `sigmatrace analyze " + dir.path() + "` first)\n");
  ProcessResult a = sigmatrace({"analyze", dir.path()});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ProcessResult r = sigmatrace({"report", dir.path()});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(a.out.substr(0, r.out.size()), r.out);
  for (const char* s : {"top connections by bytes:", "top QPs by bytes", "host matrix", "imbalance:", "egress per host",
                        "egress per rank", "heaviest pair", "errors: 0", "dropped events: 0", "coverage"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  // Every peer of the synthetic job is traced: the matrix has no "unknown" row or column.
  const size_t m = r.out.find("host matrix"), end = r.out.find("imbalance:");
  ASSERT_NE(m, std::string::npos);
  EXPECT_EQ(r.out.substr(m, end - m).find("unknown"), std::string::npos) << r.out.substr(m, end - m);
}

TEST(SqlCommand, TableCsvJsonAndErrors) {
  TempDir dir;
  analysis::write_synthetic_experiment(dir.path(), small_spec());
  ASSERT_EQ(sigmatrace({"analyze", "-q", dir.path()}).exit_code, 0);
  std::string q = "SELECT process_id, host, rank FROM process WHERE rank < 2 ORDER BY rank";
  ProcessResult csv = sigmatrace({"sql", "--csv", dir.path(), q});
  EXPECT_EQ(csv.exit_code, 0);
  EXPECT_EQ(csv.out, "process_id,host,rank\n0,node0,0\n1,node1,1\n");
  ProcessResult table = sigmatrace({"sql", dir.path(), q});
  EXPECT_EQ(table.out, "process_id  host   rank\n----------  -----  ----\n0           node0  0   \n1           node1  1   \n");
  ProcessResult js = sigmatrace({"sql", "--json", dir.path(), q});
  EXPECT_EQ(nlohmann::json::parse(js.out), nlohmann::json::parse(R"([{"process_id":0,"host":"node0","rank":0},{"process_id":1,"host":"node1","rank":1}])"));
  ProcessResult bad = sigmatrace({"sql", dir.path(), "SELECT nope FROM process"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, "sigmatrace: sql: no such column: nope\n");
}

}  // namespace
}  // namespace sigmatrace::test
