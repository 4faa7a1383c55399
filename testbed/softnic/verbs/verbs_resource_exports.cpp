// Exported verbs that create, modify, query and destroy resources other than QPs: PD, MR,
// completion channel, CQ (classic and extended) and SRQ (QPs and AHs: verbs_qp_exports.cpp).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "core/context.hpp"
#include "core/cuda_driver.hpp"
#include "core/exports.hpp"
#include "core/memory_registry.hpp"
#include "core/transport_api.hpp"
#include "engine/engine.hpp"
#include "verbs/verbs_datapath.hpp"
#include "verbs/verbs_object_setup.hpp"

using namespace softnic;

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace {
constexpr int kKnownAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                             IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                             IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING;
}  // namespace

// ---------------- PD ----------------

SOFTNIC_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
  auto* pd = new (std::nothrow) Pd();
  if (!pd) {
    errno = ENOMEM;
    return nullptr;
  }
  pd->pd.context = ctx;
  static uint32_t next_handle = 1;
  pd->pd.handle = __atomic_fetch_add(&next_handle, 1, __ATOMIC_RELAXED);
  return &pd->pd;
}

SOFTNIC_EXPORT int ibv_dealloc_pd(ibv_pd* ibpd) {
  Pd* pd = to_pd(ibpd);
  {
    std::lock_guard<std::mutex> g(Engine::get().mu);
    if (pd->refs) return EBUSY;
    if (pd->parent_of) pd->parent_of->refs--;
  }
  delete pd;
  return 0;
}

namespace softnic {
// A parent domain (mlx5's alloc_parent_domain): usable wherever a PD is, protected by the PD it
// was made from (keys registered on that PD are valid on its objects); freed with ibv_dealloc_pd.
// softnic has no thread domains or custom allocators to honour.
ibv_pd* alloc_parent_domain_op(ibv_context* ctx, ibv_parent_domain_init_attr* attr) {
  if (!attr || !attr->pd || attr->td || (attr->comp_mask & ~uint32_t(IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT))) {
    errno = attr && (attr->td || attr->comp_mask) ? EOPNOTSUPP : EINVAL;
    return nullptr;
  }
  auto* pd = new (std::nothrow) Pd();
  if (!pd) {
    errno = ENOMEM;
    return nullptr;
  }
  Pd* base = to_pd(attr->pd);
  pd->parent_of = const_cast<Pd*>(base->protection());
  pd->pd.context = ctx;
  pd->pd.handle = attr->pd->handle;
  std::lock_guard<std::mutex> g(Engine::get().mu);
  pd->parent_of->refs++;
  return &pd->pd;
}
}  // namespace softnic

SOFTNIC_EXPORT ibv_pd* ibv_import_pd(ibv_context*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT void ibv_unimport_pd(ibv_pd*) {}

// ---------------- MR ----------------

SOFTNIC_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* ibpd, void* addr, size_t length, uint64_t iova,
                                        unsigned int access) {
  if ((access & ~unsigned(kKnownAccess)) ||
      ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))) {
    errno = EINVAL;
    return nullptr;
  }
  if (iova != reinterpret_cast<uint64_t>(addr) || (access & IBV_ACCESS_ZERO_BASED)) {
    errno = EOPNOTSUPP;  // remote addresses are the registering process's virtual addresses
    return nullptr;
  }
  if (access & IBV_ACCESS_ON_DEMAND) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  auto* mr = new (std::nothrow) Mr();
  if (!mr) {
    errno = ENOMEM;
    return nullptr;
  }
  Pd* pd = to_pd(ibpd);
  mr->pd = pd;
  mr->access = int(access);
  mr->on_gpu = cuda::is_device_pointer(addr, &mr->cu_ctx);
  mr->mr.context = ibpd->context;
  mr->mr.pd = ibpd;
  mr->mr.addr = addr;
  mr->mr.length = length;
  uint32_t key = mr_register(mr);
  if (!key) {
    delete mr;
    errno = ENOMEM;
    return nullptr;
  }
  mr->mr.handle = key;
  mr->mr.lkey = key;
  mr->mr.rkey = key;
  std::lock_guard<std::mutex> g(Engine::get().mu);
  pd->refs++;
  return &mr->mr;
}

SOFTNIC_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uint64_t>(addr), unsigned(access));
}

SOFTNIC_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, unsigned(access));
}

