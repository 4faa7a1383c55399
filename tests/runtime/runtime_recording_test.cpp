// The recorder, end to end: a real multi-threaded program runs with libsigmatrace.so preloaded and
// every event it recorded is read back from the experiment, exactly.
#include <gtest/gtest.h>

#include <unistd.h>

#include "format/trace_reader.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/trace_inspection.h"

using namespace sigmatrace::test;

namespace {

ProcessResult run_workload(const std::string& dir, const std::vector<std::string>& args,
                           std::map<std::string, std::string> env = {}) {
  return run_process(workload(args), traced(dir, std::move(env)));
}

}  // namespace

// Every event of every thread, in order, and the file's own counts agree with what was read.
void expect_every_event_in_order(std::map<std::string, std::string> env) {
  TempDir t;
  constexpr int kThreads = 8;
  constexpr uint64_t kMarks = 200000;
  ProcessResult r = run_workload(t / "exp", {"--threads", std::to_string(kThreads), "--marks", std::to_string(kMarks)}, std::move(env));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::vector<std::string> files = trace_files(t / "exp");
  ASSERT_EQ(files.size(), 1u);
  MarkTrace m = read_marks(files[0]);
  ASSERT_EQ(m.marks_by_tid.size(), static_cast<size_t>(kThreads));
  for (const auto& [tid, marks] : m.marks_by_tid) {
    ASSERT_EQ(marks.size(), kMarks) << "tid " << tid;
    uint64_t id = marks[0].first;
    for (uint64_t i = 0; i < kMarks; ++i) {
      ASSERT_EQ(marks[i].first, id);
      ASSERT_EQ(marks[i].second, i) << "tid " << tid << " lost or reordered an event";
    }
  }
  for (uint64_t id = 0; id < kThreads; ++id) EXPECT_EQ(m.count_by_id[id], kMarks);
  EXPECT_TRUE(m.summary.has_file_end);
  EXPECT_EQ(m.summary.events_dropped(), 0u);
  EXPECT_EQ(m.summary.end_chunks_written, m.summary.chunks);
  EXPECT_EQ(m.summary.end_events_written, m.summary.events);
  // Every thread that recorded has its name and a summary.
  for (const auto& [tid, marks] : m.marks_by_tid) {
    EXPECT_TRUE(m.summary.threads[tid].has_summary);
    EXPECT_EQ(m.summary.threads[tid].events_recorded, kMarks);
    EXPECT_EQ(m.summary.threads[tid].name, "mark_workload");
  }
  EXPECT_GE(m.summary.clock_samples.size(), 2u);
  EXPECT_EQ(m.summary.meta_value("mode"), "simple");
}

TEST(RuntimeRecording, ManyThreadsRecordEveryEventInOrder) { expect_every_event_in_order({}); }

TEST(RuntimeRecording, ChunksSealedInParallelKeepEveryThreadsOrder) {
  // Three sealing threads and small chunks, so that many chunks are in flight at once: the file
  // still holds them in the order they were handed over, numbered without gaps.
  expect_every_event_in_order({{"SIGMATRACE_WRITER_THREADS", "3"}, {"SIGMATRACE_CHUNK_KB", "16"}, {"SIGMATRACE_COMPRESSION", "lz4"}});
}

