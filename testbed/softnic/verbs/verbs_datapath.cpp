// Data-path verbs: decode ibv_send_wr / ibv_recv_wr / ibv_qp_ex wr_* calls into engine
// operations (SendOp), and hand completions back through ibv_poll_cq and ibv_cq_ex.
#include "core/transport_api.hpp"
#include "verbs/verbs_datapath.hpp"

#include <cerrno>
#include <cstring>

#include "engine/engine.hpp"

namespace softnic {

namespace {

bool can_post_send(ibv_qp_state s) {
  return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE || s == IBV_QPS_ERR;
}

// Decodes one classic WR into the next send-queue slot. Returns 0 or an errno.
int decode_send_wr(Qp* qp, const ibv_send_wr* wr) {
  SendQueue& sq = qp->sq;
  if (sq.size() >= sq.cap) return ENOMEM;
  if (wr->num_sge < 0 || uint32_t(wr->num_sge) > sq.max_sge) return EINVAL;
  SendOp& op = sq.at(sq.tail);
  op = SendOp{};
  switch (wr->opcode) {
    case IBV_WR_SEND: op.kind = OpKind::Send; break;
    case IBV_WR_SEND_WITH_IMM: op.kind = OpKind::SendImm; break;
    case IBV_WR_RDMA_WRITE: op.kind = OpKind::Write; break;
    case IBV_WR_RDMA_WRITE_WITH_IMM: op.kind = OpKind::WriteImm; break;
    case IBV_WR_RDMA_READ: op.kind = OpKind::Read; break;
    case IBV_WR_ATOMIC_CMP_AND_SWP: op.kind = OpKind::CmpSwap; break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: op.kind = OpKind::FetchAdd; break;
    default: return EINVAL;  // MW binds, invalidation, TSO, driver ops: not modelled
  }
  op.wr_id = wr->wr_id;
  op.signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
  op.solicited = wr->send_flags & IBV_SEND_SOLICITED;
  op.imm = wr->imm_data;
  uint64_t len = 0;
  for (int i = 0; i < wr->num_sge; ++i) len += wr->sg_list[i].length;
  if (op.kind == OpKind::CmpSwap || op.kind == OpKind::FetchAdd) {
    if (wr->num_sge < 1) return EINVAL;
    op.rkey = wr->wr.atomic.rkey;
    op.raddr = wr->wr.atomic.remote_addr;
    op.arg0 = wr->wr.atomic.compare_add;
    op.arg1 = wr->wr.atomic.swap;
    len = 8;
  } else if (op.kind != OpKind::Send && op.kind != OpKind::SendImm) {
    op.rkey = wr->wr.rdma.rkey;
    op.raddr = wr->wr.rdma.remote_addr;
  }
  if (len > kMaxMsgSize) return EINVAL;
  op.length = len;
  bool can_inline = op.kind != OpKind::Read && op.kind != OpKind::CmpSwap && op.kind != OpKind::FetchAdd;
  if ((wr->send_flags & IBV_SEND_INLINE) && can_inline) {
    if (len > sq.max_inline) return ENOMEM;  // what mlx5 returns for oversized inline data
    uint8_t* dst = sq.inline_buf(sq.tail);
    for (int i = 0; i < wr->num_sge; ++i) {
      memcpy(dst, reinterpret_cast<const void*>(wr->sg_list[i].addr), wr->sg_list[i].length);
      dst += wr->sg_list[i].length;
    }
    op.inlined = true;
  } else {
    Sge* s = sq.sge(sq.tail);
    for (int i = 0; i < wr->num_sge; ++i)
      s[i] = Sge{wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
    op.num_sge = uint32_t(wr->num_sge);
  }
  sq.tail++;
  return 0;
}

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Qp* qp = to_qp(ibqp);
  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  int err = 0;
  if (!can_post_send(ibqp->state)) {
    err = EINVAL;
    *bad_wr = wr;
    return err;
  }
  for (; wr; wr = wr->next) {
    err = decode_send_wr(qp, wr);
    if (err) {
      *bad_wr = wr;
      break;
    }
  }
  e.submitted(qp);
  return err;
}

int post_recv_into(RecvQueue& rq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  for (; wr; wr = wr->next) {
    if (rq.count >= rq.cap) {
      *bad_wr = wr;
      return ENOMEM;
    }
    if (wr->num_sge < 0 || uint32_t(wr->num_sge) > rq.max_sge) {
      *bad_wr = wr;
      return EINVAL;
    }
    uint32_t i = (rq.head + rq.count) % rq.cap;
    rq.wr_id[i] = wr->wr_id;
    rq.nsge[i] = uint32_t(wr->num_sge);
    Sge* s = rq.sge(i);
    for (int k = 0; k < wr->num_sge; ++k)
      s[k] = Sge{wr->sg_list[k].addr, wr->sg_list[k].length, wr->sg_list[k].lkey};
    rq.count++;
  }
  return 0;
}

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Qp* qp = to_qp(ibqp);
  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  if (ibqp->state == IBV_QPS_RESET || qp->srq) {
    *bad_wr = wr;
    return EINVAL;
  }
  int err = post_recv_into(qp->rq, wr, bad_wr);
  e.recv_posted(qp);
  return err;
}

int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  return post_recv_into(to_srq(ibsrq)->rq, wr, bad_wr);
}

