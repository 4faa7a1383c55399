// The dispatch tables behind verbs.h's inline functions, and the wrappers put into them:
//   context ops: post_send, post_recv, poll_cq, post_srq_recv (ibv_post_send() & co. are inline);
//   verbs_context: create_qp_ex, create_cq_ex, create_srq_ex (so extended QPs/CQs are seen);
//   ibv_qp_ex: the wr_* builders and wr_complete/wr_abort (re-applied after every ibv_modify_qp,
//              since providers rewrite them on state changes);
//   ibv_cq_ex: start_poll / next_poll.
// Each data-path wrapper is instantiated once per trace mode and the right one is installed, so the
// mode costs no branch. Data-path wrappers run on application threads: no locks, no system calls,
// no allocation, no exceptions; they call the real function first and record after it returned.
#include <endian.h>

#include <cstring>

#include "profiler/providers/verbs/ibverbs_state.h"
#include "profiler/runtime/log.h"

namespace sigmatrace::profiler::ibv {

ContextState g_contexts[kMaxContexts];
std::atomic<uint32_t> g_context_high_water{0};
ObjectTable<QpState, 8192> g_qps;
ObjectTable<CqState, 1024> g_cqs;
thread_local QpState* t_last_qp __attribute__((tls_model("initial-exec"))) = nullptr;
std::atomic<uint32_t> g_endpoint_generation{0};

ibv_qp_ex* real_qp_to_qp_ex(ibv_qp* qp);  // ibverbs_symbols.cpp

namespace {

using format::AggregateKey;
constexpr TraceMode kAggregate = TraceMode::aggregate;
constexpr TraceMode kSimple = TraceMode::simple;
constexpr TraceMode kFull = TraceMode::full;

std::atomic<bool> g_missing_logged{false};
[[gnu::noinline, gnu::cold]] void object_not_tracked(const char* what) {
  if (!g_missing_logged.exchange(true)) log_line("ibverbs: a %s reached a wrapper without being tracked; the call fails with ENOSYS", what);
}

// The real ops of every patched context, when they are all the same functions (one provider
// library: the common case). The wrappers then need no lookup at all; kMixed sends them to the
// per-context table.
template <typename Fn>
struct Uniform {
  std::atomic<Fn> fn{nullptr};
  static inline const Fn kMixed = reinterpret_cast<Fn>(uintptr_t{1});
  void note(Fn real) {
    Fn cur = fn.load();
    while (cur != real && cur != kMixed && !fn.compare_exchange_weak(cur, cur == nullptr ? real : kMixed)) {
    }
  }
  [[gnu::always_inline]] Fn get(const ibv_context* ctx, Fn ContextState::*member) const {
    Fn f = fn.load(std::memory_order_acquire);
    if (__builtin_expect(reinterpret_cast<uintptr_t>(f) > 1, 1)) return f;
    ContextState* c = find_context(ctx);
    return c ? c->*member : nullptr;
  }
};
Uniform<PostSendFn> g_post_send;
Uniform<PostRecvFn> g_post_recv;
Uniform<PollCqFn> g_poll_cq;
Uniform<PostSrqRecvFn> g_post_srq_recv;
Uniform<ReqNotifyCqFn> g_req_notify_cq;

[[gnu::always_inline]] inline uint64_t sge_bytes(const ibv_sge* sg, int n) {
  uint64_t b = 0;
  for (int i = 0; i < n; ++i) b += sg[i].length;
  return b;
}

// Aggregate mode: the last (QP, opcode) this thread counted, its peer and its two counter entries,
// so a thread that keeps posting the same kind of WR on the same QP updates them with no hashing
// and no QP lookup, as long as no QP changed its endpoints since (g_endpoint_generation).
struct SendCounterMemo {
  const void* qp;
  uint64_t qp_num_opcode;  // qp_num << 32 | opcode
  uint64_t generation;     // g_endpoint_generation when made; never matches while 0 (unset) memo
  AggregateEntry* by_opcode;
  AggregateEntry* by_pair;  // null until the QP is connected
};
thread_local SendCounterMemo t_send_memo __attribute__((tls_model("initial-exec"))) = {};

[[gnu::always_inline]] inline uint64_t memo_generation() {
  return uint64_t{g_endpoint_generation.load(std::memory_order_relaxed)} | (uint64_t{1} << 32);
}

[[gnu::noinline]] void count_send_slow(SendCounterMemo& m, const void* qp, uint32_t qpn, uint32_t opcode, uint64_t local, uint64_t remote,
                                       uint64_t bytes, uint64_t generation) {
  m.qp = nullptr;
  AggregateTable* tab = t_state.aggregate;
  if (!tab) tab = attach_aggregate_slow();
  if (!tab) return;
  AggregateEntry* by_opcode = tab->entry(static_cast<uint64_t>(AggregateKey::ibv_qp_opcode), qpn, opcode);
  AggregateEntry* by_pair = remote ? tab->entry(static_cast<uint64_t>(AggregateKey::ibv_endpoint_pair), local, remote) : nullptr;
  if (!by_opcode || (remote && !by_pair)) {  // no room: counted as overflow by the table
    tab->add(static_cast<uint64_t>(AggregateKey::ibv_qp_opcode), qpn, opcode, bytes);
    if (remote) tab->add(static_cast<uint64_t>(AggregateKey::ibv_endpoint_pair), local, remote, bytes);
    return;
  }
  ++by_opcode->count;
  by_opcode->bytes += bytes;
  if (by_pair) ++by_pair->count, by_pair->bytes += bytes;
  m = {qp, (uint64_t{qpn} << 32) | opcode, generation, by_opcode, by_pair};
}

// True when the memo counted it.
[[gnu::always_inline]] inline bool count_send_memo(const void* qp, uint32_t qpn, uint32_t opcode, uint64_t bytes, uint64_t generation) {
  SendCounterMemo& m = t_send_memo;
  if (__builtin_expect(m.qp == qp && m.qp_num_opcode == ((uint64_t{qpn} << 32) | opcode) && m.generation == generation, 1)) {
    ++m.by_opcode->count;
    m.by_opcode->bytes += bytes;
    if (m.by_pair) ++m.by_pair->count, m.by_pair->bytes += bytes;
    return true;
  }
  return false;
}

// The QP's endpoints are looked up only when the memo does not apply.
[[gnu::noinline]] void count_send_lookup(const void* qp, uint32_t qpn, uint32_t opcode, uint64_t bytes, uint64_t generation) {
  QpState* s = find_qp(qp);
  count_send_slow(t_send_memo, qp, qpn, opcode, s ? s->local_endpoint : 0, s ? s->remote_endpoint : 0, bytes, generation);
}

[[gnu::always_inline]] inline void count_send(const void* qp, uint32_t qpn, uint32_t opcode, uint64_t bytes) {
  const uint64_t generation = memo_generation();
  if (!count_send_memo(qp, qpn, opcode, bytes, generation)) count_send_lookup(qp, qpn, opcode, bytes, generation);
}

[[gnu::always_inline]] inline bool has_remote(uint32_t opcode) {
  return opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_WRITE_WITH_IMM || opcode == IBV_WR_RDMA_READ;
}
[[gnu::always_inline]] inline bool is_atomic(uint32_t opcode) {
  return opcode == IBV_WR_ATOMIC_CMP_AND_SWP || opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// ---- context ops -------------------------------------------------------------------------------

template <TraceMode M>
int post_send_hook(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  const PostSendFn real = g_post_send.get(qp->context, &ContextState::post_send);
  if (__builtin_expect(real == nullptr, 0)) {
    object_not_tracked("context");
    return ENOSYS;
  }
  // One timestamp for the call and its WRs, taken before the post: a WR can complete (and its
  // message be received) before the call returns.
  const uint64_t now = M == kAggregate ? 0 : read_tsc();
  const int ret = real(qp, wr, bad_wr);
  if (__builtin_expect(!active(), 0)) return ret;
  const ibv_send_wr* stop = ret ? *bad_wr : nullptr;  // on failure only the WRs before bad_wr were posted
  const uint32_t qpn = qp->qp_num;
  if constexpr (M == kAggregate) {
    for (const ibv_send_wr* w = wr; w && w != stop; w = w->next) count_send(qp, qpn, w->opcode, sge_bytes(w->sg_list, w->num_sge));
  } else {
    uint64_t n = 0, bytes = 0, mask = 0;
    for (const ibv_send_wr* w = wr; w && w != stop; w = w->next) {
      uint64_t b = sge_bytes(w->sg_list, w->num_sge);
      ++n;
      bytes += b;
      mask |= uint64_t{1} << (w->opcode & 63);
      if constexpr (M == kFull) {
        uint64_t raddr = 0, rkey = 0;
        if (has_remote(w->opcode)) raddr = w->wr.rdma.remote_addr, rkey = w->wr.rdma.rkey;
        else if (is_atomic(w->opcode)) raddr = w->wr.atomic.remote_addr, rkey = w->wr.atomic.rkey;
        record_at<EventType::ibv_send_wr>(now, qpn, w->wr_id, static_cast<uint64_t>(w->opcode), b, static_cast<uint64_t>(w->num_sge),
               raddr, rkey, static_cast<uint64_t>(w->send_flags), static_cast<uint64_t>(be32toh(w->imm_data)));
      }
    }
    record_at<EventType::ibv_post_send>(now, qpn, n, bytes, mask, static_cast<int64_t>(ret));
  }
  if (__builtin_expect(ret != 0, 0)) record_error(IbvCall::post_send, qpn, ret);
  return ret;
}

template <TraceMode M>
int post_recv_hook(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  const PostRecvFn real = g_post_recv.get(qp->context, &ContextState::post_recv);
  if (__builtin_expect(real == nullptr, 0)) {
    object_not_tracked("context");
    return ENOSYS;
  }
  const uint64_t now = M == kAggregate ? 0 : read_tsc();  // before the post, as for sends
  const int ret = real(qp, wr, bad_wr);
  if (__builtin_expect(!active(), 0)) return ret;
  const uint32_t qpn = qp->qp_num;
  if constexpr (M != kAggregate) {
    const ibv_recv_wr* stop = ret ? *bad_wr : nullptr;
    uint64_t n = 0, bytes = 0;
    for (const ibv_recv_wr* w = wr; w && w != stop; w = w->next) {
      uint64_t b = sge_bytes(w->sg_list, w->num_sge);
      ++n;
      bytes += b;
      if constexpr (M == kFull) record_at<EventType::ibv_recv_wr>(now, qpn, w->wr_id, b, static_cast<uint64_t>(w->num_sge), uint64_t{0});
    }
    record_at<EventType::ibv_post_recv>(now, qpn, n, bytes, static_cast<int64_t>(ret));
  }
  if (__builtin_expect(ret != 0, 0)) record_error(IbvCall::post_recv, qpn, ret);
  return ret;
}

template <TraceMode M>
int post_srq_recv_hook(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  const PostSrqRecvFn real = g_post_srq_recv.get(srq->context, &ContextState::post_srq_recv);
  if (__builtin_expect(real == nullptr, 0)) {
    object_not_tracked("context");
    return ENOSYS;
  }
  const uint64_t now = M == kAggregate ? 0 : read_tsc();  // before the post, as for sends
  const int ret = real(srq, wr, bad_wr);
  if (__builtin_expect(!active(), 0)) return ret;
  const uint64_t handle = reinterpret_cast<uintptr_t>(srq);
  if constexpr (M != kAggregate) {
    const ibv_recv_wr* stop = ret ? *bad_wr : nullptr;
    uint64_t n = 0, bytes = 0;
    for (const ibv_recv_wr* w = wr; w && w != stop; w = w->next) {
      uint64_t b = sge_bytes(w->sg_list, w->num_sge);
      ++n;
      bytes += b;
      if constexpr (M == kFull) record_at<EventType::ibv_recv_wr>(now, uint64_t{0}, w->wr_id, b, static_cast<uint64_t>(w->num_sge), handle);
    }
    record_at<EventType::ibv_post_srq_recv>(now, handle, n, bytes, static_cast<int64_t>(ret));
  }
  if (__builtin_expect(ret != 0, 0)) record_error(IbvCall::post_srq_recv, handle, ret);
  return ret;
}

[[gnu::always_inline]] inline void record_wc(uint64_t now, const ibv_cq* cq, const ibv_wc& wc) {
  record_at<EventType::ibv_completion>(now, reinterpret_cast<uintptr_t>(cq), uint64_t{wc.qp_num}, wc.wr_id, static_cast<uint64_t>(wc.status),
         static_cast<uint64_t>(wc.opcode), uint64_t{wc.byte_len}, static_cast<uint64_t>(be32toh(wc.imm_data)),
         uint64_t{wc.wc_flags}, uint64_t{wc.src_qp}, uint64_t{wc.vendor_err});
}

template <TraceMode M>
int poll_cq_hook(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  const PollCqFn real = g_poll_cq.get(cq->context, &ContextState::poll_cq);
  if (__builtin_expect(real == nullptr, 0)) {
    object_not_tracked("context");
    return -ENOSYS;
  }
  const int n = real(cq, num_entries, wc);
  if (n <= 0) {
    if (__builtin_expect(n < 0, 0) && active()) record_error(IbvCall::poll_cq, reinterpret_cast<uintptr_t>(cq), n);
    return n;
  }
  if (__builtin_expect(!active(), 0)) return n;
  if constexpr (M == kFull) {
    const uint64_t now = read_tsc();  // one timestamp for the completions of one poll
    for (int i = 0; i < n; ++i) record_wc(now, cq, wc[i]);
    return n;
  }
  for (int i = 0; i < n; ++i) {  // simple and aggregate: error completions, and receive counters
    const ibv_wc& e = wc[i];
    if (__builtin_expect(e.status != IBV_WC_SUCCESS, 0)) record_wc(read_tsc(), cq, e);
    else if constexpr (M == kAggregate)
      if (e.opcode & IBV_WC_RECV) aggregate_add(AggregateKey::ibv_qp_opcode, e.qp_num, 0x100 + uint64_t{e.opcode}, e.byte_len);
  }
  return n;
}

// Arming a CQ is not data path but is called per event in event-driven programs: errors only.
int req_notify_cq_hook(ibv_cq* cq, int solicited_only) {
  const ReqNotifyCqFn real = g_req_notify_cq.get(cq->context, &ContextState::req_notify_cq);
  if (__builtin_expect(real == nullptr, 0)) {
    object_not_tracked("context");
    return ENOSYS;
  }
  const int ret = real(cq, solicited_only);
  if (__builtin_expect(ret != 0, 0) && active()) {
    ErrnoKeeper keep;
    record_error(IbvCall::req_notify_cq, reinterpret_cast<uintptr_t>(cq), ret);
  }
  return ret;
}

// ---- ibv_qp_ex ---------------------------------------------------------------------------------

[[gnu::always_inline]] inline QpState* qp_of(ibv_qp_ex* q) { return find_qp(&q->qp_base); }

template <TraceMode M>
[[gnu::always_inline]] inline void finish_wr(QpState* s, uint64_t now) {
  PendingWr& w = s->wr;
  w.open = false;
  ++s->batch_wrs;
  s->batch_bytes += w.bytes;
  s->batch_opcode_mask |= uint64_t{1} << (w.opcode & 63);
  if constexpr (M == kFull)
    record_at<EventType::ibv_send_wr>(now, uint64_t{s->qp_num}, w.wr_id, uint64_t{w.opcode}, w.bytes, uint64_t{w.num_sge}, w.remote_addr,
           uint64_t{w.rkey}, uint64_t{w.send_flags}, uint64_t{w.imm_data});
  if constexpr (M == kAggregate) {
    const void* qp = s->key.load(std::memory_order_relaxed);
    const uint64_t generation = memo_generation();
    if (!count_send_memo(qp, s->qp_num, w.opcode, w.bytes, generation))
      count_send_slow(t_send_memo, qp, s->qp_num, w.opcode, s->local_endpoint, s->remote_endpoint, w.bytes, generation);
  }
}

template <TraceMode M>
[[gnu::always_inline]] inline void begin_wr(QpState* s, ibv_qp_ex* q, uint32_t opcode, uint32_t rkey, uint64_t raddr, uint32_t imm) {
  if (!active()) return;
  if (s->wr.open) finish_wr<M>(s, M == kFull ? read_tsc() : 0);
  s->wr = PendingWr{q->wr_id, raddr, 0, opcode, rkey, q->wr_flags, imm, 0, true};
}

#define SIGMATRACE_QPX_PROLOGUE(field)          \
  QpState* s = qp_of(q);                        \
  if (__builtin_expect(s == nullptr, 0)) {      \
    object_not_tracked("QP");                   \
    return;                                     \
  }                                             \
  s->real.field

template <TraceMode M>
void wr_rdma_write_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr) {
  SIGMATRACE_QPX_PROLOGUE(rdma_write)(q, rkey, raddr);
  begin_wr<M>(s, q, IBV_WR_RDMA_WRITE, rkey, raddr, 0);
}
template <TraceMode M>
void wr_rdma_write_imm_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr, __be32 imm) {
  SIGMATRACE_QPX_PROLOGUE(rdma_write_imm)(q, rkey, raddr, imm);
  begin_wr<M>(s, q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, be32toh(imm));
}
template <TraceMode M>
void wr_rdma_read_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr) {
  SIGMATRACE_QPX_PROLOGUE(rdma_read)(q, rkey, raddr);
  begin_wr<M>(s, q, IBV_WR_RDMA_READ, rkey, raddr, 0);
}
template <TraceMode M>
void wr_send_hook(ibv_qp_ex* q) {
  SIGMATRACE_QPX_PROLOGUE(send)(q);
  begin_wr<M>(s, q, IBV_WR_SEND, 0, 0, 0);
}
template <TraceMode M>
void wr_send_imm_hook(ibv_qp_ex* q, __be32 imm) {
  SIGMATRACE_QPX_PROLOGUE(send_imm)(q, imm);
  begin_wr<M>(s, q, IBV_WR_SEND_WITH_IMM, 0, 0, be32toh(imm));
}
template <TraceMode M>
void wr_send_inv_hook(ibv_qp_ex* q, uint32_t invalidate_rkey) {
  SIGMATRACE_QPX_PROLOGUE(send_inv)(q, invalidate_rkey);
  begin_wr<M>(s, q, IBV_WR_SEND_WITH_INV, 0, 0, invalidate_rkey);
}
template <TraceMode M>
void wr_atomic_cmp_swp_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr, uint64_t compare, uint64_t swap) {
  SIGMATRACE_QPX_PROLOGUE(atomic_cmp_swp)(q, rkey, raddr, compare, swap);
  begin_wr<M>(s, q, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, 0);
}
template <TraceMode M>
void wr_atomic_fetch_add_hook(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr, uint64_t add) {
  SIGMATRACE_QPX_PROLOGUE(atomic_fetch_add)(q, rkey, raddr, add);
  begin_wr<M>(s, q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, 0);
}
template <TraceMode M>
void wr_set_sge_hook(ibv_qp_ex* q, uint32_t lkey, uint64_t addr, uint32_t length) {
  SIGMATRACE_QPX_PROLOGUE(set_sge)(q, lkey, addr, length);
  s->wr.bytes = length;
  s->wr.num_sge = 1;
}
template <TraceMode M>
void wr_set_sge_list_hook(ibv_qp_ex* q, size_t num_sge, const ibv_sge* sg_list) {
  SIGMATRACE_QPX_PROLOGUE(set_sge_list)(q, num_sge, sg_list);
  s->wr.bytes = sge_bytes(sg_list, static_cast<int>(num_sge));
  s->wr.num_sge = static_cast<uint32_t>(num_sge);
}
template <TraceMode M>
void wr_set_inline_data_hook(ibv_qp_ex* q, void* addr, size_t length) {
  SIGMATRACE_QPX_PROLOGUE(set_inline_data)(q, addr, length);
  s->wr.bytes = length;
  s->wr.num_sge = 0;
  s->wr.send_flags |= IBV_SEND_INLINE;
}
template <TraceMode M>
void wr_set_inline_data_list_hook(ibv_qp_ex* q, size_t num_buf, const ibv_data_buf* bufs) {
  SIGMATRACE_QPX_PROLOGUE(set_inline_data_list)(q, num_buf, bufs);
  uint64_t b = 0;
  for (size_t i = 0; i < num_buf; ++i) b += bufs[i].length;
  s->wr.bytes = b;
  s->wr.num_sge = 0;
  s->wr.send_flags |= IBV_SEND_INLINE;
}

