// The devx engine: one thread per process that watches the UAR doorbell pages, executes the
// mlx5 WQEs a doorbell announces, and writes CQEs. See devx.hpp.
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/cuda_driver.hpp"
#include "core/transport_api.hpp"
#include "core/wqe_oracle.hpp"
#include "devx/devx.hpp"
#include "mlx5/wqe.hpp"
#include "mlx5/wqe_parse.hpp"

namespace m5 = sigmatrace::mlx5;

namespace softnic::devx {

int debug_level() {
  static const int d = [] {
    const char* e = getenv("SOFTNIC_DEBUG");
    return e && *e ? atoi(e) : 0;
  }();
  return d;
}

bool debug() { return (debug_level() & 1) != 0; }
bool dumps_enabled() { return (debug_level() & 2) != 0; }

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

EngineClock& engine_clock() {
  static EngineClock c;
  return c;
}

void log(const char* fmt, ...) {
  if (!debug()) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "softnic devx: %s\n", buf);
}

namespace {

// ---- memory access through a umem -------------------------------------------------------------
bool umem_read(const Umem* u, uint64_t off, void* dst, size_t len) {
  if (off > u->size || len > u->size - off) return false;
  if (!u->gpu) {
    memcpy(dst, reinterpret_cast<const void*>(u->addr + off), len);
    return true;
  }
  return cuda::read(u->cu_ctx, dst, u->addr + off, len);
}

// A CQE is written so that its last 4 bytes (wqe_counter, op_own) land last.
bool write_cqe(const Umem* u, uint64_t off, const m5::Cqe& cqe) {
  if (off > u->size || m5::kCqeSize > u->size - off) return false;
  // Nothing on the host waits for a CQE to land, and later copies are ordered after it.
  if (u->gpu) return cuda::write(u->cu_ctx, u->addr + off, cqe.bytes, m5::kCqeSize, true);
  auto* p = reinterpret_cast<uint8_t*>(u->addr + off);
  memcpy(p, cqe.bytes, m5::kCqeSize - 4);
  uint32_t tail;
  memcpy(&tail, cqe.bytes + m5::kCqeSize - 4, 4);
  __atomic_store_n(reinterpret_cast<uint32_t*>(p + m5::kCqeSize - 4), tail, __ATOMIC_RELEASE);
  return true;
}

uint8_t syndrome_of(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS: return 0;
    case IBV_WC_LOC_LEN_ERR: return m5::kSyndLocalLengthErr;
    case IBV_WC_LOC_QP_OP_ERR: return m5::kSyndLocalQpOpErr;
    case IBV_WC_LOC_PROT_ERR: return m5::kSyndLocalProtErr;
    case IBV_WC_WR_FLUSH_ERR: return m5::kSyndWrFlushErr;
    case IBV_WC_MW_BIND_ERR: return m5::kSyndMwBindErr;
    case IBV_WC_BAD_RESP_ERR: return m5::kSyndBadRespErr;
    case IBV_WC_LOC_ACCESS_ERR: return m5::kSyndLocalAccessErr;
    case IBV_WC_REM_INV_REQ_ERR: return m5::kSyndRemoteInvalReqErr;
    case IBV_WC_REM_ACCESS_ERR: return m5::kSyndRemoteAccessErr;
    case IBV_WC_REM_OP_ERR: return m5::kSyndRemoteOpErr;
    case IBV_WC_RETRY_EXC_ERR: return m5::kSyndTransportRetryExcErr;
    case IBV_WC_RNR_RETRY_EXC_ERR: return m5::kSyndRnrRetryExcErr;
    case IBV_WC_REM_ABORT_ERR: return m5::kSyndRemoteAbortedErr;
    default: return m5::kSyndLocalQpOpErr;
  }
}

