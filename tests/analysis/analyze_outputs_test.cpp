// End-to-end analysis of synthetic multi-process experiments (4 processes on 2 hosts, QP pairs in
// a ring): the topology, exact byte counts in aggregate.json and trace.sqlite, WR <-> completion
// association and send -> receive flows between the right processes.
#include <gtest/gtest.h>

#include "analysis/synthetic_experiment.h"
#include "analysis_test_util.h"
#include "export/sqlite_writer.h"
#include "format/trace_writer.h"
#include "support/temp_dir.h"

namespace sigmatrace::test {
namespace {

using analysis::SyntheticSpec;
using analysis::SyntheticTruth;

SyntheticSpec ring_spec(bool full) {
  SyntheticSpec s;
  s.processes = 4;
  s.hosts = 2;
  s.threads_per_process = 2;
  s.qps_per_pair = 2;
  s.messages_per_qp = 12;
  s.opcodes = {2 /*SEND*/, 0 /*WRITE*/, 1 /*WRITE_IMM*/, 4 /*READ*/, 6 /*ATOMIC_FA*/, 3 /*SEND_IMM*/};
  s.full_mode = full;
  return s;
}

class AnalyzeFull : public ::testing::Test {
 protected:
  void SetUp() override {
    spec = ring_spec(true);
    truth = analysis::write_synthetic_experiment(dir.path(), spec);
    ASSERT_EQ(truth.files.size(), 4u);
    run = analyze_dir(dir.path());
    ASSERT_TRUE(run.ok) << run.error;
    db = dir / "trace.sqlite";
  }
  TempDir dir;
  SyntheticSpec spec;
  SyntheticTruth truth;
  exporter::AnalysisRun run;
  std::string db;
};

TEST_F(AnalyzeFull, WritesAllThreeOutputs) {
  for (const char* f : {"trace.sqlite", "trace.pftrace", "aggregate.json"}) EXPECT_FALSE(read_file(dir / f).empty()) << f;
  EXPECT_TRUE(read_file(dir / "trace.sqlite.tmp").empty());
}

TEST_F(AnalyzeFull, ProcessesThreadsAndHosts) {
  EXPECT_EQ(sql_rows(db, "SELECT process_id, host, pid, rank FROM process ORDER BY process_id"),
            (std::vector<std::string>{"0|node0|1000|0", "1|node1|1001|1", "2|node0|1002|2", "3|node1|1003|3"}));
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM thread"), 8);
  EXPECT_EQ(sql_rows(db, "SELECT tid, name FROM thread WHERE process_id = 1 ORDER BY tid"),
            (std::vector<std::string>{"10010|main", "10011|worker"}));
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM host"), 2);
}

TEST_F(AnalyzeFull, QpTopologyPairsEveryQpWithItsPeer) {
  // Ring of 4: each process has 2 peers x 2 QPs; 8 connections, all between the two hosts.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM qp"), 16);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM connection"), 8);
  EXPECT_EQ(static_cast<uint64_t>(sql_int(db, "SELECT COUNT(*) FROM connection")), truth.connections);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM connection WHERE host_a != host_b"), 8);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM qp a JOIN qp b ON a.remote_qp_id = b.qp_id WHERE b.remote_qp_id = a.qp_id"), 16);
  // Each QP's peer is the process and QP number the generator connected it to.
  for (int r = 0; r < 4; ++r)
    for (int p : {(r + 1) % 4, (r + 3) % 4})
      for (int i = 0; i < 2; ++i) {
        uint32_t local = analysis::synthetic_qp_num(spec, r, p, i), remote = analysis::synthetic_qp_num(spec, p, r, i);
        EXPECT_EQ(sql_rows(db, "SELECT p.rank, b.qp_num FROM qp a JOIN qp b ON a.remote_qp_id = b.qp_id JOIN process p ON "
                               "p.process_id = b.process_id WHERE a.process_id = " + std::to_string(r) +
                               " AND a.qp_num = " + std::to_string(local)),
                  (std::vector<std::string>{std::to_string(p) + "|" + std::to_string(remote)}))
            << "rank " << r << " qp " << local;
      }
  EXPECT_EQ(sql_rows(db, "SELECT DISTINCT type, state, device FROM qp"), (std::vector<std::string>{"RC|RTS|mlx5_0"}));
}

