// The wrappers put into a device context's ops table (ibv_post_send() & co. are inline functions
// of verbs.h that call through it): post_send, post_recv, post_srq_recv and poll_cq per trace mode,
// and req_notify_cq. They run on application threads: no locks, no system calls, no allocation;
// they read the clock before the real call and record after it returned, except Simple mode's
// post_send, which records before the call.
#include <endian.h>

#include "profiler/providers/verbs/ibverbs_hooks.h"
#include "profiler/providers/verbs/ibverbs_send_counters.h"

namespace sigmatrace::profiler::ibv {

namespace {

using format::AggregateKey;

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
  // As get(), for a wrapper that calls the result without a check: `untracked` in place of null.
  [[gnu::always_inline]] Fn get_callable(const ibv_context* ctx, Fn ContextState::*member, Fn untracked) const {
    Fn f = fn.load(std::memory_order_acquire);
    if (__builtin_expect(reinterpret_cast<uintptr_t>(f) > 1, 1)) return f;
    return per_context(ctx, member, untracked);
  }
  [[gnu::noinline]] static Fn per_context(const ibv_context* ctx, Fn ContextState::*member, Fn untracked) {
    ContextState* c = find_context(ctx);
    return c && c->*member ? c->*member : untracked;
  }
};
Uniform<PostSendFn> g_post_send;
Uniform<PostRecvFn> g_post_recv;
Uniform<PollCqFn> g_poll_cq;
Uniform<PostSrqRecvFn> g_post_srq_recv;
Uniform<ReqNotifyCqFn> g_req_notify_cq;


[[gnu::always_inline]] inline bool has_remote(uint32_t opcode) {
  return opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_WRITE_WITH_IMM || opcode == IBV_WR_RDMA_READ;
}
[[gnu::always_inline]] inline bool is_atomic(uint32_t opcode) {
  return opcode == IBV_WR_ATOMIC_CMP_AND_SWP || opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// What an ibv_post_send event says of the WRs from w up to stop: how many, their bytes, and
// which opcodes (a bit each).
struct SendSummary {
  uint64_t n = 0, bytes = 0, opcode_mask = 0;
};
[[gnu::always_inline]] inline SendSummary summarize_sends(const ibv_send_wr* w, const ibv_send_wr* stop) {
  SendSummary s;
  for (; w && w != stop; w = w->next) {
    ++s.n;
    s.bytes += sge_bytes(w->sg_list, w->num_sge);
    s.opcode_mask |= uint64_t{1} << (w->opcode & 63);
  }
  return s;
}

// A post recorded before the call (Simple mode) failed: only the WRs before bad were posted.
// Returns ret, so that the wrapper tail-calls it.
[[gnu::noinline, gnu::cold]] int post_send_failed(ibv_qp* qp, const ibv_send_wr* wr, ibv_send_wr** bad_wr, uint64_t* event, int ret) {
  if (uint64_t* e = still_buffered(event, EventType::ibv_post_send, kPostSendWords)) {
    const SendSummary posted = summarize_sends(wr, *bad_wr);
    e[3] = posted.n, e[4] = posted.bytes, e[5] = posted.opcode_mask, e[6] = static_cast<uint64_t>(static_cast<int64_t>(ret));
  }
  record_error(IbvCall::post_send, qp->qp_num, ret);
  return ret;
}

// A post to a context that was never registered fails, as in every mode; nothing was posted.
[[gnu::noinline, gnu::cold]] int untracked_post_send(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  object_not_tracked("context");
  *bad_wr = wr;
  return ENOSYS;
}

// The real call of a Simple-mode post already recorded, and what follows it when the call fails.
[[gnu::always_inline]] inline int call_recorded_post_send(PostSendFn real, ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr, uint64_t* event) {
  const int ret = real(qp, wr, bad_wr);
  if (__builtin_expect(ret != 0, 0)) return post_send_failed(qp, wr, bad_wr, event, ret);
  return ret;
}

// Simple mode's post that the wrapper's fast path does not record: a chain of WRs, several SGEs
// or a full chunk. The event is stamped `now`, read by the wrapper.
[[gnu::noinline]] int post_send_simple_any(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr, uint64_t now) {
  const SendSummary s = summarize_sends(wr, nullptr);
  uint64_t* event = record_before_call<EventType::ibv_post_send>(now, uint64_t{qp->qp_num}, s.n, s.bytes, s.opcode_mask);
  const PostSendFn real = g_post_send.get_callable(qp->context, &ContextState::post_send, &untracked_post_send);
  return call_recorded_post_send(real, qp, wr, bad_wr, event);
}

// A post recorded by the fast path when the patched contexts belong to several providers.
[[gnu::noinline]] int post_send_simple_per_context(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr, uint64_t* event) {
  const PostSendFn real = g_post_send.get_callable(qp->context, &ContextState::post_send, &untracked_post_send);
  return call_recorded_post_send(real, qp, wr, bad_wr, event);
}

// Simple mode's post_send: the event is recorded before the call, its result 0, so that after a
// call that succeeded there is nothing left to do. The common post (one WR of one SGE into a chunk
// with room, one provider) is recorded inline and calls nothing but the real function, with what a
// failure needs in the stack frame rather than in callee-saved registers: such a post saves and
// restores no register. On Intel cores the RDTSC does not hide a wrapper's instructions, so every
// one counts (docs/performance.md).
[[gnu::always_inline]] inline int post_send_simple(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  // The clock is read first: read after the checks, the RDTSC cost the AMD dev VM 15 ns more per
  // post (verbs_wrapper_cost_bench, 25 against 10 ns).
  const uint64_t now = read_tsc();
  ThreadState& t = t_state;
  uint8_t* p = t.cur;
  if (__builtin_expect(reinterpret_cast<uintptr_t>(p) + format::raw_event_bytes(kPostSendWords) > reinterpret_cast<uintptr_t>(t.end) ||
                           wr == nullptr || wr->next != nullptr || wr->num_sge != 1,
                       0))
    return post_send_simple_any(qp, wr, bad_wr, now);
  detail::store_event<EventType::ibv_post_send>(t, p, now, uint64_t{qp->qp_num}, uint64_t{1}, uint64_t{wr->sg_list[0].length},
                                                uint64_t{1} << (wr->opcode & 63), uint64_t{0});
  auto* event = reinterpret_cast<uint64_t*>(p);
  const PostSendFn real = g_post_send.fn.load(std::memory_order_acquire);
  if (__builtin_expect(reinterpret_cast<uintptr_t>(real) <= 1, 0)) return post_send_simple_per_context(qp, wr, bad_wr, event);
  // What a failure needs, stored to the stack: volatile, so that the compiler neither keeps copies
  // in callee-saved registers across the call nor reads them back unless the call failed.
  ibv_qp* volatile kept_qp = qp;
  ibv_send_wr* volatile kept_wr = wr;
  ibv_send_wr** volatile kept_bad_wr = bad_wr;
  uint64_t* volatile kept_event = event;
  const int ret = real(qp, wr, bad_wr);
  if (__builtin_expect(ret != 0, 0)) return post_send_failed(kept_qp, kept_wr, kept_bad_wr, kept_event, ret);
  return ret;
}

// The hang watch's counts (hang_watch.h), only while it is on: the WRs that will complete.
[[gnu::noinline, gnu::cold]] void note_posted_sends(const ibv_send_wr* wr) {
  uint64_t signalled = 0;
  for (; wr; wr = wr->next) signalled += (wr->send_flags & IBV_SEND_SIGNALED) != 0;
  note_posted(signalled, 0);
}
[[gnu::noinline, gnu::cold]] void note_posted_receives(const ibv_recv_wr* wr) {
  uint64_t n = 0;
  for (; wr; wr = wr->next) ++n;
  note_posted(0, n);
}
[[gnu::noinline, gnu::cold]] void note_polled(const ibv_wc* wc, int n) {
  uint64_t receives = 0;
  for (int i = 0; i < n; ++i) receives += (wc[i].opcode & IBV_WC_RECV) != 0;
  note_completed(static_cast<uint64_t>(n) - receives, receives);
}

template <TraceMode M>
int post_send_hook(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  if (hang_watch_on()) note_posted_sends(wr);
  if constexpr (M == kSimple) {
    if (__builtin_expect(active(), 1)) return post_send_simple(qp, wr, bad_wr);
  }
  const PostSendFn real = g_post_send.get(qp->context, &ContextState::post_send);
  if (__builtin_expect(real == nullptr, 0)) {
    object_not_tracked("context");
    return ENOSYS;
  }
  if constexpr (M == kSimple) return real(qp, wr, bad_wr);  // the provider is off
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
    // Full mode records after the call: an event per WR cannot be taken back for a WR the call
    // did not post.
    uint64_t n = 0, bytes = 0, mask = 0;
    for (const ibv_send_wr* w = wr; w && w != stop; w = w->next) {
      uint64_t b = sge_bytes(w->sg_list, w->num_sge);
      ++n;
      bytes += b;
      mask |= uint64_t{1} << (w->opcode & 63);
      uint64_t raddr = 0, rkey = 0;
      if (has_remote(w->opcode)) raddr = w->wr.rdma.remote_addr, rkey = w->wr.rdma.rkey;
      else if (is_atomic(w->opcode)) raddr = w->wr.atomic.remote_addr, rkey = w->wr.atomic.rkey;
      record_at<EventType::ibv_send_wr>(now, qpn, w->wr_id, static_cast<uint64_t>(w->opcode), b, static_cast<uint64_t>(w->num_sge),
             raddr, rkey, static_cast<uint64_t>(w->send_flags), static_cast<uint64_t>(be32toh(w->imm_data)));
    }
    record_at<EventType::ibv_post_send>(now, qpn, n, bytes, mask, static_cast<int64_t>(ret));
  }
  if (__builtin_expect(ret != 0, 0)) record_error(IbvCall::post_send, qpn, ret);
  return ret;
}

template <TraceMode M>
int post_recv_hook(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  if (hang_watch_on()) note_posted_receives(wr);
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
  if (hang_watch_on()) note_posted_receives(wr);
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
  if (hang_watch_on() && n > 0) note_polled(wc, n);
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

struct ContextOpHooks {
  PostSendFn post_send;
  PostRecvFn post_recv;
  PollCqFn poll_cq;
  PostSrqRecvFn post_srq_recv;
};

template <TraceMode M>
constexpr ContextOpHooks make_hooks() {
  return {&post_send_hook<M>, &post_recv_hook<M>, &poll_cq_hook<M>, &post_srq_recv_hook<M>};
}
const ContextOpHooks kHooks[3] = {make_hooks<kAggregate>(), make_hooks<kSimple>(), make_hooks<kFull>()};

}  // namespace

void remember_context_ops(const ContextState& c) {
  if (c.post_send) g_post_send.note(c.post_send);
  if (c.post_recv) g_post_recv.note(c.post_recv);
  if (c.poll_cq) g_poll_cq.note(c.poll_cq);
  if (c.post_srq_recv) g_post_srq_recv.note(c.post_srq_recv);
  if (c.req_notify_cq) g_req_notify_cq.note(c.req_notify_cq);
}

void install_context_ops(const ContextState& c, ibv_context* ctx) {
  const ContextOpHooks& h = for_trace_mode(kHooks);
  if (c.post_send) __atomic_store_n(&ctx->ops.post_send, h.post_send, __ATOMIC_RELEASE);
  if (c.post_recv) __atomic_store_n(&ctx->ops.post_recv, h.post_recv, __ATOMIC_RELEASE);
  if (c.poll_cq) __atomic_store_n(&ctx->ops.poll_cq, h.poll_cq, __ATOMIC_RELEASE);
  if (c.post_srq_recv) __atomic_store_n(&ctx->ops.post_srq_recv, h.post_srq_recv, __ATOMIC_RELEASE);
  if (c.req_notify_cq) __atomic_store_n(&ctx->ops.req_notify_cq, &req_notify_cq_hook, __ATOMIC_RELEASE);
}

}  // namespace sigmatrace::profiler::ibv
