// Exported libibverbs functions (reached by ordinary dynamic linking, and through the dlsym/dlvsym
// hooks): each calls the real function, then records what happened and, for objects with dispatch
// tables (contexts, extended QPs/CQs), installs the table wrappers. Return values and errno are
// exactly the real function's; a missing real function fails with ENOSYS (logged once).
// Control path only: the data path (post/poll) is inline in verbs.h and wrapped in the tables.
#include <dlfcn.h>

#include "profiler/gpu/cuda_driver.h"
#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/verbs/ibverbs_state.h"

namespace sigmatrace::profiler {
namespace ibv {

#define SIGMATRACE_IBV_SYMBOLS(X)                                                                     \
  X(ibv_open_device) X(ibv_close_device) X(ibv_alloc_pd) X(ibv_dealloc_pd) X(ibv_reg_mr) X(ibv_reg_mr_iova) \
  X(ibv_reg_mr_iova2) X(ibv_reg_dmabuf_mr) X(ibv_dereg_mr) X(ibv_create_cq) X(ibv_destroy_cq) X(ibv_create_qp) \
  X(ibv_qp_to_qp_ex) X(ibv_modify_qp) X(ibv_destroy_qp) X(ibv_create_srq) X(ibv_destroy_srq) X(ibv_get_async_event) \
  X(ibv_get_cq_event)

namespace real {
#define SIGMATRACE_REAL_SYMBOL(name) RealSymbol name{#name, "libibverbs.so.1", {}, {}};
SIGMATRACE_IBV_SYMBOLS(SIGMATRACE_REAL_SYMBOL)
#undef SIGMATRACE_REAL_SYMBOL
}  // namespace real

ibv_qp_ex* real_qp_to_qp_ex(ibv_qp* qp) {
  auto fn = real_function<ibv_qp_ex* (*)(ibv_qp*)>(real::ibv_qp_to_qp_ex);
  return fn ? fn(qp) : nullptr;
}

namespace {

void after_reg_mr(ibv_pd* pd, ibv_mr* mr, uint64_t addr, size_t length, unsigned access, int saved_errno, bool dmabuf) {
  if (!mr) {
    record_error(dmabuf ? IbvCall::reg_dmabuf_mr : IbvCall::reg_mr, reinterpret_cast<uintptr_t>(pd), saved_errno);
    return;
  }
  if (!control_events()) return;
  int64_t gpu = -1;
  format::MemoryKind kind = cuda::memory_kind(addr, &gpu, dmabuf);
  record<EventType::ibv_mr_reg>(reinterpret_cast<uintptr_t>(pd), reinterpret_cast<uintptr_t>(mr), addr, uint64_t{length}, uint64_t{access},
         uint64_t{mr->lkey}, uint64_t{mr->rkey}, static_cast<uint64_t>(kind), gpu);
}

// rdma-core's int-returning verbs return the errno value; some return -1 and set errno.
inline int64_t error_of(int ret, int saved_errno) { return ret > 0 ? ret : (saved_errno ? saved_errno : ret); }

inline bool tracing(const Reentry& g) { return g.outer && active(); }

}  // namespace
}  // namespace ibv
}  // namespace sigmatrace::profiler

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::ibv;

#define SIGMATRACE_REAL_OR(name, type, fail) SIGMATRACE_CONTROL_CALL(ibv::real::name, type, fail)

SIGMATRACE_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
  SIGMATRACE_REAL_OR(ibv_open_device, ibv_context* (*)(ibv_device*), nullptr);
  ibv_context* ctx = fn(device);
  if (!tracing(guard)) return ctx;
  ErrnoKeeper keep;
  if (ctx) on_device_opened(ctx, device);
  else record_error(IbvCall::open_device, reinterpret_cast<uintptr_t>(device), keep.saved);
  return ctx;
}

