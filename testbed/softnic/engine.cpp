// Progress engine: requester transmission, responder execution of SEND/WRITE/READ/atomics,
// ACK/NAK handling (RNR retry, remote access errors), in-order completion, error flushing,
// dead-peer detection, and the background progress thread.
#include "engine.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "config.hpp"
#include "context.hpp"
#include "memory_registry.hpp"

namespace softnic {

namespace {
constexpr uint32_t kSegment = 64 * 1024;  // payload bytes per packet
constexpr uint32_t kPsnMask = 0xffffff;
constexpr int kPollBudget = 256;
constexpr uint64_t kPeerCheckNs = 20'000'000;  // liveness of peers with outstanding work

// IB encoding of the RNR NAK timer (IBA table 45), in microseconds.
const uint32_t kRnrTimerUs[32] = {655360, 10,    20,    30,    40,    60,     80,     120,
                                  160,    240,   320,   480,   640,   960,    1280,   1920,
                                  2560,   3840,  5120,  7680,  10240, 15360,  20480,  30720,
                                  40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};

ibv_wc_opcode wc_opcode(OpKind k) {
  switch (k) {
    case OpKind::Send:
    case OpKind::SendImm: return IBV_WC_SEND;
    case OpKind::Write:
    case OpKind::WriteImm: return IBV_WC_RDMA_WRITE;
    case OpKind::Read: return IBV_WC_RDMA_READ;
    case OpKind::CmpSwap: return IBV_WC_COMP_SWAP;
    case OpKind::FetchAdd: return IBV_WC_FETCH_ADD;
  }
  return IBV_WC_SEND;
}

ibv_wc_status nak_status(NakCode c) {
  switch (c) {
    case NakCode::RemoteAccess: return IBV_WC_REM_ACCESS_ERR;
    case NakCode::InvalidRequest: return IBV_WC_REM_INV_REQ_ERR;
    case NakCode::RemoteOperation: return IBV_WC_REM_OP_ERR;
    case NakCode::Rnr: return IBV_WC_RNR_RETRY_EXC_ERR;
    default: return IBV_WC_RETRY_EXC_ERR;
  }
}

// Copies len bytes starting at message offset off out of (gather) or into (scatter) an
// SGE list. Returns false if a local key does not resolve.
template <bool kGather>
bool sge_copy(const Sge* sges, uint32_t n, uint64_t off, uint8_t* buf, uint64_t len) {
  for (uint32_t i = 0; i < n && len; ++i) {
    if (off >= sges[i].length) {
      off -= sges[i].length;
      continue;
    }
    uint64_t take = std::min<uint64_t>(sges[i].length - off, len);
    Mr* mr = mr_lookup(sges[i].lkey);
    if (!mr) return false;
    if (!(kGather ? mem_read(mr, sges[i].addr + off, buf, take)
                  : mem_write(mr, sges[i].addr + off, buf, take)))
      return false;
    buf += take;
    len -= take;
    off = 0;
  }
  return len == 0;
}

// Local SGEs must name registered memory of the QP's PD, in bounds, writable if data lands there.
bool sges_valid(const Pd* pd, const Sge* sges, uint32_t n, bool need_write) {
  for (uint32_t i = 0; i < n; ++i) {
    if (sges[i].length == 0) continue;
    Mr* mr = mr_lookup(sges[i].lkey);
    if (!mr || mr->pd != pd || !mr_covers(mr, sges[i].addr, sges[i].length)) return false;
    if (need_write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)) return false;
  }
  return true;
}
}  // namespace

Engine& Engine::get() {
  static Engine* e = [] {
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    return new Engine();  // never destroyed: the exit hook shuts it down instead
  }();
  return *e;
}

