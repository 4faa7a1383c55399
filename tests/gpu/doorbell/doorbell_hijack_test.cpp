// The doorbell hijack end to end, without a GPU: doorbell_client (CPU threads in the GPU
// threads' place, over softnic's devx, against the stand-in libcuda of tests/fake_cuda) run
// untraced and under `sigmatrace profile`. Each operation of the client rings exactly one
// doorbell and waits for its completion, so the trace must hold exactly one doorbell per
// operation, with consecutive producer indices, on the QPs the devx commands created — and the
// client's output must not change.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "doorbell_client_run.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"

using namespace sigmatrace::test;
using sigmatrace::format::AggregateKey;
using sigmatrace::format::EventType;
using sigmatrace::format::UarMapOutcome;

namespace {

// Every doorbell of each QP, in the order seen: producer indices 1..ops, each announcing one WQEBB,
// each of that kind (DoorbellKind: an 8-byte doorbell, or a BlueFlame write).
void expect_one_doorbell_per_operation(const ProcessEvents& p, int qps, int ops,
                                       sigmatrace::format::DoorbellKind kind = sigmatrace::format::DoorbellKind::doorbell) {
  const std::vector<uint64_t> senders = sender_qpns(p);
  ASSERT_EQ(senders.size(), size_t(qps));
  std::map<uint64_t, std::vector<const TraceEvent*>> by_qp;
  for (const TraceEvent* e : p.of(EventType::gpu_doorbell)) by_qp[(*e)[1]].push_back(e);
  EXPECT_EQ(p.count(EventType::gpu_doorbell), size_t(qps) * size_t(ops));
  for (uint64_t qpn : senders) {
    auto& v = by_qp[qpn];
    ASSERT_EQ(v.size(), size_t(ops)) << "QP " << qpn;
    std::stable_sort(v.begin(), v.end(), [](const TraceEvent* a, const TraceEvent* b) { return a->tsc < b->tsc; });
    bool consecutive = true;
    for (size_t k = 0; k < v.size(); ++k) consecutive &= (*v[k])[2] == k + 1 && (*v[k])[3] == 1 && (*v[k])[4] == uint64_t(kind);
    EXPECT_TRUE(consecutive) << "QP " << qpn << ": producer indices are not 1.." << ops << " with delta 1";
  }
  EXPECT_EQ(by_qp.size(), senders.size()) << "doorbells on QPs the client did not create";
}

struct ClientCase {
  const char* resolve;
  const char* mode;
};

class DoorbellHijack : public ::testing::TestWithParam<ClientCase> {};

TEST_P(DoorbellHijack, EveryDoorbellIsRecordedAndForwardedAndNothingElseChanges) {
  TempDir t;
  const ClientCase c = GetParam();
  const int qps = 2, ops = 300;
  ClientRun r = run_client({"--resolve", c.resolve, "--qps", std::to_string(qps), "--ops", std::to_string(ops)}, c.mode, t / "exp");
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  expect_one_doorbell_per_operation(*p, qps, ops);

  // The doorbell pages: registered once each, handed to the "GPU" as our shadow page, released.
  auto maps = p->of(EventType::gpu_uar_map);
  ASSERT_EQ(maps.size(), size_t(qps));
  for (const TraceEvent* m : maps) {
    EXPECT_EQ((*m)[6], uint64_t(UarMapOutcome::hijacked));
    EXPECT_NE((*m)[5], 0u);
    EXPECT_NE((*m)[3], (*m)[4]) << "the GPU got the real doorbell page";
    EXPECT_EQ((*m)[3] & 4095, 0u);  // the page itself was asked for: same offset in the shadow
  }
  auto regs = p->of(EventType::gpu_uar_register);
  ASSERT_EQ(regs.size(), size_t(qps));
  for (const TraceEvent* e : regs) EXPECT_EQ((*e)[5], 1u);
  auto unregs = p->of(EventType::gpu_uar_unregister);
  ASSERT_EQ(unregs.size(), size_t(qps));
  for (const TraceEvent* e : unregs) EXPECT_EQ((*e)[3], 0u);

  // The devx objects: 2 QPs and 2 CQs per pair, the pairs connected to each other.
  EXPECT_EQ(p->count(EventType::devx_qp_create), size_t(2 * qps));
  EXPECT_EQ(p->count(EventType::devx_cq_create), size_t(2 * qps));
  EXPECT_EQ(p->count(EventType::devx_uar_alloc), size_t(4 * qps));
  EXPECT_EQ(p->count(EventType::devx_umem_reg), size_t(2 * qps));
  std::map<uint64_t, uint64_t> peer;
  for (const TraceEvent* m : p->of(EventType::devx_qp_modify))
    if ((*m)[2] == 0x503) peer[(*m)[1]] = (*m)[3];
  auto qps_created = p->of(EventType::devx_qp_create);
  for (size_t i = 0; i + 1 < qps_created.size(); i += 2) {
    EXPECT_EQ(peer[(*qps_created[i])[2]], (*qps_created[i + 1])[2]);
    EXPECT_EQ(peer[(*qps_created[i + 1])[2]], (*qps_created[i])[2]);
    EXPECT_NE((*qps_created[i])[9], 0u) << "the SQ's address (umem + offset)";
    EXPECT_EQ((*qps_created[i])[5], 6u) << "log_sq_size";
  }
  EXPECT_EQ(p->count(EventType::devx_obj_destroy), size_t(4 * qps));

  // The kernel launch and the export table the client asked for.
  auto launches = p->of(EventType::cuda_launch);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ((*launches[0])[4], uint64_t(qps));
  EXPECT_EQ((*launches[0])[7], 32u);
  auto names = p->of(EventType::cuda_function);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0]->bytes, "put_quiet_kernel");
  EXPECT_EQ((*names[0])[0], (*launches[0])[0]);
  auto tables = p->of(EventType::cuda_export_table);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ((*tables[0])[0], 0x6bd5fb6c5bf4e74aull);

  if (std::string(c.resolve) == "proc") {
    std::map<std::string, std::vector<const TraceEvent*>> lookups;
    for (const TraceEvent* e : p->of(EventType::cuda_lookup)) lookups[e->bytes].push_back(e);
    ASSERT_FALSE(lookups["cuGetProcAddress"].empty());
    EXPECT_EQ((*lookups["cuGetProcAddress"][0])[3], 1u);  // cuGetProcAddress itself: our wrapper
    ASSERT_EQ(lookups["cuMemHostRegister"].size(), 1u);
    EXPECT_EQ((*lookups["cuMemHostRegister"][0])[3], 1u);
    ASSERT_EQ(lookups["cuLaunchKernel"].size(), 1u);
    EXPECT_EQ((*lookups["cuLaunchKernel"][0])[2], 2u);  // per-thread default stream
    EXPECT_EQ((*lookups["cuLaunchKernel"][0])[3], 1u);
    // The 3.2-era ABI of cuMemHostGetDevicePointer (32-bit pointers) is the driver's, not ours.
    ASSERT_EQ(lookups["cuMemHostGetDevicePointer"].size(), 2u);
    EXPECT_EQ((*lookups["cuMemHostGetDevicePointer"][0])[3], 1u);
    EXPECT_EQ((*lookups["cuMemHostGetDevicePointer"][1])[1], 2020u);
    EXPECT_EQ((*lookups["cuMemHostGetDevicePointer"][1])[3], 0u);
    EXPECT_TRUE(lookups["cuModuleGetFunction"].empty()) << "names nobody instruments are not recorded";
  }

  // By default one poller serves up to 64 pages: one poller for all of them, started and stopped,
  // with every doorbell of every page.
  uint64_t started = 0, stopped_doorbells = 0, pages_served = 0;
  for (const TraceEvent* e : p->of(EventType::gpu_poller)) {
    if ((*e)[0] == 1) ++started;
    if ((*e)[0] == 2) stopped_doorbells += (*e)[2], pages_served += (*e)[1];
  }
  EXPECT_EQ(started, 1u);
  EXPECT_EQ(stopped_doorbells, uint64_t(qps) * uint64_t(ops));
  EXPECT_EQ(pages_served, uint64_t(qps));
}

