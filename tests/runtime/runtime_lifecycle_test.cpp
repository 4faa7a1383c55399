// How a traced process can end, and how the profiler behaves when it must stay out of the way:
// fork, exec, termination and crash signals, bad configuration, failing providers, experiment
// directories shared by concurrent processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "format/experiment_layout.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/trace_inspection.h"

using namespace sigmatrace::test;


TEST(RuntimeLifecycle, ForkedChildRecordsNothingAndLeavesTheParentsTraceIntact) {
  TempDir t;
  ProcessResult r = run_process(workload({"--threads", "2", "--marks", "5000", "--then", "fork"}), traced(t / "exp"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("child done"), std::string::npos);
  std::vector<std::string> files = trace_files(t / "exp");
  ASSERT_EQ(files.size(), 1u) << "the child must not write a trace file";
  MarkTrace m = read_marks(files[0]);
  EXPECT_EQ(m.count_by_id[0], 5000u);
  EXPECT_EQ(m.count_by_id[1], 5000u);
  EXPECT_EQ(m.count_by_id[50], 0u) << "events of the forked child leaked into the parent's trace";
  EXPECT_EQ(m.count_by_id[60], 5000u) << "the parent stops recording after fork";
  EXPECT_TRUE(m.summary.has_file_end);
  EXPECT_STREQ(sigmatrace::analysis::exit_reason_name(m.summary.end_exit_reason), "exit");
}

TEST(RuntimeLifecycle, TerminationSignalsFlushEverything) {
  for (const char* how : {"sigterm", "sigint"}) {
    TempDir t;
    ProcessResult r = run_process(workload({"--threads", "3", "--marks", "20000", "--then", how}), traced(t / "exp"));
    EXPECT_EQ(r.term_signal, std::string(how) == "sigterm" ? SIGTERM : SIGINT) << how;
    MarkTrace m = read_marks(trace_files(t / "exp").at(0));
    for (uint64_t id = 0; id < 3; ++id) EXPECT_EQ(m.count_by_id[id], 20000u) << how;
    EXPECT_TRUE(m.summary.has_file_end) << how;
    EXPECT_STREQ(sigmatrace::analysis::exit_reason_name(m.summary.end_exit_reason), "signal");
  }
}

TEST(RuntimeLifecycle, SigtermRepeatedWhileTheFirstIsHandledStillFlushesEverything) {
  for (int run = 0; run < 5; ++run) {
    TempDir t;
    ProcessResult r = run_process(workload({"--threads", "3", "--marks", "20000", "--then", "sigterm-storm"}), traced(t / "exp"));
    EXPECT_EQ(r.term_signal, SIGTERM) << "run " << run;
    MarkTrace m = read_marks(trace_files(t / "exp").at(0));
    for (uint64_t id = 0; id < 3; ++id) EXPECT_EQ(m.count_by_id[id], 20000u) << "run " << run;
    EXPECT_TRUE(m.summary.has_file_end) << "run " << run;
    EXPECT_STREQ(sigmatrace::analysis::exit_reason_name(m.summary.end_exit_reason), "signal") << "run " << run;
  }
}

TEST(RuntimeLifecycle, AbortKeepsWhatWasRecordedAndStillDiesOfSigabrt) {
  TempDir t;
  ProcessResult r = run_process(workload({"--threads", "2", "--marks", "30000", "--then", "abort"}), traced(t / "exp"));
  EXPECT_EQ(r.term_signal, SIGABRT);
  MarkTrace m = read_marks(trace_files(t / "exp").at(0));
  EXPECT_EQ(m.count_by_id[0], 30000u);
  EXPECT_EQ(m.count_by_id[1], 30000u);
  EXPECT_STREQ(sigmatrace::analysis::exit_reason_name(m.summary.end_exit_reason), "crash");
}

TEST(RuntimeLifecycle, ExecWritesTheTraceOutAndTheNewImageTracesItself) {
  TempDir t;
  ProcessResult r = run_process(workload({"--threads", "2", "--marks", "7000", "--then", "exec"}), traced(t / "exp"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("workload phase 2"), std::string::npos);
  std::vector<std::string> files = trace_files(t / "exp");
  ASSERT_EQ(files.size(), 2u);  // same pid: the second image's file gets a suffix
  uint64_t before = 0, after = 0;
  bool saw_exec_end = false;
  for (const std::string& f : files) {
    MarkTrace m = read_marks(f);
    before += m.count_by_id[0] + m.count_by_id[1];
    after += m.count_by_id[100];
    saw_exec_end |= std::string(sigmatrace::analysis::exit_reason_name(m.summary.end_exit_reason)) == "exec";
    EXPECT_TRUE(m.summary.has_file_end) << f;
  }
  EXPECT_EQ(before, 14000u);
  EXPECT_EQ(after, 7000u);
  EXPECT_TRUE(saw_exec_end);
}

TEST(RuntimeLifecycle, BadConfigurationDisablesTheProfilerWithOneLine) {
  TempDir t;
  ProcessResult plain = run_process(workload({"--marks", "10"}));
  ProcessResult r = run_process(workload({"--marks", "10"}), traced(t / "exp", {{"SIGMATRACE_MODE", "turbo"}}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err,
            "sigmatrace: invalid SIGMATRACE_MODE='turbo' (accepted: aggregate|simple|full); profiler disabled\n");
  EXPECT_NE(access((t / "exp").c_str(), F_OK), 0) << "a disabled profiler must not create the experiment";
}

TEST(RuntimeLifecycle, DisabledByEnvironmentIsSilent) {
  TempDir t;
  ProcessResult r = run_process(workload({"--marks", "10"}), traced(t / "exp", {{"SIGMATRACE_ENABLE", "0"}}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  EXPECT_NE(access((t / "exp").c_str(), F_OK), 0);
}

TEST(RuntimeLifecycle, AFailingProviderIsDisabledAndReported) {
  TempDir t;
  ProcessResult r = run_process(workload({"--marks", "100"}), traced(t / "exp", {{"SIGMATRACE_DEBUG_FAIL_PROVIDER", "user"}}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "sigmatrace: provider user disabled: initialisation failure injected by SIGMATRACE_DEBUG_FAIL_PROVIDER\n");
  MarkTrace m = read_marks(trace_files(t / "exp").at(0));
  EXPECT_TRUE(m.marks_by_tid.empty());
  ASSERT_FALSE(m.summary.providers.empty());
  for (const auto& p : m.summary.providers) {
    if (p.name == "user") EXPECT_FALSE(p.enabled);
    else EXPECT_TRUE(p.enabled) << p.name << " must keep working: " << p.detail;
  }
  EXPECT_TRUE(m.summary.has_file_end) << "the runtime itself keeps working";
}

TEST(RuntimeLifecycle, AStartUpFailureLeavesNoLiveExperimentAndNoHeaderOnlyFile) {
  TempDir t;
  std::string dir = t / "exp";
  // The trace buffers cannot be had (an address-space limit below SIGMATRACE_BUFFER_MB): the
  // experiment directory and the trace file exist by then, and the live lock is held.
  ProcessOptions o;
  o.set_env = {{"SIGMATRACE_OUTPUT", dir}, {"SIGMATRACE_BUFFER_MB", "4096"}};
  std::string cmd = "ulimit -v 1000000 && LD_PRELOAD=" + build_path("lib/libsigmatrace.so") + " exec " +
                    build_path("tests/bin/mark_workload") + " --marks 100 --then sleep --sleep-ms 1500";
  BackgroundProcess p = start_process({"/bin/sh", "-c", cmd}, o);
  usleep(700000);  // the program now sleeps, with the profiler off
  EXPECT_TRUE(still_running(p));
  EXPECT_FALSE(sigmatrace::format::experiment_is_live(dir)) << "the failed start kept the live lock";
  ProcessResult r = wait_process(p);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "workload: 1 threads x 100 marks\ndone\n");
  EXPECT_NE(r.err.find("cannot allocate 4096 MiB of trace buffers; profiler disabled"), std::string::npos) << r.err;
  EXPECT_TRUE(trace_files(dir).empty()) << "a header-only trace file was left behind";
}

TEST(RuntimeLifecycle, SeparatelyStartedProcessesShareALiveExperiment) {
  TempDir t;
  std::string dir = t / "exp";
  // A "server" that stays alive, then a "client" started on its own with the same output.
  BackgroundProcess server = start_process(workload({"--marks", "100", "--then", "sleep", "--sleep-ms", "1500"}), traced(dir));
  bool live = false;
  for (int i = 0; i < 300 && !live; ++i, usleep(10000)) live = sigmatrace::format::experiment_is_live(dir);
  ASSERT_TRUE(live);
  ProcessResult client = run_process(workload({"--marks", "200"}), traced(dir));
  ProcessResult s = wait_process(server);
  EXPECT_EQ(client.exit_code, 0) << client.err;
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(client.err, "");
  EXPECT_EQ(trace_files(dir).size(), 2u);

  // Once both have finished, the directory holds an earlier run: a new run is refused...
  ProcessResult late = run_process(workload({"--marks", "10"}), traced(dir));
  EXPECT_EQ(late.exit_code, 0);
  EXPECT_NE(late.err.find("holds a finished earlier run"), std::string::npos) << late.err;
  EXPECT_EQ(trace_files(dir).size(), 2u);
  // ...unless forced.
  ProcessResult forced = run_process(workload({"--marks", "10"}), traced(dir, {{"SIGMATRACE_FORCE", "1"}}));
  EXPECT_EQ(forced.err, "");
  EXPECT_EQ(trace_files(dir).size(), 3u);
}

TEST(RuntimeLifecycle, ProcessesOfOneJobJoinByRunId) {
  TempDir t;
  std::string dir = t / "exp";
  for (int rank = 0; rank < 3; ++rank) {
    ProcessResult r = run_process(workload({"--marks", "10"}),
                                  traced(dir, {{"SIGMATRACE_RUN_ID", "job42"}, {"OMPI_COMM_WORLD_RANK", std::to_string(rank)}}));
    EXPECT_EQ(r.err, "") << rank;
  }
  std::vector<std::string> files = trace_files(dir);
  ASSERT_EQ(files.size(), 3u);
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_NE(files[rank].find(".r" + std::to_string(rank) + ".p"), std::string::npos) << files[rank];
  EXPECT_EQ(sigmatrace::format::manifest_run_id(dir), "job42");
}

TEST(RuntimeLifecycle, ProbingForLibrariesGivesTheSameAnswersAsWithoutTheProfiler) {
  // libsigmatrace.so exports shims named like MPI, verbs, UCX and libfabric functions; a program
  // that looks for those libraries with dlsym(RTLD_DEFAULT, ...) must not be misled by them.
  TempDir t;
  std::vector<std::string> probe = {build_path("tests/bin/symbol_probe")};
  ProcessResult plain = run_process(probe);
  ProcessResult r = run_process(probe, traced(t / "exp"));
  ASSERT_EQ(plain.exit_code, 0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(plain.out.find("MPI_Init absent"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("printf present"), std::string::npos) << plain.out;
}

TEST(RuntimeLifecycle, AnUnusableOutputDirectoryDisablesTheProfilerWithOneLine) {
  ProcessResult plain = run_process(workload({"--marks", "10"}));
  ProcessResult r = run_process(workload({"--marks", "10"}), traced("/proc/sigmatrace-cannot-be-here"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, plain.out);
  std::vector<std::string> lines = split_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("cannot create experiment directory /proc/sigmatrace-cannot-be-here"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("profiler disabled"), std::string::npos) << lines[0];
}