SIGMATRACE_EXPORT int ibv_close_device(ibv_context* ctx) {
  SIGMATRACE_REAL_OR(ibv_close_device, int (*)(ibv_context*), ENOSYS);
  int ret = fn(ctx);
  if (!tracing(guard)) {
    if (ret == 0) forget_context(ctx);
    return ret;
  }
  ErrnoKeeper keep;
  if (ret == 0) {
    forget_context(ctx);
    if (control_events()) record<EventType::ibv_device_close>(reinterpret_cast<uintptr_t>(ctx));
  } else {
    record_error(IbvCall::close_device, reinterpret_cast<uintptr_t>(ctx), error_of(ret, keep.saved));
  }
  return ret;
}

SIGMATRACE_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
  SIGMATRACE_REAL_OR(ibv_alloc_pd, ibv_pd* (*)(ibv_context*), nullptr);
  ibv_pd* pd = fn(ctx);
  if (!tracing(guard)) return pd;
  ErrnoKeeper keep;
  if (!pd) record_error(IbvCall::alloc_pd, reinterpret_cast<uintptr_t>(ctx), keep.saved);
  else if (control_events()) record<EventType::ibv_pd_alloc>(reinterpret_cast<uintptr_t>(ctx), reinterpret_cast<uintptr_t>(pd));
  return pd;
}

SIGMATRACE_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  SIGMATRACE_REAL_OR(ibv_dealloc_pd, int (*)(ibv_pd*), ENOSYS);
  int ret = fn(pd);
  if (ret != 0 && tracing(guard)) {
    ErrnoKeeper keep;
    record_error(IbvCall::dealloc_pd, reinterpret_cast<uintptr_t>(pd), error_of(ret, keep.saved));
  }
  return ret;
}

SIGMATRACE_EXPORT ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  SIGMATRACE_REAL_OR(ibv_reg_mr, ibv_mr* (*)(ibv_pd*, void*, size_t, int), nullptr);
  ibv_mr* mr = fn(pd, addr, length, access);
  if (!tracing(guard)) return mr;
  ErrnoKeeper keep;
  after_reg_mr(pd, mr, reinterpret_cast<uintptr_t>(addr), length, static_cast<unsigned>(access), keep.saved, false);
  return mr;
}

SIGMATRACE_EXPORT ibv_mr*(ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  SIGMATRACE_REAL_OR(ibv_reg_mr_iova, ibv_mr* (*)(ibv_pd*, void*, size_t, uint64_t, int), nullptr);
  ibv_mr* mr = fn(pd, addr, length, iova, access);
  if (!tracing(guard)) return mr;
  ErrnoKeeper keep;
  after_reg_mr(pd, mr, reinterpret_cast<uintptr_t>(addr), length, static_cast<unsigned>(access), keep.saved, false);
  return mr;
}

SIGMATRACE_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  SIGMATRACE_REAL_OR(ibv_reg_mr_iova2, ibv_mr* (*)(ibv_pd*, void*, size_t, uint64_t, unsigned), nullptr);
  ibv_mr* mr = fn(pd, addr, length, iova, access);
  if (!tracing(guard)) return mr;
  ErrnoKeeper keep;
  after_reg_mr(pd, mr, reinterpret_cast<uintptr_t>(addr), length, access, keep.saved, false);
  return mr;
}

SIGMATRACE_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  SIGMATRACE_REAL_OR(ibv_reg_dmabuf_mr, ibv_mr* (*)(ibv_pd*, uint64_t, size_t, uint64_t, int, int), nullptr);
  ibv_mr* mr = fn(pd, offset, length, iova, fd, access);
  if (!tracing(guard)) return mr;
  ErrnoKeeper keep;
  after_reg_mr(pd, mr, iova, length, static_cast<unsigned>(access), keep.saved, true);
  return mr;
}