// fork() must not happen while another thread holds the engine lock, and a child must not
// act as its parent's endpoint (its exit would otherwise tear down the parent's segments).
void Engine::fork_prepare() { get().mu.lock(); }
void Engine::fork_parent() { get().mu.unlock(); }
void Engine::fork_child() {
  Engine& e = get();
  e.mu.unlock();
  e.thread_ = nullptr;  // the engine thread does not exist in the child
  e.running_ = false;
  e.started_ = false;
  e.owner_pid_ = 0;
  e.active_.clear();
  e.orphans_.clear();
  e.qps_.assign(e.qps_.size(), nullptr);
  e.wire.forget();
}

static void engine_atexit() { Engine::get().shutdown(); }

bool Engine::ensure_started() {
  std::lock_guard<std::mutex> g(mu);
  if (started_) return true;
  if (!wire.join()) return false;
  qps_.assign(1 << 16, nullptr);
  running_ = true;
  thread_ = new std::thread([this] { run(); });
  started_ = true;
  owner_pid_ = getpid();
  static bool hooked = false;
  if (!hooked) atexit(engine_atexit);
  hooked = true;
  return true;
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> g(mu);
    if (!started_ || owner_pid_ != getpid()) return;
    started_ = false;
    running_ = false;
    wire.kick_self();
  }
  if (thread_ && thread_->joinable()) thread_->join();
  delete thread_;
  thread_ = nullptr;
  std::lock_guard<std::mutex> g(mu);
  wire.leave();
}

uint32_t Engine::register_qp(Qp* qp) {
  for (uint32_t i = 16; i < qps_.size(); ++i) {
    if (!qps_[i]) {
      qps_[i] = qp;
      return (uint32_t(wire.slot()) << 18) | ((wire.gen() & 3) << 16) | i;
    }
  }
  return 0;
}

void Engine::unregister_qp(Qp* qp) {
  uint32_t idx = qp->qp()->qp_num & 0xffff;
  if (idx < qps_.size() && qps_[idx] == qp) qps_[idx] = nullptr;
  active_.erase(std::remove(active_.begin(), active_.end(), qp), active_.end());
}

Qp* Engine::find_qp(uint32_t qpn) {
  if (int(qpn >> 18) != wire.slot() || ((qpn >> 16) & 3) != (wire.gen() & 3)) return nullptr;
  return qps_[qpn & 0xffff];
}

int Engine::endpoint_of(uint32_t qpn, uint32_t* gen_bits) const {
  *gen_bits = (qpn >> 16) & 3;
  return int(qpn >> 18) & (kMaxEndpoints - 1);
}


static void mark_active(std::vector<Qp*>& active, Qp* qp) {
  if (!qp->in_tx_list) {
    qp->in_tx_list = true;
    active.push_back(qp);
  }
}

void Engine::submitted(Qp* qp) {
  if (qp->qp()->state == IBV_QPS_ERR) {
    flush_sq(qp);
    return;
  }
  transmit(qp);
  if (qp->sq.send != qp->sq.tail || qp->sq.head != qp->sq.send) mark_active(active_, qp);
  wire.flush_doorbells();
}