INSTANTIATE_TEST_SUITE_P(ResolutionAndMode, DoorbellHijack,
                         ::testing::Values(ClientCase{"link", "simple"}, ClientCase{"proc", "simple"}, ClientCase{"link", "full"},
                                           ClientCase{"proc", "full"}),
                         [](const auto& info) { return std::string(info.param.resolve) + "_" + info.param.mode; });

// What `sigmatrace analyze` makes of it: the GPU-initiated QPs paired across the connection, every
// doorbell in the doorbell table (attributed to its QP and to the kernel launched), the per-GPU
// totals in aggregate.json and the summary.
TEST(DoorbellAnalysis, EveryDoorbellIsInTheOutputsWithItsQpPeerAndKernel) {
  TempDir t;
  const int qps = 2, ops = 120;
  ClientRun r = run_client({"--resolve", "proc", "--qps", std::to_string(qps), "--ops", std::to_string(ops)}, "simple", t / "exp");
  expect_same_output(r);
  const std::string st = build_path("bin/sigmatrace"), dir = t / "exp";
  ProcessResult a = run_process({st, "analyze", dir});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  expect_valid_timeline(dir);
  EXPECT_NE(a.out.find("GPU-initiated"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find(std::to_string(qps * ops) + " doorbells"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("doorbell pages hijacked " + std::to_string(qps)), std::string::npos) << a.out;
  auto sql = [&](const std::string& q) {
    ProcessResult s = run_process({st, "sql", "--csv", dir, q});
    EXPECT_EQ(s.exit_code, 0) << s.err;
    return s.out;
  };
  // Per QP: ops doorbells, producer indices 1..ops, all during put_quiet_kernel.
  EXPECT_EQ(sql("SELECT count(*), sum(delta), min(producer_index), max(producer_index), min(kernel), count(DISTINCT qp_id) "
                "FROM doorbell GROUP BY qp_id ORDER BY qp_id"),
            "count(*),sum(delta),min(producer_index),max(producer_index),min(kernel),count(DISTINCT qp_id)\n" +
                [&] {
                  std::string rows;
                  for (int q = 0; q < qps; ++q)
                    rows += std::to_string(ops) + "," + std::to_string(ops) + ",1," + std::to_string(ops) + ",put_quiet_kernel,1\n";
                  return rows;
                }());
  // Only the devx QPs (no verbs QP of the emulator's), all paired into connections.
  EXPECT_EQ(sql("SELECT count(*), sum(gpu_initiated), sum(remote_qp_id IS NOT NULL) FROM qp"),
            "count(*),sum(gpu_initiated),sum(remote_qp_id IS NOT NULL)\n" + std::to_string(2 * qps) + "," + std::to_string(2 * qps) + "," +
                std::to_string(2 * qps) + "\n");
  EXPECT_EQ(sql("SELECT count(*) FROM connection"), "count(*)\n" + std::to_string(qps) + "\n");
  EXPECT_EQ(sql("SELECT sum(doorbells), sum(wqebbs), sum(qps) FROM gpu"),
            "sum(doorbells),sum(wqebbs),sum(qps)\n" + std::to_string(qps * ops) + "," + std::to_string(qps * ops) + "," +
                std::to_string(2 * qps) + "\n");
  EXPECT_EQ(sql("SELECT name, entry, grid_x, block_x FROM kernel_launch"), "name,entry,grid_x,block_x\nput_quiet_kernel,cuLaunchKernel," +
                                                                            std::to_string(qps) + ",32\n");
  // The timeline has the GPU's doorbell and launch tracks and a doorbell-rate counter per QP.
  const std::string pf = uncompressed_pftrace(dir + "/trace.pftrace");
  for (const char* name : {"GPU (host-memory queues) doorbells", "GPU (host-memory queues) kernel launches", "doorbells/s QP",
                           "launch put_quiet_kernel", "producer_index"})
    EXPECT_NE(pf.find(name), std::string::npos) << name;
}

TEST(DoorbellHijackModes, DoorbellsOffLeavesTheMappingAloneAndStillRecordsTheSetUp) {
  TempDir t;
  ClientRun r = run_client({"--qps", "1", "--ops", "50"}, "simple", t / "exp", {{"SIGMATRACE_DOORBELLS", "off"}});
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->count(EventType::gpu_doorbell), 0u);
  EXPECT_EQ(p->count(EventType::gpu_poller), 0u);
  auto maps = p->of(EventType::gpu_uar_map);
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ((*maps[0])[6], uint64_t(UarMapOutcome::doorbells_off));
  EXPECT_EQ((*maps[0])[3], (*maps[0])[4]);
  EXPECT_EQ(p->count(EventType::devx_qp_create), 2u);
}

TEST(DoorbellHijackModes, AggregateModeCountsDoorbellsAndWqebbsPerQp) {
  TempDir t;
  const int ops = 200;
  ClientRun r = run_client({"--qps", "2", "--ops", std::to_string(ops)}, "aggregate", t / "exp");
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->count(EventType::gpu_doorbell), 0u);
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> per_qp;
  for (const TraceEvent* e : p->of(EventType::aggregate_entry))
    if ((*e)[1] == uint64_t(AggregateKey::gpu_doorbell_qp)) {
      per_qp[(*e)[2]].first += (*e)[4];
      per_qp[(*e)[2]].second += (*e)[5];
    }
  const std::vector<uint64_t> senders = sender_qpns(*p);  // devx state: recorded in every mode
  ASSERT_EQ(senders.size(), 2u);
  ASSERT_EQ(per_qp.size(), 2u);
  for (uint64_t q : senders) {
    EXPECT_EQ(per_qp[q].first, uint64_t(ops)) << "doorbells of QP " << q;
    EXPECT_EQ(per_qp[q].second, uint64_t(ops)) << "WQEBBs of QP " << q;
  }
}