// Turns one WQE (linear bytes, `bytes` long) into the operation softnic's transport executes.
// Returns 0, or the syndrome of a malformed/unsupported WQE. post is false for WQEs that
// complete without transport (NOP, DUMP).
struct Decoded {
  SendOp op;
  Sge sge[m5::kMaxParsedSges]{};
  const uint8_t* inline_ptr = nullptr;
  bool post = false;
  uint32_t byte_cnt = 0;
  WqeRecord record;
  uint64_t swap_add = 0, compare = 0;  // the atomic operands as the WQE gives them (for the oracle)
};
uint8_t decode_wqe(const uint8_t* w, uint32_t bytes, bool dci, Decoded* d) {
  m5::ParsedWqe p;
  if (uint8_t synd = m5::parse_wqe(w, bytes, &p, dci)) return synd;
  WqeRecord& r = d->record;
  d->swap_add = p.swap_add;
  d->compare = p.compare;
  r.idx = p.ctrl.idx;
  r.opcode = p.ctrl.opcode;
  r.raddr = p.raddr;
  r.rkey = p.rkey;
  r.length = uint32_t(p.length);
  r.dct = p.dct;
  if (p.inline_data && p.inline_len) memcpy(&r.first_word, p.inline_ptr, p.inline_len < 8 ? p.inline_len : 8);
  else if (p.num_sge) r.first_word = p.sge[0].addr;
  SendOp& op = d->op;
  op.signaled = true;  // internally every operation completes; CQ_UPDATE is applied at retire
  op.solicited = (p.ctrl.fm_ce_se & m5::kCtrlSolicited) != 0;
  op.imm = p.imm;
  op.raddr = p.raddr;
  op.rkey = p.rkey;
  op.length = p.length;
  op.dest_qpn = p.dct;
  op.dc_key = p.dc_key;
  d->byte_cnt = uint32_t(p.length);
  if (p.inline_data) {
    op.inlined = true;
    d->inline_ptr = p.inline_ptr;
  } else {
    for (uint32_t i = 0; i < p.num_sge; ++i) d->sge[i] = Sge{p.sge[i].addr, p.sge[i].length, p.sge[i].lkey};
    op.num_sge = p.num_sge;
  }
  switch (p.ctrl.opcode) {
    case m5::kOpNop:
    case m5::kOpDump:  // a local flushing read: nothing to flush where copies are coherent
      return 0;
    case m5::kOpRdmaWrite: op.kind = OpKind::Write; break;
    case m5::kOpRdmaWriteImm: op.kind = OpKind::WriteImm; break;
    case m5::kOpSend: op.kind = OpKind::Send; break;
    case m5::kOpSendImm: op.kind = OpKind::SendImm; break;
    case m5::kOpRdmaRead: op.kind = OpKind::Read; break;
    default: {  // atomics, plain and masked, on 4 or 8 bytes
      if (op.num_sge != 1 || d->sge[0].length != p.atomic_bytes) return m5::kSyndLocalLengthErr;
      const bool cs = p.ctrl.opcode == m5::kOpAtomicCs || p.ctrl.opcode == m5::kOpAtomicMaskedCs;
      op.kind = cs ? OpKind::CmpSwap : OpKind::FetchAdd;
      op.arg0 = cs ? p.compare : p.swap_add;
      op.arg1 = cs ? p.swap_add : 0;
      if (p.ctrl.opcode == m5::kOpAtomicMaskedCs) {
        op.compare_mask = p.compare_mask;
        op.swap_mask = p.swap_mask;
      }
      if (p.ctrl.opcode == m5::kOpAtomicMaskedFa) op.field_boundary = p.compare;
      op.atomic_bytes = uint8_t(p.atomic_bytes);
      // The old value comes back big-endian but for 8-byte operands, which QUERY_HCA_CAP says
      // are returned in host order (8-byte endianness mode 1).
      op.result_big_endian = p.atomic_bytes != 8;
      op.length = p.atomic_bytes;
      d->byte_cnt = p.atomic_bytes;
    }
  }
  d->post = true;
  return 0;
}

std::vector<uint8_t> g_stage;

// A slot whose control segment still names another WQE index was read before the producer's
// stores reached memory (or the producer rang too early): read it again on the next round, for
// this long at most, then fail it as a malformed WQE.
constexpr uint64_t kStaleWqeLimitNs = 100'000'000;

