// Exported verbs that create, modify, query and destroy resources: PD, MR, completion
// channel, CQ (classic and extended), SRQ, RC QP (classic and extended) and AH.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "context.hpp"
#include "engine.hpp"
#include "exports.hpp"
#include "cuda_driver.hpp"
#include "memory_registry.hpp"
#include "transport_api.hpp"
#include "qp_state_machine.hpp"
#include "transport_api.hpp"
#include "verbs_datapath.hpp"

using namespace softnic;

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace {
uint32_t round_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

void init_sync(pthread_mutex_t* m, pthread_cond_t* c) {
  pthread_mutex_init(m, nullptr);
  pthread_cond_init(c, nullptr);
}

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

// ---------------- QP ----------------

namespace softnic {
namespace {
// The common part of every QP: an RC QP, a DC initiator or a DC target.
ibv_qp* make_qp(ibv_context* ctx, ibv_qp_init_attr_ex* a, QpKind kind, uint64_t dc_key) {
  constexpr uint32_t kKnownMask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd) {
    errno = EINVAL;
    return nullptr;
  }
  if (a->comp_mask & ~kKnownMask) {
    errno = EOPNOTSUPP;  // create flags, XRC, RSS, TSO, etc. are not emulated
    return nullptr;
  }
  uint64_t ops = (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ? a->send_ops_flags : 0;
  if (ops & ~kSupportedSendOps) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  ibv_qp_cap& c = a->cap;
  if (!a->send_cq || (!a->recv_cq && !a->srq) || c.max_send_wr > kMaxQpWr || c.max_recv_wr > kMaxQpWr ||
      c.max_send_sge > kMaxSge || c.max_recv_sge > kMaxSge || c.max_inline_data > kMaxInline ||
      (kind == QpKind::dct && !a->srq)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* qp = new (std::nothrow) Qp();
  if (!qp) {
    errno = ENOMEM;
    return nullptr;
  }
  qp->kind = kind;
  qp->dc_key = dc_key;
  qp->ctx = to_ctx(ctx);
  qp->pd = to_pd(a->pd);
  qp->scq = to_cq(a->send_cq);
  qp->rcq = to_cq(a->recv_cq ? a->recv_cq : a->send_cq);
  qp->srq = a->srq ? to_srq(a->srq) : nullptr;
  qp->sq_sig_all = a->sq_sig_all != 0;
  qp->send_ops_flags = ops;
  qp->ex_enabled = (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
  c.max_send_wr = round_pow2(c.max_send_wr ? c.max_send_wr : 1);
  c.max_send_sge = c.max_send_sge ? c.max_send_sge : 1;
  if (!qp->srq) {
    c.max_recv_wr = round_pow2(c.max_recv_wr ? c.max_recv_wr : 1);
    c.max_recv_sge = c.max_recv_sge ? c.max_recv_sge : 1;
    qp->rq.init(c.max_recv_wr, c.max_recv_sge);
  } else {
    c.max_recv_wr = 0;
    c.max_recv_sge = 0;
  }
  qp->sq.init(kind == QpKind::dct ? 1 : c.max_send_wr, c.max_send_sge, c.max_inline_data);
  qp->cap = c;

  ibv_qp& q = *qp->qp();
  q.context = ctx;
  q.qp_context = a->qp_context;
  q.pd = a->pd;
  q.send_cq = a->send_cq;
  q.recv_cq = a->recv_cq;
  q.srq = a->srq;
  q.state = IBV_QPS_RESET;
  q.qp_type = kind == QpKind::rc ? IBV_QPT_RC : IBV_QPT_DRIVER;
  init_sync(&q.mutex, &q.cond);
  qp->attr.qp_state = IBV_QPS_RESET;
  qp->attr.cap = c;
  install_qp_ex_ops(qp);

  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  q.qp_num = e.register_qp(qp);
  if (!q.qp_num) {
    delete qp;
    errno = ENOMEM;
    return nullptr;
  }
  q.handle = q.qp_num;
  qp->pd->refs++;
  qp->scq->qp_refs++;
  qp->rcq->qp_refs++;
  if (qp->srq) qp->srq->qp_refs++;
  return &q;
}

// The extended attributes of a QP asked for with the plain ones, on `pd`.
ibv_qp_init_attr_ex extended(ibv_pd* pd, const ibv_qp_init_attr& attr, ibv_qp_type type) {
  ibv_qp_init_attr_ex ex{};
  ex.qp_context = attr.qp_context;
  ex.send_cq = attr.send_cq;
  ex.recv_cq = attr.recv_cq;
  ex.srq = attr.srq;
  ex.cap = attr.cap;
  ex.qp_type = type;
  ex.sq_sig_all = attr.sq_sig_all;
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  return ex;
}
}  // namespace

ibv_qp* create_qp_ex_op(ibv_context* ctx, ibv_qp_init_attr_ex* a) {
  if (a->qp_type != IBV_QPT_RC) {
    errno = EOPNOTSUPP;  // only reliable connected QPs are emulated as verbs QPs (DC: mlx5dv_create_qp)
    return nullptr;
  }
  return make_qp(ctx, a, QpKind::rc, 0);
}

namespace transport {
ibv_qp* create_dc_qp(ibv_pd* pd, ibv_qp_init_attr* attr, QpKind kind, uint64_t dc_key) {
  ibv_qp_init_attr_ex ex = extended(pd, *attr, IBV_QPT_DRIVER);
  ibv_qp* qp = make_qp(pd->context, &ex, kind, dc_key);
  if (qp) attr->cap = ex.cap;
  return qp;
}

ibv_qp* create_dct(ibv_context* ctx, ibv_qp_init_attr_ex* attr, uint64_t dc_key) {
  if (attr->qp_type != IBV_QPT_DRIVER) {
    errno = EINVAL;
    return nullptr;
  }
  return make_qp(ctx, attr, QpKind::dct, dc_key);
}

mlx5_wqe_av* address_vector(ibv_ah* ah) { return &reinterpret_cast<Ah*>(ah)->av; }
}  // namespace transport
}  // namespace softnic

SOFTNIC_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  ibv_qp_init_attr_ex ex = softnic::extended(pd, *attr, attr->qp_type);
  ibv_qp* qp = create_qp_ex_op(pd->context, &ex);
  if (qp) attr->cap = ex.cap;
  return qp;
}

SOFTNIC_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* ibqp) {
  Qp* qp = to_qp(ibqp);
  return qp->ex_enabled ? &qp->qpx : nullptr;
}

SOFTNIC_EXPORT int ibv_modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int mask) {
  Qp* qp = to_qp(ibqp);
  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  if (int err = qp->kind == QpKind::rc ? check_rc_transition(ibqp->state, attr, mask)
                                       : check_dc_transition(qp->kind == QpKind::dct, ibqp->state, attr, mask))
    return err;
  ibv_qp_attr& s = qp->attr;
  if (mask & IBV_QP_PKEY_INDEX) s.pkey_index = attr->pkey_index;
  if (mask & IBV_QP_PORT) s.port_num = attr->port_num;
  if (mask & IBV_QP_ACCESS_FLAGS) s.qp_access_flags = attr->qp_access_flags;
  if (mask & IBV_QP_AV) s.ah_attr = attr->ah_attr;
  if (mask & IBV_QP_ALT_PATH) {
    s.alt_ah_attr = attr->alt_ah_attr;
    s.alt_pkey_index = attr->alt_pkey_index;
    s.alt_port_num = attr->alt_port_num;
    s.alt_timeout = attr->alt_timeout;
  }
  if (mask & IBV_QP_PATH_MTU) s.path_mtu = attr->path_mtu;
  if (mask & IBV_QP_DEST_QPN) s.dest_qp_num = attr->dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) s.rq_psn = attr->rq_psn & 0xffffff;
  if (mask & IBV_QP_SQ_PSN) s.sq_psn = attr->sq_psn & 0xffffff;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) s.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) s.max_rd_atomic = attr->max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) s.min_rnr_timer = attr->min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) s.timeout = attr->timeout;
  if (mask & IBV_QP_RETRY_CNT) s.retry_cnt = attr->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) s.rnr_retry = attr->rnr_retry;
  if (mask & IBV_QP_PATH_MIG_STATE) s.path_mig_state = attr->path_mig_state;
  if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) s.en_sqd_async_notify = attr->en_sqd_async_notify;

  if (mask & IBV_QP_STATE) {
    ibv_qp_state from = ibqp->state, to = attr->qp_state;
    switch (to) {
      case IBV_QPS_RESET:
        e.reset_qp(qp);
        break;
      case IBV_QPS_RTR:
        if (from == IBV_QPS_INIT && qp->kind == QpKind::rc) {
          qp->expected_psn = s.rq_psn;
          qp->remote_ep = e.endpoint_of(s.dest_qp_num, &qp->remote_gen_bits);
        }
        break;
      case IBV_QPS_RTS:
        if (from == IBV_QPS_RTR) {
          qp->next_psn = s.sq_psn;
          qp->rnr_retries_left = s.rnr_retry;
          qp->retries_left = s.retry_cnt;
        }
        break;
      case IBV_QPS_ERR:
        e.move_to_error(qp);
        break;
      default:
        break;
    }
    ibqp->state = to;
    s.qp_state = to;
    install_qp_ex_ops(qp);  // wr_complete follows the state, as in mlx5
    if (to == IBV_QPS_RTS) e.submitted(qp);  // WRs posted while in SQD resume
  }
  return 0;
}