void Engine::recv_posted(Qp* qp) {
  if (qp->qp()->state == IBV_QPS_ERR) flush_rq(qp);
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
    if (!op.started) {
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
                     (has_imm ? kHasImm : 0) | (op.solicited ? kSolicited : 0);
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
        h->flags = kFirst | kLast;
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
  if (!was_err && qp->srq) {
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
    if (qp && qp->qp()->state != IBV_QPS_RESET && qp->qp()->state != IBV_QPS_ERR)
      handle_response(qp, h);
    return;
  }
  ibv_qp_state st = qp ? qp->qp()->state : IBV_QPS_RESET;
  if (!qp || st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_ERR) {
    // A real fabric would drop it and the requester would time out; tell it right away.
    if (h->op == WireOp::Send || h->op == WireOp::Write ? (h->flags & kFirst) : true)
      orphans_.push_back({src, h->src_qpn, h->msn, h->psn});
    return;
  }
  handle_request(qp, src, h);
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
    if (!mr || mr->pd != qp->pd || !(mr->access & need) || !(qp->attr.qp_access_flags & need) ||
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
      Mr* mr = remote_access_ok(IBV_ACCESS_REMOTE_ATOMIC, 8);
      if (!mr) {
        nak(NakCode::RemoteAccess, 0);
        return;
      }
      if (h->raddr & 7) {
        nak(NakCode::InvalidRequest, 0);
        return;
      }
      uint64_t old;
      if (!mr->on_gpu) {
        auto* p = reinterpret_cast<uint64_t*>(h->raddr);
        if (h->op == WireOp::FetchAdd) {
          old = __atomic_fetch_add(p, h->arg0, __ATOMIC_SEQ_CST);
        } else {
          old = h->arg0;
          __atomic_compare_exchange_n(p, &old, h->arg1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        }
      } else {
        // GPU memory: read-modify-write through the driver, atomic only among NIC atomics.
        uint64_t nv = 0;
        bool ok = mem_read(mr, h->raddr, &old, 8);
        if (ok) nv = h->op == WireOp::FetchAdd ? old + h->arg0 : (old == h->arg0 ? h->arg1 : old);
        if (!ok || (nv != old && !mem_write(mr, h->raddr, &nv, 8))) {
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
      uint64_t v = h->arg0;
      if (!sge_copy<false>(sq.sge(n), op->num_sge, 0, reinterpret_cast<uint8_t*>(&v), 8)) {
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

bool Engine::check_peers() {
  bool did = false;
  for (Qp* qp : active_) {
    if (qp->qp()->state != IBV_QPS_RTS && qp->qp()->state != IBV_QPS_SQD) continue;
    if (qp->sq.head == qp->sq.tail) continue;
    // A peer that has gone away may still have ACKs and responses on the wire: those are
    // delivered first, only then is what remains outstanding failed.
    if (!wire.peer_alive(qp->remote_ep, qp->remote_gen_bits) && !wire.pending_from(qp->remote_ep)) {
      // The peer process is gone: what a NIC reports after exhausting transport retries.
      SendQueue& sq = qp->sq;
      if (sq.head == sq.send && sq.send != sq.tail) {
        SendOp& op = sq.at(sq.send);
        op.msn = qp->next_msn;
        sq.send++;
      }
      fail_op(qp, sq.at(sq.head).msn, IBV_WC_RETRY_EXC_ERR);
      did = true;
    }
  }
  return did;
}

bool Engine::progress() {
  bool did = false;
  int n = wire.poll([this](int src, PacketHeader* h) { handle_packet(src, h); }, kPollBudget);
  did |= n > 0;
  if (!orphans_.empty()) {
    size_t k = 0;
    for (; k < orphans_.size(); ++k) {
      const Orphan& o = orphans_[k];
      PacketHeader* h = wire.reserve(o.ep, 0);
      if (!h) {
        tx_blocked_ = true;
        break;
      }
      h->op = WireOp::Nak;
      h->flags = kFirst | kLast;
      h->syndrome = uint16_t(NakCode::QpUnreachable);
      h->dst_qpn = o.qpn;
      h->src_qpn = 0;
      h->msn = o.msn;
      h->psn = o.psn;
      h->payload_len = 0;
      wire.commit(o.ep, h);
    }
    orphans_.erase(orphans_.begin(), orphans_.begin() + k);
    did = true;
  }
  next_deadline_ns_ = 0;
  tx_blocked_ = false;
  for (size_t i = 0; i < active_.size();) {
    Qp* qp = active_[i];
    did |= send_responses(qp);
    did |= transmit(qp);
    bool busy = !qp->resp_q.empty() || qp->sq.head != qp->sq.tail;
    if (!busy) {
      qp->in_tx_list = false;
      active_[i] = active_.back();
      active_.pop_back();
    } else {
      ++i;
    }
  }
  uint64_t now = 0;
  if (!active_.empty()) {
    now = now_ns();
    if (now - last_peer_check_ns_ > kPeerCheckNs) {
      last_peer_check_ns_ = now;
      did |= check_peers();
    }
  }
  wire.flush_doorbells();
  return did;
}

// Responders must run promptly when a packet arrives although the application threads of
// both processes may be spinning on all cores (ib_write_lat spins on memory). A SCHED_FIFO
// engine thread is woken with immediate preemption; it then never busy-spins, so it only
// takes CPU time for real work. Without the privilege (or with SOFTNIC_RT=0) the thread stays
// SCHED_OTHER and spins for SOFTNIC_SPIN_US before sleeping. Measured on the shared 2-CPU
// machine while other builds ran, SCHED_FIFO cut the typical ib_write_lat latency from
// milliseconds (waiting for a scheduler tick) to ~20 us; on an idle machine both are a few us.
static bool try_realtime() {
  const char* v = getenv("SOFTNIC_RT");
  if (v && *v == '0') return false;
  sched_param sp{};
  sp.sched_priority = 1;
  bool ok = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
  SOFTNIC_LOG("engine thread %s", ok ? "SCHED_FIFO" : "SCHED_OTHER");
  return ok;
}

// Linux >= 6.12 (EEVDF) lets an unprivileged thread ask for a short slice, which gives it an
// early deadline and hence wakeup preemption; older kernels reject the request harmlessly.
static void request_short_slice() {
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
  } attr{};
  attr.size = sizeof(attr);
  attr.policy = SCHED_OTHER;
  attr.runtime = 100'000;  // 0.1 ms, the smallest slice the kernel accepts
  syscall(SYS_sched_setattr, 0, &attr, 0);
}

void Engine::run() {
  realtime_ = try_realtime();
  if (!realtime_) request_short_slice();
  const uint64_t spin_ns = realtime_ ? 0 : uint64_t(config().spin_us) * 1000;
  uint64_t last_work = now_ns();
  while (running_.load(std::memory_order_relaxed)) {
    bool did = false;
    // If an application thread holds the lock it is progressing the engine itself; never
    // spin against it (as SCHED_FIFO that would starve the lock holder).
    if (mu.try_lock()) {
      did = progress();
      mu.unlock();
    }
    uint64_t now = now_ns();
    if (did) {
      last_work = now;
      continue;
    }
    if (now - last_work < spin_ns) {
      sched_yield();
      continue;
    }
    uint32_t seen = wire.doorbell_value();
    wire.set_sleeping(true);
    int timeout_us = 1000000;  // idle: nothing to watch; a doorbell wakes us for work
    {
      std::lock_guard<std::mutex> g(mu);
      did = progress();
      if (tx_blocked_) timeout_us = 50;  // wait for the peer to free ring space
      if (next_deadline_ns_) {
        uint64_t t = now_ns();
        int64_t us = next_deadline_ns_ > t ? int64_t((next_deadline_ns_ - t) / 1000) + 1 : 1;
        if (us < timeout_us) timeout_us = int(us);
      }
      // QPs waiting for their peer: re-check the peer's liveness regularly.
      if (!active_.empty() && timeout_us > 20000) timeout_us = 20000;
      // Producers skip the wake while an application thread polls; if it stops polling
      // without draining, pick the packets up soon anyway.
      if (wire.app_polling() && timeout_us > 1000) timeout_us = 1000;
    }
    if (!did && running_.load()) {
      wire.wait(seen, timeout_us);
      if (config().debug && wire.doorbell_value() == seen) {
        std::lock_guard<std::mutex> g(mu);
        if (progress()) SOFTNIC_LOG("work found after a %d us timeout, not a doorbell", timeout_us);
      }
    }
    wire.set_sleeping(false);
    last_work = now_ns();
  }
}

}  // namespace softnic