// Executes the WQEs between q->consumed and q->db_pi.
bool execute(Qp* q) {
  uint16_t n = uint16_t(q->db_pi - q->consumed);
  if (n == 0) return false;
  uint32_t size = 1u << q->log_sq;
  if (n > size) {
    log("qp 0x%x: doorbell pi %u is %u WQEBBs ahead of %u (SQ has %u): ignored", q->qpn, q->db_pi,
        n, q->consumed, size);
    q->db_pi = q->consumed;
    return false;
  }
  g_stage.resize(size_t(n) * m5::kWqeBbSize);
  uint64_t t_read = now_ns();
  uint32_t start = q->consumed & (size - 1);
  uint32_t first = n < size - start ? n : size - start;
  bool ok = umem_read(q->wq, q->wq_off + uint64_t(start) * m5::kWqeBbSize, g_stage.data(),
                      size_t(first) * m5::kWqeBbSize);
  if (ok && n > first)
    ok = umem_read(q->wq, q->wq_off, g_stage.data() + size_t(first) * m5::kWqeBbSize,
                   size_t(n - first) * m5::kWqeBbSize);
  if (!ok) {
    log("qp 0x%x: cannot read the SQ", q->qpn);
    return false;
  }
  uint64_t t_read_done = now_ns();
  q->wqe_read.add(t_read_done - t_read);
  uint32_t pos = 0;
  while (pos < n) {
    const uint8_t* w = g_stage.data() + size_t(pos) * m5::kWqeBbSize;
    m5::CtrlSeg ctrl;
    memcpy(&ctrl, w, sizeof ctrl);
    m5::CtrlFields c = m5::decode_ctrl(ctrl);
    uint32_t nbb = c.ds ? (uint32_t(c.ds) * m5::kDsUnit + m5::kWqeBbSize - 1) / m5::kWqeBbSize : 1;
    uint16_t slot_idx = uint16_t(q->consumed + pos);
    bool stale = c.idx != slot_idx && !q->broken;
    if (stale) {
      q->stale_wqe_reads++;
      if (!q->stale_since_ns) q->stale_since_ns = t_read_done;
      if (t_read_done - q->stale_since_ns < kStaleWqeLimitNs) break;  // read it again
      log("qp 0x%x: WQEBB %u still names WQE index %u after %llu ms: rejected", q->qpn, slot_idx,
          c.idx, (unsigned long long)(kStaleWqeLimitNs / 1000000));
      nbb = 1;  // its size field is as untrustworthy as its index
    }
    q->stale_since_ns = 0;
    if (pos + nbb > n) break;  // the rest of this WQE comes with a later doorbell
    Pending p{q->next_seq++, slot_idx, c.opcode, (c.fm_ce_se & m5::kCtrlCqUpdate) != 0};
    q->wqes++;
    if (q->broken) {
      p.done = true;
      p.syndrome = m5::kSyndWrFlushErr;
    } else if (stale) {
      p.done = true;
      p.syndrome = m5::kSyndLocalQpOpErr;
      q->broken = true;
    } else {
      Decoded d;
      uint8_t synd = decode_wqe(w, (n - pos) * m5::kWqeBbSize, q->dci, &d);
      p.byte_cnt = d.byte_cnt;
      d.record.read_ns = t_read_done;
      if (!synd) {
        q->history[q->history_n++ % kWqeHistory] = d.record;
        Qp::OpTally& t = q->executed[c.opcode < Qp::kOpcodes ? c.opcode : 0];
        t.wqes++;
        t.bytes += d.record.length;
        q->executed_digest = oracle::wqe_digest(q->executed_digest, p.idx, c.opcode, c.opmod, d.record.length, d.record.raddr,
                                                d.record.rkey, d.record.dct, d.swap_add, d.compare);
      } else {
        q->rejected++;
      }
      if (synd) {
        log("qp 0x%x: WQE %u (opcode 0x%x, ds %u) rejected: syndrome 0x%x", q->qpn, p.idx, c.opcode,
            c.ds, synd);
        p.done = true;
        p.syndrome = synd;
        q->broken = true;
      } else if (!d.post) {
        p.done = true;
      } else {
        d.op.wr_id = p.seq;
        p.posted_ns = now_ns();
        if (int err = transport::post_op(q->qp, d.op, d.sge, d.inline_ptr)) {
          log("qp 0x%x: WQE %u: post failed (%d)", q->qpn, p.idx, err);
          p.done = true;
          p.syndrome = err == ENOMEM ? m5::kSyndLocalLengthErr : m5::kSyndLocalQpOpErr;
          q->broken = true;
        }
      }
    }
    q->pending.push_back(p);
    pos += nbb;
  }
  q->consumed = uint16_t(q->consumed + pos);
  if (pos) q->last_progress_ns = t_read_done;
  return pos > 0;
}