SOFTNIC_EXPORT int ibv_query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  Qp* qp = to_qp(ibqp);
  std::lock_guard<std::mutex> g(Engine::get().mu);
  *attr = qp->attr;
  attr->qp_state = ibqp->state;
  attr->cur_qp_state = ibqp->state;
  attr->cap = qp->cap;
  attr->sq_draining = 0;
  memset(init, 0, sizeof(*init));
  init->qp_context = ibqp->qp_context;
  init->send_cq = ibqp->send_cq;
  init->recv_cq = ibqp->recv_cq;
  init->srq = ibqp->srq;
  init->cap = qp->cap;
  init->qp_type = ibqp->qp_type;
  init->sq_sig_all = qp->sq_sig_all;
  return 0;
}

SOFTNIC_EXPORT int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  // The wire is in order and writes land front to back. rdma-core >= 46 callers may pass
  // RETURN_CAPS (bit 0) and then expect WHOLE_MSG (bit 0) | ALIGNED_128_BYTES (bit 1).
  constexpr uint32_t kReturnCaps = 1u << 0, kWholeMsg = 1u << 0, kAligned128 = 1u << 1;
  return (flags & kReturnCaps) ? int(kWholeMsg | kAligned128) : 1;
}

SOFTNIC_EXPORT int ibv_query_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }
SOFTNIC_EXPORT int ibv_set_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }

