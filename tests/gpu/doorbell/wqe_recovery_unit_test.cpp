// WQE recovery of one send queue in host memory, driven directly (this test process is the traced
// program): the parsing of every WQE kind, wrap-around, batching, and the integrity checks —
// slots overwritten before they were read, WQEs that do not parse, producer indices that go
// backwards, queues nobody described — read back from the trace the runtime wrote.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <cstring>
#include <map>

#include "mlx5/wqe.hpp"
#include "profiler/doorbell/send_queues.h"
#include "profiler/doorbell/wqe_recovery.h"
#include "profiler/lifecycle/lifecycle.h"
#include "support/temp_dir.h"
#include "support/trace_events.h"

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::doorbell;
using sigmatrace::format::DoorbellKind;
using sigmatrace::format::DoorbellWqeClass;
using sigmatrace::format::EventType;
using sigmatrace::format::SqMemory;
using sigmatrace::test::ProcessEvents;
using sigmatrace::test::TraceEvent;
namespace m5 = sigmatrace::mlx5;

namespace {

constexpr uint32_t kQpn = 0x4321, kPage = 7;

// A send queue in host memory and a GPU thread's way of filling it.
struct Ring {
  uint32_t log;
  uint8_t* buf;
  uint64_t prod = 0;
  explicit Ring(uint32_t log_wqebbs) : log(log_wqebbs), buf(static_cast<uint8_t*>(aligned_alloc(4096, 4096 << (log_wqebbs > 6 ? log_wqebbs - 6 : 0)))) {
    memset(buf, 0, size_t(64) << log);
  }
  ~Ring() { free(buf); }
  // Writes bytes (ds * 16 of them, a whole WQE) at the producer position, wrapping; returns its index.
  uint64_t post(const uint8_t* wqe, uint32_t ds) {
    const uint32_t nbb = (ds * 16 + 63) / 64;
    for (uint32_t i = 0; i < nbb; ++i) memcpy(buf + (((prod + i) & ((1u << log) - 1)) << 6), wqe + 64 * i, 64);
    uint64_t at = prod;
    prod += nbb;
    return at;
  }
};

// Builds a WQE: ctrl, then the given 16-byte segments (or inline bytes).
struct Wqe {
  uint8_t b[1024] = {};
  uint32_t len = 16;
  Wqe(uint8_t opcode, uint8_t opmod, uint16_t idx, uint8_t flags, uint32_t imm_host = 0) {
    m5::CtrlSeg c{};
    c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(opmod, idx, opcode);
    c.fm_ce_se = flags;
    c.imm = m5::be32(imm_host);
    memcpy(b, &c, 16);
  }
  Wqe& raddr(uint64_t a, uint32_t rkey) {
    m5::RaddrSeg r{m5::be64(a), m5::be32(rkey), 0};
    memcpy(b + len, &r, 16);
    len += 16;
    return *this;
  }
  Wqe& data(uint64_t a, uint32_t bytes, uint32_t lkey) {
    m5::DataSeg d{m5::be32(bytes), m5::be32(lkey), m5::be64(a)};
    memcpy(b + len, &d, 16);
    len += 16;
    return *this;
  }
  Wqe& atomic(uint64_t x, uint64_t y) {
    m5::AtomicSeg s{m5::be64(x), m5::be64(y)};
    memcpy(b + len, &s, 16);
    len += 16;
    return *this;
  }
  Wqe& inline_data(uint32_t n) {
    uint32_t hdr = m5::be32(n | m5::kInlineFlag);
    memcpy(b + len, &hdr, 4);
    for (uint32_t i = 0; i < n; ++i) b[len + 4 + i] = uint8_t(i);
    len += (4 + n + 15) & ~15u;
    return *this;
  }
  // Sets ds from the length (qpn: whose QP it claims to be).
  uint32_t finish(uint32_t qpn = kQpn) {
    const uint32_t ds = len / 16;
    m5::CtrlSeg c;
    memcpy(&c, b, 16);
    c.qpn_ds = m5::ctrl_qpn_ds(qpn, ds);
    memcpy(b, &c, 16);
    return ds;
  }
};

uint64_t post(Ring& r, Wqe w, uint32_t qpn = kQpn) {
  uint32_t ds = w.finish(qpn);
  return r.post(w.b, ds);
}

// Runs body traced: in a child process (the runtime starts once per process), with the runtime
// started into a fresh directory and recovery configured; returns what the child recorded.
ProcessEvents traced(uint32_t batch, const std::function<void(CopyStreams*)>& body, bool copy_at_doorbell = false) {
  sigmatrace::test::TempDir dir;
  const std::string exp = dir / "exp";
  fflush(nullptr);
  pid_t child = fork();
  if (child == 0) {
    setenv("SIGMATRACE_OUTPUT", exp.c_str(), 1);
    if (!start_runtime()) _exit(3);
    std::atomic<bool> active{true};
    Config c;
    c.doorbells = DoorbellMode::wqe;
    c.wqe_batch = batch;
    c.wqe_copy_at_doorbell = copy_at_doorbell;
    c.mode = TraceMode::full;
    configure_recovery(c, &active);
    CopyStreams streams;
    body(&streams);
    streams.close_all();
    stop_runtime();
    fflush(nullptr);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the traced child failed (its messages are above)";
  std::vector<ProcessEvents> procs;
  std::string err;
  EXPECT_TRUE(sigmatrace::test::read_experiment(exp, &procs, &err)) << err;
  return procs.empty() ? ProcessEvents{} : procs[0];
}

SqRecovery* recovery_of(Ring& ring, CopyStreams* streams, uint32_t qpn = kQpn) {
  SendQueue q;
  q.qpn = qpn;
  q.log_wqebbs = ring.log;
  q.addr = reinterpret_cast<uint64_t>(ring.buf);
  q.memory = SqMemory::host;
  add_send_queue(q);
  return SqRecovery::create(0, qpn, kPage, streams);
}

// The QP's report, and the QP gone.
void finish_queue(SqRecovery* r) {
  r->report();
  delete r;
  remove_send_queue(0, kQpn);
}

// Rings: the doorbell for everything posted since the last one.
struct Bell {
  uint64_t rung = 0, tsc = 1000;
  void ring(SqRecovery* r, const Ring& q) {
    r->doorbell(tsc += 10, uint16_t(q.prod), uint32_t(q.prod - rung), DoorbellKind::doorbell);
    rung = q.prod;
  }
};

// n signalled NOPs on a ring of 8 WQEBBs, one doorbell each, then the QP's report.
void ring_nops(CopyStreams* streams, int n) {
  Ring ring(3);
  SqRecovery* r = recovery_of(ring, streams);
  Bell bell;
  for (int i = 0; i < n; ++i) {
    post(ring, Wqe(m5::kOpNop, 0, uint16_t(ring.prod), m5::kCtrlCqUpdate));
    bell.ring(r, ring);
  }
  finish_queue(r);
}

const TraceEvent* stats_of(const ProcessEvents& p, uint32_t qpn = kQpn) {
  for (const TraceEvent* e : p.of(EventType::gpu_wqe_stats))
    if ((*e)[0] == qpn) return e;
  return nullptr;
}

TEST(WqeRecoveryUnit, EveryWqeKindIsParsedWithItsFields) {
  const uint64_t ra = 0x7f0012340000ull;
  ProcessEvents p = traced(128, [&](CopyStreams* streams) {
    Ring ring(5);
    SqRecovery* r = recovery_of(ring, streams);
    ASSERT_NE(r, nullptr);
    Bell bell;
    post(ring, Wqe(m5::kOpSend, 0, 0, m5::kCtrlSolicited | m5::kCtrlCqUpdate).inline_data(12));
    post(ring, Wqe(m5::kOpSendImm, 0, 1, 0, 0xdeadbeef).data(0x1000, 100, 11).data(0x2000, 28, 12));
    post(ring, Wqe(m5::kOpRdmaWriteImm, 0, 2, m5::kCtrlCqUpdate, 77).raddr(ra, 0x99).data(0x3000, 4096, 13));
    post(ring, Wqe(m5::kOpRdmaWrite, 0, 3, 0x80 /* strong fence */).raddr(ra + 64, 0x99).data(0x4000, 1, 1).data(0x5000, 2, 2).data(0x6000, 3, 3));
    bell.ring(r, ring);  // one doorbell for the first four (the gathered WRITE takes 2 WQEBBs: index 5 next)
    post(ring, Wqe(m5::kOpRdmaRead, 0, 5, m5::kCtrlCqUpdate).raddr(ra + 128, 0x98).data(0x7000, 8, 14));
    post(ring, Wqe(m5::kOpAtomicMaskedCs, m5::kOpmodExtAtomic8B, 6, m5::kCtrlCqUpdate).raddr(ra + 192, 0x97).atomic(5, 6).atomic(~0ull, ~0ull).data(0x8000, 8, 15));
    post(ring, Wqe(m5::kOpAtomicMaskedFa, m5::kOpmodExtAtomic8B, 8, m5::kCtrlCqUpdate).raddr(ra + 200, 0x97).atomic(3, 0).data(0x8008, 8, 15));
    bell.ring(r, ring);
    finish_queue(r);
  });

  auto wqes = p.of(EventType::gpu_wqe);
  ASSERT_EQ(wqes.size(), 7u);
  struct Want {
    uint64_t idx, opcode, opmod, ds, flags, bytes, raddr, rkey, laddr, lkey, sges, is_inline, imm, x, y, xm, ym;
  };
  const Want want[] = {
      {0, m5::kOpSend, 0, 2, 0x0a, 12, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0},
      {1, m5::kOpSendImm, 0, 3, 0, 128, 0, 0, 0x1000, 11, 2, 0, 0xdeadbeef, 0, 0, 0, 0},
      {2, m5::kOpRdmaWriteImm, 0, 3, 0x08, 4096, ra, 0x99, 0x3000, 13, 1, 0, 77, 0, 0, 0, 0},
      {3, m5::kOpRdmaWrite, 0, 5, 0x80, 6, ra + 64, 0x99, 0x4000, 1, 3, 0, 0, 0, 0, 0, 0},
      {5, m5::kOpRdmaRead, 0, 3, 0x08, 8, ra + 128, 0x98, 0x7000, 14, 1, 0, 0, 0, 0, 0, 0},
      {6, m5::kOpAtomicMaskedCs, m5::kOpmodExtAtomic8B, 5, 0x08, 8, ra + 192, 0x97, 0x8000, 15, 1, 0, 0, 5, 6, ~0ull, ~0ull},
      {8, m5::kOpAtomicMaskedFa, m5::kOpmodExtAtomic8B, 4, 0x08, 8, ra + 200, 0x97, 0x8008, 15, 1, 0, 0, 3, 0, 0, 0},
  };
  for (size_t i = 0; i < 7; ++i) {
    const TraceEvent& e = *wqes[i];
    const Want& w = want[i];
    const uint64_t got[] = {e[1], e[3], e[4], e[5], e[6], e[7], e[8], e[9], e[10], e[11], e[12], e[13], e[14], e[15], e[16], e[17], e[18]};
    const uint64_t exp[] = {w.idx, w.opcode, w.opmod, w.ds, w.flags, w.bytes, w.raddr, w.rkey, w.laddr, w.lkey, w.sges, w.is_inline, w.imm, w.x, w.y, w.xm, w.ym};
    for (size_t f = 0; f < sizeof got / sizeof got[0]; ++f) EXPECT_EQ(got[f], exp[f]) << "WQE " << i << " field " << f;
    EXPECT_EQ(e[0], kQpn);
    EXPECT_EQ(e[2], i < 4 ? 5u : 9u) << "the producer index of the doorbell that announced it";
  }
  auto bells = p.of(EventType::gpu_doorbell);
  ASSERT_EQ(bells.size(), 2u);
  EXPECT_EQ((*bells[0])[5], uint64_t(DoorbellWqeClass::data));  // SENDs and WRITEs of more than 8 bytes
  EXPECT_EQ((*bells[0])[6], 4u);
  EXPECT_EQ((*bells[1])[5], uint64_t(DoorbellWqeClass::control));  // an 8-byte READ and two atomics
  EXPECT_EQ((*bells[1])[6], 3u);
  EXPECT_EQ(wqes[0]->tsc, bells[0]->tsc);
  EXPECT_EQ(wqes[6]->tsc, bells[1]->tsc);
  const TraceEvent* st = stats_of(p);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ((*st)[4], 7u);
  EXPECT_EQ((*st)[5], 9u);
  for (int f : {6, 7, 8, 9}) EXPECT_EQ((*st)[size_t(f)], 0u) << f;
}

TEST(WqeRecoveryUnit, WqesThatWrapAroundTheRingAreReadWhole) {
  ProcessEvents p = traced(128, [&](CopyStreams* streams) {
    Ring ring(2);  // 4 WQEBBs
    SqRecovery* r = recovery_of(ring, streams);
    Bell bell;
    for (int i = 0; i < 9; ++i) {  // NOP (1) + gathered WRITE (2) + ...: every third WRITE straddles the end
      const uint16_t idx = uint16_t(ring.prod);
      if (i % 3 == 0) post(ring, Wqe(m5::kOpNop, 0, idx, m5::kCtrlCqUpdate));
      else post(ring, Wqe(m5::kOpRdmaWrite, 0, idx, 0).raddr(0x100 * uint64_t(i), 5).data(0x10, 16, 1).data(0x20, 16, 1).data(0x30, 16, 1));
      bell.ring(r, ring);
    }
    finish_queue(r);
  });
  auto wqes = p.of(EventType::gpu_wqe);
  ASSERT_EQ(wqes.size(), 9u);
  for (size_t i = 0; i < 9; ++i) {
    if (i % 3 == 0) continue;
    EXPECT_EQ((*wqes[i])[8], 0x100 * i) << i;
    EXPECT_EQ((*wqes[i])[7], 48u) << i;
    EXPECT_EQ((*wqes[i])[12], 3u) << i;
  }
  const TraceEvent* st = stats_of(p);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ((*st)[4], 9u);
  EXPECT_EQ((*st)[6] + (*st)[7], 0u);
}

TEST(WqeRecoveryUnit, OverwrittenDamagedAndBackwardsAreCountedNotParsed) {
  ProcessEvents p = traced(128, [&](CopyStreams* streams) {
    Ring ring(3);  // 8 WQEBBs
    SqRecovery* r = recovery_of(ring, streams);
    Bell bell;
    // Slot 0 already holds the WQE of the next lap (index 8): the GPU reused it before it was read.
    Wqe late(m5::kOpRdmaWrite, 0, 8, 0);
    late.raddr(0x1, 1).data(0x2, 8, 1);
    late.finish();
    memcpy(ring.buf, late.b, 64);
    ring.prod = 1;
    bell.ring(r, ring);
    // A WQE of another QP in this QP's slot, then an unknown opcode: damaged / not its own.
    post(ring, Wqe(m5::kOpRdmaWrite, 0, 1, 0).raddr(0x1, 1).data(0x2, 8, 1), 0x999);
    post(ring, Wqe(0x55, 0, 2, 0).raddr(0x1, 1));
    bell.ring(r, ring);
    // A WQE of 2 WQEBBs of which the doorbell announces only the first.
    post(ring, Wqe(m5::kOpRdmaWrite, 0, 3, 0).raddr(0x1, 1).data(0x2, 8, 1).data(0x3, 8, 1).data(0x4, 8, 1));
    r->doorbell(bell.tsc += 10, uint16_t(ring.prod - 1), 1, DoorbellKind::doorbell);
    bell.rung = ring.prod - 1;
    // A producer index that went backwards to 2 (the tracker's delta wraps); the QP goes on from
    // there, and its next WQE is recovered.
    r->doorbell(bell.tsc += 10, 2, uint16_t(2 - (ring.prod - 1)), DoorbellKind::doorbell);
    ring.prod = bell.rung = 2;
    post(ring, Wqe(m5::kOpRdmaWrite, 0, 2, 0).raddr(0x1, 1).data(0x2, 8, 1));
    bell.ring(r, ring);
    finish_queue(r);
  });
  const TraceEvent* st = stats_of(p);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ((*st)[4], 1u) << "recovered: only the last WRITE";
  EXPECT_EQ((*st)[6], 2u) << "lost: the overwritten slot and the other QP's WQE";
  EXPECT_EQ((*st)[7], 2u) << "damaged: the unknown opcode and the WQE past its doorbell";
  EXPECT_EQ((*st)[9], 1u) << "index errors";
  auto wqes = p.of(EventType::gpu_wqe);
  ASSERT_EQ(wqes.size(), 1u);
  EXPECT_EQ((*wqes[0])[1], 2u);
  auto bells = p.of(EventType::gpu_doorbell);
  ASSERT_EQ(bells.size(), 5u) << "every doorbell is recorded, readable or not";
  EXPECT_EQ((*bells[0])[5], uint64_t(DoorbellWqeClass::not_read));
  EXPECT_EQ((*bells[3])[5], uint64_t(DoorbellWqeClass::not_read));
}

// A torn read: the GPU rewrites a WQE's first WQEBB after the copy read it and before the copy
// reached its last. Made deterministic with a page fault: the WQE's last WQEBB lies on a page the
// test protects, and the fault handler (the first copy reaching that page) rewrites the WQE's
// remote address on the page before, then lets the copy go on. The WQE is damaged, not parsed.
namespace torn {
uint8_t* g_tail_page = nullptr;
uint8_t* g_rewrite = nullptr;
volatile sig_atomic_t g_faults = 0;
void on_fault(int, siginfo_t* info, void*) {
  auto* a = static_cast<uint8_t*>(info->si_addr);
  if (a < g_tail_page || a >= g_tail_page + 4096) _exit(5);  // not ours
  mprotect(g_tail_page, 4096, PROT_READ | PROT_WRITE);
  for (int i = 0; i < 8; ++i) g_rewrite[i] ^= 0xff;  // the GPU's store, after the head was read
  g_faults = g_faults + 1;
}
}  // namespace torn

TEST(WqeRecoveryUnit, AWqeRewrittenWhileItWasCopiedIsDamagedNotParsed) {
  ProcessEvents p = traced(128, [&](CopyStreams* streams) {
    Ring ring(7);  // 128 WQEBBs: two 4 KiB pages, slot 64 starts the second
    SqRecovery* r = recovery_of(ring, streams);
    Bell bell;
    for (int i = 0; i < 62; ++i) post(ring, Wqe(m5::kOpNop, 0, uint16_t(ring.prod), 0));
    bell.ring(r, ring);
    // A 3-WQEBB WRITE in slots 62-64, announced alone: its copy is one piece of 192 bytes.
    post(ring, Wqe(m5::kOpRdmaWrite, 0, 62, m5::kCtrlCqUpdate).raddr(0x1000, 7).inline_data(100));
    torn::g_tail_page = ring.buf + 4096;
    torn::g_rewrite = ring.buf + 62 * 64 + 16;  // its remote address
    struct sigaction sa {}, old {};
    sa.sa_sigaction = &torn::on_fault;
    sa.sa_flags = SA_SIGINFO;
    ASSERT_EQ(sigaction(SIGSEGV, &sa, &old), 0);
    ASSERT_EQ(mprotect(torn::g_tail_page, 4096, PROT_NONE), 0);
    bell.ring(r, ring);  // copied at once (copy_at_doorbell)
    sigaction(SIGSEGV, &old, nullptr);
    EXPECT_EQ(torn::g_faults, 1) << "the copy did not reach the protected page once";
    finish_queue(r);
  }, /*copy_at_doorbell=*/true);
  const TraceEvent* st = stats_of(p);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ((*st)[4], 62u) << "recovered: the NOPs";
  EXPECT_EQ((*st)[7], 1u) << "damaged: the WRITE read torn";
  for (const TraceEvent* w : p.of(EventType::gpu_wqe)) EXPECT_NE((*w)[1], 62u) << "the torn WRITE was parsed";
}

TEST(WqeRecoveryUnit, CopiesAreParsedInBatchesOfTheThresholdCappedAtTheRing) {
  for (uint32_t batch : {4u, 1000u}) {
    ProcessEvents p = traced(batch, [&](CopyStreams* streams) { ring_nops(streams, 20); });  // a ring of 8: 1000 is capped at 8
    const TraceEvent* st = stats_of(p);
    ASSERT_NE(st, nullptr);
    EXPECT_EQ((*st)[4], 20u);
    EXPECT_EQ((*st)[14], std::min(batch, 8u)) << "the threshold in effect";
    // 20 doorbells of one WQEBB: 5 batches of 4, or 2 of 8 and the rest at the report. No
    // poller goes idle here, so slots are copied once a quarter of the ring (2) waits.
    EXPECT_EQ((*st)[11], batch == 4 ? 5u : 3u) << "batches";
    EXPECT_EQ((*st)[10], 10u) << "copies";
  }
  // SIGMATRACE_WQE_COPY=doorbell: one copy per doorbell (none wraps), the same batches.
  ProcessEvents p = traced(4, [&](CopyStreams* streams) { ring_nops(streams, 20); }, true);
  const TraceEvent* st = stats_of(p);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ((*st)[4], 20u);
  EXPECT_EQ((*st)[10], 20u) << "copies";
  EXPECT_EQ((*st)[11], 5u) << "batches";
}

TEST(WqeRecoveryUnit, SyncModeParsesAtEveryDoorbell) {
  ProcessEvents p = traced(kWqeBatchSync, [&](CopyStreams* streams) { ring_nops(streams, 6); });
  const TraceEvent* st = stats_of(p);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ((*st)[11], 6u);
  EXPECT_EQ((*st)[14], 0u) << "batch 0: sync";
}

TEST(WqeRecoveryUnit, AQueueNobodyDescribedIsCountedUnreadAndAReusedQpnIsANewQueue) {
  ProcessEvents p = traced(128, [&](CopyStreams* streams) {
    SqRecovery* unknown = SqRecovery::create(0, 0x777, kPage, streams);
    ASSERT_NE(unknown, nullptr);
    unknown->doorbell(100, 3, 3, DoorbellKind::doorbell);
    EXPECT_TRUE(unknown->current());
    unknown->report();
    delete unknown;

    Ring ring(3);
    SqRecovery* r = recovery_of(ring, streams);
    EXPECT_TRUE(r->current());
    remove_send_queue(0, kQpn);
    EXPECT_FALSE(r->current()) << "destroyed";
    SqRecovery* again = recovery_of(ring, streams);
    EXPECT_FALSE(r->current()) << "and its number reused: still not the queue r read";
    EXPECT_TRUE(again->current());
    delete r;
    delete again;
    remove_send_queue(0, kQpn);
  });
  const TraceEvent* st = stats_of(p, 0x777);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ((*st)[3], uint64_t(SqMemory::unknown));
  EXPECT_EQ((*st)[8], 3u) << "unread WQEBBs";
  auto bells = p.of(EventType::gpu_doorbell);
  ASSERT_EQ(bells.size(), 1u);
  EXPECT_EQ((*bells[0])[5], uint64_t(DoorbellWqeClass::not_read));
}

}  // namespace