struct Emitted {
  Cq* cq;
  uint64_t ci;  // CQE number: ring slot = ci mod size
  m5::Cqe cqe;
};

void emit_cqe(Qp* q, const Pending& p, std::vector<Emitted>& out) {
  Cq* cq = q->scq;
  uint64_t ci = cq->produced++;
  m5::Cqe cqe;
  uint8_t owner = uint8_t((ci >> cq->log_size) & 1);
  cq->last_wqe_counter = p.idx;
  cq->last_opcode = p.syndrome ? m5::kCqeReqErr : m5::kCqeReq;
  if (p.syndrome)
    m5::make_cqe(&cqe, m5::kCqeReqErr, p.idx, q->qpn, 0, p.opcode, p.syndrome, owner);
  else
    m5::make_cqe(&cqe, m5::kCqeReq, p.idx, q->qpn, p.byte_cnt, 0, 0, owner);
  if (cq->collapsed) {
    for (auto& e : out)
      if (e.cq == cq) {
        e.cqe = cqe;  // only the newest one is visible at entry 0
        return;
      }
  }
  out.push_back(Emitted{cq, ci, cqe});
}

// Collects internal completions and retires finished WQEs in SQ order.
bool complete(Qp* q, std::vector<Emitted>& out) {
  if (q->pending.empty()) return false;
  bool any = false;
  ibv_wc wc[32];
  int k;
  while ((k = transport::poll_cq(q->icq, 32, wc)) > 0) {
    any = true;
    for (int i = 0; i < k; ++i) {
      uint64_t base = q->pending.front().seq;
      if (wc[i].wr_id < base || wc[i].wr_id - base >= q->pending.size()) {
        q->stray_completions++;
        log("qp 0x%x: transport completion for unknown WQE sequence %llu (pending %llu..+%zu)",
            q->qpn, (unsigned long long)wc[i].wr_id, (unsigned long long)base, q->pending.size());
        continue;
      }
      Pending& p = q->pending[wc[i].wr_id - base];
      if (p.posted_ns) q->transport.add(now_ns() - p.posted_ns);
      p.done = true;
      p.syndrome = syndrome_of(wc[i].status);
      if (p.syndrome) log("qp 0x%x: WQE %u failed: %s", q->qpn, p.idx, ibv_wc_status_str(wc[i].status));
    }
    if (k < 32) break;
  }
  while (!q->pending.empty() && q->pending.front().done) {
    Pending p = q->pending.front();
    q->pending.pop_front();
    if (p.syndrome && !q->in_error) {
      q->in_error = true;
      q->broken = true;
      q->state = 6;  // ERR
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_ERR;
      transport::modify_qp(q->qp, &a, IBV_QP_STATE);  // flushes what is still queued
    } else if (q->in_error && !p.syndrome) {
      p.syndrome = m5::kSyndWrFlushErr;
    }
    if (p.syndrome || p.signal) emit_cqe(q, p, out);
    any = true;
  }
  if (any) q->last_progress_ns = now_ns();
  return any;
}

std::atomic<bool> g_running{false};
std::thread g_thread;
// A process that exits with UARs still allocated: stop the thread before its std::thread dies.
struct StopAtExit {
  ~StopAtExit() {
    if (g_running.exchange(false) && g_thread.joinable()) g_thread.join();
    for (Qp* q : qps()) write_wqe_oracle(q);
  }
} g_stop_at_exit;

void run() {
  pthread_setname_np(pthread_self(), "softnic-devx");  // for ps: the GPU experiments log where each thread ran
  const char* e = getenv("SOFTNIC_DEVX_SPIN_US");
  uint64_t spin_ns = uint64_t(e ? strtoull(e, nullptr, 10) : 2000) * 1000;
  uint64_t last_busy = now_ns();
  EngineClock& clk = engine_clock();
  while (g_running.load(std::memory_order_relaxed)) {
    bool busy;
    uint64_t t = now_ns();
    if (clk.last_round_ns && t - last_busy <= spin_ns) clk.gap.add(t - clk.last_round_ns);
    clk.last_round_ns = t;
    clk.rounds++;
    {
      std::lock_guard<std::mutex> g(mu());
      busy = engine_round();
    }
    if (busy) {
      last_busy = now_ns();
    } else if (now_ns() - last_busy > spin_ns) {
      timespec ts{0, 50000};  // idle: poll every 50 us
      nanosleep(&ts, nullptr);
    } else {
      sched_yield();  // spinning, but never starving the threads that produce our work
    }
  }
  print_engine_stats();
}