TEST_F(AnalyzeFull, RankMatrixHasExactBytes) {
  const nlohmann::json& m = run.aggregate_json["matrices"]["rank"];
  ASSERT_EQ(m["labels"].size(), 5u);
  EXPECT_EQ(m["labels"][0], "rank 0");
  EXPECT_EQ(m["labels"][4], "unknown");
  for (int s = 0; s < 4; ++s) {
    for (int d = 0; d < 4; ++d) EXPECT_EQ(m["bytes"][s][d].get<uint64_t>(), truth.bytes[s][d]) << s << "->" << d;
    EXPECT_EQ(m["bytes"][s][4].get<uint64_t>(), 0u);
  }
  // Some pairs are really non-zero and the diagonal is empty.
  EXPECT_GT(truth.bytes[0][1], 0u);
  EXPECT_EQ(truth.bytes[0][2], 0u);
  // Host matrix: ranks 0,2 on node0 and 1,3 on node1; all traffic crosses.
  const nlohmann::json& h = run.aggregate_json["matrices"]["host"];
  uint64_t n0_to_n1 = truth.bytes[0][1] + truth.bytes[0][3] + truth.bytes[2][1] + truth.bytes[2][3];
  uint64_t n1_to_n0 = truth.bytes[1][0] + truth.bytes[1][2] + truth.bytes[3][0] + truth.bytes[3][2];
  EXPECT_EQ(h["bytes"][0][1].get<uint64_t>(), n0_to_n1);
  EXPECT_EQ(h["bytes"][1][0].get<uint64_t>(), n1_to_n0);
  EXPECT_EQ(h["bytes"][0][0].get<uint64_t>(), 0u);
}

TEST_F(AnalyzeFull, SqlByteCountsMatchTheMatrix) {
  // Initiator -> target bytes of the operations that move data out; READs the other way.
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d) {
      if (s == d) continue;
      std::string q = "SELECT COALESCE(SUM(bytes), 0) FROM op WHERE ((process_id = " + std::to_string(s) + " AND peer_process_id = " +
                      std::to_string(d) + " AND opcode NOT IN ('READ', 'RECV')) OR (process_id = " + std::to_string(d) +
                      " AND peer_process_id = " + std::to_string(s) + " AND opcode = 'READ'))";
      EXPECT_EQ(static_cast<uint64_t>(sql_int(db, q)), truth.bytes[s][d]) << s << "->" << d;
    }
  // One op row per WR: 16 QPs x 12 sends, plus one per receive WR (SEND, WRITE_IMM, SEND_IMM: 6 of 12).
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM op WHERE opcode != 'RECV'"), 16 * 12);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM op WHERE opcode = 'RECV'"), 16 * 6);
  EXPECT_EQ(sql_rows(db, "SELECT opcode, COUNT(*) FROM op GROUP BY opcode ORDER BY opcode"),
            (std::vector<std::string>{"ATOMIC_FA|32", "READ|32", "RECV|96", "SEND|32", "SEND_IMM|32", "WRITE|32", "WRITE_IMM|32"}));
  EXPECT_EQ(sql_int(db, "SELECT SUM(bytes) FROM op WHERE opcode = 'ATOMIC_FA'"), 32 * 8);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(DISTINCT layer) FROM op"), 1);
  EXPECT_EQ(sql_rows(db, "SELECT DISTINCT layer FROM op"), (std::vector<std::string>{"ibv"}));
}

TEST_F(AnalyzeFull, WorkRequestsAreAssociatedWithTheirCompletions) {
  // Every signaled send completes 3000 ns after its post; receives complete with their message's length.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM op WHERE opcode != 'RECV' AND (dur_ns != 3000 OR status != 0)"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM completion WHERE op_id IS NULL"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM completion c JOIN op o ON o.op_id = c.op_id WHERE o.wr_id != c.wr_id"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM op WHERE opcode = 'RECV' AND dur_ns IS NULL"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM completion"), 16 * 12 + 16 * 6);
}

