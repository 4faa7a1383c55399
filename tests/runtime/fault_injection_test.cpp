// Faults the profiler must survive without harming the traced program, each asserting that the
// program's output and exit status are what they are without the profiler and that the experiment
// says exactly what was lost: a full disk, SIGKILL, an overloaded writer, exec into a program that
// records nothing, nested profilers, damaged and concatenated traces. docs/reliability.md lists
// them with their outcomes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "support/file_contents.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"
#include "support/trace_inspection.h"

using namespace sigmatrace::test;

namespace {

std::string cli() { return build_path("bin/sigmatrace"); }

size_t count_lines_with(const std::string& text, const std::string& fragment) {
  size_t n = 0;
  for (const std::string& l : split_lines(text)) n += l.find(fragment) != std::string::npos;
  return n;
}

// Per thread of a mark trace: marks in the file, and the thread's own summary.
struct ThreadMarks {
  uint64_t in_file = 0;
  const sigmatrace::analysis::ThreadSummary* summary = nullptr;
};
std::vector<ThreadMarks> mark_threads(const MarkTrace& m) {
  std::vector<ThreadMarks> out;
  for (const auto& [tid, t] : m.summary.threads) {
    if (tid == 0 || t.name.empty()) continue;
    auto it = m.marks_by_tid.find(tid);
    out.push_back({it == m.marks_by_tid.end() ? 0 : it->second.size(), &t});
  }
  return out;
}

}  // namespace

// The output directory on a 64 KiB tmpfs: the disk fills a few chunks into the run. The program
// runs on unchanged; the file is cut back to its last whole chunk and still gets its summary.
TEST(FaultInjection, DiskFullCountsEveryLostEventAndTheProgramRunsOn) {
  if (geteuid() != 0) GTEST_SKIP() << "skipped: needs root for a private tmpfs mount (unshare -m)";
  if (find_program("unshare").empty()) GTEST_SKIP() << "skipped: unshare (util-linux) not installed";
  TempDir t;
  const std::string mnt = t / "small";
  ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
  constexpr uint64_t kMarks = 500000;
  // Inside one mount namespace: the traced run on the full tmpfs, then a copy of the experiment
  // to the test's directory, where the test reads it.
  // Only the workload is traced (not sh, mount or cp, which would try to write traces there too).
  std::string script =
      "mount -t tmpfs -o size=64k tmpfs \"$0\" || exit 99; "
      "LD_PRELOAD=\"$FAULT_PRELOAD\" SIGMATRACE_OUTPUT=\"$0/exp\" \"$@\"; rc=$?; cp -r \"$0/exp\" \"$0.copy\"; exit $rc";
  std::vector<std::string> argv = {"unshare", "-m", "sh", "-c", script, mnt};
  for (const std::string& a : workload({"--threads", "2", "--marks", std::to_string(kMarks)})) argv.push_back(a);
  ProcessResult plain = run_process(workload({"--threads", "2", "--marks", std::to_string(kMarks)}));
  ProcessOptions o;
  o.set_env["FAULT_PRELOAD"] = build_path("lib/libsigmatrace.so");
  ProcessResult r = run_process(argv, o);
  if (r.exit_code == 99) GTEST_SKIP() << "skipped: this machine does not allow a tmpfs mount: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(count_lines_with(r.err, "No space left on device"), 1u) << r.err;
  EXPECT_EQ(split_lines(r.err).size(), 1u) << "one line says it, once: " << r.err;
  std::vector<std::string> files = trace_files(mnt + ".copy");
  ASSERT_EQ(files.size(), 1u);
  MarkTrace m = read_marks(files[0]);
  ASSERT_TRUE(m.summary.write_failure.failed) << "the summary after the failure was not written";
  EXPECT_EQ(m.summary.write_failure.error, "No space left on device");
  EXPECT_GT(m.summary.write_failure.events_lost, 0u);
  EXPECT_TRUE(m.summary.has_file_end);
  EXPECT_TRUE(m.summary.losses.empty()) << "the file must end on a whole chunk: " << m.summary.losses.at(0).reason;
  std::vector<ThreadMarks> threads = mark_threads(m);
  ASSERT_EQ(threads.size(), 2u);
  uint64_t chunks_dropped = 0;
  for (const ThreadMarks& th : threads) {
    // Every mark is in the file or counted as dropped: nothing vanishes.
    EXPECT_EQ(th.in_file + th.summary->events_dropped, kMarks) << "tid " << th.summary->tid;
    chunks_dropped += th.summary->chunks_dropped;
  }
  EXPECT_GT(chunks_dropped, 0u);
  ProcessResult info = run_process({cli(), "info", mnt + ".copy"});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("writes failed (No space left on device)"), std::string::npos) << info.out;
}