SIGMATRACE_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  SIGMATRACE_REAL_OR(ibv_dereg_mr, int (*)(ibv_mr*), ENOSYS);
  const uint32_t lkey = mr ? mr->lkey : 0;
  int ret = fn(mr);
  if (!tracing(guard)) return ret;
  ErrnoKeeper keep;
  if (ret != 0) record_error(IbvCall::dereg_mr, reinterpret_cast<uintptr_t>(mr), error_of(ret, keep.saved));
  else if (control_events()) record<EventType::ibv_mr_dereg>(reinterpret_cast<uintptr_t>(mr), uint64_t{lkey});
  return ret;
}

SIGMATRACE_EXPORT ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  SIGMATRACE_REAL_OR(ibv_create_cq, ibv_cq* (*)(ibv_context*, int, void*, ibv_comp_channel*, int), nullptr);
  ibv_cq* cq = fn(ctx, cqe, cq_context, channel, comp_vector);
  if (!tracing(guard)) return cq;
  ErrnoKeeper keep;
  if (!cq) record_error(IbvCall::create_cq, reinterpret_cast<uintptr_t>(ctx), keep.saved);
  else on_cq_created(ctx, cq, cq->cqe);
  return cq;
}

SIGMATRACE_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
  SIGMATRACE_REAL_OR(ibv_destroy_cq, int (*)(ibv_cq*), ENOSYS);
  int ret = fn(cq);
  if (ret == 0) forget_cq(cq);
  if (!tracing(guard)) return ret;
  ErrnoKeeper keep;
  if (ret != 0) record_error(IbvCall::destroy_cq, reinterpret_cast<uintptr_t>(cq), error_of(ret, keep.saved));
  else if (control_events()) record<EventType::ibv_cq_destroy>(reinterpret_cast<uintptr_t>(cq));
  return ret;
}

SIGMATRACE_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  SIGMATRACE_REAL_OR(ibv_create_qp, ibv_qp* (*)(ibv_pd*, ibv_qp_init_attr*), nullptr);
  ibv_qp* qp = fn(pd, attr);
  if (!tracing(guard)) return qp;
  ErrnoKeeper keep;
  if (!qp) record_error(IbvCall::create_qp, reinterpret_cast<uintptr_t>(pd), keep.saved);
  else on_qp_created(qp, pd, attr->cap, attr->qp_type, attr->send_cq, attr->recv_cq, attr->srq, false);
  return qp;
}

SIGMATRACE_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  SIGMATRACE_REAL_OR(ibv_qp_to_qp_ex, ibv_qp_ex* (*)(ibv_qp*), nullptr);
  ibv_qp_ex* q = fn(qp);
  if (q && tracing(guard)) {
    ErrnoKeeper keep;
    QpState* s = g_qps.find(qp);
    if (s && s->qpx != q) patch_qp_ex(s, q);  // a QP created before it could be patched at creation
  }
  return q;
}

SIGMATRACE_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  SIGMATRACE_REAL_OR(ibv_modify_qp, int (*)(ibv_qp*, ibv_qp_attr*, int), ENOSYS);
  int ret = fn(qp, attr, attr_mask);
  if (!tracing(guard)) return ret;
  ErrnoKeeper keep;
  if (ret != 0) {
    record_error(IbvCall::modify_qp, qp->qp_num, error_of(ret, keep.saved));
    if (QpState* s = g_qps.find(qp); s && s->qpx) patch_qp_ex(s, s->qpx);  // a failed change may still rewrite pointers
  } else {
    on_qp_modified(qp, attr, attr_mask);
  }
  return ret;
}

SIGMATRACE_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
  SIGMATRACE_REAL_OR(ibv_destroy_qp, int (*)(ibv_qp*), ENOSYS);
  const uint32_t qpn = qp ? qp->qp_num : 0;
  int ret = fn(qp);
  if (ret == 0) forget_qp(qp);
  if (!tracing(guard)) return ret;
  ErrnoKeeper keep;
  if (ret != 0) record_error(IbvCall::destroy_qp, qpn, error_of(ret, keep.saved));
  else if (control_events()) record<EventType::ibv_qp_destroy>(uint64_t{qpn});
  return ret;
}