TEST_F(AnalyzeFull, FlowsConnectEachSendToTheReceiveOfTheRightProcess) {
  EXPECT_EQ(static_cast<uint64_t>(sql_int(db, "SELECT COUNT(*) FROM op WHERE flow_id IS NOT NULL AND opcode != 'RECV'")), truth.flows);
  EXPECT_EQ(static_cast<uint64_t>(sql_int(db, "SELECT COUNT(*) FROM completion WHERE flow_id IS NOT NULL")), truth.flows);
  // Each send's flow id is found exactly once, at a receive completion in its peer process, on the
  // QP paired with the sender's, carrying the sent length, after the send.
  EXPECT_EQ(static_cast<uint64_t>(sql_int(db,
                "SELECT COUNT(*) FROM op s JOIN completion c ON c.flow_id = s.flow_id JOIN qp q ON q.qp_id = s.qp_id "
                "WHERE s.opcode != 'RECV' AND c.process_id = s.peer_process_id AND c.qp_id = q.remote_qp_id "
                "AND c.byte_len = s.bytes AND c.ts_ns - s.ts_ns BETWEEN 1998 AND 2002")),
            truth.flows);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM (SELECT flow_id FROM completion WHERE flow_id IS NOT NULL GROUP BY flow_id HAVING COUNT(*) > 1)"), 0);
  EXPECT_EQ(sql_rows(db, "SELECT opcode, COUNT(*) FROM completion WHERE flow_id IS NOT NULL GROUP BY opcode ORDER BY opcode"),
            (std::vector<std::string>{"RECV|64", "RECV_RDMA_WITH_IMM|32"}));
}

TEST_F(AnalyzeFull, NormalizedTimesAreTheTrueTimes) {
  // The first send of every process was posted at start + period on each process's own skewed clock.
  for (int r = 0; r < 4; ++r)
    EXPECT_NEAR(static_cast<double>(sql_int(db, "SELECT MIN(ts_ns) FROM op WHERE opcode != 'RECV' AND process_id = " + std::to_string(r))),
                static_cast<double>(spec.start_ns + spec.message_period_ns), 2.0)
        << "rank " << r;
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM process WHERE clock_source = 'fit' AND clock_samples = 5 AND clock_max_residual_ns < 2"), 4);
}

TEST_F(AnalyzeFull, AggregatesPerQpProcessDeviceHost) {
  const nlohmann::json& a = run.aggregate_json;
  ASSERT_EQ(a["qps"].size(), 16u);
  ASSERT_EQ(a["processes"].size(), 4u);
  ASSERT_EQ(a["devices"].size(), 4u);
  ASSERT_EQ(a["hosts"].size(), 2u);
  uint64_t out = 0;
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d) out += truth.bytes[s][d];
  uint64_t host_out = 0, qp_out = 0;
  for (const auto& h : a["hosts"]) host_out += h["bytes_out"].get<uint64_t>() + h["bytes_read"].get<uint64_t>();
  for (const auto& q : a["qps"]) qp_out += q["bytes_out"].get<uint64_t>() + q["bytes_read"].get<uint64_t>();
  EXPECT_EQ(host_out, out);
  EXPECT_EQ(qp_out, out);
  EXPECT_EQ(a["qps"][0]["by_opcode"]["SEND"]["ops"].get<uint64_t>(), 2u);
  EXPECT_EQ(a["processes"][0]["ops"].get<uint64_t>(), 4u * 12 + 4u * 6);  // 4 QPs: 12 WRs + 6 receives each
  EXPECT_EQ(a["processes"][0]["flows_out"].get<uint64_t>(), 4u * 6);
  EXPECT_EQ(a["events_dropped"].get<uint64_t>(), 0u);
  EXPECT_EQ(a["coverage"]["ibverbs"]["enabled_in"].get<uint64_t>(), 4u);
}