TEST(DoorbellHijackModes, NcclsProbeThenMapIsHijackedBothTimes) {
  TempDir t;
  ClientRun r = run_client({"--qps", "1", "--ops", "40", "--probe"}, "simple", t / "exp");
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  auto maps = p->of(EventType::gpu_uar_map);
  ASSERT_EQ(maps.size(), 2u);
  for (const TraceEvent* m : maps) EXPECT_EQ((*m)[6], uint64_t(UarMapOutcome::hijacked));
  EXPECT_EQ(p->count(EventType::gpu_uar_register), 2u);
  EXPECT_EQ(p->count(EventType::gpu_uar_unregister), 2u);
  expect_one_doorbell_per_operation(*p, 1, 40);
}

TEST(DoorbellHijackModes, OrdinaryPagesAreNeitherHijackedNorRecorded) {
  TempDir t;
  ClientRun r = run_client({"--qps", "1", "--ops", "20", "--plain-page"}, "simple", t / "exp");
  expect_same_output(r);
  EXPECT_NE(r.traced.out.find("plain page: mapped at its own address"), std::string::npos);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->count(EventType::gpu_uar_register), 1u);
  EXPECT_EQ(p->count(EventType::gpu_uar_map), 1u);
}

TEST(DoorbellHijackModes, AnIdlePollerSleepsAndStillForwardsEveryDoorbell) {
  TempDir t;
  // SIGMATRACE_DOORBELL_SPIN_MS=0: after its short spin following a doorbell, a poller looks
  // every 20 us. The client rests 5 ms between operations, so the poller is idle most of the time.
  ClientRun r = run_client({"--qps", "1", "--ops", "40", "--gap-ms", "5"}, "simple", t / "exp", {{"SIGMATRACE_DOORBELL_SPIN_MS", "0"}});
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  expect_one_doorbell_per_operation(*p, 1, 40);
  auto pollers = p->of(EventType::gpu_poller);
  ASSERT_EQ(pollers.size(), 2u);
  const TraceEvent* stop = (*pollers[0])[0] == 2 ? pollers[0] : pollers[1];
  EXPECT_LT((*stop)[3] * 2, (*stop)[4]) << "a sleeping poller used more than half of a core: CPU " << (*stop)[3] << " ns of "
                                        << (*stop)[4] << " ns";
}

