// QP state changes the engine drives: flushing send and receive queues with error completions,
// moving a QP to the error state, and resetting it.
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

void Engine::recv_posted(Qp* qp) {
  if (qp->qp()->state == IBV_QPS_ERR) flush_rq(qp);
}

void Engine::flush_sq(Qp* qp) {
  SendQueue& sq = qp->sq;
  while (sq.head != sq.tail) {
    complete_send(qp, sq.at(sq.head), IBV_WC_WR_FLUSH_ERR);
    sq.head++;
  }
  sq.send = sq.tail;
}

void Engine::flush_rq(Qp* qp) {
  auto flush_one = [&](uint64_t wr_id) {
    ibv_wc wc{};
    wc.wr_id = wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = qp->qp()->qp_num;
    cq_push(qp->rcq, wc, false);
  };
  if (qp->recv_active) {
    flush_one(qp->recv_wr_id);
    qp->recv_active = false;
  }
  if (qp->srq) return;  // the SRQ's WQEs belong to the SRQ, not to this QP
  RecvQueue& rq = qp->rq;
  while (rq.count) {
    flush_one(rq.wr_id[rq.head]);
    rq.head = (rq.head + 1) % rq.cap;
    rq.count--;
  }
}

void Engine::move_to_error(Qp* qp) {
  bool was_err = qp->qp()->state == IBV_QPS_ERR;
  qp->qp()->state = IBV_QPS_ERR;
  qp->attr.qp_state = IBV_QPS_ERR;
  qp->resp_q.clear();
  flush_sq(qp);
  flush_rq(qp);
  if (!was_err && qp->srq && qp->kind != QpKind::dct_connection) {
    ibv_async_event ev{};
    ev.element.qp = qp->qp();
    ev.event_type = IBV_EVENT_QP_LAST_WQE_REACHED;
    post_async_event(qp->ctx, ev);
  }
}

void Engine::reset_qp(Qp* qp) {
  SendQueue& sq = qp->sq;
  sq.head = sq.send = sq.tail = 0;
  qp->rq.head = qp->rq.count = 0;
  qp->recv_active = false;
  qp->resp_q.clear();
  qp->next_msn = 1;
  qp->acked_msn = 0;
  qp->resp_msn = 0;
  qp->nak_outstanding = false;
  qp->rnr_resume_ns = 0;
  qp->staged_n = 0;
}

}  // namespace softnic

namespace softnic {

void Engine::forget_dct(Qp* dct) {
  for (Qp* c : dct->dc_connections) {
    active_.erase(std::remove(active_.begin(), active_.end(), c), active_.end());
    delete c;
  }
  dct->dc_connections.clear();
}

}  // namespace softnic