TEST(AnalyzeSimple, OneOpPerCallAndExactBytes) {
  TempDir dir;
  SyntheticSpec spec = ring_spec(false);
  SyntheticTruth truth = analysis::write_synthetic_experiment(dir.path(), spec);
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  std::string db = dir / "trace.sqlite";
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM op WHERE opcode != 'RECV' AND wr_count = 1 AND dur_ns = 0"), 16 * 12);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM completion"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM op WHERE flow_id IS NOT NULL"), 0);  // no per-message events to match
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d)
      EXPECT_EQ(run.aggregate_json["matrices"]["rank"]["bytes"][s][d].get<uint64_t>(), truth.bytes[s][d]) << s << "->" << d;
  EXPECT_EQ(sql_rows(db, "SELECT DISTINCT mode FROM process"), (std::vector<std::string>{"simple"}));
}

// A launcher that sets no rank variable: the ranks are MPI_COMM_WORLD's, from the mpi provider's
// rank_update events, in the process table and the rank matrix.
TEST(AnalyzeRanks, RanksComeFromMpiWhenTheLauncherSetNone) {
  TempDir dir;
  SyntheticSpec spec = ring_spec(false);
  spec.ranks_from_mpi = true;
  SyntheticTruth truth = analysis::write_synthetic_experiment(dir.path(), spec);
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  std::string db = dir / "trace.sqlite";
  EXPECT_EQ(sql_rows(db, "SELECT process_id, pid, rank FROM process ORDER BY process_id"),
            (std::vector<std::string>{"0|1000|0", "1|1001|1", "2|1002|2", "3|1003|3"}));
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d)
      EXPECT_EQ(run.aggregate_json["matrices"]["rank"]["bytes"][s][d].get<uint64_t>(), truth.bytes[s][d]) << s << "->" << d;
}

// A hand-written trace of one process (h1, rank 0, pid 7) in `mode`, its clock at 2 TSC ticks per
// ns from tsc 1000 (5000 ns) to until_tsc.
bool open_one_process_trace(format::TraceFileWriter* w, const TempDir& dir, const char* mode, uint64_t until_tsc) {
  if (!w->open(dir / "h1.r0.p7.sgt", {{"host", "h1"}, {"pid", "7"}, {"rank", "0"}, {"mode", mode}})) return false;
  w->add(0, format::EventType::clock_sync, 1000, {uint64_t{5000}, uint64_t{1}});
  w->add(0, format::EventType::clock_sync, until_tsc, {5000 + (until_tsc - 1000) / 2, uint64_t{2}});
  return true;
}
constexpr uint64_t kQpNum = 0x99;
// Its RC QP kQpNum (thread 7), on CQ cq for both queues.
void add_rc_qp(format::TraceFileWriter* w, uint64_t cq) {
  w->add(7, format::EventType::ibv_qp_create, 1100, {uint64_t{0xc0}, uint64_t{0xd0}, uint64_t{0x90}, kQpNum, uint64_t{2}, cq, cq, uint64_t{0},
                                                     uint64_t{16}, uint64_t{16}, uint64_t{0}});
}

// A QP's bandwidth is its bytes over its active span, from the first post (or completion) to the
// last, on the normalized clock: 2 x 500 bytes posted 1000 ns apart is 1 GB/s.
TEST(AnalyzeSimple, QpBandwidthIsBytesOverTheActiveSpan) {
  TempDir dir;
  format::TraceFileWriter w;
  ASSERT_TRUE(open_one_process_trace(&w, dir, "simple", 5000));
  const uint64_t qpn = kQpNum;
  add_rc_qp(&w, 0);
  w.add(7, format::EventType::ibv_post_send, 2000, {qpn, uint64_t{1}, uint64_t{500}, uint64_t{1}, uint64_t{0}});  // 5500 ns
  w.add(7, format::EventType::ibv_post_send, 4000, {qpn, uint64_t{1}, uint64_t{500}, uint64_t{1}, uint64_t{0}});  // 6500 ns
  w.add(0, format::EventType::file_end, 5000, {uint64_t{1}, uint64_t{5}, uint64_t{0}, uint64_t{0}});
  ASSERT_TRUE(w.close());
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  ASSERT_EQ(run.aggregate_json["qps"].size(), 1u);
  const nlohmann::json& q = run.aggregate_json["qps"][0];
  EXPECT_EQ(q["active_ns"].get<int64_t>(), 1000);
  EXPECT_DOUBLE_EQ(q["gbytes_per_s"].get<double>(), 1.0);
}