// A doorbell moves its QP's producer index forward (never back).
void advance(Qp* q, uint16_t pi) {
  if (uint16_t(pi - q->db_pi) < 0x8000) q->db_pi = pi;
  q->doorbells++;
  q->last_progress_ns = now_ns();
}

// A NIC receives every store to its registers; this emulation sees only each register's newest
// value, so a doorbell of one QP overwritten by another QP's on a shared register before the
// engine looked would be lost. Writers update a QP's doorbell record before they ring (the mlx5
// convention every stack follows), so when a register of a page shared by several QPs changes,
// each of its QPs whose record is ahead of the index it has is moved on to its record.
bool recover_shared_doorbells(Uar* u) {
  if (u->refs < 2) return false;
  bool moved = false;
  for (Qp* q : qps()) {
    if (q->uar != u || !q->dbr) continue;
    uint32_t be = 0;
    if (!umem_read(q->dbr, q->dbr_off + 4 * m5::kDbrSendIndex, &be, sizeof be)) continue;
    const auto pi = uint16_t(m5::be32(be));
    if (pi == q->db_pi || uint16_t(pi - q->db_pi) >= 0x8000) continue;
    q->recovered_doorbells++;
    advance(q, pi);
    moved = true;
  }
  return moved;
}

}  // namespace

bool engine_round() {
  bool busy = false;
  // Doorbells: the newest 8-byte value of each send register names the QP and its producer
  // index. Writers may alternate between the two halves of a register pair (libmlx5's BlueFlame
  // convention) and use either of the page's two registers; an index older than the one the QP
  // already has moves nothing.
  for (Uar* u : uars()) {
    bool rung = false;
    for (int r = 0; r < 4; ++r) {
      const auto reg = reinterpret_cast<uintptr_t>(u->page) + m5::kUarSendRegisters[r];
      uint64_t v = __atomic_load_n(reinterpret_cast<uint64_t*>(reg), __ATOMIC_ACQUIRE);
      if (v == u->last[r]) continue;
      u->last[r] = v;
      rung = true;
      m5::Doorbell db = m5::decode_doorbell(v);
      Qp* q = find_qp(db.qpn);
      if (!q) {
        log("doorbell for unknown QP 0x%x (pi %u) ignored", db.qpn, db.pi);
        continue;
      }
      advance(q, m5::announced_index(db));
      busy = true;
    }
    if (rung) busy |= recover_shared_doorbells(u);
  }
  std::vector<Emitted> cqes;
  for (Qp* q : qps()) {
    if (q->state == 3 /* RTS */ || q->broken) busy |= execute(q);
    busy |= complete(q, cqes);
  }
  for (const Emitted& e : cqes) {
    uint64_t slot = e.cq->collapsed ? 0 : (e.ci & ((1ull << e.cq->log_size) - 1));
    uint64_t t0 = now_ns();
    if (!write_cqe(e.cq->umem, e.cq->off + slot * m5::kCqeSize, e.cqe))
      log("cq 0x%x: cannot write CQE %llu", e.cq->cqn, (unsigned long long)e.ci);
    e.cq->last_write_ns = now_ns();
    for (Qp* q : qps())
      if (q->scq == e.cq) q->cqe_write.add(e.cq->last_write_ns - t0);
  }
  return busy;
}

void qp_reset(Qp* q) {
  q->pending.clear();
  q->consumed = q->db_pi = 0;
  q->broken = q->in_error = false;
  q->stale_since_ns = 0;
}

void engine_start() {
  if (g_running.load()) return;
  if (dumps_enabled()) start_dump_watch();
  g_running = true;
  g_thread = std::thread(run);
}

void engine_stop_if_idle() {
  if (!uars().empty() || !g_running.load()) return;
  g_running = false;
  // The engine thread takes mu() every round; the caller holds it.
  mu().unlock();
  g_thread.join();
  mu().lock();
}

}  // namespace softnic::devx