TEST(DoorbellHijackModes, OnePollerCanServeSeveralPages) {
  TempDir t;
  const int qps = 4, ops = 150;
  ClientRun r = run_client({"--qps", std::to_string(qps), "--ops", std::to_string(ops)}, "simple", t / "exp",
                     {{"SIGMATRACE_DOORBELL_PAGES_PER_POLLER", "2"}});
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  expect_one_doorbell_per_operation(*p, qps, ops);
  size_t started = 0;
  uint64_t pages_served = 0;
  for (const TraceEvent* e : p->of(EventType::gpu_poller)) {
    started += (*e)[0] == 1;
    if ((*e)[0] == 2) pages_served += (*e)[1];
  }
  EXPECT_EQ(started, 2u);
  EXPECT_EQ(pages_served, 4u);
}

// How real stacks ring that the dedicated-page, one-store client does not: alternating halves of
// the register pair, BlueFlame writes whose control segment names the last WQE's own index
// (libmlx5), an exit without unregistering, and a child forked after the mapping that exits
// through exit(). Each doorbell must still be recorded once, on its QP, announcing one WQEBB
// (the BlueFlame ones as such), every operation must complete, and the poller must have stopped
// with every doorbell of its pages.
struct RingingCase {
  const char* name;
  std::vector<std::string> args;
};
class DoorbellRinging : public ::testing::TestWithParam<RingingCase> {};