// A file-size limit (RLIMIT_FSIZE) stands for a disk that fills at any byte, also exactly where a
// chunk ends, so that cutting the file back to its last whole chunk frees nothing. 64 threads
// are still running at exit, so the summary (a name and a summary per thread) is larger than a
// 4 KiB chunk: the file must give chunks back to make room for it, and say what it gave.
TEST(FaultInjection, AFileSizeLimitAnywhereStillLeavesTheSummaryAndCountsWhatItCost) {
  if (find_program("prlimit").empty()) GTEST_SKIP() << "skipped: prlimit (util-linux) not installed";
  constexpr uint64_t kThreads = 64, kMarks = 2000;
  std::vector<std::string> args = workload({"--threads", std::to_string(kThreads), "--marks", std::to_string(kMarks),
                                            "--then", "exit-holding", "--sleep-ms", "100"});
  ProcessResult plain = run_process(args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (uint64_t limit : {12000, 20480, 33333, 40960, 57000}) {
    SCOPED_TRACE("limit " + std::to_string(limit) + " bytes");
    TempDir t;
    // Only the workload is traced, not prlimit or env.
    std::vector<std::string> argv = {"prlimit", "--fsize=" + std::to_string(limit), "env",
                                     "LD_PRELOAD=" + build_path("lib/libsigmatrace.so")};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessOptions o;
    o.set_env["SIGMATRACE_OUTPUT"] = t / "exp";
    o.set_env["SIGMATRACE_CHUNK_KB"] = "4";
    ProcessResult r = run_process(argv, o);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, plain.out);
    EXPECT_EQ(split_lines(r.err).size(), 1u) << "one line says it, once: " << r.err;
    EXPECT_EQ(count_lines_with(r.err, "File too large"), 1u) << r.err;
    std::vector<std::string> files = trace_files(t / "exp");
    ASSERT_EQ(files.size(), 1u);
    MarkTrace m = read_marks(files[0]);
    ASSERT_TRUE(m.summary.write_failure.failed) << "the summary after the failure was not written";
    EXPECT_EQ(m.summary.write_failure.error, "File too large");
    EXPECT_TRUE(m.summary.has_file_end);
    EXPECT_TRUE(m.summary.losses.empty()) << "the file must end on a whole chunk: " << m.summary.losses.at(0).reason;
    EXPECT_EQ(m.summary.end_chunks_written, m.summary.chunks);
    EXPECT_EQ(m.summary.end_events_written, m.summary.events);
    std::vector<ThreadMarks> threads = mark_threads(m);
    ASSERT_EQ(threads.size(), kThreads);
    uint64_t dropped = 0;
    for (const ThreadMarks& th : threads) {
      EXPECT_EQ(th.in_file + th.summary->events_dropped, kMarks) << "tid " << th.summary->tid;
      dropped += th.summary->events_dropped;
    }
    EXPECT_EQ(dropped, m.summary.write_failure.events_lost) << "the threads' losses are the failure's";
  }
}

