// The wrappers of the extended verbs objects: an ibv_qp_ex's wr_* builders and wr_complete/wr_abort
// (re-applied after every ibv_modify_qp, since providers rewrite them on state changes), and an
// ibv_cq_ex's start_poll/next_poll. A batch of ibv_wr_* calls is recorded at wr_complete as one
// post (and, in full mode, one event per WR). They run on application threads: no locks, no system
// calls, no allocation.
#include <endian.h>

#include "profiler/providers/verbs/ibverbs_hooks.h"
#include "profiler/providers/verbs/ibverbs_send_counters.h"

namespace sigmatrace::profiler::ibv {

namespace {

using format::AggregateKey;

// ---- ibv_qp_ex ---------------------------------------------------------------------------------

[[gnu::always_inline]] inline QpState* qp_of(ibv_qp_ex* q) { return find_qp(&q->qp_base); }

// Full mode: the WR built since its opcode setter, recorded when the next one starts or at
// wr_complete (with that call's timestamp).
[[gnu::always_inline]] inline void finish_full_wr(QpState* s, uint64_t now) {
  PendingWr& w = s->wr;
  w.open = false;
  ++s->batch_wrs;
  s->batch_bytes += w.bytes;
  s->batch_opcode_mask |= uint64_t{1} << (w.opcode & 63);
  record_at<EventType::ibv_send_wr>(now, uint64_t{s->qp_num}, w.wr_id, uint64_t{w.opcode}, w.bytes, uint64_t{w.num_sge}, w.remote_addr,
                                    uint64_t{w.rkey}, uint64_t{w.send_flags}, uint64_t{w.imm_data});
}

template <TraceMode M>
[[gnu::always_inline]] inline void begin_wr(QpState* s, ibv_qp_ex* q, uint32_t opcode, uint32_t rkey, uint64_t raddr, uint32_t imm) {
  if (!active()) return;
  if constexpr (M == kFull) {
    if (s->wr.open) finish_full_wr(s, read_tsc());
    s->wr = PendingWr{q->wr_id, raddr, 0, opcode, rkey, q->wr_flags, imm, 0, true};
  } else {
    // The batch's counts need the opcode and the bytes alone (added by the data setter that follows).
    s->batch_opcode = opcode;
    s->batch_opcode_mask |= uint64_t{1} << opcode;
    if constexpr (M == kAggregate) ++s->batch_wrs_by_opcode[opcode];
    else ++s->batch_wrs;
  }
}

// A data setter's bytes, for the WR whose opcode was set last.
template <TraceMode M>
[[gnu::always_inline]] inline void add_wr_bytes(QpState* s, uint64_t bytes, uint32_t num_sge) {
  if constexpr (M == kFull) {
    s->wr.bytes = bytes;
    s->wr.num_sge = num_sge;
  } else if constexpr (M == kAggregate) {
    s->batch_bytes_by_opcode[s->batch_opcode] += bytes;
  } else {
    s->batch_bytes += bytes;
  }
}

// A setter's state is updated before the real setter, which is then tail-called: nothing lives
// across it, so the wrapper saves no register (the setters return nothing and cannot fail).
#define SIGMATRACE_QPX_PROLOGUE                 \
  QpState* s = qp_of(q);                        \
  if (__builtin_expect(s == nullptr, 0)) {      \
    object_not_tracked("QP");                   \
    return;                                     \
  }

template <TraceMode M>
void wr_rdma_write_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr) {
  SIGMATRACE_QPX_PROLOGUE
  begin_wr<M>(s, q, IBV_WR_RDMA_WRITE, rkey, raddr, 0);
  return s->real.rdma_write(q, rkey, raddr);
}
template <TraceMode M>
void wr_rdma_write_imm_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr, __be32 imm) {
  SIGMATRACE_QPX_PROLOGUE
  begin_wr<M>(s, q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, be32toh(imm));
  return s->real.rdma_write_imm(q, rkey, raddr, imm);
}
template <TraceMode M>
void wr_rdma_read_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr) {
  SIGMATRACE_QPX_PROLOGUE
  begin_wr<M>(s, q, IBV_WR_RDMA_READ, rkey, raddr, 0);
  return s->real.rdma_read(q, rkey, raddr);
}
template <TraceMode M>
void wr_send_hook(ibv_qp_ex* q) {
  SIGMATRACE_QPX_PROLOGUE
  begin_wr<M>(s, q, IBV_WR_SEND, 0, 0, 0);
  return s->real.send(q);
}
template <TraceMode M>
void wr_send_imm_hook(ibv_qp_ex* q, __be32 imm) {
  SIGMATRACE_QPX_PROLOGUE
  begin_wr<M>(s, q, IBV_WR_SEND_WITH_IMM, 0, 0, be32toh(imm));
  return s->real.send_imm(q, imm);
}
template <TraceMode M>
void wr_send_inv_hook(ibv_qp_ex* q, uint32_t invalidate_rkey) {
  SIGMATRACE_QPX_PROLOGUE
  begin_wr<M>(s, q, IBV_WR_SEND_WITH_INV, 0, 0, invalidate_rkey);
  return s->real.send_inv(q, invalidate_rkey);
}
template <TraceMode M>
void wr_atomic_cmp_swp_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr, uint64_t compare, uint64_t swap) {
  SIGMATRACE_QPX_PROLOGUE
  begin_wr<M>(s, q, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, 0);
  return s->real.atomic_cmp_swp(q, rkey, raddr, compare, swap);
}
template <TraceMode M>
void wr_atomic_fetch_add_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr, uint64_t add) {
  SIGMATRACE_QPX_PROLOGUE
  begin_wr<M>(s, q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, 0);
  return s->real.atomic_fetch_add(q, rkey, raddr, add);
}
template <TraceMode M>
void wr_set_sge_hook(ibv_qp_ex* q, uint32_t lkey, uint64_t addr, uint32_t length) {
  SIGMATRACE_QPX_PROLOGUE
  add_wr_bytes<M>(s, length, 1);
  return s->real.set_sge(q, lkey, addr, length);
}
template <TraceMode M>
void wr_set_sge_list_hook(ibv_qp_ex* q, size_t num_sge, const ibv_sge* sg_list) {
  SIGMATRACE_QPX_PROLOGUE
  add_wr_bytes<M>(s, sge_bytes(sg_list, static_cast<int>(num_sge)), static_cast<uint32_t>(num_sge));
  return s->real.set_sge_list(q, num_sge, sg_list);
}
template <TraceMode M>
void wr_set_inline_data_hook(ibv_qp_ex* q, void* addr, size_t length) {
  SIGMATRACE_QPX_PROLOGUE
  add_wr_bytes<M>(s, length, 0);
  if constexpr (M == kFull) s->wr.send_flags |= IBV_SEND_INLINE;
  return s->real.set_inline_data(q, addr, length);
}
template <TraceMode M>
void wr_set_inline_data_list_hook(ibv_qp_ex* q, size_t num_buf, const ibv_data_buf* bufs) {
  SIGMATRACE_QPX_PROLOGUE
  uint64_t b = 0;
  for (size_t i = 0; i < num_buf; ++i) b += bufs[i].length;
  add_wr_bytes<M>(s, b, 0);
  if constexpr (M == kFull) s->wr.send_flags |= IBV_SEND_INLINE;
  return s->real.set_inline_data_list(q, num_buf, bufs);
}

