// WQE recovery end to end, without a GPU: doorbell_client --mix posts a known sequence of WQEs of
// every kind the test bed executes (inline and gathered WRITEs, READs, FETCH_ADDs,
// COMPARE_SWAPs, NOPs, WQEs of several WQEBBs that wrap around the ring), one or several per
// doorbell, on queues in host memory. Under SIGMATRACE_DOORBELLS=wqe the trace must hold exactly
// those WQEs — opcode, size, flags, addresses, keys, operands — each after the doorbell that
// announced it, and the client's output must not change.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>

#include "doorbell_client_run.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"

using namespace sigmatrace::test;
using sigmatrace::format::AggregateKey;
using sigmatrace::format::DoorbellWqeClass;
using sigmatrace::format::EventType;
using sigmatrace::format::SqMemory;

namespace {

// One WQE as doorbell_client --mix posts it (see its header comment for the memory layout).
struct ExpectedWqe {
  uint64_t index, opcode, ds, flags, bytes, raddr, laddr, sges, is_inline, swap_add, compare;
  uint64_t wqebbs() const { return (ds * 16 + 63) / 64; }
};

std::vector<ExpectedWqe> expected_mix(uint64_t mr_addr, uint64_t rkey_unused, int q, int ops, int burst) {
  (void)rkey_unused;
  const uint64_t base = mr_addr + uint64_t(q) * (uint64_t(ops) * 128 + 16), n = uint64_t(ops);
  auto slot = [&](uint64_t k) { return base + 8 * k; };
  auto src = [&](uint64_t k) { return base + 8 * n + 8 * k; };
  auto dst = [&](uint64_t k) { return base + 16 * n + 8 * k; };
  auto big = [&](uint64_t k) { return base + 24 * n + 104 * k; };
  const uint64_t counter = base + 128 * n, swap = counter + 8, ce = 0x08;
  std::vector<ExpectedWqe> out = {{0, 0x00, 1, ce, 0, 0, 0, 0, 0, 0, 0}};  // the NOP
  uint64_t index = 1;
  for (uint64_t k = 0; k < n; ++k) {
    const uint64_t flags = (k % uint64_t(burst) == uint64_t(burst) - 1) ? ce : 0;
    ExpectedWqe w{};
    switch (k % 6) {
      case 0: w = {index, 0x08, 3, flags, 8, slot(k), 0, 0, 1, 0, 0}; break;
      case 1: w = {index, 0x08, 3, flags, 8, slot(k), src(k), 1, 0, 0, 0}; break;
      case 2: w = {index, 0x10, 3, flags, 8, src(k), dst(k), 1, 0, 0, 0}; break;
      case 3: w = {index, 0x12, 4, ce, 8, counter, dst(k), 1, 0, k + 1, 0}; break;
      case 4: w = {index, 0x11, 4, ce, 8, swap, dst(k), 1, 0, k + 1, k > 4 ? k - 5 : 0}; break;
      default: w = {index, 0x08, 9, flags, 100, big(k), 0, 0, 1, 0, 0}; break;
    }
    out.push_back(w);
    index += w.wqebbs();
  }
  return out;
}

struct Mr {
  uint64_t addr, lkey, rkey;
};
Mr the_mr(const ProcessEvents& p) {
  auto mrs = p.of(EventType::ibv_mr_reg);
  EXPECT_EQ(mrs.size(), 1u);
  return mrs.empty() ? Mr{} : Mr{(*mrs[0])[2], (*mrs[0])[5], (*mrs[0])[6]};
}

// Every WQE of every sending QP recovered exactly, after its doorbell; nothing lost or damaged.
void expect_exact_recovery(const ProcessEvents& p, int qps, int ops, int burst) {
  const std::vector<uint64_t> senders = sender_qpns(p);
  ASSERT_EQ(senders.size(), size_t(qps));
  const Mr mr = the_mr(p);
  for (int q = 0; q < qps; ++q) {
    const uint64_t qpn = senders[size_t(q)];
    const std::vector<ExpectedWqe> want = expected_mix(mr.addr, mr.rkey, q, ops, burst);
    // This QP's doorbells and WQEs in recording order (one poller thread records both).
    std::vector<const TraceEvent*> seq;
    for (const TraceEvent& e : p.events)
      if ((e.type == uint16_t(EventType::gpu_doorbell) && e[1] == qpn) || (e.type == uint16_t(EventType::gpu_wqe) && e[0] == qpn))
        seq.push_back(&e);
    size_t w = 0, doorbells = 0;
    const TraceEvent* bell = nullptr;
    uint64_t announced = 0;
    for (const TraceEvent* e : seq) {
      if (e->type == uint16_t(EventType::gpu_doorbell)) {
        ASSERT_EQ(announced, bell ? (*bell)[6] : 0u) << "QP " << qpn << ": doorbell " << doorbells << " had other WQEs than it said";
        bell = e;
        announced = 0;
        ++doorbells;
        // The first doorbell announces the NOP; each later one a burst.
        EXPECT_EQ((*e)[6], doorbells == 1 ? 1u : uint64_t(burst));
        bool data = false;
        for (size_t j = w; j < w + (*e)[6] && j < want.size(); ++j) data |= want[j].bytes > 8;
        EXPECT_EQ((*e)[5], uint64_t(data ? DoorbellWqeClass::data : DoorbellWqeClass::control)) << "doorbell " << doorbells;
        continue;
      }
      ASSERT_NE(bell, nullptr) << "a WQE before any doorbell";
      ASSERT_LT(w, want.size());
      const ExpectedWqe& x = want[w];
      const std::string at = "QP " + std::to_string(qpn) + " WQE " + std::to_string(w);
      EXPECT_EQ(e->tsc, bell->tsc) << at << ": stamped with its doorbell's time";
      EXPECT_EQ((*e)[2], (*bell)[2]) << at << ": its doorbell's producer index";
      EXPECT_EQ((*e)[1], x.index & 0xffff) << at;
      EXPECT_EQ((*e)[3], x.opcode) << at;
      EXPECT_EQ((*e)[5], x.ds) << at;
      EXPECT_EQ((*e)[6], x.flags) << at;
      EXPECT_EQ((*e)[7], x.bytes) << at;
      EXPECT_EQ((*e)[8], x.raddr) << at;
      EXPECT_EQ((*e)[9], x.opcode ? mr.rkey : 0u) << at;
      EXPECT_EQ((*e)[10], x.laddr) << at;
      EXPECT_EQ((*e)[11], x.sges ? mr.lkey : 0u) << at;
      EXPECT_EQ((*e)[12], x.sges) << at;
      EXPECT_EQ((*e)[13], x.is_inline) << at;
      EXPECT_EQ((*e)[15], x.swap_add) << at;
      EXPECT_EQ((*e)[16], x.compare) << at;
      ++w;
      ++announced;
    }
    EXPECT_EQ(w, want.size()) << "QP " << qpn << ": WQEs recovered";
    EXPECT_EQ(doorbells, 1 + size_t(ops / burst)) << "QP " << qpn;
  }
}

// The per-QP integrity report: everything recovered, nothing lost, damaged or unread.
void expect_clean_stats(const ProcessEvents& p, int qps, int ops, uint64_t doorbells_per_qp, bool sync) {
  const uint64_t wqebbs = 1 + uint64_t(ops / 6) * 8;
  std::map<uint64_t, const TraceEvent*> stats;
  for (const TraceEvent* e : p.of(EventType::gpu_wqe_stats)) stats[(*e)[0]] = e;
  for (uint64_t qpn : sender_qpns(p)) {
    ASSERT_TRUE(stats.count(qpn)) << "no gpu_wqe_stats for QP " << qpn;
    const TraceEvent& s = *stats[qpn];
    EXPECT_EQ(s[3], uint64_t(SqMemory::host));
    EXPECT_EQ(s[4], uint64_t(ops) + 1) << "recovered";
    EXPECT_EQ(s[5], wqebbs) << "WQEBBs parsed";
    EXPECT_EQ(s[6], 0u) << "lost";
    EXPECT_EQ(s[7], 0u) << "damaged";
    EXPECT_EQ(s[8], 0u) << "unread";
    EXPECT_EQ(s[9], 0u) << "index errors";
    EXPECT_GE(s[11], 1u);
    EXPECT_LE(s[11], doorbells_per_qp) << "batches";
    if (sync) {
      EXPECT_EQ(s[11], doorbells_per_qp) << "sync mode parses at every doorbell";
    }
  }
  EXPECT_EQ(stats.size(), size_t(qps));
}

struct MixCase {
  const char* mode;
  int burst;
  const char* batch;  // SIGMATRACE_WQE_BATCH ("" = default)
};

class WqeRecovery : public ::testing::TestWithParam<MixCase> {};

TEST_P(WqeRecovery, EveryWqeIsRecoveredExactlyAndTheProgramIsUnchanged) {
  TempDir t;
  const MixCase c = GetParam();
  const int qps = 2, ops = 300;
  std::map<std::string, std::string> env = {{"SIGMATRACE_DOORBELLS", "wqe"}};
  if (*c.batch) env["SIGMATRACE_WQE_BATCH"] = c.batch;
  ClientRun r = run_client({"--mix", "--qps", std::to_string(qps), "--ops", std::to_string(ops), "--burst", std::to_string(c.burst)},
                           c.mode, t / "exp", env);
  expect_same_output(r);
  const ProcessEvents* p = r.client();
  ASSERT_NE(p, nullptr);
  const uint64_t doorbells = 1 + uint64_t(ops / c.burst);
  expect_clean_stats(*p, qps, ops, doorbells, std::string(c.batch) == "sync");
  if (std::string(c.mode) != "aggregate") {
    expect_exact_recovery(*p, qps, ops, c.burst);
    EXPECT_EQ(p->count(EventType::gpu_doorbell), size_t(qps) * doorbells);
    return;
  }
  // Aggregate mode: WQEs and payload bytes per (QP, opcode), no per-operation events.
  EXPECT_EQ(p->count(EventType::gpu_wqe), 0u);
  EXPECT_EQ(p->count(EventType::gpu_doorbell), 0u);
  std::map<std::pair<uint64_t, uint64_t>, std::pair<uint64_t, uint64_t>> per;
  for (const TraceEvent* e : p->of(EventType::aggregate_entry))
    if ((*e)[1] == uint64_t(AggregateKey::gpu_wqe_qp_opcode)) {
      auto& t = per[std::make_pair((*e)[2], (*e)[3])];
      t.first += (*e)[4];
      t.second += (*e)[5];
    }
  using Totals = std::pair<uint64_t, uint64_t>;  // WQEs, payload bytes
  for (uint64_t qpn : sender_qpns(*p)) {
    const uint64_t per_kind = uint64_t(ops / 6);
    auto of = [&](uint64_t opcode) { return per[std::make_pair(qpn, opcode)]; };
    EXPECT_EQ(of(0x00), Totals(1, 0)) << "NOP";
    EXPECT_EQ(of(0x08), Totals(3 * per_kind, per_kind * (8 + 8 + 100))) << "WRITE";
    EXPECT_EQ(of(0x10), Totals(per_kind, per_kind * 8)) << "READ";
    EXPECT_EQ(of(0x12), Totals(per_kind, per_kind * 8)) << "FETCH_ADD";
    EXPECT_EQ(of(0x11), Totals(per_kind, per_kind * 8)) << "COMPARE_SWAP";
  }
  // The analysis folds them into the QPs' statistics, with the integrity counts of every mode.
  const std::string st = build_path("bin/sigmatrace"), dir = t / "exp";
  ASSERT_EQ(run_process({st, "analyze", dir}).exit_code, 0);
  expect_valid_timeline(dir);
  ProcessResult q = run_process({st, "sql", "--csv", dir,
                                 "SELECT opcode, sum(ops), sum(bytes) FROM qp_stats WHERE opcode IN ('WRITE', 'READ') GROUP BY opcode "
                                 "UNION ALL SELECT 'recovered', sum(wqes_recovered), sum(lost_wqebbs + damaged_wqes) FROM qp_doorbells"});
  const uint64_t k = uint64_t(qps) * uint64_t(ops / 6);
  EXPECT_EQ(q.out, "opcode,sum(ops),sum(bytes)\nREAD," + std::to_string(k) + "," + std::to_string(8 * k) + "\nWRITE," +
                       std::to_string(3 * k) + "," + std::to_string(116 * k) + "\nrecovered," + std::to_string(qps * (ops + 1)) + ",0\n");
}

INSTANTIATE_TEST_SUITE_P(ModeBurstBatch, WqeRecovery,
                         ::testing::Values(MixCase{"full", 1, ""}, MixCase{"full", 6, "4"}, MixCase{"simple", 6, "sync"},
                                           MixCase{"simple", 1, "1"}, MixCase{"aggregate", 6, ""}),
                         [](const auto& info) {
                           return std::string(info.param.mode) + "_burst" + std::to_string(info.param.burst) + "_batch" +
                                  (*info.param.batch ? info.param.batch : "default");
                         });

// What `sigmatrace analyze` makes of it: every recovered WQE an op row of layer gpu joined to its
// doorbell, data and control doorbells told apart, the integrity counts and GPU totals in
// aggregate.json and the summary, the GPU matrix, and the timeline's GPU tracks.
TEST(WqeRecoveryAnalysis, RecoveredOperationsAreOpRowsWithTheirDoorbellGpuKernelAndPeer) {
  TempDir t;
  const int qps = 2, ops = 120, burst = 6;
  ClientRun r = run_client({"--mix", "--resolve", "proc", "--qps", std::to_string(qps), "--ops", std::to_string(ops), "--burst",
                            std::to_string(burst)},
                           "full", t / "exp", {{"SIGMATRACE_DOORBELLS", "wqe"}});
  expect_same_output(r);
  const std::string st = build_path("bin/sigmatrace"), dir = t / "exp";
  ProcessResult a = run_process({st, "analyze", dir});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  expect_valid_timeline(dir);
  const std::string recovered = std::to_string(qps * (ops + 1));
  EXPECT_NE(a.out.find("WQEs recovered " + recovered + ", lost 0 WQEBBs (overwritten before read), damaged 0, unread 0 WQEBBs; " +
                       std::to_string(qps * ops / burst) + " data and " + std::to_string(qps) + " control doorbells"),
            std::string::npos)
      << a.out;
  EXPECT_NE(a.out.find("host-memory queues -> "), std::string::npos) << a.out;
  auto sql = [&](const std::string& q) {
    ProcessResult s = run_process({st, "sql", "--csv", dir, q});
    EXPECT_EQ(s.exit_code, 0) << s.err;
    return s.out;
  };
  // Per opcode over both QPs: the NOPs, then each kind of ops / 6 per QP (the WRITEs are three kinds).
  const int k = ops / 6 * qps;
  auto n = [](int v) { return std::to_string(v); };
  EXPECT_EQ(sql("SELECT opcode, count(*), sum(bytes), sum(inline), count(DISTINCT qp_id), min(kernel), count(DISTINCT rkey) "
                "FROM gpu_ops GROUP BY opcode ORDER BY opcode"),
            "opcode,count(*),sum(bytes),sum(inline),count(DISTINCT qp_id),min(kernel),count(DISTINCT rkey)\n"
            "ATOMIC_CS," + n(k) + "," + n(8 * k) + ",0,2,put_quiet_kernel,1\n"
            "ATOMIC_FA," + n(k) + "," + n(8 * k) + ",0,2,put_quiet_kernel,1\n"
            "NOP,2,0,0,2,put_quiet_kernel,1\n"
            "READ," + n(k) + "," + n(8 * k) + ",0,2,put_quiet_kernel,1\n"
            "WRITE," + n(3 * k) + "," + n(116 * k) + "," + n(2 * k) + ",2,put_quiet_kernel,1\n");
  // Every operation is joined to a doorbell of its QP, stamped with that doorbell's time; each
  // doorbell announced as many WQEs as were joined to it.
  EXPECT_EQ(sql("SELECT count(*), sum(g.qp_id = d.qp_id AND g.ts_ns = d.ts_ns), sum(g.peer_process_id IS NOT NULL) "
                "FROM gpu_ops g JOIN doorbell d USING (doorbell_id)"),
            "count(*),sum(g.qp_id = d.qp_id AND g.ts_ns = d.ts_ns),sum(g.peer_process_id IS NOT NULL)\n" + recovered + "," + recovered +
                "," + recovered + "\n");
  EXPECT_EQ(sql("SELECT count(*) FROM doorbell d WHERE wqes != (SELECT count(*) FROM gpu_op g WHERE g.doorbell_id = d.doorbell_id)"),
            "count(*)\n0\n");
  EXPECT_EQ(sql("SELECT wqe_class, count(*) FROM doorbell GROUP BY wqe_class ORDER BY wqe_class"),
            "wqe_class,count(*)\ncontrol," + n(qps) + "\ndata," + n(qps * ops / burst) + "\n");
  EXPECT_EQ(sql("SELECT sum(wqes_recovered), sum(lost_wqebbs + damaged_wqes + unread_wqebbs + index_errors), sum(wqes_read) "
                "FROM qp_doorbells"),
            "sum(wqes_recovered),sum(lost_wqebbs + damaged_wqes + unread_wqebbs + index_errors),sum(wqes_read)\n" + recovered + ",0," +
                n(qps) + "\n");
  // The GPU rows count in the connections like verbs work requests: writes and atomics out, reads back.
  EXPECT_EQ(sql("SELECT sum(bytes_a_to_b + bytes_b_to_a) FROM connection"),
            "sum(bytes_a_to_b + bytes_b_to_a)\n" + n(116 * k + 3 * 8 * k) + "\n");
  std::ifstream jf(dir + "/aggregate.json");
  const std::string json((std::istreambuf_iterator<char>(jf)), std::istreambuf_iterator<char>());
  for (const std::string& want : {"\"wqes_recovered\": " + recovered, std::string("\"gpu\": {"), std::string("\"gpu_label\": \"")})
    EXPECT_NE(json.find(want), std::string::npos) << want;
  const std::string pf = uncompressed_pftrace(dir + "/trace.pftrace");
  for (const char* name : {"data doorbell", "control doorbell", "gpu.wqe", "bytes/s GPU (host-memory queues)", "remote_addr"})
    EXPECT_NE(pf.find(name), std::string::npos) << name;
}

}  // namespace
