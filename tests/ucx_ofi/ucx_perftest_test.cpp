// The ucx provider on real, unmodified ucx_perftest pairs over UCX's tcp (loopback) and
// shared-memory transports. Each traced run sits next to an untraced one: the program's output
// (numbers masked, iteration counts kept) must not change, and the records must match what the
// program did, counted exactly (ucx_perftest -n N -w 0 issues exactly N operations per side).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "ucx_ofi_support.h"

using namespace sigmatrace::test;
using namespace sigmatrace::test::ucx_ofi;

namespace {

// ---- UCX -------------------------------------------------------------------------------------------

TEST(UcxPerftest, TagLatencyOverTcpRecordsEverySendAndReceiveWithItsLaneAndPeer) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"tag_lat", "tcp", 200, 8}, "simple", dir.path());
  ASSERT_EQ(traced.client_procs.size(), 1u);
  ASSERT_EQ(traced.server_procs.size(), 1u);
  const ProcessEvents& cl = traced.client_procs[0];
  const ProcessEvents& sv = traced.server_procs[0];
  for (const ProcessEvents* p : {&cl, &sv}) {
    EXPECT_EQ(count_ucx_ops(*p, UcxOp::tag_send), 200u) << p->path;
    EXPECT_EQ(count_ucx_ops(*p, UcxOp::tag_recv), 200u) << p->path;
    EXPECT_EQ(errors(*p), 0u);
    EXPECT_EQ(op_transports(*p, UcxOp::tag_send), std::set<std::string>{"tcp/lo"});
    EXPECT_EQ(p->count(EventType::ucx_worker_create), 1u);
    EXPECT_EQ(p->count(EventType::ucx_ep_create), 1u);
    EXPECT_EQ(p->count(EventType::ucx_worker_progress), 0u) << "progress is recorded in full mode only";
    for (const TraceEvent* e : p->of(EventType::ucx_op))
      if ((*e)[0] == static_cast<uint64_t>(UcxOp::tag_send)) {
        ASSERT_EQ((*e)[2], 8u);
      }
  }
  // The peer identity: each side's ucx_ep_create names the other side's worker (its UUID, bytes 1-8
  // of the packed address).
  auto uuid = [](const std::string& b) { return b.size() >= 9 ? b.substr(1, 8) : std::string("?"); };
  ASSERT_EQ(cl.count(EventType::ucx_ep_create), 1u);
  EXPECT_EQ(uuid(cl.of(EventType::ucx_ep_create)[0]->bytes), uuid(sv.of(EventType::ucx_worker_create)[0]->bytes));
  EXPECT_EQ(uuid(sv.of(EventType::ucx_ep_create)[0]->bytes), uuid(cl.of(EventType::ucx_worker_create)[0]->bytes));
}

TEST(UcxPerftest, TagLatencyInAggregateModeCountsWithoutEvents) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"tag_lat", "tcp", 300, 8}, "aggregate", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(p.count(EventType::ucx_op), 0u);
    EXPECT_EQ(aggregate_count(p, AggregateKey::ucx_ep_op, static_cast<uint64_t>(UcxOp::tag_send)), 300u);
    EXPECT_EQ(aggregate_count(p, AggregateKey::ucx_ep_op, static_cast<uint64_t>(UcxOp::tag_recv)), 300u);
    EXPECT_GE(aggregate_count(p, AggregateKey::ucx_uct_op, static_cast<uint64_t>(sigmatrace::format::UctOp::am_short)) +
                  aggregate_count(p, AggregateKey::ucx_uct_op, static_cast<uint64_t>(sigmatrace::format::UctOp::am_bcopy)),
              300u);
  }
}

TEST(UcxPerftest, TagLatencyInFullModeAddsUctOperationsAndProgress) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"tag_lat", "tcp", 200, 8}, "full", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(count_ucx_ops(p, UcxOp::tag_send), 200u);
    EXPECT_EQ(count_ucx_ops(p, UcxOp::tag_recv), 200u);
    EXPECT_GE(p.count(EventType::ucx_uct_op), 200u);
    EXPECT_GT(p.count(EventType::ucx_worker_progress), 0u);
  }
}

TEST(UcxPerftest, PutBandwidthOverTcpCountsEveryPutOnTheInitiatorOnly) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"ucp_put_bw", "tcp", 400, 4096}, "simple", dir.path());
  ASSERT_EQ(traced.client_procs.size(), 1u);
  ASSERT_EQ(traced.server_procs.size(), 1u);
  const ProcessEvents& cl = traced.client_procs[0];
  // bandwidth and atomic tests end with one more operation that tells the target the run is over
  EXPECT_EQ(count_ucx_ops(cl, UcxOp::put), 401u);
  EXPECT_EQ(count_ucx_ops(traced.server_procs[0], UcxOp::put), 0u);
  uint64_t bytes = 0;
  for (const TraceEvent* e : cl.of(EventType::ucx_op))
    if ((*e)[0] == static_cast<uint64_t>(UcxOp::put)) bytes += (*e)[2];
  EXPECT_EQ(bytes, 401u * 4096u);
  EXPECT_GE(cl.count(EventType::ucx_mem_map), 1u);
  EXPECT_GE(traced.server_procs[0].count(EventType::ucx_rkey_pack), 1u);
  EXPECT_GE(cl.count(EventType::ucx_rkey_unpack), 1u);
  EXPECT_EQ(errors(cl), 0u);
}

TEST(UcxPerftest, ActiveMessageLatencyRecordsSendsAndHandlerArrivals) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"ucp_am_lat", "tcp", 200, 8}, "simple", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(count_ucx_ops(p, UcxOp::am_send), 200u);
    EXPECT_EQ(p.count(EventType::ucx_am_recv), 200u);
  }
}

TEST(UcxPerftest, StreamLatencyOverTcpRecordsEveryStreamSendAndReceive) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"stream_lat", "tcp", 150, 8}, "simple", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(count_ucx_ops(p, UcxOp::stream_send), 150u);
    EXPECT_EQ(count_ucx_ops(p, UcxOp::stream_recv), 150u);
    EXPECT_EQ(op_transports(p, UcxOp::stream_send), std::set<std::string>{"tcp/lo"});
  }
}

TEST(UcxPerftest, FetchAndAddOverTcpRecordsEachAtomic) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"ucp_fadd", "tcp", 200, 8}, "simple", dir.path());
  ASSERT_EQ(traced.client_procs.size(), 1u);
  EXPECT_EQ(count_ucx_ops(traced.client_procs[0], UcxOp::atomic_fetch), 201u);  // + the closing one
}

TEST(UcxPerftest, TagLatencyOverSharedMemoryUsesThePosixTransport) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"tag_lat", "posix,self", 300, 8}, "simple", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(count_ucx_ops(p, UcxOp::tag_send), 300u);
    EXPECT_EQ(count_ucx_ops(p, UcxOp::tag_recv), 300u);
    EXPECT_EQ(op_transports(p, UcxOp::tag_send), std::set<std::string>{"posix/memory"});
  }
}

TEST(UcxPerftest, GetOverSharedMemoryCountsEveryGet) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"ucp_get", "posix,self", 300, 4096}, "simple", dir.path());
  ASSERT_EQ(traced.client_procs.size(), 1u);
  EXPECT_EQ(count_ucx_ops(traced.client_procs[0], UcxOp::get), 300u);
  EXPECT_EQ(count_ucx_ops(traced.server_procs[0], UcxOp::get), 0u);
}

}  // namespace