// SIGKILL while the threads hold partly filled chunks: the whole chunks are read, and the last
// progress record says how many recorded events never reached the file.
TEST(FaultInjection, SigkillKeepsWholeChunksAndInfoCountsTheMissingEvents) {
  TempDir t;
  constexpr uint64_t kMarks = 100000;
  // 64 KiB chunks hold 2048 marks (32 bytes each in memory): 48 whole chunks per thread, and
  // 100000 - 48 * 2048 = 1696 marks in the chunk the kill destroys.
  BackgroundProcess p = start_process(
      workload({"--threads", "2", "--marks", std::to_string(kMarks), "--then", "hold", "--sleep-ms", "30000"}),
      traced(t / "exp", {{"SIGMATRACE_CHUNK_KB", "64"}, {"SIGMATRACE_CLOCK_SYNC_MS", "20"}}));
  ASSERT_GT(p.pid, 0);
  // Wait until a progress record shows both threads done recording.
  bool ready = false;
  for (int i = 0; i < 200 && !ready; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::vector<std::string> files = trace_files(t / "exp");
    if (files.empty()) continue;
    MarkTrace m = read_marks(files[0]);
    size_t done = 0;
    for (const ThreadMarks& th : mark_threads(m)) done += th.summary->progress_recorded == kMarks;
    ready = done == 2;
  }
  ASSERT_TRUE(ready) << "no progress record with both threads' marks";
  kill(p.pid, SIGKILL);
  ProcessResult r = wait_process(p);
  EXPECT_EQ(r.term_signal, SIGKILL);
  MarkTrace m = read_marks(trace_files(t / "exp").at(0));
  EXPECT_FALSE(m.summary.has_file_end);
  EXPECT_TRUE(m.summary.losses.empty());
  for (const ThreadMarks& th : mark_threads(m)) {
    EXPECT_EQ(th.in_file, 48u * 2048u) << "tid " << th.summary->tid;
    EXPECT_EQ(th.summary->progress_recorded - th.in_file, 1696u) << "tid " << th.summary->tid;
  }
  EXPECT_EQ(m.summary.events_missing_at_least(), 2u * 1696u);
  ProcessResult info = run_process({cli(), "info", t / "exp"});
  EXPECT_NE(info.out.find("incomplete (no end record: killed or crashed), at least 3392 events missing"), std::string::npos)
      << info.out;
}

// A writer that cannot keep up (20 ms per 16 KiB chunk) makes the program's threads drop and
// count, never wait: blocking would take at least 2344 chunks x 20 ms = 47 s.
TEST(FaultInjection, AnOverloadedWriterNeverBlocksTheProgram) {
  TempDir t;
  constexpr uint64_t kMarks = 300000;
  std::vector<std::string> args = {"--threads", "4", "--marks", std::to_string(kMarks)};
  ProcessResult plain = run_process(workload(args));
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult r = run_process(workload(args), traced(t / "exp", {{"SIGMATRACE_BUFFER_MB", "1"},
                                                                        {"SIGMATRACE_CHUNK_KB", "16"},
                                                                        {"SIGMATRACE_DEBUG_WRITER_DELAY_US", "20000"}}));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  // The final flush writes what is buffered (at most the 1 MiB pool: 64 chunks x 20 ms).
  EXPECT_LT(seconds, 20.0);
  MarkTrace m = read_marks(trace_files(t / "exp").at(0));
  uint64_t dropped = 0;
  for (const ThreadMarks& th : mark_threads(m)) {
    EXPECT_EQ(th.in_file + th.summary->events_dropped, kMarks);
    dropped += th.summary->events_dropped;
  }
  EXPECT_GT(dropped, 0u);
}

// Each termination signal while the writer is busy with a chunk (20 ms per chunk): everything
// recorded is written before the signal takes its default action.
TEST(FaultInjection, TerminationSignalsWhileTheWriterIsMidChunkLoseNothing) {
  const std::pair<const char*, int> kSignals[] = {{"sigterm", SIGTERM}, {"sigint", SIGINT}, {"sighup", SIGHUP}, {"sigquit", SIGQUIT}};
  for (const auto& [how, sig] : kSignals) {
    TempDir t;
    ProcessResult r = run_process(workload({"--threads", "3", "--marks", "20000", "--then", how}),
                                  traced(t / "exp", {{"SIGMATRACE_CHUNK_KB", "64"}, {"SIGMATRACE_DEBUG_WRITER_DELAY_US", "20000"}}));
    EXPECT_EQ(r.term_signal, sig) << how;
    MarkTrace m = read_marks(trace_files(t / "exp").at(0));
    for (uint64_t id = 0; id < 3; ++id) EXPECT_EQ(m.count_by_id[id], 20000u) << how;
    EXPECT_TRUE(m.summary.has_file_end) << how;
    EXPECT_STREQ(sigmatrace::analysis::exit_reason_name(m.summary.end_exit_reason), "signal") << how;
  }
}