int poll_cq(ibv_cq* ibcq, int n, ibv_wc* wc) {
  Cq* cq = to_cq(ibcq);
  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  if (cq->count < uint32_t(n > 0 ? n : 0)) e.progress();
  int k = 0;
  uint32_t size = uint32_t(cq->entries.size());
  while (k < n && cq->count) {
    wc[k++] = cq->entries[cq->head];
    cq->head = (cq->head + 1) % size;
    cq->count--;
  }
  e.app_polling(k == 0);
  return k;
}

int req_notify_cq(ibv_cq* ibcq, int solicited_only) {
  Cq* cq = to_cq(ibcq);
  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  // Arming means the caller is about to block on the completion channel rather than poll:
  // from now on the engine thread must be woken for incoming packets.
  e.app_polling(false);
  cq->armed = true;
  cq->solicited_only = solicited_only != 0;
  return 0;
}

// ---- ibv_qp_ex: WRs are staged between wr_start and wr_complete ----

StagedOp& stage(ibv_qp_ex* qx, OpKind kind) {
  Qp* qp = to_qp(qx);
  if (qp->staged_n == qp->staged.size()) qp->staged.emplace_back();
  StagedOp& s = qp->staged[qp->staged_n++];
  s.op = SendOp{};
  s.sges.clear();
  s.inl.clear();
  s.op.kind = kind;
  s.op.wr_id = qx->wr_id;
  s.op.signaled = qp->sq_sig_all || (qx->wr_flags & IBV_SEND_SIGNALED);
  s.op.solicited = qx->wr_flags & IBV_SEND_SOLICITED;
  s.op.inlined = false;
  return s;
}

void wr_start(ibv_qp_ex* qx) {
  Qp* qp = to_qp(qx);
  qp->staged_n = 0;
  qp->staged_error = 0;
}
void wr_rdma_write(ibv_qp_ex* qx, uint32_t rkey, uint64_t raddr) {
  StagedOp& s = stage(qx, OpKind::Write);
  s.op.rkey = rkey;
  s.op.raddr = raddr;
}
void wr_rdma_write_imm(ibv_qp_ex* qx, uint32_t rkey, uint64_t raddr, __be32 imm) {
  StagedOp& s = stage(qx, OpKind::WriteImm);
  s.op.rkey = rkey;
  s.op.raddr = raddr;
  s.op.imm = imm;
}
void wr_rdma_read(ibv_qp_ex* qx, uint32_t rkey, uint64_t raddr) {
  StagedOp& s = stage(qx, OpKind::Read);
  s.op.rkey = rkey;
  s.op.raddr = raddr;
}
void wr_send(ibv_qp_ex* qx) { stage(qx, OpKind::Send); }
void wr_send_imm(ibv_qp_ex* qx, __be32 imm) { stage(qx, OpKind::SendImm).op.imm = imm; }
void wr_atomic_cmp_swp(ibv_qp_ex* qx, uint32_t rkey, uint64_t raddr, uint64_t cmp, uint64_t swp) {
  StagedOp& s = stage(qx, OpKind::CmpSwap);
  s.op.rkey = rkey;
  s.op.raddr = raddr;
  s.op.arg0 = cmp;
  s.op.arg1 = swp;
}
void wr_atomic_fetch_add(ibv_qp_ex* qx, uint32_t rkey, uint64_t raddr, uint64_t add) {
  StagedOp& s = stage(qx, OpKind::FetchAdd);
  s.op.rkey = rkey;
  s.op.raddr = raddr;
  s.op.arg0 = add;
}
void wr_set_sge(ibv_qp_ex* qx, uint32_t lkey, uint64_t addr, uint32_t length) {
  Qp* qp = to_qp(qx);
  if (!qp->staged_n) {
    qp->staged_error = EINVAL;
    return;
  }
  StagedOp& s = qp->staged[qp->staged_n - 1];
  s.sges.assign(1, Sge{addr, length, lkey});
}
void wr_set_sge_list(ibv_qp_ex* qx, size_t n, const ibv_sge* list) {
  Qp* qp = to_qp(qx);
  if (!qp->staged_n) {
    qp->staged_error = EINVAL;
    return;
  }
  StagedOp& s = qp->staged[qp->staged_n - 1];
  s.sges.clear();
  for (size_t i = 0; i < n; ++i) s.sges.push_back(Sge{list[i].addr, list[i].length, list[i].lkey});
}
void wr_set_inline_data(ibv_qp_ex* qx, void* addr, size_t length) {
  Qp* qp = to_qp(qx);
  if (!qp->staged_n) {
    qp->staged_error = EINVAL;
    return;
  }
  StagedOp& s = qp->staged[qp->staged_n - 1];
  s.op.inlined = true;
  s.inl.assign(static_cast<uint8_t*>(addr), static_cast<uint8_t*>(addr) + length);
}
void wr_set_inline_data_list(ibv_qp_ex* qx, size_t n, const ibv_data_buf* bufs) {
  Qp* qp = to_qp(qx);
  if (!qp->staged_n) {
    qp->staged_error = EINVAL;
    return;
  }
  StagedOp& s = qp->staged[qp->staged_n - 1];
  s.op.inlined = true;
  s.inl.clear();
  for (size_t i = 0; i < n; ++i) {
    auto* p = static_cast<uint8_t*>(bufs[i].addr);
    s.inl.insert(s.inl.end(), p, p + bufs[i].length);
  }
}
void wr_abort(ibv_qp_ex* qx) { to_qp(qx)->staged_n = 0; }

