// The responder: incoming SEND/WRITE/READ/atomic packets executed in PSN order against the
// receive queue and the memory registry, with ACKs, NAKs and read/atomic responses queued and sent.
#include "engine/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/config.hpp"
#include "core/context.hpp"
#include "core/memory_registry.hpp"
#include "engine/engine_internal.hpp"

namespace softnic {

using namespace engine_detail;

void Engine::queue_resp(Qp* qp, const RespItem& it) {
  qp->resp_q.push_back(it);
  mark_active(active_, qp);
}

void Engine::queue_ack(Qp* qp, uint32_t msn) {
  if (!qp->resp_q.empty() && qp->resp_q.back().op == WireOp::Ack) {
    qp->resp_q.back().msn = msn;  // cumulative: one ACK covers everything before it
    return;
  }
  RespItem it{};
  it.op = WireOp::Ack;
  it.msn = msn;
  queue_resp(qp, it);
}

bool Engine::take_recv(Qp* qp) {
  RecvQueue* rq = qp->srq ? &qp->srq->rq : &qp->rq;
  if (!rq->count) return false;
  uint32_t i = rq->head;
  qp->recv_wr_id = rq->wr_id[i];
  qp->recv_sges.assign(rq->sge(i), rq->sge(i) + rq->nsge[i]);
  rq->head = (rq->head + 1) % rq->cap;
  rq->count--;
  qp->recv_active = true;
  qp->recv_offset = 0;
  if (qp->srq && qp->srq->limit && rq->count < qp->srq->limit) {
    qp->srq->limit = 0;  // one-shot, re-armed by ibv_modify_srq
    ibv_async_event ev{};
    ev.element.srq = &qp->srq->srq;
    ev.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
    post_async_event(qp->srq->ctx, ev);
  }
  return true;
}

void Engine::handle_packet(int src, PacketHeader* h) {
  SOFTNIC_LOG("%lu rx op %d qpn 0x%x psn %u msn %u len %u by %s", (unsigned long)(now_ns() / 1000), int(h->op),
              h->dst_qpn, h->psn, h->msn, h->payload_len,
              thread_ && std::this_thread::get_id() == thread_->get_id() ? "engine" : "app");
  Qp* qp = find_qp(h->dst_qpn);
  bool response = h->op == WireOp::Ack || h->op == WireOp::Nak || h->op == WireOp::ReadResp ||
                  h->op == WireOp::AtomicResp;
  if (response) {
    if (qp && qp->kind != QpKind::dct && qp->qp()->state != IBV_QPS_RESET && qp->qp()->state != IBV_QPS_ERR)
      handle_response(qp, h);
    return;
  }
  ibv_qp_state st = qp ? qp->qp()->state : IBV_QPS_RESET;
  if (!qp || st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_ERR || qp->kind == QpKind::dci) {
    // A real fabric would drop it and the requester would time out; tell it right away.
    if (h->op == WireOp::Send || h->op == WireOp::Write ? (h->flags & kFirst) : true)
      orphans_.push_back({src, h->src_qpn, h->msn, h->psn});
    return;
  }
  if (qp->kind == QpKind::dct) {
    // A DC target keeps a responder connection per initiator; an exchange starts afresh at the
    // PSN of its first packet.
    Qp* conn = dc_connection(qp, src, h->src_qpn);
    if (!conn) return;  // out of memory: dropped, the initiator retransmits
    if (h->flags & kDcConnect) {
      conn->expected_psn = h->psn;
      conn->nak_outstanding = false;
    }
    if (h->dc_key != qp->dc_key) {
      if (h->psn == conn->expected_psn) {
        RespItem it{};
        it.op = WireOp::Nak;
        it.syndrome = uint16_t(NakCode::RemoteAccess);
        it.msn = h->msn;
        it.psn = h->psn;
        queue_resp(conn, it);
        conn->nak_outstanding = true;
      }
      return;
    }
    qp = conn;
  }
  handle_request(qp, src, h);
}

Qp* Engine::dc_connection(Qp* dct, int src, uint32_t src_qpn) {
  for (Qp* c : dct->dc_connections)
    if (c->remote_ep == src && c->attr.dest_qp_num == src_qpn) return c;
  auto* c = new (std::nothrow) Qp();
  if (!c) return nullptr;
  c->kind = QpKind::dct_connection;
  c->dct = dct;
  c->ctx = dct->ctx;
  c->pd = dct->pd;
  c->scq = dct->scq;
  c->rcq = dct->rcq;
  c->srq = dct->srq;
  c->attr = dct->attr;
  c->attr.dest_qp_num = src_qpn;
  c->remote_ep = src;
  c->remote_gen_bits = (src_qpn >> 16) & 3;
  ibv_qp& q = c->qpx.qp_base;  // responses come from the DCT's number
  q.context = dct->qpx.qp_base.context;
  q.qp_num = dct->qpx.qp_base.qp_num;
  q.qp_type = dct->qpx.qp_base.qp_type;
  q.state = IBV_QPS_RTR;
  dct->dc_connections.push_back(c);
  return c;
}

void Engine::handle_request(Qp* qp, int src, PacketHeader* h) {
  if (h->psn != qp->expected_psn) return;  // go-back-N: wait for the retransmission
  qp->nak_outstanding = false;
  auto nak = [&](NakCode code, uint8_t extra) {
    RespItem it{};
    it.op = WireOp::Nak;
    it.syndrome = uint16_t(uint16_t(code) | (uint16_t(extra) << 8));
    it.msn = h->msn;
    it.psn = h->psn;
    queue_resp(qp, it);
    qp->nak_outstanding = true;
  };
  auto remote_access_ok = [&](int need, uint64_t len) -> Mr* {
    Mr* mr = mr_lookup(h->rkey);
    if (!mr || mr->pd->protection() != qp->pd->protection() || !(mr->access & need) ||
        !(qp->attr.qp_access_flags & need) ||
        !mr_covers(mr, h->raddr, len))
      return nullptr;
    return mr;
  };
  auto complete_recv = [&](ibv_wc_opcode opc, uint32_t len, ibv_wc_status st) {
    ibv_wc wc{};
    wc.wr_id = qp->recv_wr_id;
    wc.status = st;
    wc.opcode = opc;
    wc.byte_len = len;
    wc.qp_num = qp->qp()->qp_num;
    wc.src_qp = h->src_qpn;
    wc.slid = qp->attr.ah_attr.dlid;
    wc.sl = qp->attr.ah_attr.sl;
    if (h->flags & kHasImm) {
      wc.wc_flags |= IBV_WC_WITH_IMM;
      wc.imm_data = h->imm;
    }
    qp->recv_active = false;
    cq_push(qp->rcq, wc, h->flags & kSolicited);
  };
  switch (h->op) {
    case WireOp::Send: {
      if (h->flags & kFirst) {
        if (!take_recv(qp)) {
          nak(NakCode::Rnr, qp->attr.min_rnr_timer);
          return;
        }
        uint64_t room = 0;
        for (const Sge& s : qp->recv_sges) room += s.length;
        if (h->total_len > room ||
            !sges_valid(qp->pd, qp->recv_sges.data(), uint32_t(qp->recv_sges.size()), true)) {
          bool too_long = h->total_len > room;
          complete_recv(IBV_WC_RECV, 0, too_long ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR);
          nak(too_long ? NakCode::InvalidRequest : NakCode::RemoteOperation, 0);
          send_responses(qp);
          move_to_error(qp);
          return;
        }
      }
      if (!qp->recv_active) return;
      if (!sge_copy<false>(qp->recv_sges.data(), uint32_t(qp->recv_sges.size()), qp->recv_offset,
                           payload(h), h->payload_len)) {
        nak(NakCode::RemoteOperation, 0);  // the driver could not write the receive buffer
        send_responses(qp);
        move_to_error(qp);
        return;
      }
      qp->recv_offset += h->payload_len;
      qp->expected_psn = (qp->expected_psn + 1) & kPsnMask;
      if (h->flags & kLast) {
        complete_recv(IBV_WC_RECV, uint32_t(qp->recv_offset), IBV_WC_SUCCESS);
        qp->resp_msn = h->msn;
        queue_ack(qp, h->msn);
      }
      return;
    }
    case WireOp::Write: {
      if (h->flags & kFirst) {
        qp->write_mr = nullptr;
        if (h->total_len) {
          qp->write_mr = remote_access_ok(IBV_ACCESS_REMOTE_WRITE, h->total_len);
          if (!qp->write_mr) {
            nak(NakCode::RemoteAccess, 0);
            return;
          }
        }
        if ((h->flags & kHasImm) && !take_recv(qp)) {
          nak(NakCode::Rnr, qp->attr.min_rnr_timer);
          return;
        }
      }
      if (h->payload_len) {
        uint8_t* src = payload(h);
        uint32_t n = h->payload_len;
        Qp::LandedWrite& lw = qp->landed[qp->landed_n++ % Qp::kLandedHistory];
        lw.raddr = h->raddr;
        lw.len = n;
        lw.psn = h->psn;
        lw.first_word = 0;
        memcpy(&lw.first_word, src, n < 8 ? n : 8);
        if (h->flags & kLast && !qp->write_mr->on_gpu) {
          // Pollers (ib_write_lat) watch the last byte: it must land after the rest.
          memcpy(reinterpret_cast<void*>(h->raddr), src, n - 1);
          std::atomic_thread_fence(std::memory_order_release);
          __atomic_store_n(reinterpret_cast<uint8_t*>(h->raddr + n - 1), src[n - 1],
                           __ATOMIC_RELEASE);
        } else if (!mem_write(qp->write_mr, h->raddr, src, n)) {
          nak(NakCode::RemoteOperation, 0);  // the driver could not write GPU memory
          return;
        }
      }
      qp->expected_psn = (qp->expected_psn + 1) & kPsnMask;
      if (h->flags & kLast) {
        if (h->flags & kHasImm) complete_recv(IBV_WC_RECV_RDMA_WITH_IMM, uint32_t(h->total_len), IBV_WC_SUCCESS);
        qp->resp_msn = h->msn;
        queue_ack(qp, h->msn);
      }
      return;
    }
    case WireOp::ReadReq: {
      Mr* mr = nullptr;
      if (h->total_len) {
        mr = remote_access_ok(IBV_ACCESS_REMOTE_READ, h->total_len);
        if (!mr) {
          nak(NakCode::RemoteAccess, 0);
          return;
        }
      }
      qp->expected_psn = (qp->expected_psn + 1) & kPsnMask;
      qp->resp_msn = h->msn;
      RespItem it{};
      it.op = WireOp::ReadResp;
      it.msn = h->msn;
      it.raddr = h->raddr;
      it.remaining = h->total_len;
      it.mr = mr;
      queue_resp(qp, it);
      return;
    }
    case WireOp::CmpSwap:
    case WireOp::FetchAdd: {
      const uint32_t size = h->atomic_bytes == 4 ? 4 : 8;
      Mr* mr = remote_access_ok(IBV_ACCESS_REMOTE_ATOMIC, size);
      if (!mr) {
        nak(NakCode::RemoteAccess, 0);
        return;
      }
      if (h->raddr & (size - 1)) {
        nak(NakCode::InvalidRequest, 0);
        return;
      }
      uint64_t old = 0;
      if (!mr->on_gpu) {
        // Atomic against every other NIC atomic and CPU atomic on the target: a CAS loop on the
        // operand's width (the plain 8-byte forms take the direct instructions).
        const bool plain_fa = h->op == WireOp::FetchAdd && h->arg2 == 0;
        const bool plain_cs = h->op == WireOp::CmpSwap && h->arg2 == ~0ull && h->arg3 == ~0ull;
        if (size == 8 && plain_fa) {
          old = __atomic_fetch_add(reinterpret_cast<uint64_t*>(h->raddr), h->arg0, __ATOMIC_SEQ_CST);
        } else if (size == 8 && plain_cs) {
          old = h->arg0;
          __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(h->raddr), &old, h->arg1, false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST);
        } else if (size == 8) {
          auto* p = reinterpret_cast<uint64_t*>(h->raddr);
          old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
          while (!__atomic_compare_exchange_n(p, &old, atomic_new_value(h, old), false, __ATOMIC_SEQ_CST,
                                              __ATOMIC_SEQ_CST)) {
          }
        } else {
          auto* p = reinterpret_cast<uint32_t*>(h->raddr);
          uint32_t o = __atomic_load_n(p, __ATOMIC_SEQ_CST);
          while (!__atomic_compare_exchange_n(p, &o, uint32_t(atomic_new_value(h, o)), false, __ATOMIC_SEQ_CST,
                                              __ATOMIC_SEQ_CST)) {
          }
          old = o;
        }
      } else {
        // GPU memory: read-modify-write through the driver, atomic only among NIC atomics.
        bool ok = mem_read(mr, h->raddr, &old, size);
        uint64_t nv = ok ? atomic_new_value(h, old) : 0;
        if (!ok || (nv != old && !mem_write(mr, h->raddr, &nv, size))) {
          nak(NakCode::RemoteOperation, 0);
          return;
        }
      }
      qp->expected_psn = (qp->expected_psn + 1) & kPsnMask;
      qp->resp_msn = h->msn;
      RespItem it{};
      it.op = WireOp::AtomicResp;
      it.msn = h->msn;
      it.value = old;
      queue_resp(qp, it);
      return;
    }
    default:
      return;
  }
}