// What a Simple or Full-mode batch's post event says, taken out of the QP's state before the real
// wr_complete: that call releases the QP, and another thread may start a batch.
struct BatchTotals {
  uint64_t wrs, bytes, opcode_mask;
};
[[gnu::always_inline]] inline BatchTotals take_batch_totals(QpState* s) {
  const BatchTotals b{s->batch_wrs, s->batch_bytes, s->batch_opcode_mask};
  s->batch_wrs = 0, s->batch_bytes = 0, s->batch_opcode_mask = 0;
  return b;
}

// A Simple-mode batch recorded before its wr_complete, which failed: the event gets the result.
// Returns ret, so that the wrapper tail-calls it.
[[gnu::noinline, gnu::cold]] int wr_complete_failed(uint32_t qpn, uint64_t* event, int ret) {
  if (uint64_t* e = still_buffered(event, EventType::ibv_post_send, kPostSendWords)) e[6] = static_cast<uint64_t>(static_cast<int64_t>(ret));
  record_error(IbvCall::post_send, qpn, ret);
  return ret;
}

// Simple mode's wr_complete when the thread's chunk has no room for the batch's event.
[[gnu::noinline]] int wr_complete_simple_any(ibv_qp_ex* q, QpState* s, uint64_t now, uint64_t wrs, uint64_t bytes, uint64_t opcode_mask) {
  const uint32_t qpn = s->qp_num;
  uint64_t* event = record_before_call<EventType::ibv_post_send>(now, uint64_t{qpn}, wrs, bytes, opcode_mask);
  const int ret = s->real.complete(q);
  if (__builtin_expect(ret != 0, 0)) return wr_complete_failed(qpn, event, ret);
  return ret;
}

