// The dispatch tables behind verbs.h's inline functions, and what puts our wrappers into them:
//   context ops: post_send, post_recv, poll_cq, post_srq_recv, req_notify_cq (ibverbs_context_ops.cpp);
//   verbs_context: create_qp_ex, create_cq_ex, create_srq_ex (here: so extended QPs/CQs are seen);
//   ibv_qp_ex: the wr_* builders and wr_complete/wr_abort, ibv_cq_ex: start_poll / next_poll
//              (ibverbs_extended_ops.cpp).
// Also the registries of contexts, QPs and CQs the wrappers look their real functions up in.
#include <endian.h>

#include <cstring>

#include "profiler/providers/verbs/ibverbs_hooks.h"
#include "profiler/runtime/log.h"

namespace sigmatrace::profiler::ibv {

ContextState g_contexts[kMaxContexts];
std::atomic<uint32_t> g_context_high_water{0};
ObjectTable<QpState, 8192> g_qps;
ObjectTable<CqState, 1024> g_cqs;
constinit thread_local QpState* t_last_qp __attribute__((tls_model("initial-exec"))) = nullptr;
std::atomic<uint32_t> g_endpoint_generation{0};

ibv_qp_ex* real_qp_to_qp_ex(ibv_qp* qp);  // ibverbs_symbols.cpp

namespace {
std::atomic<bool> g_missing_logged{false};
}  // namespace

void object_not_tracked(const char* what) {
  if (!g_missing_logged.exchange(true)) log_line("ibverbs: a %s reached a wrapper without being tracked; the call fails with ENOSYS", what);
}

namespace {

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
  c->post_send = ctx->ops.post_send;
  c->post_recv = ctx->ops.post_recv;
  c->poll_cq = ctx->ops.poll_cq;
  c->post_srq_recv = ctx->ops.post_srq_recv;
  c->req_notify_cq = ctx->ops.req_notify_cq;
  verbs_context* vctx = extended_context(ctx);
  c->create_qp_ex = SIGMATRACE_VCTX_HAS(vctx, create_qp_ex) ? vctx->create_qp_ex : nullptr;
  c->create_cq_ex = SIGMATRACE_VCTX_HAS(vctx, create_cq_ex) ? vctx->create_cq_ex : nullptr;
  c->create_srq_ex = SIGMATRACE_VCTX_HAS(vctx, create_srq_ex) ? vctx->create_srq_ex : nullptr;
  remember_context_ops(*c);
  c->ctx.store(ctx, std::memory_order_release);  // the real functions are visible before any wrapper is
  install_context_ops(*c, ctx);
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
  const QpExReal& ours = qp_ex_hooks();
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
  const CqExPollOps& h = cq_ex_hooks();
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