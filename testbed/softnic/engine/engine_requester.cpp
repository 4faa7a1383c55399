// The requester: posted work requests become packets (segmented, PSN-numbered), ACKs/NAKs and
// read/atomic responses retire them in order, RNR and "QP unreachable" NAKs rewind (go-back-N).
#include "engine/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/config.hpp"
#include "core/context.hpp"
#include "core/memory_registry.hpp"
#include "engine/engine_internal.hpp"

namespace softnic {

using namespace engine_detail;

void Engine::submitted(Qp* qp) {
  if (qp->qp()->state == IBV_QPS_ERR) {
    flush_sq(qp);
    return;
  }
  transmit(qp);
  if (qp->sq.send != qp->sq.tail || qp->sq.head != qp->sq.send) mark_active(active_, qp);
  wire.flush_doorbells();
}

bool Engine::transmit(Qp* qp) {
  if (qp->qp()->state != IBV_QPS_RTS) return false;
  SendQueue& sq = qp->sq;
  if (sq.send == sq.tail) return false;
  uint64_t now = 0;
  if (qp->rnr_resume_ns) {
    now = now_ns();
    if (now < qp->rnr_resume_ns) {
      next_deadline_ns_ = next_deadline_ns_ ? std::min(next_deadline_ns_, qp->rnr_resume_ns)
                                            : qp->rnr_resume_ns;
      return false;
    }
    qp->rnr_resume_ns = 0;
  }
  bool did = false;
  while (sq.send != sq.tail) {
    SendOp& op = sq.at(sq.send);
    const Sge* sges = op.inlined ? nullptr : sq.sge(sq.send);
    if (!op.validated) {
      if (!op.inlined && !sges_valid(qp->pd, sges, op.num_sge, is_read_like(op.kind))) {
        // The requester's own buffer is bad: local protection error, QP to ERR. Completions
        // stay in order, so first let the WRs already on the wire finish.
        if (sq.head != sq.send) return did;
        complete_send(qp, op, IBV_WC_LOC_PROT_ERR);
        sq.send++;
        sq.head++;
        move_to_error(qp);
        return true;
      }
      op.validated = true;
    }
    if (!op.started && (config().tx_delay_ns || config().tx_stall_ns)) {  // a slow link out of this host, a stall
      if (!now) now = now_ns();
      if (!op.ready_ns) op.ready_ns = now + config().tx_delay_ns + (++tx_messages_ == config().tx_stall_at ? config().tx_stall_ns : 0);
      if (now < op.ready_ns) {
        next_deadline_ns_ = next_deadline_ns_ ? std::min(next_deadline_ns_, op.ready_ns) : op.ready_ns;
        return did;
      }
    }
    if (!op.started) {
      if (qp->kind == QpKind::dci) {
        // A DC initiator serves one target at a time: a new target waits until the previous
        // one has answered everything, and the exchange with it then starts afresh.
        if (op.dest_qpn != qp->attr.dest_qp_num && sq.head != sq.send) return did;
        op.dc_connect = sq.head == sq.send;
        if (op.dc_connect) {
          qp->attr.dest_qp_num = op.dest_qpn;
          qp->remote_ep = endpoint_of(op.dest_qpn, &qp->remote_gen_bits);
        }
      }
      op.first_psn = qp->next_psn;
      op.msn = qp->next_msn++;
      op.started = true;
    }
    PacketHeader* h;
    switch (op.kind) {
      case OpKind::Send:
      case OpKind::SendImm:
      case OpKind::Write:
      case OpKind::WriteImm: {
        bool is_send = op.kind == OpKind::Send || op.kind == OpKind::SendImm;
        bool has_imm = op.kind == OpKind::SendImm || op.kind == OpKind::WriteImm;
        do {
          uint32_t chunk = uint32_t(std::min<uint64_t>(kSegment, op.length - op.sent));
          h = wire.reserve(qp->remote_ep, chunk);
          if (!h) {
            tx_blocked_ = true;
            return did;
          }
          h->op = is_send ? WireOp::Send : WireOp::Write;
          h->flags = (op.sent == 0 ? kFirst : 0) | (op.sent + chunk == op.length ? kLast : 0) |
                     (has_imm ? kHasImm : 0) | (op.solicited ? kSolicited : 0) |
                     (op.sent == 0 && op.dc_connect ? kDcConnect : 0);
          h->dc_key = op.dc_key;
          h->syndrome = 0;
          h->dst_qpn = qp->attr.dest_qp_num;
          h->src_qpn = qp->qp()->qp_num;
          h->psn = qp->next_psn;
          h->msn = op.msn;
          h->payload_len = chunk;
          h->imm = op.imm;
          h->rkey = op.rkey;
          h->raddr = op.raddr + op.sent;
          h->total_len = op.length;
          if (op.inlined)
            memcpy(payload(h), sq.inline_buf(sq.send) + op.sent, chunk);
          else if (!sge_copy<true>(sges, op.num_sge, op.sent, payload(h), chunk))
            memset(payload(h), 0, chunk);  // keys were checked at post: only the driver fails here, and it said so
          wire.commit(qp->remote_ep, h);
          qp->next_psn = (qp->next_psn + 1) & kPsnMask;
          op.sent += chunk;
        } while (op.sent < op.length);
        break;
      }
      case OpKind::Read:
      case OpKind::CmpSwap:
      case OpKind::FetchAdd:
        h = wire.reserve(qp->remote_ep, 0);
        if (!h) {
          tx_blocked_ = true;
          return did;
        }
        h->op = op.kind == OpKind::Read ? WireOp::ReadReq
                : op.kind == OpKind::CmpSwap ? WireOp::CmpSwap : WireOp::FetchAdd;
        h->flags = kFirst | kLast | (op.dc_connect ? kDcConnect : 0);
        h->syndrome = 0;
        h->dst_qpn = qp->attr.dest_qp_num;
        h->src_qpn = qp->qp()->qp_num;
        h->psn = qp->next_psn;
        h->msn = op.msn;
        h->payload_len = 0;
        h->rkey = op.rkey;
        h->raddr = op.raddr;
        h->total_len = op.length;
        h->arg0 = op.arg0;
        h->arg1 = op.arg1;
        h->arg2 = op.kind == OpKind::FetchAdd ? op.field_boundary : op.compare_mask;
        h->arg3 = op.swap_mask;
        h->atomic_bytes = op.atomic_bytes;
        h->dc_key = op.dc_key;
        wire.commit(qp->remote_ep, h);
        qp->next_psn = (qp->next_psn + 1) & kPsnMask;
        op.sent = op.length;
        break;
    }
    sq.send++;
    did = true;
  }
  return did;
}

void Engine::complete_send(Qp* qp, SendOp& op, ibv_wc_status st) {
  if (st == IBV_WC_SUCCESS && !op.signaled) return;
  ibv_wc wc{};
  wc.wr_id = op.wr_id;
  wc.status = st;
  wc.opcode = wc_opcode(op.kind);
  wc.byte_len = st == IBV_WC_SUCCESS && is_read_like(op.kind) ? uint32_t(op.length) : 0;
  wc.qp_num = qp->qp()->qp_num;
  cq_push(qp->scq, wc, false);
}

void Engine::retire(Qp* qp) {
  SendQueue& sq = qp->sq;
  while (sq.head != sq.send) {
    SendOp& op = sq.at(sq.head);
    if (int32_t(op.msn - qp->acked_msn) > 0) break;
    if (is_read_like(op.kind) && !op.data_done) break;
    Qp::OpTally& t = qp->executed[uint32_t(op.kind)];
    t.wrs++;
    t.bytes += op.length;
    complete_send(qp, op, IBV_WC_SUCCESS);
    sq.head++;
    qp->last_progress_ns = 0;
  }
}

// Completes the WR with message number msn in error and puts the QP in ERR.
void Engine::fail_op(Qp* qp, uint32_t msn, ibv_wc_status st) {
  SendQueue& sq = qp->sq;
  qp->acked_msn = msn - 1;
  retire(qp);
  if (sq.head != sq.send && sq.at(sq.head).msn == msn) {
    complete_send(qp, sq.at(sq.head), st);
    sq.head++;
  }
  move_to_error(qp);
}

bool Engine::rewind(Qp* qp, uint32_t msn, uint64_t delay_ns) {
  SendQueue& sq = qp->sq;
  if (int32_t(msn - 1 - qp->acked_msn) > 0) qp->acked_msn = msn - 1;
  retire(qp);
  uint32_t n = sq.head;
  while (n != sq.send && sq.at(n).msn != msn) ++n;
  if (n == sq.send) return false;  // a stale NAK for something already being retransmitted
  qp->next_psn = sq.at(n).first_psn;
  qp->next_msn = sq.at(n).msn;
  for (uint32_t k = n; k != sq.send; ++k) {
    SendOp& o = sq.at(k);
    o.started = false;
    o.sent = 0;
    o.received = 0;
    o.data_done = false;
  }
  sq.send = n;
  qp->rnr_resume_ns = now_ns() + delay_ns;
  mark_active(active_, qp);
  return true;
}

void Engine::handle_response(Qp* qp, PacketHeader* h) {
  SendQueue& sq = qp->sq;
  qp->last_progress_ns = 0;
  auto find = [&](uint32_t msn) -> SendOp* {
    for (uint32_t n = sq.head; n != sq.send; ++n)
      if (sq.at(n).msn == msn) return &sq.at(n);
    return nullptr;
  };
  switch (h->op) {
    case WireOp::Ack:
      if (int32_t(h->msn - qp->acked_msn) > 0) qp->acked_msn = h->msn;
      retire(qp);
      return;
    case WireOp::Nak: {
      auto code = NakCode(h->syndrome & 0xff);
      SOFTNIC_LOG("qp 0x%x: NAK code %d for msn %u", qp->qp()->qp_num, int(code), h->msn);
      SendOp* op = find(h->msn);
      if (!op) return;
      if (code == NakCode::Rnr) {
        if (qp->rnr_retries_left == 0) {
          fail_op(qp, h->msn, IBV_WC_RNR_RETRY_EXC_ERR);
          return;
        }
        if (rewind(qp, h->msn, uint64_t(kRnrTimerUs[(h->syndrome >> 8) & 31]) * 1000) &&
            qp->rnr_retries_left != 7)  // 7 means retry forever
          qp->rnr_retries_left--;
        return;
      }
      if (code == NakCode::QpUnreachable) {
        // The responder QP is not (yet) able to receive: on a real fabric the packet is
        // dropped and the requester retransmits after its transport timeout (4.096 us *
        // 2^timeout); timeout 0 means it waits forever.
        if (qp->retries_left == 0 && qp->attr.timeout != 0) {
          fail_op(qp, h->msn, IBV_WC_RETRY_EXC_ERR);
          return;
        }
        uint64_t delay = qp->attr.timeout ? 4096ull << std::min<uint8_t>(qp->attr.timeout, 31) : ~0ull >> 2;
        if (rewind(qp, h->msn, delay) && qp->attr.timeout) qp->retries_left--;
        return;
      }
      fail_op(qp, h->msn, nak_status(code));
      return;
    }
    case WireOp::ReadResp: {
      SendOp* op = find(h->msn);
      if (!op || op->kind != OpKind::Read) return;
      uint32_t idx = uint32_t(op - &sq.ops[0]);
      // Find the send-queue counter of this slot to reach its SGEs.
      uint32_t n = sq.head;
      while (n % sq.cap != idx) ++n;
      if (h->payload_len &&
          !sge_copy<false>(sq.sge(n), op->num_sge, op->received, payload(h), h->payload_len)) {
        fail_op(qp, h->msn, IBV_WC_LOC_PROT_ERR);  // the driver could not write local GPU memory
        return;
      }
      op->received += h->payload_len;
      if (h->flags & kLast) {
        op->data_done = true;
        if (int32_t(h->msn - qp->acked_msn) > 0) qp->acked_msn = h->msn;
        retire(qp);
      }
      return;
    }
    case WireOp::AtomicResp: {
      SendOp* op = find(h->msn);
      if (!op || op->kind == OpKind::Read) return;
      uint32_t idx = uint32_t(op - &sq.ops[0]);
      uint32_t n = sq.head;
      while (n % sq.cap != idx) ++n;
      // The old value, in the operand's width; mlx5's 4-byte extended atomics return it big-endian.
      uint64_t v = h->arg0;
      const uint32_t size = op->atomic_bytes == 4 ? 4 : 8;
      uint32_t v4 = uint32_t(v);
      if (size == 4 && op->result_big_endian) v4 = __builtin_bswap32(v4);
      uint8_t* bytes = size == 4 ? reinterpret_cast<uint8_t*>(&v4) : reinterpret_cast<uint8_t*>(&v);
      if (!sge_copy<false>(sq.sge(n), op->num_sge, 0, bytes, size)) {
        fail_op(qp, h->msn, IBV_WC_LOC_PROT_ERR);
        return;
      }
      op->data_done = true;
      if (int32_t(h->msn - qp->acked_msn) > 0) qp->acked_msn = h->msn;
      retire(qp);
      return;
    }
    default:
      return;
  }
}

}  // namespace softnic