TEST_P(DoorbellRinging, EveryDoorbellIsForwardedInOrderAndCountedOnce) {
  TempDir t;
  const int qps = 2, ops = 120;
  std::vector<std::string> args = {"--qps", std::to_string(qps), "--ops", std::to_string(ops)};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  ClientRun r = run_client(args, "simple", t / "exp");
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  const bool blueflame = std::find(args.begin(), args.end(), "--blueflame") != args.end();
  expect_one_doorbell_per_operation(*p, qps, ops, blueflame ? sigmatrace::format::DoorbellKind::blueflame : sigmatrace::format::DoorbellKind::doorbell);
  uint64_t stopped = 0, doorbells = 0;
  for (const TraceEvent* e : p->of(EventType::gpu_poller))
    if ((*e)[0] == 2) ++stopped, doorbells += (*e)[2];
  EXPECT_EQ(stopped, 1u) << "the poller's stop (with its totals) is recorded, also when the pages were never unmapped";
  EXPECT_EQ(doorbells, uint64_t(qps) * uint64_t(ops));
}

INSTANTIATE_TEST_SUITE_P(Stacks, DoorbellRinging,
                         ::testing::Values(RingingCase{"halves", {"--halves"}}, RingingCase{"blueflame", {"--blueflame"}},
                                           RingingCase{"blueflame_halves", {"--blueflame", "--halves"}},
                                           RingingCase{"no_unregister", {"--no-unregister"}}, RingingCase{"fork", {"--fork"}},
                                           RingingCase{"second_bfreg", {"--second-bfreg"}},
                                           RingingCase{"second_bfreg_halves", {"--second-bfreg", "--halves"}}),
                         [](const auto& info) { return std::string(info.param.name); });

// A program that ends its CUDA context with doorbell pages still hijacked (cuCtxDestroy, or
// cudaDeviceReset's cuDevicePrimaryCtxReset), through the linked driver and through
// cuGetProcAddress: every poller lets go of what it held in the context before the real call,
// which is recorded with what was released, and the program's output does not change.
struct ContextCase {
  const char* name;
  const char* end;
  const char* resolve;
  sigmatrace::format::CudaContextEnd how;
};
class ContextEnd : public ::testing::TestWithParam<ContextCase> {};

TEST_P(ContextEnd, EveryPollerLetsGoOfTheContextBeforeItEnds) {
  TempDir t;
  const ContextCase c = GetParam();
  ClientRun r = run_client({"--qps", "2", "--ops", "50", "--resolve", c.resolve, "--end-context", c.end}, "simple", t / "exp");
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  auto ends = p->of(EventType::cuda_context_end);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_NE((*ends[0])[0], 0u) << "the context";
  EXPECT_EQ((*ends[0])[1], uint64_t(c.how));
  uint64_t pollers = 0;
  for (const TraceEvent* e : p->of(EventType::gpu_poller)) pollers += (*e)[0] == 1;
  EXPECT_GE(pollers, 1u);
  EXPECT_EQ((*ends[0])[2], pollers) << "every poller let go of it";
  EXPECT_EQ((*ends[0])[5], 0u) << "the real call's result";
  expect_one_doorbell_per_operation(*p, 2, 50);
}

INSTANTIATE_TEST_SUITE_P(Calls, ContextEnd,
                         ::testing::Values(ContextCase{"destroy_linked", "destroy", "link", sigmatrace::format::CudaContextEnd::destroy},
                                           ContextCase{"destroy_resolved", "destroy", "proc", sigmatrace::format::CudaContextEnd::destroy},
                                           ContextCase{"reset_linked", "reset", "link", sigmatrace::format::CudaContextEnd::reset},
                                           ContextCase{"reset_resolved", "reset", "proc", sigmatrace::format::CudaContextEnd::reset}),
                         [](const auto& info) { return std::string(info.param.name); });