inline void reset_batch(QpState* s) {
  s->wr.open = false;
  s->batch_wrs = 0;
  s->batch_bytes = 0;
  s->batch_opcode_mask = 0;
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
  const uint64_t now = M == kAggregate ? 0 : read_tsc();  // one timestamp for the last WR and the call
  if (s->wr.open) finish_wr<M>(s, now);
  // Copied out before the real call: it releases the QP, and another thread may start a batch.
  const uint64_t n = s->batch_wrs, bytes = s->batch_bytes, mask = s->batch_opcode_mask;
  const uint32_t qpn = s->qp_num;
  reset_batch(s);
  const int ret = s->real.complete(q);
  if constexpr (M != kAggregate) record_at<EventType::ibv_post_send>(now, uint64_t{qpn}, n, bytes, mask, static_cast<int64_t>(ret));
  if (__builtin_expect(ret != 0, 0)) record_error(IbvCall::post_send, qpn, ret);
  return ret;
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

template <TraceMode M>
int start_poll_hook(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  CqState* s = g_cqs.find(cq);
  if (__builtin_expect(s == nullptr, 0)) {
    object_not_tracked("CQ");
    return ENOSYS;
  }
  const int ret = s->start_poll(cq, attr);
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
  if (__builtin_expect(active(), 1)) after_cq_ex_poll<M>(s, cq, ret);
  return ret;
}

// ---- verbs_context creation entry points (control path) ---------------------------------------

// The one body of the verbs_context create_*_ex hooks: the context's real entry (Real), the
// outermost-call guard, an error record on failure, `created` for a new object.
template <auto Real, typename Obj, typename Attr, typename Created>
Obj* create_through_context(ibv_context* ctx, Attr* attr, IbvCall call, Created&& created) {
  kit::ControlSpan control_span;
  ContextState* c = find_context(ctx);
  if (!c || !(c->*Real)) {
    object_not_tracked("context");
    errno = ENOSYS;
    return nullptr;
  }
  Reentry guard;
  Obj* obj = (c->*Real)(ctx, attr);
  if (!guard.outer || !active()) return obj;
  ErrnoKeeper keep;
  if (!obj) record_error(call, reinterpret_cast<uintptr_t>(ctx), keep.saved);
  else created(obj);
  return obj;
}

ibv_qp* create_qp_ex_hook(ibv_context* ctx, ibv_qp_init_attr_ex* attr) {
  return create_through_context<&ContextState::create_qp_ex, ibv_qp>(ctx, attr, IbvCall::create_qp, [&](ibv_qp* qp) {
    ibv_pd* pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : qp->pd;
    on_qp_created(qp, pd, attr->cap, attr->qp_type, attr->send_cq, attr->recv_cq, attr->srq,
                  (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0);
  });
}

ibv_cq_ex* create_cq_ex_hook(ibv_context* ctx, ibv_cq_init_attr_ex* attr) {
  return create_through_context<&ContextState::create_cq_ex, ibv_cq_ex>(
      ctx, attr, IbvCall::create_cq, [&](ibv_cq_ex* cq) { on_cq_ex_created(ctx, cq, static_cast<int>(attr->cqe), attr->wc_flags); });
}

ibv_srq* create_srq_ex_hook(ibv_context* ctx, ibv_srq_init_attr_ex* attr) {
  return create_through_context<&ContextState::create_srq_ex, ibv_srq>(ctx, attr, IbvCall::create_srq, [&](ibv_srq* srq) {
    on_srq_created((attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : nullptr, srq, attr->attr.max_wr);
  });
}

// ---- per-mode wrapper sets ---------------------------------------------------------------------

struct Hooks {
  PostSendFn post_send;
  PostRecvFn post_recv;
  PollCqFn poll_cq;
  PostSrqRecvFn post_srq_recv;
  QpExReal qpx;
  decltype(ibv_cq_ex::start_poll) start_poll;
  decltype(ibv_cq_ex::next_poll) next_poll;
};

template <TraceMode M>
constexpr Hooks make_hooks() {
  Hooks h{};
  h.post_send = &post_send_hook<M>;
  h.post_recv = &post_recv_hook<M>;
  h.poll_cq = &poll_cq_hook<M>;
  h.post_srq_recv = &post_srq_recv_hook<M>;
  h.qpx.atomic_cmp_swp = &wr_atomic_cmp_swp_hook<M>;
  h.qpx.atomic_fetch_add = &wr_atomic_fetch_add_hook<M>;
  h.qpx.rdma_read = &wr_rdma_read_hook<M>;
  h.qpx.rdma_write = &wr_rdma_write_hook<M>;
  h.qpx.rdma_write_imm = &wr_rdma_write_imm_hook<M>;
  h.qpx.send = &wr_send_hook<M>;
  h.qpx.send_imm = &wr_send_imm_hook<M>;
  h.qpx.send_inv = &wr_send_inv_hook<M>;
  h.qpx.set_inline_data = &wr_set_inline_data_hook<M>;
  h.qpx.set_inline_data_list = &wr_set_inline_data_list_hook<M>;
  h.qpx.set_sge = &wr_set_sge_hook<M>;
  h.qpx.set_sge_list = &wr_set_sge_list_hook<M>;
  h.qpx.start = nullptr;  // not wrapped: the batch is reset at complete/abort
  h.qpx.complete = &wr_complete_hook<M>;
  h.qpx.abort = &wr_abort_hook<M>;
  h.start_poll = &start_poll_hook<M>;
  h.next_poll = &next_poll_hook<M>;
  return h;
}

const Hooks kHooks[3] = {make_hooks<kAggregate>(), make_hooks<kSimple>(), make_hooks<kFull>()};

const Hooks& hooks() {
  switch (g_mode) {
    case TraceMode::aggregate: return kHooks[0];
    case TraceMode::full: return kHooks[2];
    default: return kHooks[1];
  }
}

// Replaces *slot with ours, remembering what was there; leaves null (unsupported) entries alone and
// never takes our own wrapper for the real function.
template <typename Fn>
void swap_in(Fn* slot, Fn ours, Fn* real) {
  Fn cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
  if (!cur || !ours || cur == ours) return;
  *real = cur;
  __atomic_store_n(slot, ours, __ATOMIC_RELEASE);
}

verbs_context* extended_context(ibv_context* ctx) {
  return ctx->abi_compat == reinterpret_cast<void*>(UINTPTR_MAX) ? reinterpret_cast<verbs_context*>(
                                                                       reinterpret_cast<char*>(ctx) - offsetof(verbs_context, context))
                                                                 : nullptr;
}

#define SIGMATRACE_VCTX_HAS(vctx, op) \
  ((vctx) && (vctx)->sz >= sizeof(verbs_context) - offsetof(verbs_context, op) && (vctx)->op)

}  // namespace

uint64_t gid_subnet_prefix(const ibv_gid& g) { return be64toh(g.global.subnet_prefix); }
uint64_t gid_interface_id(const ibv_gid& g) { return be64toh(g.global.interface_id); }

ContextState* patch_context(ibv_context* ctx) {
  if (ContextState* existing = find_context(ctx)) return existing;
  ContextState* c = nullptr;
  for (uint32_t i = 0; i < kMaxContexts && !c; ++i) {
    uint8_t expected = 0;
    if (g_contexts[i].claimed.compare_exchange_strong(expected, 1)) c = &g_contexts[i];
  }
  if (!c) {
    log_line("ibverbs: more than %u open device contexts; the others are not traced", kMaxContexts);
    return nullptr;
  }
  const uint32_t index = static_cast<uint32_t>(c - g_contexts);
  uint32_t hw = g_context_high_water.load();
  while (hw < index + 1 && !g_context_high_water.compare_exchange_weak(hw, index + 1)) {
  }
  std::memset(c->lid, 0, sizeof c->lid);
  const Hooks& h = hooks();
  c->post_send = ctx->ops.post_send;
  c->post_recv = ctx->ops.post_recv;
  c->poll_cq = ctx->ops.poll_cq;
  c->post_srq_recv = ctx->ops.post_srq_recv;
  c->req_notify_cq = ctx->ops.req_notify_cq;
  verbs_context* vctx = extended_context(ctx);
  c->create_qp_ex = SIGMATRACE_VCTX_HAS(vctx, create_qp_ex) ? vctx->create_qp_ex : nullptr;
  c->create_cq_ex = SIGMATRACE_VCTX_HAS(vctx, create_cq_ex) ? vctx->create_cq_ex : nullptr;
  c->create_srq_ex = SIGMATRACE_VCTX_HAS(vctx, create_srq_ex) ? vctx->create_srq_ex : nullptr;
  if (c->post_send) g_post_send.note(c->post_send);
  if (c->post_recv) g_post_recv.note(c->post_recv);
  if (c->poll_cq) g_poll_cq.note(c->poll_cq);
  if (c->post_srq_recv) g_post_srq_recv.note(c->post_srq_recv);
  if (c->req_notify_cq) g_req_notify_cq.note(c->req_notify_cq);
  c->ctx.store(ctx, std::memory_order_release);  // the real functions are visible before any wrapper is
  if (c->post_send) __atomic_store_n(&ctx->ops.post_send, h.post_send, __ATOMIC_RELEASE);
  if (c->post_recv) __atomic_store_n(&ctx->ops.post_recv, h.post_recv, __ATOMIC_RELEASE);
  if (c->poll_cq) __atomic_store_n(&ctx->ops.poll_cq, h.poll_cq, __ATOMIC_RELEASE);
  if (c->post_srq_recv) __atomic_store_n(&ctx->ops.post_srq_recv, h.post_srq_recv, __ATOMIC_RELEASE);
  if (c->req_notify_cq) __atomic_store_n(&ctx->ops.req_notify_cq, &req_notify_cq_hook, __ATOMIC_RELEASE);
  if (c->create_qp_ex) vctx->create_qp_ex = &create_qp_ex_hook;
  if (c->create_cq_ex) vctx->create_cq_ex = &create_cq_ex_hook;
  if (c->create_srq_ex) vctx->create_srq_ex = &create_srq_ex_hook;
  return c;
}

void forget_context(ibv_context* ctx) {
  // Called after the real close: the memory is gone, nothing to restore. The slot is reusable.
  for (uint32_t i = 0; i < kMaxContexts; ++i) {
    if (g_contexts[i].ctx.load() == ctx) {
      g_contexts[i].ctx.store(nullptr, std::memory_order_release);
      g_contexts[i].claimed.store(0, std::memory_order_release);
    }
  }
}

QpState* track_qp(ibv_qp* qp) {
  QpState* s = g_qps.find(qp);
  if (s) return s;
  s = g_qps.insert(qp);
  if (!s) {
    log_line("ibverbs: the QP table is full; QP %u is not traced in detail", qp->qp_num);
    return nullptr;
  }
  const void* key = s->key.load();
  s->qp_num = qp->qp_num;
  s->port = 1;
  s->context = find_context(qp->context);
  s->local_endpoint = (uint64_t{s->context ? s->context->lid[1] : 0u} << 32) | qp->qp_num;
  s->remote_endpoint = 0;
  s->qpx = nullptr;
  std::memset(&s->real, 0, sizeof s->real);
  std::memset(&s->wr, 0, sizeof s->wr);
  reset_batch(s);
  if (key != qp) g_qps.publish(s, qp);
  return s;
}

void patch_qp_ex(QpState* s, ibv_qp_ex* q) {
  if (!s || !q) return;
  const QpExReal& ours = hooks().qpx;
  swap_in(&q->wr_atomic_cmp_swp, ours.atomic_cmp_swp, &s->real.atomic_cmp_swp);
  swap_in(&q->wr_atomic_fetch_add, ours.atomic_fetch_add, &s->real.atomic_fetch_add);
  swap_in(&q->wr_rdma_read, ours.rdma_read, &s->real.rdma_read);
  swap_in(&q->wr_rdma_write, ours.rdma_write, &s->real.rdma_write);
  swap_in(&q->wr_rdma_write_imm, ours.rdma_write_imm, &s->real.rdma_write_imm);
  swap_in(&q->wr_send, ours.send, &s->real.send);
  swap_in(&q->wr_send_imm, ours.send_imm, &s->real.send_imm);
  swap_in(&q->wr_send_inv, ours.send_inv, &s->real.send_inv);
  swap_in(&q->wr_set_inline_data, ours.set_inline_data, &s->real.set_inline_data);
  swap_in(&q->wr_set_inline_data_list, ours.set_inline_data_list, &s->real.set_inline_data_list);
  swap_in(&q->wr_set_sge, ours.set_sge, &s->real.set_sge);
  swap_in(&q->wr_set_sge_list, ours.set_sge_list, &s->real.set_sge_list);
  swap_in(&q->wr_complete, ours.complete, &s->real.complete);
  swap_in(&q->wr_abort, ours.abort, &s->real.abort);
  s->qpx = q;
}

void forget_qp(ibv_qp* qp) {
  if (t_last_qp && t_last_qp->key.load() == qp) t_last_qp = nullptr;
  g_qps.erase(qp);
  endpoints_changed();  // a new QP may get this address
}

void patch_cq_ex(ibv_cq_ex* cq, uint64_t wc_flags) {
  CqState* s = g_cqs.find(cq);
  if (!s) s = g_cqs.insert(cq);
  if (!s) {
    log_line("ibverbs: the CQ table is full; a CQ is not traced");
    return;
  }
  const Hooks& h = hooks();
  s->wc_flags = wc_flags;
  s->read_opcode = cq->read_opcode;
  s->read_vendor_err = cq->read_vendor_err;
  s->read_byte_len = cq->read_byte_len;
  s->read_imm_data = cq->read_imm_data;
  s->read_qp_num = cq->read_qp_num;
  s->read_src_qp = cq->read_src_qp;
  s->read_wc_flags = cq->read_wc_flags;
  if (cq->start_poll != h.start_poll) s->start_poll = cq->start_poll;
  if (cq->next_poll != h.next_poll) s->next_poll = cq->next_poll;
  if (s->key.load() != cq) g_cqs.publish(s, cq);  // the real functions are visible before any wrapper is
  if (s->start_poll) __atomic_store_n(&cq->start_poll, h.start_poll, __ATOMIC_RELEASE);
  if (s->next_poll) __atomic_store_n(&cq->next_poll, h.next_poll, __ATOMIC_RELEASE);
}

void forget_cq(const void* cq) { g_cqs.erase(cq); }

}  // namespace sigmatrace::profiler::ibv
