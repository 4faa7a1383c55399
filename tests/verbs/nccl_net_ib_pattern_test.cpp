// NCCL's IB transport without NCCL, over softnic under `sigmatrace profile --softnic` in every
// mode: every operation of both ranks recorded exactly, and the loopback flush QP its own peer.
// Skipped, with the reason, while build/softnic or the programs are absent.
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

// ---- NCCL's IB transport, without NCCL: what NCCL needs from softnic, recorded exactly ----------

// tests/bin/nccl_net_ib_pattern: two ranks, each one send connection and one receive connection
// to the other plus a flush QP connected to itself, driven like NCCL's net_ib (dlvsym, ops,
// zero-SGE receives, inline clear-to-send writes, WRITE + zero-byte WRITE_WITH_IMM, flush READ).
class NcclNetIbPattern : public ::testing::TestWithParam<std::string> {};

TEST_P(NcclNetIbPattern, EveryOperationOfBothRanksIsRecordedAndTheLoopbackFlushQpIsItsOwnPeer) {
  const std::string exe = build_path("tests/bin/nccl_net_ib_pattern");
  REQUIRE_SOFTNIC_AND(exe);
  const std::string mode = GetParam();
  constexpr uint64_t kIters = 40, kBytes = 65536, kCts = 64;
  const std::vector<std::string> argv = {exe, "--iters", std::to_string(kIters), "--bytes", std::to_string(kBytes)};
  TempDir t;
  PairRun plain = run_pair_once_more_on_timeout({}, argv, "", "");
  ASSERT_EQ(plain.client.exit_code, 0) << plain.client.out << plain.client.err;
  PairRun traced = run_pair_once_more_on_timeout({}, argv, mode, t / "exp");
  ASSERT_EQ(traced.client.exit_code, 0) << traced.client.out << traced.client.err;
  EXPECT_EQ(traced.client.out, plain.client.out);  // no timings: the same text
  EXPECT_EQ(traced.client.err, plain.client.err);
  // softnic registers dma-bufs of GPU memory: NCCL's probe (fd -1) fails with EBADF, as on mlx5.
  EXPECT_NE(plain.client.out.find("rank=1 device=mlx5_0 mlx5=1 dmabuf=supported"), std::string::npos) << plain.client.out;

  const std::vector<const ProcessEvents*> ranks = working_processes(traced, "nccl_net_ib_pattern");
  ASSERT_EQ(ranks.size(), 2u) << "the launcher plus two exec'd ranks, each traced";

  auto bit = [](int op) { return uint64_t{1} << op; };
  for (const ProcessEvents* rp : ranks) {
    const ProcessEvents& p = *rp;
    // The DMA-BUF probe (fd -1) fails with EBADF: recorded in every mode, and the only error.
    auto errors = p.of(EventType::ibv_call_error);
    ASSERT_EQ(errors.size(), 1u) << p.path;
    EXPECT_EQ((*errors[0])[0], static_cast<uint64_t>(sigmatrace::format::IbvCall::reg_dmabuf_mr));
    EXPECT_EQ((*errors[0])[2], uint64_t{EBADF});
    EXPECT_EQ(p.count(EventType::ibv_async_event), 0u);

    if (mode == "aggregate") {
      auto op = [&](uint64_t code) { return aggregate_opcode(p, code); };
      EXPECT_EQ(op(IBV_WR_RDMA_WRITE_WITH_IMM).count, kIters);
      EXPECT_EQ(op(IBV_WR_RDMA_WRITE_WITH_IMM).bytes, 0u);
      EXPECT_EQ(op(IBV_WR_RDMA_WRITE).count, 2 * kIters);
      EXPECT_EQ(op(IBV_WR_RDMA_WRITE).bytes, kIters * (kBytes + kCts));
      EXPECT_EQ(op(IBV_WR_RDMA_READ).count, kIters);
      EXPECT_EQ(op(IBV_WR_RDMA_READ).bytes, kIters);
      EXPECT_EQ(op(0x100 + IBV_WC_RECV_RDMA_WITH_IMM).count, kIters);
      continue;
    }
    // The flush QP is the one whose RTR names itself.
    uint64_t flush_qp = ~0ull;
    for (const TraceEvent* e : p.of(EventType::ibv_qp_modify))
      if ((*e)[2] == IBV_QPS_RTR && (*e)[4] == (*e)[0]) flush_qp = (*e)[0];
    ASSERT_NE(flush_qp, ~0ull) << p.path;
    EXPECT_EQ(p.count(EventType::ibv_qp_create), 3u);

    uint64_t data = 0, data_wrs = 0, data_bytes = 0, cts = 0, cts_bytes = 0, flush = 0, flush_bytes = 0;
    std::set<uint64_t> data_qps, cts_qps;
    for (const TraceEvent* e : p.of(EventType::ibv_post_send)) {
      EXPECT_EQ((*e)[4], 0u);
      if ((*e)[3] == (bit(IBV_WR_RDMA_WRITE) | bit(IBV_WR_RDMA_WRITE_WITH_IMM))) {
        ++data, data_wrs += (*e)[1], data_bytes += (*e)[2], data_qps.insert((*e)[0]);
      } else if ((*e)[3] == bit(IBV_WR_RDMA_WRITE)) {
        ++cts, cts_bytes += (*e)[2], cts_qps.insert((*e)[0]);
      } else if ((*e)[3] == bit(IBV_WR_RDMA_READ)) {
        ++flush, flush_bytes += (*e)[2];
        EXPECT_EQ((*e)[0], flush_qp);
      } else {
        ADD_FAILURE() << "unexpected opcode mask " << (*e)[3];
      }
    }
    EXPECT_EQ(data, kIters);
    EXPECT_EQ(data_wrs, 2 * kIters);
    EXPECT_EQ(data_bytes, kIters * kBytes);
    EXPECT_EQ(cts, kIters);
    EXPECT_EQ(cts_bytes, kIters * kCts);
    EXPECT_EQ(flush, kIters);
    EXPECT_EQ(flush_bytes, kIters);
    ASSERT_EQ(data_qps.size(), 1u);
    ASSERT_EQ(cts_qps.size(), 1u);
    EXPECT_NE(*data_qps.begin(), *cts_qps.begin());
    auto recvs = p.of(EventType::ibv_post_recv);
    EXPECT_EQ(recvs.size(), kIters);
    for (const TraceEvent* e : recvs) {
      EXPECT_EQ((*e)[0], *cts_qps.begin());  // receives are posted on the receive connection's QP
      EXPECT_EQ((*e)[1], 1u);
      EXPECT_EQ((*e)[2], 0u);  // zero SGEs
    }
    if (mode == "full") {
      uint64_t imm_wrs = 0, imm_wcs = 0, read_wcs = 0;
      for (const TraceEvent* e : p.of(EventType::ibv_send_wr))
        if ((*e)[2] == IBV_WR_RDMA_WRITE_WITH_IMM) {
          ++imm_wrs;
          EXPECT_EQ((*e)[3], 0u);  // the empty IMM write after the data (above NCCL's AR threshold)
          EXPECT_EQ((*e)[4], 0u);
          EXPECT_EQ((*e)[8], kBytes);  // recorded in host order: NCCL sends the size
        }
      for (const TraceEvent* e : p.of(EventType::ibv_completion)) {
        EXPECT_EQ((*e)[3], uint64_t{IBV_WC_SUCCESS});
        if ((*e)[4] == IBV_WC_RECV_RDMA_WITH_IMM) {
          ++imm_wcs;
          EXPECT_EQ((*e)[1], *cts_qps.begin());
          EXPECT_EQ((*e)[6], kBytes);  // recorded in host order: NCCL sends the size
        }
        if ((*e)[4] == IBV_WC_RDMA_READ) {
          ++read_wcs;
          EXPECT_EQ((*e)[1], flush_qp);
        }
      }
      EXPECT_EQ(imm_wrs, kIters);
      EXPECT_EQ(imm_wcs, kIters);
      EXPECT_EQ(read_wcs, kIters);
    }
  }
  if (mode == "simple") return;

  // The analysis: two cross-rank connections and two loopback ones (in aggregate mode found from
  // the endpoint-pair counters alone); every WRITE_WITH_IMM finds its receive; every flush READ
  // stays in its own process.
  const std::string dir = t / "exp";
  ProcessResult analyzed = analyze_experiment(dir);
  if (skipped_for_sqlite(analyzed)) GTEST_SKIP() << analyzed.err;
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  expect_valid_timeline(dir);
  auto sql = [&](const std::string& q) {
    std::vector<std::string> rows = sql_rows(dir, q);
    return rows.empty() ? std::string("(no row)") : rows[0];
  };
  EXPECT_EQ(sql("SELECT count(*) FROM connection"), "4");
  if (mode == "full") {  // the DMA-BUF probe of each rank, the only errors
    EXPECT_EQ(sql("SELECT count(*), what, error FROM error GROUP BY what, error"), "2,reg_dmabuf_mr," + std::to_string(EBADF));
  }
  EXPECT_EQ(sql("SELECT count(*) FROM connection WHERE qp_a = qp_b AND process_a = process_b"), "2");
  EXPECT_EQ(sql("SELECT sum(bytes_a_to_b + bytes_b_to_a) FROM connection WHERE qp_a = qp_b"), std::to_string(2 * kIters));
  EXPECT_EQ(sql("SELECT sum(bytes_a_to_b + bytes_b_to_a) FROM connection WHERE qp_a <> qp_b"),
            std::to_string(2 * kIters * (kBytes + kCts)));
  if (mode == "aggregate") return;  // no operations are timestamped
  EXPECT_EQ(sql("SELECT count(*) FROM op WHERE opcode = 'WRITE_IMM' AND flow_id IS NOT NULL"), std::to_string(2 * kIters));
  EXPECT_EQ(sql("SELECT count(*) FROM op WHERE opcode = 'RECV' AND flow_id IS NOT NULL"), std::to_string(2 * kIters));
  EXPECT_EQ(sql("SELECT count(*) FROM op WHERE opcode = 'READ' AND peer_process_id = process_id"), std::to_string(2 * kIters));
  EXPECT_EQ(sql("SELECT sum(bytes) FROM op WHERE opcode = 'WRITE'"), std::to_string(2 * kIters * (kBytes + kCts)));
}

INSTANTIATE_TEST_SUITE_P(Modes, NcclNetIbPattern, ::testing::ValuesIn(kModes), [](const auto& info) { return info.param; });

}  // namespace