int wr_complete(ibv_qp_ex* qx) {
  Qp* qp = to_qp(qx);
  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  int err = qp->staged_error;
  SendQueue& sq = qp->sq;
  if (!err && sq.cap - sq.size() < qp->staged_n) err = ENOMEM;
  for (size_t i = 0; !err && i < qp->staged_n; ++i) {
    StagedOp& s = qp->staged[i];
    if (s.sges.size() > sq.max_sge || (s.op.inlined && s.inl.size() > sq.max_inline)) {
      err = s.op.inlined ? ENOMEM : EINVAL;
      break;
    }
  }
  if (err) {
    qp->staged_n = 0;
    return err;
  }
  for (size_t i = 0; i < qp->staged_n; ++i) {
    StagedOp& s = qp->staged[i];
    SendOp& op = sq.at(sq.tail);
    op = s.op;
    if (op.inlined) {
      memcpy(sq.inline_buf(sq.tail), s.inl.data(), s.inl.size());
      op.length = s.inl.size();
    } else {
      uint64_t len = 0;
      Sge* dst = sq.sge(sq.tail);
      for (size_t k = 0; k < s.sges.size(); ++k) {
        dst[k] = s.sges[k];
        len += s.sges[k].length;
      }
      op.num_sge = uint32_t(s.sges.size());
      op.length = len;
    }
    if (op.kind == OpKind::CmpSwap || op.kind == OpKind::FetchAdd) op.length = 8;
    sq.tail++;
  }
  qp->staged_n = 0;
  e.submitted(qp);
  return 0;
}

int wr_complete_not_ready(ibv_qp_ex* qx) {
  to_qp(qx)->staged_n = 0;
  return EINVAL;
}

// ---- ibv_cq_ex ----

int cq_pop(Cq* cq) {
  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  if (!cq->count) e.progress();
  e.app_polling(cq->count == 0);
  if (!cq->count) return ENOENT;
  cq->cur = cq->entries[cq->head];
  cq->head = uint32_t((cq->head + 1) % cq->entries.size());
  cq->count--;
  cq->cqx.wr_id = cq->cur.wr_id;
  cq->cqx.status = cq->cur.status;
  return 0;
}
int start_poll(ibv_cq_ex* cqx, ibv_poll_cq_attr* attr) {
  if (attr && attr->comp_mask) return EINVAL;
  return cq_pop(to_cq(cqx));
}
int next_poll(ibv_cq_ex* cqx) { return cq_pop(to_cq(cqx)); }
void end_poll(ibv_cq_ex*) {}
ibv_wc_opcode read_opcode(ibv_cq_ex* c) { return to_cq(c)->cur.opcode; }
uint32_t read_vendor_err(ibv_cq_ex* c) { return to_cq(c)->cur.vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* c) { return to_cq(c)->cur.byte_len; }
__be32 read_imm_data(ibv_cq_ex* c) { return to_cq(c)->cur.imm_data; }
uint32_t read_qp_num(ibv_cq_ex* c) { return to_cq(c)->cur.qp_num; }
uint32_t read_src_qp(ibv_cq_ex* c) { return to_cq(c)->cur.src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* c) { return to_cq(c)->cur.wc_flags; }
uint32_t read_slid(ibv_cq_ex* c) { return to_cq(c)->cur.slid; }
uint8_t read_sl(ibv_cq_ex* c) { return to_cq(c)->cur.sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex* c) { return to_cq(c)->cur.dlid_path_bits; }

}  // namespace