// Simple mode's wr_complete: the batch's post event is recorded before the call, its result 0, as
// Simple mode's post_send is, with what a failure needs in the stack frame: nothing lives in a
// callee-saved register across the call (gcc 12 still saves one, for a temporary, instead of six).
[[gnu::always_inline]] inline int wr_complete_simple(ibv_qp_ex* q, QpState* s) {
  const uint64_t now = read_tsc();
  const BatchTotals b = take_batch_totals(s);
  ThreadState& t = t_state;
  uint8_t* p = t.cur;
  if (__builtin_expect(reinterpret_cast<uintptr_t>(p) + format::raw_event_bytes(kPostSendWords) > reinterpret_cast<uintptr_t>(t.end), 0))
    return wr_complete_simple_any(q, s, now, b.wrs, b.bytes, b.opcode_mask);
  const uint32_t qpn = s->qp_num;
  detail::store_event<EventType::ibv_post_send>(t, p, now, uint64_t{qpn}, b.wrs, b.bytes, b.opcode_mask, uint64_t{0});
  // Volatile: stored to the stack, read back only if the call failed (see post_send's wrapper).
  volatile uint32_t kept_qpn = qpn;
  uint64_t* volatile kept_event = reinterpret_cast<uint64_t*>(p);
  const int ret = s->real.complete(q);
  if (__builtin_expect(ret != 0, 0)) return wr_complete_failed(kept_qpn, kept_event, ret);
  return ret;
}

template <TraceMode M>
int wr_complete_hook(ibv_qp_ex* q) {
  QpState* s = qp_of(q);
  if (__builtin_expect(s == nullptr, 0)) {
    object_not_tracked("QP");
    return ENOSYS;
  }
  if (__builtin_expect(!active(), 0)) {
    reset_batch(s);
    return s->real.complete(q);
  }
  if constexpr (M == kAggregate) {
    // Counted before the real call, which releases the QP to another thread's next batch.
    for (uint64_t m = s->batch_opcode_mask; m; m &= m - 1) {
      const uint32_t op = static_cast<uint32_t>(__builtin_ctzll(m));
      count_send(&q->qp_base, s->qp_num, op, s->batch_bytes_by_opcode[op], s->batch_wrs_by_opcode[op]);
      s->batch_wrs_by_opcode[op] = 0, s->batch_bytes_by_opcode[op] = 0;
    }
    s->batch_opcode_mask = 0;
    const int ret = s->real.complete(q);
    if (__builtin_expect(ret != 0, 0)) record_error(IbvCall::post_send, s->qp_num, ret);
    return ret;
  } else if constexpr (M == kSimple) {
    return wr_complete_simple(q, s);
  } else {
    const uint64_t now = read_tsc();  // one timestamp for the last WR and the call
    if (s->wr.open) finish_full_wr(s, now);
    const BatchTotals b = take_batch_totals(s);
    const uint32_t qpn = s->qp_num;
    const int ret = s->real.complete(q);
    record_at<EventType::ibv_post_send>(now, uint64_t{qpn}, b.wrs, b.bytes, b.opcode_mask, static_cast<int64_t>(ret));
    if (__builtin_expect(ret != 0, 0)) record_error(IbvCall::post_send, qpn, ret);
    return ret;
  }
}

template <TraceMode M>
void wr_abort_hook(ibv_qp_ex* q) {
  QpState* s = qp_of(q);
  if (__builtin_expect(s == nullptr, 0)) {
    object_not_tracked("QP");
    return;
  }
  reset_batch(s);
  s->real.abort(q);
}

// ---- ibv_cq_ex ---------------------------------------------------------------------------------