// Each completion is paired with the WR that generated it, as perftest and a QP that fails post
// them: every WR with wr_id 0, one in three signalled (CQ moderation); two successful completions,
// then the QP fails and each WR still outstanding is flushed with its own error completion.
TEST(CompletionPairing, SignalledWrsUnderCqModerationThenFlushesOfEachOutstandingWr) {
  TempDir dir;
  format::TraceFileWriter w;
  ASSERT_TRUE(open_one_process_trace(&w, dir, "full", 9000));
  const uint64_t qpn = kQpNum, cq = 0xa0, kSignaled = 2, kWrite = 0, kFlushErr = 5, kWcWrite = 1;
  add_rc_qp(&w, cq);
  auto post = [&](uint64_t tsc, bool signaled) {
    w.add(7, format::EventType::ibv_send_wr, tsc, {qpn, uint64_t{0}, kWrite, uint64_t{64}, uint64_t{1}, uint64_t{0x1000}, uint64_t{5},
                                                   signaled ? kSignaled : uint64_t{0}, uint64_t{0}});
  };
  auto complete = [&](uint64_t tsc, uint64_t status) {
    w.add(7, format::EventType::ibv_completion, tsc, {cq, qpn, uint64_t{0}, status, kWcWrite, uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0},
                                                      uint64_t{0}});
  };
  for (int i = 0; i < 6; ++i) post(2000 + 100 * static_cast<uint64_t>(i), i % 3 == 2);  // WRs 0-5, 2 and 5 signalled
  complete(3000, 0);                                                                       // WR 2 (0 and 1 with it)
  for (int i = 6; i < 9; ++i) post(3000 + 100 * static_cast<uint64_t>(i), i == 8);        // WRs 6-8
  complete(4000, 0);                                                                       // WR 5 (3 and 4 with it)
  for (uint64_t t : {5000, 5002, 5004}) complete(t, kFlushErr);                            // WRs 6, 7, 8
  w.add(0, format::EventType::file_end, 9000, {uint64_t{1}, uint64_t{16}, uint64_t{0}, uint64_t{0}});
  ASSERT_TRUE(w.close());
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  const std::string db = dir / "trace.sqlite";
  // WR (by posting order) | its duration in ns (post -> the completion that covered it) | status |
  // the completion that reported it (its position), if any.
  EXPECT_EQ(sql_rows(db, "WITH w AS (SELECT op_id, dur_ns, status, ROW_NUMBER() OVER (ORDER BY op_id) - 1 AS pos FROM op), "
                         "c AS (SELECT op_id, ROW_NUMBER() OVER (ORDER BY completion_id) - 1 AS k FROM completion) "
                         "SELECT w.pos, w.dur_ns, w.status, c.k FROM w LEFT JOIN c USING (op_id) ORDER BY w.pos"),
            (std::vector<std::string>{"0|500|0|NULL", "1|450|0|NULL", "2|400|0|0", "3|850|0|NULL", "4|800|0|NULL", "5|750|0|1",
                                      "6|700|5|2", "7|651|5|3", "8|602|5|4"}));
}