// A dma-buf exported by the CUDA driver (cuMemGetHandleForAddressRange): softnic cannot map the
// buffer's pages as a kernel driver does, but it reaches the same GPU memory through the
// exporter's virtual address, which callers pass as iova (NVSHMEM and NCCL do). So the
// registration covers [iova, iova + length) of GPU memory; anything else is refused.
SOFTNIC_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) {
    errno = EBADF;
    return nullptr;
  }
  void* ctx = nullptr;
  if (!cuda::is_device_pointer(reinterpret_cast<void*>(iova), &ctx)) {
    errno = EOPNOTSUPP;  // only GPU memory's dma-bufs are reachable without the buffer's pages
    return nullptr;
  }
  (void)offset;
  return ibv_reg_mr_iova2(pd, reinterpret_cast<void*>(iova), length, iova, unsigned(access));
}

SOFTNIC_EXPORT int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, size_t, int) {
  errno = EOPNOTSUPP;
  return IBV_REREG_MR_ERR_INPUT;
}

SOFTNIC_EXPORT int ibv_dereg_mr(ibv_mr* ibmr) {
  Mr* mr = to_mr(ibmr);
  mr_unregister(mr);
  {
    std::lock_guard<std::mutex> g(Engine::get().mu);
    mr->pd->refs--;
  }
  delete mr;
  return 0;
}

SOFTNIC_EXPORT ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT void ibv_unimport_mr(ibv_mr*) {}
SOFTNIC_EXPORT ibv_dm* ibv_import_dm(ibv_context*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT void ibv_unimport_dm(ibv_dm*) {}

// ---------------- completion channel ----------------

SOFTNIC_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* ctx) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  auto* ch = new CompChannel();
  ch->ch.context = ctx;
  ch->ch.fd = fds[0];
  ch->ch.refcnt = 0;
  ch->write_fd = fds[1];
  return &ch->ch;
}

SOFTNIC_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* ibch) {
  auto* ch = reinterpret_cast<CompChannel*>(ibch);
  if (ibch->refcnt) {
    errno = EBUSY;
    return -1;
  }
  close(ibch->fd);
  close(ch->write_fd);
  delete ch;
  return 0;
}

SOFTNIC_EXPORT int ibv_get_cq_event(ibv_comp_channel* ch, ibv_cq** cq, void** cq_context) {
  {
    // The caller blocks instead of polling: the engine thread has to be woken from now on.
    Engine& e = Engine::get();
    std::lock_guard<std::mutex> g(e.mu);
    e.app_polling(false);
  }
  ibv_cq* p = nullptr;
  ssize_t r = read(ch->fd, &p, sizeof(p));
  if (r != sizeof(p)) return -1;
  *cq = p;
  *cq_context = p->cq_context;
  return 0;
}

SOFTNIC_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

// ---------------- CQ ----------------

namespace softnic {
static Cq* make_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel,
                   int comp_vector) {
  if (cqe < 1 || uint32_t(cqe) > kMaxCqe || comp_vector < 0 || comp_vector >= ctx->num_comp_vectors) {
    errno = EINVAL;
    return nullptr;
  }
  auto* cq = new (std::nothrow) Cq();
  if (!cq) {
    errno = ENOMEM;
    return nullptr;
  }
  uint32_t n = round_pow2(uint32_t(cqe) + 1);  // like mlx5: room reported as 2^k - 1
  cq->entries.resize(n - 1 ? n - 1 : 1);
  cq->ctx = to_ctx(ctx);
  cq->cqx.context = ctx;
  cq->cqx.channel = channel;
  cq->cqx.cq_context = cq_context;
  cq->cqx.cqe = int(n - 1);
  init_sync(&cq->cqx.mutex, &cq->cqx.cond);
  if (channel) {
    std::lock_guard<std::mutex> g(Engine::get().mu);
    channel->refcnt++;
  }
  install_cq_ex_ops(cq);
  return cq;
}

