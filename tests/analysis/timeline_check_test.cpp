// The timeline checker itself (support/timeline_check.h) on small hand-made traces: it accepts a
// well-formed one and names each broken invariant, so that a pass on a real experiment means
// something.
#include <gtest/gtest.h>

#include "export/sqlite_api.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "export/protobuf_writer.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"

namespace sigmatrace::test {
namespace {

using exporter::ProtoWriter;

// A tiny trace: a process (pid 10) with a thread (tid 11) and a plain child track; events are added
// by the tests.
class TinyTrace {
 public:
  explicit TinyTrace(bool clock = true) {
    if (clock) {
      size_t p = w_.begin(1);
      size_t cs = w_.begin(6);
      size_t c = w_.begin(1);
      w_.u64(1, 1), w_.u64(2, 1000);
      w_.end(c);
      w_.u64(2, 1);
      w_.end(cs);
      w_.end(p);
    }
    descriptor(kProcess, 0, [&] {
      size_t pd = w_.begin(3);
      w_.u64(1, 10);
      w_.end(pd);
    });
    descriptor(kThread, 0, [&] {
      size_t td = w_.begin(4);
      w_.u64(1, 10), w_.u64(2, 11);
      w_.end(td);
    });
    descriptor(kLane, kProcess, [] {});
  }
  static constexpr uint64_t kProcess = 100, kThread = 101, kLane = 102, kGlobal = 103;
  // type: 1 begin, 2 end, 3 instant.
  TinyTrace& event(uint64_t ts, uint64_t type, uint64_t track, uint64_t flow = 0, uint64_t terminating = 0, uint32_t seq = 1) {
    size_t p = w_.begin(1);
    w_.u64(8, ts);
    if (seq) w_.u64(10, seq);
    size_t te = w_.begin(11);
    w_.u64(9, type), w_.u64(11, track);
    if (type != 2) w_.str(22, "ibv.wr");
    if (flow) w_.fixed64(47, flow);
    if (terminating) w_.fixed64(48, terminating);
    w_.end(te);
    w_.end(p);
    return *this;
  }
  TinyTrace& global_track() {
    descriptor(kGlobal, 0, [] {});
    return *this;
  }
  TinyTrace& process(uint64_t uuid, uint64_t pid) {
    descriptor(uuid, 0, [&] {
      size_t pd = w_.begin(3);
      w_.u64(1, pid);
      w_.end(pd);
    });
    return *this;
  }
  // sqlite_ops: (ts, dur) rows of an op table to cross-check against (none: no cross-check).
  TimelineReport check(const std::vector<std::pair<int64_t, int64_t>>* sqlite_ops = nullptr) {
    const std::string path = dir_ / "t.pftrace", db = dir_ / "t.sqlite";
    std::ofstream(path, std::ios::binary) << w_.buffer();
    if (!sqlite_ops) return check_timeline(path, "");
    std::remove(db.c_str());
    sqlite3* h = nullptr;
    EXPECT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    std::string sql = "CREATE TABLE op(ts_ns INTEGER, dur_ns INTEGER, layer TEXT);";
    for (const auto& [ts, dur] : *sqlite_ops) sql += "INSERT INTO op VALUES(" + std::to_string(ts) + "," + std::to_string(dur) + ",'ibv');";
    EXPECT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(h);
    return check_timeline(path, db);
  }

 private:
  template <typename Body>
  void descriptor(uint64_t uuid, uint64_t parent, Body body) {
    size_t p = w_.begin(1);
    size_t td = w_.begin(60);
    w_.u64(1, uuid);
    if (parent) w_.u64(5, parent);
    body();
    w_.end(td);
    w_.end(p);
  }
  ProtoWriter w_;
  TempDir dir_;
};

std::string problems(const TimelineReport& r) {
  std::string s;
  for (const std::string& p : r.problems) s += p + "\n";
  return s;
}

TEST(TimelineCheck, AcceptsSlicesInstantsAndAForwardFlow) {
  TinyTrace t;
  t.event(100, 1, TinyTrace::kLane, 7).event(200, 2, TinyTrace::kLane).event(250, 3, TinyTrace::kThread, 0, 7);
  TimelineReport r = t.check();
  EXPECT_TRUE(r.problems.empty()) << problems(r);
  EXPECT_EQ(r.processes, 1u);
  EXPECT_EQ(r.threads, 1u);
  EXPECT_EQ(r.slices, 2u);
  EXPECT_EQ(r.slices_with_duration, 1u);
  EXPECT_EQ(r.flows, 1u);
  EXPECT_TRUE(r.clock_snapshot);
}

TEST(TimelineCheck, OperationSlicesMustBeTheSqliteDurations) {
  TinyTrace t;
  t.event(100, 1, TinyTrace::kLane).event(200, 2, TinyTrace::kLane);
  const std::vector<std::pair<int64_t, int64_t>> same = {{100, 100}}, other = {{100, 50}};
  TimelineReport r = t.check(&same);
  EXPECT_TRUE(r.problems.empty()) << problems(r);
  EXPECT_EQ(r.op_slices_checked, 1u);
  const std::string p = problems(t.check(&other));
  EXPECT_NE(p.find("no slice of that duration"), std::string::npos) << p;
  EXPECT_NE(p.find("operation slice that trace.sqlite does not have"), std::string::npos) << p;
}

TEST(TimelineCheck, AFlowThatEndsBeforeItStartsIsAProblem) {
  TinyTrace t;
  t.event(300, 3, TinyTrace::kLane, 7).event(250, 3, TinyTrace::kThread, 0, 7);  // written in this order, but 250 < 300
  TimelineReport r = t.check();
  EXPECT_NE(problems(r).find("flow that ends before it starts"), std::string::npos) << problems(r);
  EXPECT_EQ(r.flows, 0u);
  EXPECT_EQ(r.flow_starts_without_end, 1u);
}

TEST(TimelineCheck, BrokenNestingMissingTracksAndSequencesAreProblems) {
  TinyTrace t(/*clock=*/false);
  t.global_track();
  t.event(100, 2, TinyTrace::kLane)                 // an end with no begin
      .event(200, 1, TinyTrace::kThread)            // a begin never ended
      .event(300, 3, 999)                           // a track nobody described
      .event(400, 3, TinyTrace::kGlobal)            // an instant on no process's track
      .event(500, 3, TinyTrace::kThread, 0, 0, 0);  // no sequence id
  const std::string p = problems(t.check());
  for (const char* want : {"slice end without a begin", "slice that never ends", "track that is not described", "track of no process or thread",
                           "without a sequence id", "no clock snapshot"})
    EXPECT_NE(p.find(want), std::string::npos) << want << " in\n" << p;
}

TEST(TimelineCheck, OneFilesEventsOnTwoProcessesAndSharedPidsAreProblems) {
  TinyTrace t;
  t.process(200, 20).process(201, 10);  // a second process, and a third with the first one's pid
  t.event(100, 3, TinyTrace::kThread, 0, 0, 1).event(200, 3, 200, 0, 0, 1);  // sequence 1 on pid 10 and pid 20
  const std::string p = problems(t.check());
  EXPECT_NE(p.find("one file's events on tracks of two processes"), std::string::npos) << p;
  EXPECT_NE(p.find("two process tracks with one pid"), std::string::npos) << p;
}

}  // namespace
}  // namespace sigmatrace::test