SIGMATRACE_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  SIGMATRACE_REAL_OR(ibv_create_srq, ibv_srq* (*)(ibv_pd*, ibv_srq_init_attr*), nullptr);
  ibv_srq* srq = fn(pd, attr);
  if (!tracing(guard)) return srq;
  ErrnoKeeper keep;
  if (!srq) record_error(IbvCall::create_srq, reinterpret_cast<uintptr_t>(pd), keep.saved);
  else on_srq_created(pd, srq, attr->attr.max_wr);
  return srq;
}

SIGMATRACE_EXPORT int ibv_destroy_srq(ibv_srq* srq) {
  SIGMATRACE_REAL_OR(ibv_destroy_srq, int (*)(ibv_srq*), ENOSYS);
  int ret = fn(srq);
  if (ret != 0 && tracing(guard)) {
    ErrnoKeeper keep;
    record_error(IbvCall::destroy_srq, reinterpret_cast<uintptr_t>(srq), error_of(ret, keep.saved));
  }
  return ret;
}

SIGMATRACE_EXPORT int ibv_get_async_event(ibv_context* ctx, ibv_async_event* event) {
  SIGMATRACE_REAL_OR(ibv_get_async_event, int (*)(ibv_context*, ibv_async_event*), -1);
  int ret = fn(ctx, event);
  if (!tracing(guard)) return ret;
  ErrnoKeeper keep;
  if (ret != 0) {
    record_error(IbvCall::get_async_event, reinterpret_cast<uintptr_t>(ctx), error_of(ret, keep.saved));
    return ret;
  }
  uint64_t element = 0;
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: element = reinterpret_cast<uintptr_t>(event->element.cq); break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: element = reinterpret_cast<uintptr_t>(event->element.srq); break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE: element = static_cast<uint64_t>(event->element.port_num); break;
    case IBV_EVENT_WQ_FATAL: element = reinterpret_cast<uintptr_t>(event->element.wq); break;
    case IBV_EVENT_DEVICE_FATAL: element = 0; break;
    default: element = event->element.qp ? event->element.qp->qp_num : 0; break;  // QP events: the QP number
  }
  record<EventType::ibv_async_event>(reinterpret_cast<uintptr_t>(ctx), static_cast<uint64_t>(event->event_type), element);
  return ret;
}

SIGMATRACE_EXPORT int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  SIGMATRACE_REAL_OR(ibv_get_cq_event, int (*)(ibv_comp_channel*, ibv_cq**, void**), -1);
  int ret = fn(channel, cq, cq_context);
  if (ret != 0 && tracing(guard)) {
    ErrnoKeeper keep;
    record_error(IbvCall::get_cq_event, reinterpret_cast<uintptr_t>(channel), error_of(ret, keep.saved));
  }
  return ret;
}

namespace sigmatrace::profiler {
namespace {
const InterposedSymbol kIbverbsSymbols[] = {
#define SIGMATRACE_INTERPOSED(name) {&ibv::real::name, reinterpret_cast<void*>(&::name), &ibv::g_active},
    SIGMATRACE_IBV_SYMBOLS(SIGMATRACE_INTERPOSED)
#undef SIGMATRACE_INTERPOSED
};
// IBVERBS_1.0 (the old ABI) has its own implementation with other layouts.
bool is_ibverbs_compat(const char*, const char* version) { return std::strcmp(version, "IBVERBS_1.0") == 0; }
}  // namespace
extern const InterposedSymbolTable kIbverbsInterposedSymbols = {kIbverbsSymbols, sizeof kIbverbsSymbols / sizeof kIbverbsSymbols[0],
                                                                &is_ibverbs_compat};
}  // namespace sigmatrace::profiler