ibv_cq_ex* create_cq_ex_op(ibv_context* ctx, ibv_cq_init_attr_ex* attr) {
  constexpr uint64_t kSupportedWc = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                                    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
                                    IBV_WC_EX_WITH_DLID_PATH_BITS;
  if (attr->comp_mask & ~uint32_t(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) {
    errno = EINVAL;
    return nullptr;
  }
  if (attr->wc_flags & ~kSupportedWc) {
    errno = EOPNOTSUPP;  // timestamps, cvlan, flow tag, tag matching are not modelled
    return nullptr;
  }
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
      (attr->flags & ~uint32_t(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  Cq* cq = make_cq(ctx, int(attr->cqe), attr->cq_context, attr->channel, int(attr->comp_vector));
  if (!cq) return nullptr;
  cq->wc_flags = attr->wc_flags;
  return &cq->cqx;
}
}  // namespace softnic

SOFTNIC_EXPORT ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel,
                                     int comp_vector) {
  Cq* cq = make_cq(ctx, cqe, cq_context, channel, comp_vector);
  return cq ? cq->cq() : nullptr;
}

SOFTNIC_EXPORT int ibv_resize_cq(ibv_cq* ibcq, int cqe) {
  Cq* cq = to_cq(ibcq);
  if (cqe < 1 || uint32_t(cqe) > kMaxCqe) return EINVAL;
  std::lock_guard<std::mutex> g(Engine::get().mu);
  uint32_t n = round_pow2(uint32_t(cqe) + 1) - 1;
  if (n < cq->count) return EINVAL;
  std::vector<ibv_wc> e(n ? n : 1);
  for (uint32_t i = 0; i < cq->count; ++i) e[i] = cq->entries[(cq->head + i) % cq->entries.size()];
  cq->entries.swap(e);
  cq->head = 0;
  ibcq->cqe = int(n);
  return 0;
}

SOFTNIC_EXPORT int ibv_destroy_cq(ibv_cq* ibcq) {
  Cq* cq = to_cq(ibcq);
  {
    std::lock_guard<std::mutex> g(Engine::get().mu);
    if (cq->qp_refs) return EBUSY;
    if (ibcq->channel) ibcq->channel->refcnt--;
  }
  delete cq;
  return 0;
}

// ---------------- SRQ ----------------

namespace softnic {
static ibv_srq* make_srq(ibv_pd* ibpd, void* srq_context, ibv_srq_attr* a) {
  if (a->max_wr < 1 || a->max_wr > kMaxSrqWr || a->max_sge > kMaxSge + 1 ||
      (a->srq_limit && a->srq_limit > a->max_wr)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* srq = new (std::nothrow) Srq();
  if (!srq) {
    errno = ENOMEM;
    return nullptr;
  }
  srq->ctx = to_ctx(ibpd->context);
  srq->rq.init(a->max_wr, a->max_sge);
  srq->srq.context = ibpd->context;
  srq->srq.srq_context = srq_context;
  srq->srq.pd = ibpd;
  init_sync(&srq->srq.mutex, &srq->srq.cond);
  a->max_sge = srq->rq.max_sge;
  std::lock_guard<std::mutex> g(Engine::get().mu);
  to_pd(ibpd)->refs++;
  return &srq->srq;
}

ibv_srq* create_srq_ex_op(ibv_context* ctx, ibv_srq_init_attr_ex* attr) {
  if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ||
      ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC) ||
      (attr->comp_mask & ~uint32_t(IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE))) {
    errno = EOPNOTSUPP;  // XRC and tag-matching SRQs are not emulated
    return nullptr;
  }
  return make_srq(attr->pd, attr->srq_context, &attr->attr);
}
}  // namespace softnic

SOFTNIC_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  return make_srq(pd, attr->srq_context, &attr->attr);
}

SOFTNIC_EXPORT int ibv_modify_srq(ibv_srq* ibsrq, ibv_srq_attr* attr, int mask) {
  Srq* srq = to_srq(ibsrq);
  if (mask & ~int(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return EINVAL;
  if (mask & IBV_SRQ_MAX_WR) return EOPNOTSUPP;  // resizing is not supported
  std::lock_guard<std::mutex> g(Engine::get().mu);
  if (mask & IBV_SRQ_LIMIT) {
    if (attr->srq_limit > srq->rq.cap) return EINVAL;
    srq->limit = attr->srq_limit;
  }
  return 0;
}

SOFTNIC_EXPORT int ibv_query_srq(ibv_srq* ibsrq, ibv_srq_attr* attr) {
  Srq* srq = to_srq(ibsrq);
  std::lock_guard<std::mutex> g(Engine::get().mu);
  attr->max_wr = srq->rq.cap;
  attr->max_sge = srq->rq.max_sge;
  attr->srq_limit = srq->limit;
  return 0;
}

SOFTNIC_EXPORT int ibv_destroy_srq(ibv_srq* ibsrq) {
  Srq* srq = to_srq(ibsrq);
  {
    std::lock_guard<std::mutex> g(Engine::get().mu);
    if (srq->qp_refs) return EBUSY;
    to_pd(ibsrq->pd)->refs--;
  }
  delete srq;
  return 0;
}

// softnic's transport interface (transport_api.hpp): the same functions under other names, which
// no profiler interposes (a call to the exported names goes through the PLT, where a preloaded
// profiler sits). Aliases share the definitions' code.
extern "C" __attribute__((visibility("hidden"), alias("ibv_create_cq"))) ibv_cq* softnic_local_create_cq(ibv_context*, int, void*,
                                                                                                         ibv_comp_channel*, int);
namespace softnic::transport {
ibv_cq* create_cq(ibv_context* ctx, int cqe) { return softnic_local_create_cq(ctx, cqe, nullptr, nullptr, 0); }
int destroy_cq(ibv_cq*) __attribute__((alias("ibv_destroy_cq")));
}  // namespace softnic::transport