SOFTNIC_EXPORT int ibv_destroy_qp(ibv_qp* ibqp) {
  Qp* qp = to_qp(ibqp);
  {
    std::lock_guard<std::mutex> g(Engine::get().mu);
    Engine::get().unregister_qp(qp);
    if (qp->kind == QpKind::dct) Engine::get().forget_dct(qp);
    qp->pd->refs--;
    qp->scq->qp_refs--;
    qp->rcq->qp_refs--;
    if (qp->srq) qp->srq->qp_refs--;
  }
  delete qp;
  return 0;
}

// ---------------- AH (kept for completeness; RC QPs carry their path in the QP) ----------------

SOFTNIC_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (attr->port_num < 1 || attr->port_num > kPortCount) {
    errno = EINVAL;
    return nullptr;
  }
  auto* ah = new (std::nothrow) Ah();
  if (!ah) {
    errno = ENOMEM;
    return nullptr;
  }
  ah->ah.context = pd->context;
  ah->ah.pd = pd;
  ah->attr = *attr;
  // The address vector as mlx5 lays it out (what DC initiators copy into their WQEs). Callers
  // may leave fields they do not use uninitialised (NVSHMEM: static_rate, and grh when not
  // global): only the bits the layout has room for are taken.
  mlx5_wqe_av& av = ah->av;
  memset(&av, 0, sizeof av);
  av.rlid = htobe16(attr->dlid);
  av.stat_rate_sl = uint8_t(((attr->static_rate & 0xf) << 4) | (attr->sl & 0xf));
  av.fl_mlid = attr->src_path_bits & 0x7f;
  if (attr->is_global) {
    av.grh_gid_fl = htobe32((1u << 30) | (uint32_t(attr->grh.sgid_index) << 20) | (attr->grh.flow_label & 0xfffff));
    av.tclass = attr->grh.traffic_class;
    av.hop_limit = attr->grh.hop_limit;
    memcpy(av.rgid, attr->grh.dgid.raw, sizeof av.rgid);
  }
  std::lock_guard<std::mutex> g(Engine::get().mu);
  to_pd(pd)->refs++;
  return &ah->ah;
}