// Go back N: retransmit everything from message msn on, after delay_ns.
bool Engine::send_responses(Qp* qp) {
  bool did = false;
  while (!qp->resp_q.empty()) {
    RespItem& it = qp->resp_q.front();
    if (it.op == WireOp::ReadResp) {
      do {
        uint32_t chunk = uint32_t(std::min<uint64_t>(kSegment, it.remaining));
        PacketHeader* h = wire.reserve(qp->remote_ep, chunk);
        if (!h) {
          tx_blocked_ = true;
          return did;
        }
        h->op = WireOp::ReadResp;
        h->flags = (it.offset == 0 ? kFirst : 0) | (chunk == it.remaining ? kLast : 0);
        h->dst_qpn = qp->attr.dest_qp_num;
        h->src_qpn = qp->qp()->qp_num;
        h->msn = it.msn;
        h->payload_len = chunk;
        // A read the driver fails was printed by it; the request was accepted, so the data go
        // out zeroed rather than leave the requester waiting.
        if (chunk && !mem_read(it.mr, it.raddr, payload(h), chunk)) memset(payload(h), 0, chunk);
        wire.commit(qp->remote_ep, h);
        it.raddr += chunk;
        it.offset += chunk;
        it.remaining -= chunk;
        did = true;
      } while (it.remaining);
    } else {
      PacketHeader* h = wire.reserve(qp->remote_ep, 0);
      if (!h) {
        tx_blocked_ = true;
        return did;
      }
      h->op = it.op;
      h->flags = kFirst | kLast;
      h->syndrome = it.syndrome;
      h->dst_qpn = qp->attr.dest_qp_num;
      h->src_qpn = qp->qp()->qp_num;
      h->msn = it.msn;
      h->psn = it.psn;
      h->payload_len = 0;
      h->arg0 = it.value;
      wire.commit(qp->remote_ep, h);
      did = true;
    }
    qp->resp_q.pop_front();
  }
  return did;
}

}  // namespace softnic
