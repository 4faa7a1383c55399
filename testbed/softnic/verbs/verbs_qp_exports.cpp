// Exported verbs that create, modify, query and destroy QPs (RC, classic and extended; DC
// initiators and targets through softnic's transport interface) and address handles.

#include <cerrno>
#include <cstring>
#include <new>

#include "core/context.hpp"
#include "core/exports.hpp"
#include "core/transport_api.hpp"
#include "engine/engine.hpp"
#include "engine/op_log.hpp"
#include "engine/qp_state_machine.hpp"
#include "verbs/verbs_datapath.hpp"
#include "verbs/verbs_object_setup.hpp"

using namespace softnic;

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
    write_op_log(qp);
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
namespace softnic::transport {
ibv_qp* create_qp(ibv_pd*, ibv_qp_init_attr*) __attribute__((alias("ibv_create_qp")));
int modify_qp(ibv_qp*, ibv_qp_attr*, int) __attribute__((alias("ibv_modify_qp")));
int destroy_qp(ibv_qp*) __attribute__((alias("ibv_destroy_qp")));
}  // namespace softnic::transport