SOFTNIC_EXPORT int ibv_destroy_ah(ibv_ah* ibah) {
  {
    std::lock_guard<std::mutex> g(Engine::get().mu);
    to_pd(ibah->pd)->refs--;
  }
  delete reinterpret_cast<Ah*>(ibah);
  return 0;
}

SOFTNIC_EXPORT int ibv_init_ah_from_wc(ibv_context* ctx, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                                       ibv_ah_attr* ah) {
  memset(ah, 0, sizeof(*ah));
  ah->dlid = wc->slid;
  ah->sl = wc->sl;
  ah->src_path_bits = wc->dlid_path_bits;
  ah->port_num = port;
  if (wc->wc_flags & IBV_WC_GRH) {
    if (!grh) {
      errno = EINVAL;
      return -1;
    }
    ah->is_global = 1;
    ah->grh.dgid = grh->sgid;
    uint32_t flow = be32toh(grh->version_tclass_flow);
    ah->grh.flow_label = flow & 0xfffff;
    ah->grh.traffic_class = (flow >> 20) & 0xff;
    ah->grh.hop_limit = 0xff;
    ah->grh.sgid_index = 0;
  }
  return 0;
}

SOFTNIC_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  ibv_ah_attr a;
  if (ibv_init_ah_from_wc(pd->context, port, wc, grh, &a)) return nullptr;
  return ibv_create_ah(pd, &a);
}

SOFTNIC_EXPORT int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
SOFTNIC_EXPORT int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }

SOFTNIC_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t[6], uint16_t*) {
  return EINVAL;  // the link layer is InfiniBand: there is no Ethernet L2 address
}

// softnic's transport interface (transport_api.hpp): the same functions under other names, which
// no profiler interposes (a call to the exported names goes through the PLT, where a preloaded
// profiler sits). Aliases share the definitions' code.
extern "C" __attribute__((visibility("hidden"), alias("ibv_create_cq"))) ibv_cq* softnic_local_create_cq(ibv_context*, int, void*,
                                                                                                         ibv_comp_channel*, int);
namespace softnic::transport {
ibv_cq* create_cq(ibv_context* ctx, int cqe) { return softnic_local_create_cq(ctx, cqe, nullptr, nullptr, 0); }
int destroy_cq(ibv_cq*) __attribute__((alias("ibv_destroy_cq")));
ibv_qp* create_qp(ibv_pd*, ibv_qp_init_attr*) __attribute__((alias("ibv_create_qp")));
int modify_qp(ibv_qp*, ibv_qp_attr*, int) __attribute__((alias("ibv_modify_qp")));
int destroy_qp(ibv_qp*) __attribute__((alias("ibv_destroy_qp")));
}  // namespace softnic::transport