// Several QPs on one UAR page, ringing one register at once (rdma-core's shared UAR, NCCL's QP
// groups): a doorbell overwritten by another QP's store before the poller looked still reaches
// the NIC, from its QP's doorbell record. The client first makes `lost` such losses for sure (QP
// 0 only updates its record; QP 1 rings right after), then all four QPs ring concurrently.
TEST(DoorbellSharing, ADoorbellOverwrittenByAnotherQpsIsForwardedFromItsRecord) {
  TempDir t;
  const int qps = 4, ops = 400, lost = 50;
  ClientRun r = run_client({"--shared-uar", "--qps", std::to_string(qps), "--ops", std::to_string(ops), "--lost-doorbells",
                            std::to_string(lost)},
                           "simple", t / "exp");
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  const std::vector<uint64_t> senders = sender_qpns(*p);
  ASSERT_EQ(senders.size(), size_t(qps));
  EXPECT_EQ(p->count(EventType::gpu_uar_map), 1u) << "one page, mapped once";
  std::map<uint64_t, uint64_t> wqebbs, from_record;
  for (const TraceEvent* e : p->of(EventType::gpu_doorbell)) {
    wqebbs[(*e)[1]] += (*e)[3];
    from_record[(*e)[1]] += (*e)[4] == uint64_t(sigmatrace::format::DoorbellKind::from_record);
  }
  // Every WQEBB each QP posted was announced to the NIC exactly once: QPs 0 and 1 a NOP per loss
  // besides their writes.
  for (int q = 0; q < qps; ++q)
    EXPECT_EQ(wqebbs[senders[size_t(q)]], uint64_t(ops + (q < 2 ? lost : 0))) << "QP " << q;
  EXPECT_GE(from_record[senders[0]], uint64_t(lost)) << "QP 0's lost doorbells were not forwarded from its record";
  EXPECT_EQ(wqebbs.size(), senders.size()) << "doorbells on QPs the client did not create";
}

// Two processes of a node given the same CPU list (as every rank of a job is): their pollers take
// different CPUs of it, whatever their local rank says (none here), instead of both spinning on
// the first (two spinning pollers on one core stalled each other: milliseconds per round trip).
TEST(DoorbellPollers, TheProcessesOfANodeShareOutTheCpuList) {
  TempDir t;
  ProcessOptions o;
  o.unset_env = {"SIGMATRACE_MODE", "SIGMATRACE_PROVIDERS", "LD_PRELOAD", "SIGMATRACE_DOORBELLS", "OMPI_COMM_WORLD_LOCAL_RANK",
                 "SLURM_LOCALID", "LOCAL_RANK", "MPI_LOCALRANKID"};
  o.set_env = {{"LD_LIBRARY_PATH", build_path("tests/fake_cuda")}, {"SIGMATRACE_DOORBELL_CPUS", "0,1"}};
  std::vector<BackgroundProcess> runs;
  for (int i = 0; i < 2; ++i) {
    o.set_env["SOFTNIC_FABRIC"] = "doorbell-cpus-" + std::to_string(getpid()) + "-" + std::to_string(i);
    runs.push_back(start_process({build_path("bin/sigmatrace"), "profile", "--softnic", "-o", t / "exp", "--",
                                  build_path("tests/bin/doorbell_client"), "--ops", "60", "--gap-ms", "5"},
                                 o));
  }
  for (BackgroundProcess& r : runs) {
    ProcessResult res = wait_process(r);
    EXPECT_EQ(res.exit_code, 0) << res.out << res.err;
  }
  std::vector<ProcessEvents> procs;
  std::string err;
  ASSERT_TRUE(read_experiment(t / "exp", &procs, &err)) << err;
  ASSERT_EQ(procs.size(), 2u);
  std::set<int64_t> cpus;
  for (const ProcessEvents& p : procs)
    for (const TraceEvent* e : p.of(EventType::gpu_poller))
      if ((*e)[0] == 1) cpus.insert(int64_t((*e)[6]));
  EXPECT_EQ(cpus, (std::set<int64_t>{0, 1})) << "the pollers' CPUs";
}

}  // namespace