void install_context_ops(Context* ctx) {
  ibv_context_ops& o = ctx->vctx.context.ops;
  o.post_send = post_send;
  o.post_recv = post_recv;
  o.post_srq_recv = post_srq_recv;
  o.poll_cq = poll_cq;
  o.req_notify_cq = req_notify_cq;
  // alloc_mw/bind_mw/dealloc_mw stay NULL: the inline wrappers then fail with EOPNOTSUPP.
}

void install_qp_ex_ops(Qp* qp) {
  ibv_qp_ex& x = qp->qpx;
  uint64_t f = qp->send_ops_flags;
  x.wr_start = wr_start;
  x.wr_abort = wr_abort;
  x.wr_set_sge = wr_set_sge;
  x.wr_set_sge_list = wr_set_sge_list;
  x.wr_set_inline_data = wr_set_inline_data;
  x.wr_set_inline_data_list = wr_set_inline_data_list;
  x.wr_rdma_write = (f & IBV_QP_EX_WITH_RDMA_WRITE) ? wr_rdma_write : nullptr;
  x.wr_rdma_write_imm = (f & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) ? wr_rdma_write_imm : nullptr;
  x.wr_rdma_read = (f & IBV_QP_EX_WITH_RDMA_READ) ? wr_rdma_read : nullptr;
  x.wr_send = (f & IBV_QP_EX_WITH_SEND) ? wr_send : nullptr;
  x.wr_send_imm = (f & IBV_QP_EX_WITH_SEND_WITH_IMM) ? wr_send_imm : nullptr;
  x.wr_atomic_cmp_swp = (f & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) ? wr_atomic_cmp_swp : nullptr;
  x.wr_atomic_fetch_add = (f & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) ? wr_atomic_fetch_add : nullptr;
  x.wr_complete = can_post_send(qp->qp()->state) ? wr_complete : wr_complete_not_ready;
}

void install_cq_ex_ops(Cq* cq) {
  ibv_cq_ex& x = cq->cqx;
  x.start_poll = start_poll;
  x.next_poll = next_poll;
  x.end_poll = end_poll;
  x.read_opcode = read_opcode;
  x.read_vendor_err = read_vendor_err;
  x.read_byte_len = read_byte_len;
  x.read_imm_data = read_imm_data;
  x.read_qp_num = read_qp_num;
  x.read_src_qp = read_src_qp;
  x.read_wc_flags = read_wc_flags;
  x.read_slid = read_slid;
  x.read_sl = read_sl;
  x.read_dlid_path_bits = read_dlid_path_bits;
  // Timestamps, cvlan, flow tag and tag matching are not modelled: create_cq_ex refuses
  // those wc_flags, so the pointers stay NULL.
}

}  // namespace softnic

// softnic's transport interface (transport_api.hpp): the data path itself, not the ops table.
namespace softnic::transport {
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) { return softnic::post_send(qp, wr, bad_wr); }
int poll_cq(ibv_cq* cq, int n, ibv_wc* wc) { return softnic::poll_cq(cq, n, wc); }
}  // namespace softnic::transport

namespace softnic::transport {

int post_op(ibv_qp* ibqp, const SendOp& src, const Sge* sges, const void* inline_data) {
  Qp* qp = to_qp(ibqp);
  Engine& e = Engine::get();
  std::lock_guard<std::mutex> g(e.mu);
  SendQueue& sq = qp->sq;
  if (!can_post_send(ibqp->state) || src.num_sge > sq.max_sge || src.length > kMaxMsgSize) return EINVAL;
  if (sq.size() >= sq.cap || (src.inlined && src.length > sq.max_inline)) return ENOMEM;
  SendOp& op = sq.at(sq.tail);
  op = SendOp{};
  op.wr_id = src.wr_id;
  op.kind = src.kind;
  op.signaled = src.signaled;
  op.solicited = src.solicited;
  op.inlined = src.inlined;
  op.num_sge = src.inlined ? 0 : src.num_sge;
  op.imm = src.imm;
  op.rkey = src.rkey;
  op.raddr = src.raddr;
  op.arg0 = src.arg0;
  op.arg1 = src.arg1;
  op.compare_mask = src.compare_mask;
  op.swap_mask = src.swap_mask;
  op.field_boundary = src.field_boundary;
  op.atomic_bytes = src.atomic_bytes;
  op.result_big_endian = src.result_big_endian;
  op.dest_qpn = src.dest_qpn;
  op.dc_key = src.dc_key;
  op.length = src.length;
  if (op.inlined) {
    if (op.length) memcpy(sq.inline_buf(sq.tail), inline_data, op.length);
  } else {
    Sge* s = sq.sge(sq.tail);
    for (uint32_t i = 0; i < op.num_sge; ++i) s[i] = sges[i];
  }
  sq.tail++;
  e.submitted(qp);
  return 0;
}

}  // namespace softnic::transport