// The program installs its own SIGTERM handler after the profiler's and ends it with _exit, as
// servers and MPI runtimes do: no exit handler runs, yet everything recorded is on disk.
TEST(FaultInjection, AProgramsOwnSignalHandlerThatCallsUnderscoreExitLosesNothing) {
  TempDir t;
  std::vector<std::string> args = {"--threads", "3", "--marks", "20000", "--then", "own-handler"};
  ProcessResult plain = run_process(workload(args));
  ASSERT_EQ(plain.exit_code, 3);
  ProcessResult r = run_process(workload(args), traced(t / "exp"));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out, plain.out);
  MarkTrace m = read_marks(trace_files(t / "exp").at(0));
  for (uint64_t id = 0; id < 3; ++id) EXPECT_EQ(m.count_by_id[id], 20000u);
  EXPECT_TRUE(m.summary.has_file_end);
}

// Thread churn: 2000 short threads, eight at a time, with 64 thread slots. Slots of exited
// threads are reused once the writer has summarised them, so far more than 64 threads are
// recorded; whatever could not get a slot is counted, and every mark is accounted for.
TEST(FaultInjection, ThreadChurnReusesSlotsAndAccountsForEveryEvent) {
  TempDir t;
  constexpr int kThreads = 2000;
  std::vector<std::string> args = {"--threads", std::to_string(kThreads), "--marks", "50", "--batch", "8"};
  ProcessResult plain = run_process(workload(args));
  ProcessResult r = run_process(workload(args), traced(t / "exp", {{"SIGMATRACE_MAX_THREADS", "64"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  MarkTrace m = read_marks(trace_files(t / "exp").at(0));
  uint64_t in_file = 0;
  size_t recorded_threads = 0;
  for (const auto& [id, n] : m.count_by_id) {
    in_file += n;
    EXPECT_EQ(n, 50u) << "a thread's marks are all kept or (no slot at all) all dropped, id " << id;
  }
  recorded_threads = m.count_by_id.size();
  EXPECT_GT(recorded_threads, 10u * 64u) << "slots of exited threads are not reused";
  EXPECT_EQ(in_file + m.summary.events_dropped(), uint64_t{kThreads} * 50u);
  ASSERT_TRUE(m.summary.has_file_end);
  size_t summaries = 0;
  for (const auto& [tid, th] : m.summary.threads) summaries += th.has_summary && tid != 0;
  EXPECT_EQ(summaries, recorded_threads) << "every recorded thread has its own summary";
}

// fork + exec: the child's new image traces itself into a file of its own; the parent's is whole.
TEST(FaultInjection, AForkedChildThatExecsTracesItselfInItsOwnFile) {
  TempDir t;
  std::vector<std::string> args = {"--threads", "2", "--marks", "3000", "--then", "fork-exec"};
  ProcessResult plain = run_process(workload(args));
  ProcessResult r = run_process(workload(args), traced(t / "exp"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  std::vector<std::string> files = trace_files(t / "exp");
  ASSERT_EQ(files.size(), 2u);
  uint64_t parent = 0, child = 0;
  for (const std::string& f : files) {
    MarkTrace m = read_marks(f);
    EXPECT_TRUE(m.summary.has_file_end) << f;
    parent += m.count_by_id[0] + m.count_by_id[1];
    child += m.count_by_id[100];
    EXPECT_TRUE((m.count_by_id[0] == 0) != (m.count_by_id[100] == 0)) << "one process per file: " << f;
  }
  EXPECT_EQ(parent, 6000u);
  EXPECT_EQ(child, 3000u);
}

// exec into a program that records nothing: the first image's trace is complete, the second
// image gets a file of its own, and the output is the same as without the profiler.
TEST(FaultInjection, ExecIntoAProgramThatRecordsNothing) {
  TempDir t;
  std::vector<std::string> args = {"--marks", "5000", "--then", "exec-other"};
  ProcessResult plain = run_process(workload(args));
  ProcessResult r = run_process(workload(args), traced(t / "exp"));
  ASSERT_EQ(r.exit_code, plain.exit_code) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err, plain.err);
  std::vector<std::string> files = trace_files(t / "exp");
  ASSERT_EQ(files.size(), 2u);
  size_t complete = 0, marks = 0;
  for (const std::string& f : files) {
    MarkTrace m = read_marks(f);
    complete += m.summary.has_file_end;
    marks += m.count_by_id[0];
  }
  EXPECT_EQ(complete, 2u);
  EXPECT_EQ(marks, 5000u);
}

// `sigmatrace profile` inside mpirun inside `sigmatrace profile`: every process image is traced
// once, the workload into the innermost experiment.
TEST(FaultInjection, NestedProfilersTraceTheWorkloadOnceInTheInnermostExperiment) {
  std::string mpirun = find_program("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "skipped: mpirun (Open MPI) not installed";
  TempDir t;
  std::vector<std::string> mpi = {mpirun, "--oversubscribe", "-np", "2"};
  if (geteuid() == 0) mpi.insert(mpi.begin() + 1, "--allow-run-as-root");
  const std::vector<std::string> program = workload({"--marks", "1000"});
  std::vector<std::string> plain_argv = mpi;
  plain_argv.insert(plain_argv.end(), program.begin(), program.end());
  ProcessResult plain = run_process(plain_argv);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  // sigmatrace profile -o outer -- mpirun ... sigmatrace profile -o inner -- mark_workload
  std::vector<std::string> argv = {cli(), "profile", "-o", t / "outer", "--"};
  argv.insert(argv.end(), mpi.begin(), mpi.end());
  for (const std::string& a : {cli(), std::string("profile"), std::string("-o"), t / "inner", std::string("--")}) argv.push_back(a);
  argv.insert(argv.end(), program.begin(), program.end());
  ProcessResult r = run_process(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two ranks print concurrently: the same lines, in either order.
  std::vector<std::string> got = split_lines(r.out), want = split_lines(plain.out);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  std::vector<std::string> in_files = trace_files(t / "inner");
  ASSERT_EQ(in_files.size(), 2u);
  for (const std::string& f : in_files) {
    MarkTrace m = read_marks(f);
    EXPECT_EQ(m.count_by_id[0], 1000u) << f;
    EXPECT_TRUE(m.summary.has_file_end) << f;
  }
  for (const std::string& f : trace_files(t / "outer")) EXPECT_EQ(read_marks(f).count_by_id[0], 0u) << f;
}

// A trace cut mid-chunk, with a bit flipped in a chunk, and two traces concatenated: info and
// analyze salvage what is intact and report exactly where and why the rest was skipped.
TEST(FaultInjection, DamagedTracesAreSalvagedWithAnExactReport) {
  TempDir t;
  ASSERT_EQ(run_process({cli(), "profile", "-o", t / "exp", "--", build_path("tests/bin/mark_workload"), "--marks", "100000"}).exit_code, 0);
  const std::string file = trace_files(t / "exp").at(0);
  const std::string bytes = read_file(file);
  ASSERT_GT(bytes.size(), 4096u);
  auto write_variant = [&](const std::string& name, const std::string& content) {
    std::string dir = t / name;
    mkdir(dir.c_str(), 0755);
    std::ofstream(dir + "/vm.p1.sgt", std::ios::binary) << content;
    return dir;
  };
  // Cut and damage where events are: the middle of the file can be its header or a chunk header
  // when the trace compresses well.
  const uint64_t inside_payload = middle_chunk_payload_offset(bytes);
  std::string flipped = bytes;
  flipped[inside_payload] ^= 0x10;
  struct Case {
    std::string dir, expect;
  } cases[] = {
      {write_variant("truncated", bytes.substr(0, inside_payload)), "truncated chunk"},
      {write_variant("flipped", flipped), "chunk payload checksum mismatch"},
      {write_variant("concatenated", bytes + bytes), "another trace file begins here (files concatenated?)"},
  };
  for (const Case& c : cases) {
    ProcessResult info = run_process({cli(), "info", c.dir});
    EXPECT_EQ(info.exit_code, 0) << c.dir << ": " << info.err;
    EXPECT_NE(info.out.find(c.expect), std::string::npos) << c.dir << ": " << info.out;
    EXPECT_EQ(info.term_signal, 0);
    ProcessResult an = run_process({cli(), "analyze", c.dir});
    EXPECT_EQ(an.exit_code, 0) << c.dir << ": " << an.err;
    EXPECT_EQ(an.term_signal, 0);
    if (an.exit_code == 0) expect_valid_timeline(c.dir);  // damaged input, still a valid timeline
    EXPECT_NE(an.out.find("damaged or incomplete files"), std::string::npos) << c.dir << ": " << an.out;
    MarkTrace m = read_marks(trace_files(c.dir).at(0), /*intact=*/false);
    EXPECT_LE(m.count_by_id[0], 100000u) << c.dir << ": events were counted twice";
    EXPECT_FALSE(m.summary.losses.empty()) << c.dir;
  }
  MarkTrace concat = read_marks(trace_files(t / "concatenated").at(0), /*intact=*/false);
  EXPECT_EQ(concat.count_by_id[0], 100000u) << "the first trace is read whole";
}

// Every file and directory an experiment consists of, even when the program runs with umask 000:
// nobody else may alter a trace.
TEST(FaultInjection, NoFileOfAnExperimentIsWritableByOthers) {
  TempDir t;
  std::vector<std::string> argv = {"sh", "-c", "umask 000; exec \"$@\"", "sh"};
  for (const std::string& a : workload({"--marks", "1000"})) argv.push_back(a);
  ProcessResult r = run_process(argv, traced(t / "exp"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(run_process({cli(), "analyze", t / "exp"}).exit_code, 0);
  ProcessResult list = run_process({"find", t / "exp", "-perm", "-o+w"});
  ASSERT_EQ(list.exit_code, 0);
  EXPECT_EQ(list.out, "") << "writable by others";
  EXPECT_FALSE(trace_files(t / "exp").empty());
}

// An output path that is a symbolic link planted by another user is refused: one line, the
// program runs on, nothing is written where the link points.
TEST(FaultInjection, AnOutputDirectorySymlinkOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "skipped: needs root to give the symbolic link another owner";
  TempDir t;
  const std::string target = t / "elsewhere", link = t / "exp";
  ASSERT_EQ(mkdir(target.c_str(), 0755), 0);
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  ASSERT_EQ(lchown(link.c_str(), 65534, 65534), 0);
  ProcessResult plain = run_process(workload({"--marks", "1000"}));
  ProcessResult r = run_process(workload({"--marks", "1000"}), traced(link));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, plain.out);
  ASSERT_EQ(split_lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("is a symbolic link owned by uid 65534, not by this user: refused"), std::string::npos) << r.err;
  EXPECT_EQ(run_process({"find", target, "-mindepth", "1"}).out, "") << "something was written through the link";
}

// A set-user-ID program that loads the profiler (dlopen here; a system-wide preload would do the
// same) keeps it off: the caller's environment must not make a privileged process write files.
TEST(FaultInjection, ASetuidProcessKeepsTheProfilerOff) {
  if (geteuid() != 0) GTEST_SKIP() << "skipped: needs root to make a set-user-ID program and drop to another user";
  if (find_program("setpriv").empty()) GTEST_SKIP() << "skipped: setpriv (util-linux) not installed";
  TempDir t;
  ASSERT_EQ(chmod(t.path().c_str(), 0755), 0);
  const std::string probe = t / "secure_probe", lib = t / "libsigmatrace.so";
  ASSERT_EQ(run_process({"cp", build_path("tests/bin/secure_probe"), probe}).exit_code, 0);
  ASSERT_EQ(run_process({"cp", build_path("lib/libsigmatrace.so"), lib}).exit_code, 0);
  ASSERT_EQ(chown(probe.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(probe.c_str(), 04755), 0);
  ASSERT_EQ(chmod(lib.c_str(), 0755), 0);
  ProcessOptions o;
  o.set_env["SIGMATRACE_OUTPUT"] = t / "exp";
  ProcessResult r = run_process({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", probe, lib}, o);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "loaded\n");
  EXPECT_NE(r.err.find("secure-execution process"), std::string::npos) << r.err;
  struct stat st;
  EXPECT_NE(stat((t / "exp").c_str(), &st), 0) << "the profiler ran in the set-user-ID process";
}
