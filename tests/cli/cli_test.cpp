// The `sigmatrace` command: profile and info on real runs, and one clear line for every mistake.
#include <gtest/gtest.h>
#include <unistd.h>

#include "support/file_contents.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/trace_inspection.h"

using namespace sigmatrace::test;

namespace {
std::string cli() { return build_path("bin/sigmatrace"); }
std::string workload() { return build_path("tests/bin/mark_workload"); }

void expect_one_line_error(const ProcessResult& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty()) << r.out;
  std::vector<std::string> lines = split_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("sigmatrace: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(fragment), std::string::npos) << lines[0];
}
}  // namespace

TEST(Cli, ProfileRunsTheProgramAndInfoSummarisesIt) {
  TempDir t;
  ProcessResult r = run_process({cli(), "profile", "-o", t / "exp", "--mode", "full", "--", workload(), "--threads", "2", "--marks", "1234"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "workload: 2 threads x 1234 marks\ndone\n");
  MarkTrace m = read_marks(trace_files(t / "exp").at(0));
  EXPECT_EQ(m.count_by_id[0] + m.count_by_id[1], 2468u);
  EXPECT_EQ(m.summary.meta_value("mode"), "full");

  ProcessResult info = run_process({cli(), "info", t / "exp"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("1 processes, 2 threads"), std::string::npos) << info.out;
  bool counted = false;
  for (const std::string& line : split_lines(info.out))
    counted |= line.find("user_mark") != std::string::npos && line.substr(line.find_last_of(' ') + 1) == "2468";
  EXPECT_TRUE(counted) << info.out;
  EXPECT_NE(info.out.find("ended by exit"), std::string::npos);

  ProcessResult json = run_process({cli(), "info", "--json", t / "exp"});
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_NE(json.out.find("\"user_mark\": 2468"), std::string::npos) << json.out;
}

TEST(Cli, ProfileProgramOptionsNeedNoSeparatorWhenTheyAreNotAmbiguous) {
  TempDir t;
  ProcessResult r = run_process({cli(), "profile", "-o", t / "exp", workload()}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(trace_files(t / "exp").size(), 1u);
}

TEST(Cli, ProfileRefusesAFinishedExperimentUnlessForced) {
  TempDir t;
  ASSERT_EQ(run_process({cli(), "profile", "-o", t / "exp", "--", workload()}).exit_code, 0);
  ProcessResult again = run_process({cli(), "profile", "-o", t / "exp", "--", workload()});
  expect_one_line_error(again, "holds a finished earlier run");
  ProcessResult forced = run_process({cli(), "profile", "--force", "-o", t / "exp", "--", workload()});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(trace_files(t / "exp").size(), 1u) << "--force replaces the earlier run's files";
}

TEST(Cli, DryRunPrintsTheEnvironmentToForward) {
  TempDir t;
  ProcessResult r = run_process({cli(), "profile", "--dry-run", "--mode", "aggregate", "-o", t / "exp", "--", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("export SIGMATRACE_MODE='aggregate'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("export LD_PRELOAD='" + build_path("lib/libsigmatrace.so")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-x SIGMATRACE_OUTPUT=" + (t / "exp")), std::string::npos) << r.out;
  EXPECT_NE(access((t / "exp").c_str(), F_OK), 0) << "a dry run must not start anything";
}

TEST(Cli, MistakesGetOneClearLine) {
  TempDir t;
  expect_one_line_error(run_process({cli(), "profile", "--mode", "fast", "--", "true"}), "invalid SIGMATRACE_MODE='fast'");
  expect_one_line_error(run_process({cli(), "profile", "--providers", "rccl", "--", "true"}), "unknown provider 'rccl'");
  expect_one_line_error(run_process({cli(), "profile", "--bogus", "--", "true"}), "--bogus");
  expect_one_line_error(run_process({cli(), "profile"}), "no program given");
  expect_one_line_error(run_process({cli(), "frobnicate"}), "unknown command 'frobnicate'");
  expect_one_line_error(run_process({cli()}), "no command given");
  expect_one_line_error(run_process({cli(), "info", t / "nowhere"}), "no such directory");
  expect_one_line_error(run_process({cli(), "info", t.path()}), "holds no trace files");
  ProcessResult missing = run_process({cli(), "profile", "-o", t / "exp", "--", "/nonexistent/program"});
  expect_one_line_error(missing, "cannot run '/nonexistent/program'");
  EXPECT_EQ(missing.exit_code, 127);
  ProcessOptions lots;
  lots.set_env["SIGMATRACE_BUFFER_MB"] = "lots";
  ProcessResult bad_env = run_process({cli(), "profile", "--", "true"}, lots);
  expect_one_line_error(bad_env, "invalid SIGMATRACE_BUFFER_MB='lots'");
}

TEST(Cli, VersionAndHelp) {
  ProcessResult v = run_process({cli(), "--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("sigmatrace ", 0), 0u);
  ProcessResult h = run_process({cli(), "profile", "--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("SIGMATRACE_BUFFER_MB"), std::string::npos);
  ProcessResult ih = run_process({cli(), "info", "--help"});
  EXPECT_EQ(ih.exit_code, 0);
}

TEST(Cli, InfoReportsDamagedAndUnusableFiles) {
  TempDir t;
  ASSERT_EQ(run_process({cli(), "profile", "-o", t / "exp", "--", workload(), "--marks", "100000"}).exit_code, 0);
  std::string good = trace_files(t / "exp").at(0);
  // Chop the file short in its middle chunk (a crashed node's disk) and add a file that is not a
  // trace at all.
  ASSERT_EQ(truncate(good.c_str(), static_cast<off_t>(middle_chunk_payload_offset(read_file(good)))), 0);
  FILE* f = fopen((t / "exp/bogus.r9.p1.sgt").c_str(), "w");
  fputs("not a trace", f);
  fclose(f);
  ProcessResult info = run_process({cli(), "info", t / "exp"});
  EXPECT_EQ(info.exit_code, 0) << "something usable remains";
  EXPECT_NE(info.out.find("incomplete (no end record"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("skipped files (unusable)"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("bogus.r9.p1.sgt: not a sigmatrace trace"), std::string::npos) << info.out;
  ASSERT_EQ(truncate(good.c_str(), 10), 0);
  ProcessResult none = run_process({cli(), "info", t / "exp"});
  EXPECT_EQ(none.exit_code, 1) << "nothing usable remains";
}