TEST(RuntimeRecording, DropsAreCountedExactlyWhenTheWriterFallsBehind) {
  TempDir t;
  constexpr int kThreads = 4;
  constexpr uint64_t kMarks = 300000;
  // A 1 MiB pool of 16 KiB chunks and a writer that sleeps 20 ms per chunk cannot keep up.
  ProcessResult r = run_workload(t / "exp", {"--threads", std::to_string(kThreads), "--marks", std::to_string(kMarks)},
                                 {{"SIGMATRACE_BUFFER_MB", "1"},
                                  {"SIGMATRACE_CHUNK_KB", "16"},
                                  {"SIGMATRACE_DEBUG_WRITER_DELAY_US", "20000"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  MarkTrace m = read_marks(trace_files(t / "exp").at(0));
  uint64_t total_dropped = 0;
  size_t threads = 0;
  for (const auto& [tid, th] : m.summary.threads) {
    if (!th.has_summary || tid == 0) continue;
    ++threads;
    const auto& marks = m.marks_by_tid[tid];  // a thread may have had every event dropped
    // Recorded + dropped is exactly what the thread emitted: nothing vanishes silently.
    EXPECT_EQ(marks.size() + th.events_dropped, kMarks) << "tid " << tid;
    EXPECT_EQ(th.events_recorded, marks.size());
    total_dropped += th.events_dropped;
    // What was kept is in order.
    for (size_t i = 1; i < marks.size(); ++i) ASSERT_LT(marks[i - 1].second, marks[i].second);
  }
  EXPECT_EQ(threads, static_cast<size_t>(kThreads));
  EXPECT_GT(total_dropped, 0u);
  EXPECT_EQ(m.summary.end_events_dropped, total_dropped);
}

TEST(RuntimeRecording, AggregateModeCountsPerKeyWithoutTimestamps) {
  TempDir t;
  constexpr uint64_t kMarks = 100000;
  ProcessResult r = run_workload(t / "exp", {"--threads", "3", "--marks", std::to_string(kMarks)},
                                 {{"SIGMATRACE_MODE", "aggregate"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string file = trace_files(t / "exp").at(0);
  MarkTrace m = read_marks(file);
  EXPECT_TRUE(m.marks_by_tid.empty()) << "aggregate mode must not record timestamped marks";
  auto agg = read_mark_aggregates(file);
  ASSERT_EQ(agg.size(), 3u);
  for (uint64_t id = 0; id < 3; ++id) {
    EXPECT_EQ(agg[id].first, kMarks);
    EXPECT_EQ(agg[id].second, kMarks * (kMarks - 1) / 2);  // sum of values 0..N-1
  }
  EXPECT_EQ(m.summary.meta_value("mode"), "aggregate");
}

// Chunks in a trace file that is still being written.
static uint64_t chunks_on_disk_now(const std::string& dir) {
  std::vector<std::string> files = trace_files(dir);
  if (files.empty()) return 0;
  sigmatrace::format::TraceFileReader r;
  std::string err;
  if (!r.open(files[0], &err)) return 0;
  sigmatrace::format::Chunk c;
  while (r.next_chunk(&c)) {
  }
  return r.chunks_read();
}

TEST(RuntimeRecording, AggregateModeWritesNothingUntilExit) {
  for (const char* mode : {"aggregate", "simple"}) {
    TempDir t;
    ProcessOptions o;
    o.set_env = {{"LD_PRELOAD", build_path("lib/libsigmatrace.so")},
                 {"SIGMATRACE_OUTPUT", t / "exp"},
                 {"SIGMATRACE_MODE", mode},
                 {"SIGMATRACE_CLOCK_SYNC_MS", "10"}};
    BackgroundProcess p = start_process({build_path("tests/bin/mark_workload"), "--marks", "1000", "--then", "sleep",
                                         "--sleep-ms", "1000"},
                                        o);
    usleep(500000);  // the writer has taken ~50 clock samples by now
    uint64_t chunks_mid_run = chunks_on_disk_now(t / "exp");
    ProcessResult r = wait_process(p);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (std::string(mode) == "aggregate") EXPECT_EQ(chunks_mid_run, 0u) << "aggregate mode wrote during the run";
    else EXPECT_GT(chunks_mid_run, 0u) << "simple mode writes clock samples as it goes";
    MarkTrace m = read_marks(trace_files(t / "exp").at(0));
    EXPECT_GE(m.summary.clock_samples.size(), 20u) << mode;
    EXPECT_TRUE(m.summary.has_file_end);
  }
}

TEST(RuntimeRecording, EveryCodecProducesTheSameEvents) {
  for (const char* codec : {"zstd", "lz4", "none"}) {
    TempDir t;
    ProcessResult r = run_workload(t / "exp", {"--threads", "2", "--marks", "50000"}, {{"SIGMATRACE_COMPRESSION", codec}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    MarkTrace m = read_marks(trace_files(t / "exp").at(0));
    EXPECT_EQ(m.count_by_id[0], 50000u) << codec;
    EXPECT_EQ(m.count_by_id[1], 50000u) << codec;
  }
}

TEST(RuntimeRecording, ThreadsBeyondTheLimitAreCountedAsDropped) {
  TempDir t;
  // --together: all four are alive at once (slots of exited threads are reused).
  ProcessResult r = run_workload(t / "exp", {"--threads", "4", "--marks", "1000", "--together"}, {{"SIGMATRACE_MAX_THREADS", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  MarkTrace m = read_marks(trace_files(t / "exp").at(0));
  uint64_t recorded = 0;
  for (const auto& [tid, marks] : m.marks_by_tid) recorded += marks.size();
  EXPECT_EQ(recorded, 2000u);
  EXPECT_EQ(m.summary.end_events_dropped, 2000u);
}

TEST(RuntimeRecording, ProgramOutputIsUnchangedByTracing) {
  TempDir t;
  std::vector<std::string> args = {"--threads", "2", "--marks", "1000", "--then", "fork"};
  ProcessResult plain = run_process([&] {
    std::vector<std::string> a = {build_path("tests/bin/mark_workload")};
    a.insert(a.end(), args.begin(), args.end());
    return a;
  }());
  ProcessResult traced = run_workload(t / "exp", args);
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(traced.exit_code, plain.exit_code);
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_EQ(traced.err, plain.err);
}