// trace.sqlite keeps a WR and the completion that reported it in one op_row row and the other
// completions in completion_row; the completion view gives every one back as it was: a
// completion polled by another thread keeps its thread, one of a WR that was never traced has no op.
TEST(CompletionStorage, MergedAndSeparateCompletionsReadBackThroughTheView) {
  TempDir dir;
  format::TraceFileWriter w;
  ASSERT_TRUE(open_one_process_trace(&w, dir, "full", 9000));
  const uint64_t qpn = kQpNum, cq = 0xa0, kSignaled = 2, kWrite = 0, kWcWrite = 1;
  add_rc_qp(&w, cq);
  auto post = [&](uint64_t tsc, uint64_t wr_id) {
    w.add(7, format::EventType::ibv_send_wr, tsc, {qpn, wr_id, kWrite, uint64_t{64}, uint64_t{1}, uint64_t{0x1000}, uint64_t{5}, kSignaled,
                                                   uint64_t{0}});
  };
  auto complete = [&](uint32_t tid, uint64_t tsc, uint64_t wr_id) {
    w.add(tid, format::EventType::ibv_completion, tsc, {cq, qpn, wr_id, uint64_t{0}, kWcWrite, uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0},
                                                        uint64_t{0}});
  };
  post(2000, 1);
  complete(7, 2600, 1);   // the posting thread
  post(2800, 2);
  complete(8, 3400, 2);   // another thread polls it
  complete(7, 3600, 42);  // a WR that was not traced
  w.add(0, format::EventType::file_end, 9000, {uint64_t{1}, uint64_t{8}, uint64_t{0}, uint64_t{0}});
  ASSERT_TRUE(w.close());
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  const std::string db = dir / "trace.sqlite";
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM op_row WHERE c_delta IS NOT NULL"), 2);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM completion_row"), 1);
  // wr_id | ns after its WR's post (NULL: no WR) | the polling thread's tid | status | opcode
  EXPECT_EQ(sql_rows(db, "SELECT c.wr_id, c.ts_ns - o.ts_ns, t.tid, c.status, c.opcode, c.cq FROM completion c "
                         "LEFT JOIN op o USING (op_id) JOIN thread t ON t.thread_id = c.thread_id ORDER BY c.ts_ns"),
            (std::vector<std::string>{"1|300|7|SUCCESS|RDMA_WRITE|160", "2|300|8|SUCCESS|RDMA_WRITE|160", "42|NULL|7|SUCCESS|RDMA_WRITE|160"}));
  // Their own ids, whichever table holds them (process 0: numbered in the order the analysis read
  // them, thread 7's events before thread 8's).
  EXPECT_EQ(sql_rows(db, "SELECT wr_id, completion_id FROM completion ORDER BY wr_id"), (std::vector<std::string>{"1|0", "2|2", "42|1"}));
  // The rows leave out their trailing columns at their defaults: what is read back must be what
  // the schema's DEFAULTs say, and the writer's defaults must be the schema's.
  EXPECT_EQ(sql_rows(db, "SELECT c_cq, c_imm, layer, wr_count, is_call, c_vendor_err, quote(c_thread) FROM op_row ORDER BY op_id"),
            (std::vector<std::string>{"0|0|0|1|0|0|NULL", "0|0|0|1|0|0|1"}));
  for (const auto& [table, defaults] : {std::pair{"op_row", &exporter::op_row_defaults()}, std::pair{"completion_row", &exporter::completion_row_defaults()}}) {
    std::vector<std::string> want;
    for (unsigned c = 0; c < defaults->count; ++c) want.push_back(defaults->is_null(c) ? "NULL" : std::to_string(defaults->value[c]));
    EXPECT_EQ(sql_rows(db, std::string("SELECT COALESCE(dflt_value, 'NULL') FROM pragma_table_info('") + table + "') ORDER BY cid"), want)
        << table;
  }
}

}  // namespace
}  // namespace sigmatrace::test

