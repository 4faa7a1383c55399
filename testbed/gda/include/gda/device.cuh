// gda device functions: GPU threads build mlx5 WQEs in the GPU-resident send queue, update the
// doorbell record, fence, and ring the NIC with one 8-byte store to the mapped UAR register;
// completion is observed by polling the collapsed CQ (entry 0). Formats: src/mlx5/wqe.hpp.
// Each QP is driven by one thread at a time (the benchmarks use one thread per PE).
// The same code also compiles as host C++ (GDA_FN = inline, CPU fences and clock), so CI can
// drive softnic with exactly these WQE builders from a CPU thread (tests/devx_host_test.cpp).
#pragma once
#include <cstdint>

#include "gda/state.hpp"
#include "mlx5/wqe.hpp"

#if defined(__CUDACC__)
#define GDA_FN __device__ __forceinline__
#else
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstring>
#define GDA_FN inline
#endif

namespace gda::dev {

namespace m5 = sigmatrace::mlx5;

GDA_FN uint64_t globaltimer() {
#if defined(__CUDACC__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
#endif
}
// Spin-loop body: nothing on the GPU; on a CPU let the engine threads run.
GDA_FN void relax() {
#if !defined(__CUDACC__)
  sched_yield();
#endif
}
// Orders this thread's earlier stores (WQE, DBR) before later ones as seen by the NIC and host.
GDA_FN void fence_system() {
#if defined(__CUDACC__)
  __threadfence_system();
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}
GDA_FN uint64_t timeout_of(const DeviceState* s) {
  return s->timeout_ns ? s->timeout_ns : 10000000000ull;
}
GDA_FN uint64_t barrier_timeout_of(const DeviceState* s) {
  return s->barrier_timeout_ns ? s->barrier_timeout_ns : 60000000000ull;
}

// Records the first wait that gave up (DeviceState::failure); later ones keep the first.
GDA_FN void record_failure(DeviceState* s, uint32_t kind, int peer, const QpDev* q, uint64_t heap_off,
                           uint64_t expected, uint64_t observed, uint64_t waited_ns) {
  WaitFailure& f = s->failure;
  if (f.kind) return;
  f.kind = kind;
  f.peer = peer;
  f.qpn = q ? q->qpn : 0;
  f.cqe_word = q ? *reinterpret_cast<volatile uint32_t*>(q->cqe + m5::kCqeWqeCounter) : 0;
  f.prod = q ? q->prod : 0;
  f.cons = q ? q->cons : 0;
  f.heap_off = heap_off;
  f.expected = expected;
  f.observed = observed;
  f.waited_ns = waited_ns;
}

// Reads entry 0 of the collapsed CQ and advances cons. Error CQEs are recorded in q->error and
// count as completions (the QP is then in error; later WQEs are flushed with error CQEs too).
GDA_FN void poll_cq(QpDev* q) {
  uint32_t w = *reinterpret_cast<volatile uint32_t*>(q->cqe + m5::kCqeWqeCounter);
  m5::CqeTail t = m5::decode_cqe_tail(w);
  if (t.opcode == m5::kCqeInvalid) return;
  if (t.opcode == m5::kCqeReqErr && q->error == 0)
    q->error = reinterpret_cast<volatile uint8_t*>(q->cqe)[m5::kCqeSyndrome];
  // Everything up to and including wqe_counter is complete (16-bit index, < 2^15 in flight).
  uint64_t done = q->prod - uint16_t(uint16_t(q->prod) - uint16_t(t.wqe_counter + 1));
  if (done > q->cons && done <= q->prod) q->cons = done;
}

// Waits for room for n WQEBBs in the send queue towards peer.
GDA_FN bool reserve(DeviceState* s, int peer, QpDev* q, uint32_t n) {
  if (q->prod + n - q->cons <= q->nwqes) return true;
  uint64_t t0 = globaltimer();
  while (q->prod + n - q->cons > q->nwqes) {
    poll_cq(q);
    relax();
    uint64_t waited = globaltimer() - t0;
    if (waited > timeout_of(s)) {
      if (!q->error) q->error = kErrTimeoutSlot;
      record_failure(s, kErrTimeoutSlot, peer, q, 0, q->prod + n - q->nwqes, q->cons, waited);
      return false;
    }
  }
  return true;
}

GDA_FN uint8_t* wqebb(QpDev* q, uint64_t idx) {
  return q->sq + ((idx & (q->nwqes - 1)) << 6);
}

GDA_FN void st16(uint8_t* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
#if defined(__CUDACC__)
  *reinterpret_cast<uint4*>(p) = make_uint4(a, b, c, d);
#else
  uint32_t v[4] = {a, b, c, d};
  memcpy(p, v, 16);
#endif
}
GDA_FN uint32_t lo32(uint64_t v) { return uint32_t(v); }
GDA_FN uint32_t hi32(uint64_t v) { return uint32_t(v >> 32); }

// ctrl segment words: be32(opmod|idx|opcode), be32(qpn|ds), {signature, stream id, fm_ce_se}, imm.
GDA_FN void ctrl(uint8_t* w, QpDev* q, uint8_t opcode, uint32_t ds, bool signal) {
  uint32_t sig_word = uint32_t(signal ? m5::kCtrlCqUpdate : 0) << 24;  // fm_ce_se is byte 11
  st16(w, m5::ctrl_opmod_idx_opcode(0, uint16_t(q->prod), opcode), m5::ctrl_qpn_ds(q->qpn, ds),
       sig_word, 0);
}
GDA_FN void raddr_seg(uint8_t* p, uint64_t raddr, uint32_t rkey) {
  uint64_t be = m5::be64(raddr);
  st16(p, lo32(be), hi32(be), m5::be32(rkey), 0);
}
GDA_FN void data_seg(uint8_t* p, uint64_t addr, uint32_t lkey, uint32_t len) {
  uint64_t be = m5::be64(addr);
  st16(p, m5::be32(len), m5::be32(lkey), lo32(be), hi32(be));
}

// WQE stores -> fence -> doorbell record -> fence -> one 8-byte doorbell store.
GDA_FN void ring(QpDev* q) {
  fence_system();
  *reinterpret_cast<volatile uint32_t*>(q->dbrec) = m5::be32(uint32_t(q->prod) & 0xffff);
  fence_system();
  *reinterpret_cast<volatile uint64_t*>(q->bf) = m5::doorbell_value(uint16_t(q->prod), q->qpn);
}

// ---- operations on one QP -------------------------------------------------------------------
GDA_FN void account(DeviceState* s, int peer, PostedKind kind, uint8_t opcode, uint64_t bytes, uint64_t raddr) {
  Posted& p = s->qp[peer].posted;
  p.wqes[kind]++;
  p.bytes[kind] += bytes;
  p.digest += wqe_digest(opcode, bytes, raddr - s->remote_heap[peer]);
}
GDA_FN bool post_write_inline8(DeviceState* s, int peer, uint64_t raddr, uint32_t rkey,
                               uint64_t value) {
  QpDev* q = &s->qp[peer];
  if (!reserve(s, peer, q, 1)) return false;
  account(s, peer, kPostedWrite, m5::kOpRdmaWrite, 8, raddr);
  uint8_t* w = wqebb(q, q->prod);
  ctrl(w, q, m5::kOpRdmaWrite, 3, true);
  raddr_seg(w + 16, raddr, rkey);
  st16(w + 32, m5::be32(8u | m5::kInlineFlag), lo32(value), hi32(value), 0);
  q->prod++;
  ring(q);
  return true;
}
GDA_FN bool post_rdma(DeviceState* s, int peer, uint8_t opcode, uint64_t laddr, uint32_t lkey,
                      uint32_t len, uint64_t raddr, uint32_t rkey) {
  QpDev* q = &s->qp[peer];
  if (!reserve(s, peer, q, 1)) return false;
  account(s, peer, opcode == m5::kOpRdmaRead ? kPostedRead : kPostedWrite, opcode, len, raddr);
  uint8_t* w = wqebb(q, q->prod);
  ctrl(w, q, opcode, 3, true);
  raddr_seg(w + 16, raddr, rkey);
  data_seg(w + 32, laddr, lkey, len);
  q->prod++;
  ring(q);
  return true;
}
GDA_FN bool post_fetch_add(DeviceState* s, int peer, uint64_t raddr, uint32_t rkey, uint64_t add,
                           uint64_t laddr, uint32_t lkey) {
  QpDev* q = &s->qp[peer];
  if (!reserve(s, peer, q, 1)) return false;
  account(s, peer, kPostedFetchAdd, m5::kOpAtomicFa, 8, raddr);
  uint8_t* w = wqebb(q, q->prod);
  ctrl(w, q, m5::kOpAtomicFa, 4, true);
  raddr_seg(w + 16, raddr, rkey);
  uint64_t be = m5::be64(add);
  st16(w + 32, lo32(be), hi32(be), 0, 0);
  data_seg(w + 48, laddr, lkey, 8);
  q->prod++;
  ring(q);
  return true;
}
// Waits until everything posted towards peer has completed. false on error or timeout.
GDA_FN bool quiet(DeviceState* s, int peer) {
  QpDev* q = &s->qp[peer];
  uint64_t t0 = globaltimer();
  while (q->cons < q->prod) {
    poll_cq(q);
    if (q->cons >= q->prod) break;
    relax();
    uint64_t waited = globaltimer() - t0;
    if (waited > timeout_of(s)) {
      if (!q->error) q->error = kErrTimeoutCq;
      record_failure(s, kErrTimeoutCq, peer, q, 0, q->prod, q->cons, waited);
      return false;
    }
  }
  return q->error == 0;
}

// ---- PE-level API (heap offsets) ------------------------------------------------------------
GDA_FN bool put8(DeviceState* s, int pe, uint64_t off, uint64_t value) {
  return post_write_inline8(s, pe, s->remote_heap[pe] + off, s->rkey[pe], value);
}
GDA_FN bool put(DeviceState* s, int pe, uint64_t dst_off, uint64_t src_off, uint32_t len) {
  return post_rdma(s, pe, m5::kOpRdmaWrite, uint64_t(s->heap + src_off), s->lkey, len,
                   s->remote_heap[pe] + dst_off, s->rkey[pe]);
}
GDA_FN bool quiet_all(DeviceState* s) {
  bool ok = true;
  for (int p = 0; p < s->npes; ++p)
    if (p != s->pe) ok &= quiet(s, p);
  return ok;
}
// Blocking get: remote [src_off, +len) of pe into local [dst_off, +len).
GDA_FN bool get(DeviceState* s, int pe, uint64_t dst_off, uint64_t src_off, uint32_t len) {
  return post_rdma(s, pe, m5::kOpRdmaRead, uint64_t(s->heap + dst_off), s->lkey, len,
                   s->remote_heap[pe] + src_off, s->rkey[pe]) &&
         quiet(s, pe);
}
// Blocking 8-byte fetch-and-add; *old receives the previous value.
GDA_FN bool fetch_add(DeviceState* s, int pe, uint64_t off, uint64_t add, uint64_t* old) {
  uint64_t slot = kFetchOff + 8 * uint64_t(pe);
  if (!post_fetch_add(s, pe, s->remote_heap[pe] + off, s->rkey[pe], add, uint64_t(s->heap + slot),
                      s->lkey) ||
      !quiet(s, pe))
    return false;
  *old = *reinterpret_cast<volatile uint64_t*>(s->heap + slot);
  return true;
}
// Spins until the local 8-byte word at off equals v (written by a peer). false on timeout.
GDA_FN bool wait_eq(DeviceState* s, uint64_t off, uint64_t v) {
  volatile uint64_t* p = reinterpret_cast<volatile uint64_t*>(s->heap + off);
  if (*p == v) return true;
  uint64_t t0 = globaltimer();
  while (*p != v) {
    relax();
    uint64_t waited = globaltimer() - t0;
    if (waited > timeout_of(s)) {
      record_failure(s, kErrTimeoutWait, -1, nullptr, off, v, *p, waited);
      return false;
    }
  }
  return true;
}
// Barrier across all PEs: put the new epoch into every peer's flag for this PE, quiet, then wait
// for every peer's flag here.
GDA_FN bool barrier(DeviceState* s) {
  uint64_t epoch = ++s->barrier_epoch;
  bool ok = true;
  for (int p = 0; p < s->npes; ++p)
    if (p != s->pe) ok &= put8(s, p, kBarrierOff + 8 * uint64_t(s->pe), epoch);
  ok &= quiet_all(s);
  for (int p = 0; p < s->npes; ++p) {
    if (p == s->pe) continue;
    volatile uint64_t* f = reinterpret_cast<volatile uint64_t*>(s->heap + kBarrierOff + 8 * uint64_t(p));
    uint64_t t0 = globaltimer();
    while (*f < epoch) {
      relax();
      uint64_t waited = globaltimer() - t0;
      if (waited > barrier_timeout_of(s)) {
        record_failure(s, kErrTimeoutBarrier, p, &s->qp[p], kBarrierOff + 8 * uint64_t(p), epoch, *f, waited);
        ok = false;
        break;
      }
    }
  }
  return ok;
}

}  // namespace gda::dev