// The hang dump on GPU-initiated work (docs/hangs.md): a kernel still running (launched on an
// explicit stream, so the profiler learns when it ends) that rings nothing for longer than
// --hang-dump is outstanding work: the process dumps once, and the analysis names the kernel,
// how long it had run and when its GPU last rang. The stand-in driver's kernel "ends" when the
// client says so. While doorbells keep coming, or once the kernel has ended, nothing is dumped.
TEST(DoorbellHangDump, AKernelThatStopsRingingIsDumpedWithItsState) {
  TempDir t;
  const std::string st = build_path("bin/sigmatrace"), dir = t / "exp";
  ClientRun r = run_client({"--qps", "1", "--ops", "20", "--hang-s", "3"}, "simple", dir, {{"SIGMATRACE_HANG_DUMP_S", "1"}});
  expect_same_output(r);
  EXPECT_NE(r.traced.err.find("no progress: hang state recorded"), std::string::npos) << r.traced.err;
  ProcessResult a = run_process({st, "analyze", "-q", "--no-sqlite", dir});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  std::ifstream in(dir + "/aggregate.json");
  const nlohmann::json h = nlohmann::json::parse(in)["hangs"];
  ASSERT_EQ(h["dumps"].size(), 1u) << h.dump(1);
  EXPECT_EQ(h["dumps"][0]["reason"], "no progress");
  EXPECT_EQ(h["dumps"][0]["gpu_kernels_running"], 1);
  ASSERT_EQ(h["gpu_waiting"].size(), 1u) << h.dump(1);
  const nlohmann::json& g = h["gpu_waiting"][0];
  EXPECT_EQ(g["kernel"], "put_quiet_kernel");
  // Dumped a second after the last doorbell (the last progress), the kernel having run since
  // before the first: between 1 s and the 3 s it waited.
  EXPECT_GE(g["last_doorbell_age_at_dump_ns"].get<int64_t>(), 1000000000);
  EXPECT_LT(g["last_doorbell_age_at_dump_ns"].get<int64_t>(), 3000000000);
  EXPECT_GT(g["running_at_dump_ns"].get<int64_t>(), g["last_doorbell_age_at_dump_ns"].get<int64_t>());
  EXPECT_TRUE(g["peers"].empty()) << "the client's QPs are connected to its own: no other process owes it";
  // The QP's state at the dump: its 20 WQEs posted, the last doorbell announcing index 20.
  ASSERT_EQ(g["qps"].size(), 1u) << g.dump(1);
  EXPECT_EQ(g["qps"][0]["producer_index"], 20);
  EXPECT_EQ(g["qps"][0]["wqebbs"], 20);
  EXPECT_EQ(g["qps"][0]["last_doorbell_ns"], g["last_doorbell_ns"]);
  EXPECT_TRUE(h["hung_without_waiting_qps"].empty());
  ProcessResult rep = run_process({st, "report", dir});
  EXPECT_NE(rep.out.find("kernel put_quiet_kernel, running"), std::string::npos) << rep.out;

  // A doorbell every 0.5 s, then a kernel that ends 1 s after its last: under --hang-dump 2, no dump.
  const std::string quiet = t / "quiet";
  ClientRun q = run_client({"--qps", "1", "--ops", "6", "--gap-ms", "500", "--hang-s", "1"}, "simple", quiet,
                           {{"SIGMATRACE_HANG_DUMP_S", "2"}});
  expect_same_output(q);
  const ProcessEvents* p = q.client();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->count(EventType::hang_dump), 0u) << q.traced.err;
  EXPECT_EQ(p->count(EventType::gpu_doorbell), 6u);
}