template <TraceMode M>
[[gnu::always_inline]] inline void after_cq_ex_poll(CqState* s, ibv_cq_ex* cq, int ret) {
  if (ret != 0) {
    if (__builtin_expect(ret != ENOENT, 0)) record_error(IbvCall::poll_cq, reinterpret_cast<uintptr_t>(cq), ret);
    return;
  }
  const ibv_wc_status status = cq->status;
  if (M == kFull || __builtin_expect(status != IBV_WC_SUCCESS, 0)) {
    const uint64_t f = s->wc_flags;
    uint64_t qpn = (f & IBV_WC_EX_WITH_QP_NUM) && s->read_qp_num ? s->read_qp_num(cq) : 0;
    uint64_t len = (f & IBV_WC_EX_WITH_BYTE_LEN) && s->read_byte_len ? s->read_byte_len(cq) : 0;
    uint64_t imm = (f & IBV_WC_EX_WITH_IMM) && s->read_imm_data ? be32toh(s->read_imm_data(cq)) : 0;
    uint64_t src = (f & IBV_WC_EX_WITH_SRC_QP) && s->read_src_qp ? s->read_src_qp(cq) : 0;
    uint64_t opcode = s->read_opcode ? s->read_opcode(cq) : 0;
    uint64_t flags = s->read_wc_flags ? s->read_wc_flags(cq) : 0;
    uint64_t verr = status != IBV_WC_SUCCESS && s->read_vendor_err ? s->read_vendor_err(cq) : 0;
    record<EventType::ibv_completion>(reinterpret_cast<uintptr_t>(cq), qpn, cq->wr_id, static_cast<uint64_t>(status), opcode, len, imm,
           flags, src, verr);
  } else if constexpr (M == kAggregate) {
    if (s->read_opcode) {
      uint32_t opcode = s->read_opcode(cq);
      if (opcode & IBV_WC_RECV) {
        uint64_t qpn = (s->wc_flags & IBV_WC_EX_WITH_QP_NUM) && s->read_qp_num ? s->read_qp_num(cq) : 0;
        uint64_t len = (s->wc_flags & IBV_WC_EX_WITH_BYTE_LEN) && s->read_byte_len ? s->read_byte_len(cq) : 0;
        aggregate_add(AggregateKey::ibv_qp_opcode, qpn, 0x100 + uint64_t{opcode}, len);
      }
    }
  }
}

// The hang watch's count of a completion (hang_watch.h), only while it is on.
[[gnu::noinline, gnu::cold]] void note_polled_ex(CqState* s, ibv_cq_ex* cq) {
  const bool receive = s->read_opcode && (s->read_opcode(cq) & IBV_WC_RECV);
  note_completed(!receive, receive);
}

template <TraceMode M>
int start_poll_hook(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  CqState* s = g_cqs.find(cq);
  if (__builtin_expect(s == nullptr, 0)) {
    object_not_tracked("CQ");
    return ENOSYS;
  }
  const int ret = s->start_poll(cq, attr);
  if (hang_watch_on() && ret == 0) note_polled_ex(s, cq);
  if (__builtin_expect(active(), 1)) after_cq_ex_poll<M>(s, cq, ret);
  return ret;
}

template <TraceMode M>
int next_poll_hook(ibv_cq_ex* cq) {
  CqState* s = g_cqs.find(cq);
  if (__builtin_expect(s == nullptr, 0)) {
    object_not_tracked("CQ");
    return ENOSYS;
  }
  const int ret = s->next_poll(cq);
  if (hang_watch_on() && ret == 0) note_polled_ex(s, cq);
  if (__builtin_expect(active(), 1)) after_cq_ex_poll<M>(s, cq, ret);
  return ret;
}

template <TraceMode M>
constexpr QpExReal make_qp_ex_hooks() {
  QpExReal h{};
  h.atomic_cmp_swp = &wr_atomic_cmp_swp_hook<M>;
  h.atomic_fetch_add = &wr_atomic_fetch_add_hook<M>;
  h.rdma_read = &wr_rdma_read_hook<M>;
  h.rdma_write = &wr_rdma_write_hook<M>;
  h.rdma_write_imm = &wr_rdma_write_imm_hook<M>;
  h.send = &wr_send_hook<M>;
  h.send_imm = &wr_send_imm_hook<M>;
  h.send_inv = &wr_send_inv_hook<M>;
  h.set_inline_data = &wr_set_inline_data_hook<M>;
  h.set_inline_data_list = &wr_set_inline_data_list_hook<M>;
  h.set_sge = &wr_set_sge_hook<M>;
  h.set_sge_list = &wr_set_sge_list_hook<M>;
  h.start = nullptr;  // not wrapped: the batch is reset at complete/abort
  h.complete = &wr_complete_hook<M>;
  h.abort = &wr_abort_hook<M>;
  return h;
}
const QpExReal kQpExHooks[3] = {make_qp_ex_hooks<kAggregate>(), make_qp_ex_hooks<kSimple>(), make_qp_ex_hooks<kFull>()};

template <TraceMode M>
constexpr CqExPollOps make_cq_ex_hooks() {
  return {&start_poll_hook<M>, &next_poll_hook<M>};
}
const CqExPollOps kCqExHooks[3] = {make_cq_ex_hooks<kAggregate>(), make_cq_ex_hooks<kSimple>(), make_cq_ex_hooks<kFull>()};

}  // namespace

const QpExReal& qp_ex_hooks() { return for_trace_mode(kQpExHooks); }
const CqExPollOps& cq_ex_hooks() { return for_trace_mode(kCqExHooks); }

}  // namespace sigmatrace::profiler::ibv