namespace sigmatrace::test {
namespace {

// Aggregate mode: counters only (no objects, no timestamps per operation): the process totals and
// the matrix's "unknown" column carry them; no op rows.
TEST(AnalyzeAggregate, CountersReachProcessTotalsAndTheMatrix) {
  TempDir dir;
  format::TraceFileWriter w;
  ASSERT_TRUE(open_one_process_trace(&w, dir, "aggregate", 3000));
  auto key = static_cast<uint64_t>(format::AggregateKey::ibv_qp_opcode);
  w.add(0, format::EventType::aggregate_entry, 3000, {uint64_t{7}, key, uint64_t{0x99}, uint64_t{0} /*WRITE*/, uint64_t{10}, uint64_t{40960}});
  w.add(0, format::EventType::aggregate_entry, 3000, {uint64_t{7}, key, uint64_t{0x99}, uint64_t{4} /*READ*/, uint64_t{3}, uint64_t{300}});
  w.add(0, format::EventType::aggregate_entry, 3000, {uint64_t{7}, key, uint64_t{0x99}, uint64_t{0x100 + 128} /*RECV*/, uint64_t{5}, uint64_t{500}});
  w.add(0, format::EventType::file_end, 3000, {uint64_t{1}, uint64_t{6}, uint64_t{0}, uint64_t{0}});
  ASSERT_TRUE(w.close());
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  const nlohmann::json& p = run.aggregate_json["processes"][0];
  EXPECT_EQ(p["by_opcode"]["WRITE"]["ops"].get<uint64_t>(), 10u);
  EXPECT_EQ(p["by_opcode"]["WRITE"]["bytes"].get<uint64_t>(), 40960u);
  EXPECT_EQ(p["by_opcode"]["RECV"]["bytes"].get<uint64_t>(), 500u);
  EXPECT_EQ(p["bytes_out"].get<uint64_t>(), 40960u);
  EXPECT_EQ(p["aggregate_entries"].get<uint64_t>(), 3u);
  const nlohmann::json& h = run.aggregate_json["matrices"]["host"];
  EXPECT_EQ(h["bytes"][0][1].get<uint64_t>(), 40960u);  // h1 -> unknown
  EXPECT_EQ(h["bytes"][1][0].get<uint64_t>(), 300u);    // READ: unknown -> h1
  EXPECT_EQ(sql_int(dir / "trace.sqlite", "SELECT COUNT(*) FROM op"), 0);
}

// Aggregate mode records no QP events; the endpoint-pair counters (local and remote LID + QP
// number) are what pairs QPs across processes, so the matrices name the real peer host.
TEST(AnalyzeAggregate, EndpointPairCountersPairQpsAcrossProcesses) {
  TempDir dir;
  const auto by_opcode = static_cast<uint64_t>(format::AggregateKey::ibv_qp_opcode);
  const auto by_pair = static_cast<uint64_t>(format::AggregateKey::ibv_endpoint_pair);
  auto write = [&](const std::string& host, const std::string& rank, uint64_t lid, uint64_t qpn, uint64_t peer_lid, uint64_t peer_qpn,
                   uint64_t writes, uint64_t bytes) {
    format::TraceFileWriter w;
    ASSERT_TRUE(w.open(dir / (host + ".r" + rank + ".p7.sgt"), {{"host", host}, {"pid", "7"}, {"rank", rank}, {"mode", "aggregate"}}));
    w.add(0, format::EventType::clock_sync, 1000, {uint64_t{5000}, uint64_t{1}});
    w.add(0, format::EventType::clock_sync, 3000, {uint64_t{6000}, uint64_t{2}});
    w.add(0, format::EventType::aggregate_entry, 3000, {uint64_t{7}, by_opcode, qpn, uint64_t{0} /*WRITE*/, writes, bytes});
    w.add(0, format::EventType::aggregate_entry, 3000, {uint64_t{7}, by_pair, (lid << 32) | qpn, (peer_lid << 32) | peer_qpn, writes, bytes});
    w.add(0, format::EventType::file_end, 3000, {uint64_t{1}, uint64_t{4}, uint64_t{0}, uint64_t{0}});
    ASSERT_TRUE(w.close());
  };
  write("h1", "0", 0x11, 0x99, 0x22, 0x55, 10, 40960);
  write("h2", "1", 0x22, 0x55, 0x11, 0x99, 2, 64);
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  ASSERT_EQ(run.aggregate_json["connections"].size(), 1u);
  EXPECT_EQ(run.aggregate_json["connections"][0]["bytes"].get<uint64_t>(), 40960u + 64u);
  const nlohmann::json& h = run.aggregate_json["matrices"]["host"];  // labels h1, h2, unknown
  EXPECT_EQ(h["bytes"][0][1].get<uint64_t>(), 40960u);
  EXPECT_EQ(h["bytes"][1][0].get<uint64_t>(), 64u);
  EXPECT_EQ(h["bytes"][0][2].get<uint64_t>(), 0u);
  EXPECT_EQ(h["bytes"][1][2].get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace sigmatrace::test

namespace sigmatrace::test {
namespace {

// Completions polled by another thread can be written to the file before the WRs they complete
// (each thread's chunk is flushed on its own): they are kept until their WR comes.
TEST(AnalyzeOrdering, CompletionsReadBeforeTheirWorkRequests) {
  TempDir dir;
  format::TraceFileWriter w;
  ASSERT_TRUE(w.open(dir / "h1.r0.p7.sgt", {{"host", "h1"}, {"pid", "7"}, {"rank", "0"}, {"mode", "full"}}));
  using E = format::EventType;
  w.add(0, E::clock_sync, 0, {uint64_t{1000000}, uint64_t{1}});
  w.add(0, E::clock_sync, 100000, {uint64_t{1100000}, uint64_t{2}});  // 1 ns per tick, +1 ms
  // Thread 20 creates the QP and posts; thread 10 polls. The writer flushes thread 10 first.
  w.add(20, E::ibv_qp_create, 100, {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{77}, uint64_t{2}, uint64_t{4}, uint64_t{4}, uint64_t{0}, uint64_t{16}, uint64_t{16}, uint64_t{0}});
  auto send = [&](uint64_t tsc, uint64_t id, uint64_t flags) {
    w.add(20, E::ibv_send_wr, tsc, {uint64_t{77}, id, uint64_t{0}, uint64_t{1000}, uint64_t{1}, uint64_t{0}, uint64_t{0}, flags, uint64_t{0}});
  };
  send(1000, 1, 2);
  send(1100, 2, 0);  // unsignaled: completes with WR 3
  send(1200, 3, 2);
  w.add(20, E::ibv_recv_wr, 1300, {uint64_t{77}, uint64_t{9}, uint64_t{4096}, uint64_t{1}, uint64_t{0}});
  auto wc = [&](uint64_t tsc, uint64_t id, uint64_t opcode, uint64_t len) {
    w.add(10, E::ibv_completion, tsc, {uint64_t{4}, uint64_t{77}, id, uint64_t{0}, opcode, len, uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0}});
  };
  wc(1500, 1, 1 /*RDMA_WRITE*/, 0);
  wc(1700, 3, 1, 0);
  wc(1800, 9, 128 /*RECV*/, 77);
  w.add(0, E::file_end, 100000, {uint64_t{3}, uint64_t{10}, uint64_t{0}, uint64_t{0}});
  ASSERT_TRUE(w.close());
  exporter::AnalysisRun run = analyze_dir(dir.path());
  ASSERT_TRUE(run.ok) << run.error;
  std::string db = dir / "trace.sqlite";
  EXPECT_EQ(sql_rows(db, "SELECT wr_id, opcode, bytes, dur_ns, status FROM op ORDER BY ts_ns"),
            (std::vector<std::string>{"1|WRITE|1000|500|0", "2|WRITE|1000|600|0", "3|WRITE|1000|500|0", "9|RECV|77|500|0"}));
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM completion WHERE op_id IS NULL"), 0);
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM completion"), 3);
  EXPECT_EQ(run.aggregate_json["processes"][0]["unmatched_completions"].get<uint64_t>(), 0u);
  EXPECT_EQ(run.aggregate_json["processes"][0]["by_opcode"]["RECV"]["ops"].get<uint64_t>(), 1u);
}

}  // namespace
}  // namespace sigmatrace::test