// SIGMATRACE_KERNEL_MARKERS (docs/gpu-doorbells.md, "Kernels"). By default (on) the launch gets
// an event without timing (the stand-in driver refuses to time it, as CUDA does), and its end is
// recorded as seen by the poller: after a look that found it still running, which came after its
// last doorbell (it runs on for a second after that), and soon after it ended. timed: a timed
// event, and the end on the GPU's clock. 0: no event after a launch, so the pollers never ask the
// driver about one; every doorbell is still forwarded and recorded.
TEST(DoorbellKernelMarkers, UntimedByDefaultTimedOnRequestOffLeavesLaunchesUnmarked) {
  TempDir t;
  for (const char* mode : {"default", "timed", "0"}) {
    const std::string dir = t / mode;
    const bool on = strcmp(mode, "0") != 0, timed = strcmp(mode, "timed") == 0;
    std::map<std::string, std::string> env;
    if (strcmp(mode, "default")) env["SIGMATRACE_KERNEL_MARKERS"] = mode;
    // --hang-s: the kernel runs on an explicit stream (markable) and ends 1 s after its last doorbell.
    ClientRun r = run_client({"--qps", "1", "--ops", "20", "--hang-s", "1"}, "simple", dir, env);
    expect_same_output(r);
    const ProcessEvents* p = r.client();
    ASSERT_NE(p, nullptr);
    auto doorbells = p->of(EventType::gpu_doorbell);
    EXPECT_EQ(doorbells.size(), 20u) << mode;
    auto launches = p->of(EventType::cuda_launch);
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_EQ((*launches[0])[12], on ? 1u : 0u) << mode << ": the launch's marker";
    EXPECT_EQ(p->count(EventType::cuda_kernel_end), timed ? 1u : 0u) << mode;
    auto seen = p->of(EventType::cuda_kernel_seen_end);
    ASSERT_EQ(seen.size(), on && !timed ? 1u : 0u) << mode;
    if (seen.empty()) continue;
    const TraceEvent& e = *seen[0];
    EXPECT_EQ(e[3], launches[0]->tsc) << "the launch it ends";
    uint64_t last_doorbell = 0;
    for (const TraceEvent* d : doorbells) last_doorbell = std::max(last_doorbell, d->tsc);
    EXPECT_GT(e[4], last_doorbell) << "seen running after its last doorbell";
    EXPECT_GT(e.tsc, e[4]);
    const auto markers = p->of(EventType::cuda_kernel_markers);
    ASSERT_EQ(markers.size(), 1u);
    EXPECT_EQ((*markers[0])[0], 1u);
    EXPECT_EQ((*markers[0])[1], 1u) << "resolved";
    // The bracket: its width in TSC ticks against the second the kernel ran after its last doorbell.
    const double bracket = double(e.tsc - e[4]), after_last = double(e.tsc - last_doorbell);
    EXPECT_LT(bracket, after_last / 5) << "found ended within a fifth of a second of a look that saw it running";
  }
}

// How often a poller asks the driver about a running kernel (docs/gpu-doorbells.md, "Kernels"):
// once after each doorbell, and every 100 us while none comes. Each ask is a driver call of about
// 1 us; asked every 10 us as well (4 asks per doorbell in gda's operations), they cost gda's
// operations 0.6-0.8 us each on an H200. Here the GPU thread computes 30 us between operations, so
// the poller stays awake between doorbells; the stand-in driver counts the asks that found the
// kernel running, and how long it ran.
TEST(DoorbellKernelMarkers, AskedAboutOnceAfterEachDoorbellWhileTheKernelRings) {
  TempDir t;
  const std::string log = t / "looks.log";
  constexpr uint64_t kOps = 200;
  ClientRun r = run_client({"--qps", "1", "--ops", std::to_string(kOps), "--busy-us", "30", "--marked"}, "simple", t / "exp",
                           {{"FAKE_CUDA_LOOKS_LOG", log}});
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->count(EventType::gpu_doorbell), kOps);
  // One line per run, untraced first: the kernel's length and the asks that found it running.
  std::ifstream in(log);
  std::string word1, word2;
  uint64_t kernel_ns[2] = {}, asks[2] = {};
  for (int run = 0; run < 2; ++run) ASSERT_TRUE(in >> word1 >> kernel_ns[run] >> word2 >> asks[run]) << "run " << run << " in " << log;
  EXPECT_EQ(asks[0], 0u) << "untraced, nobody asks";
  EXPECT_GT(asks[1], 0u) << "the kernel is marked, and was seen running";
  const uint64_t bound = kOps + kernel_ns[1] / 100000 + 20;
  EXPECT_LE(asks[1], bound) << "asked " << asks[1] << " times in " << kernel_ns[1] / 1000 << " us of a kernel ringing " << kOps
                            << " doorbells: more than once per doorbell and once per 100 us";
}
