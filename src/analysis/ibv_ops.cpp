// The verbs layer's associator (layer "ibv"): work requests with their completions (per QP, in
// posting order; an unsignaled WR completes with the next signaled one, as RC guarantees), sends
// that consume a receive with the peer's receive completion (message flows, association.h),
// one-sided operations with their target process, Simple mode's post calls, verbs errors and the
// control calls as slices. Operations of NCCL's IB transport are tied to the NCCL task whose data
// they move (nccl_tasks.h).
#include <algorithm>
#include <deque>
#include <unordered_map>

#include "analysis/association.h"
#include "analysis/associator_list.h"
#include "analysis/ibv_names.h"
#include "format/event_types.h"

namespace sigmatrace::analysis {

using format::EventType;

namespace {

constexpr size_t kMaxPending = 1 << 16;  // per QP queue: beyond this the oldest WR is given up
constexpr size_t kMaxEarly = 1 << 12;    // per QP: completions waiting for their WR
constexpr uint64_t kSendSignaled = 2;    // IBV_SEND_SIGNALED

struct PendingWr {
  OpRecord op;
};

struct QpState {
  std::deque<PendingWr> sends, recvs;
  // Completions read before their WR: a thread that polls flushes its chunk before the thread that
  // posted does, so file order is not time order across threads. Matched when the WR comes.
  std::deque<CompletionRecord> early;
  uint64_t send_seq = 0, recv_seq = 0;
  int64_t peer_process = kNone;
  uint64_t qp_id = 0, peer_qp_id = 0;     // this QP's id and its peer's: message flow ids name the sender
  bool flows = false;                      // connected peer in the trace: messages get flow ids
  bool saw_signaled = false;               // a send WR was posted signalled (so not sq_sig_all only)
};

class IbvAssociation final : public LayerAssociator {
 public:
  explicit IbvAssociation(FileContext& f) : f_(f), nccl_(&f.process.nccl_task_index) {
    f_.counters.nccl_traffic.assign(f_.process.nccl_tasks.size(), {});
    // A process's QPs have consecutive ids (the first pass numbers them file by file).
    first_qp_ = f_.model.qps.size();
    size_t last = 0;
    for (const auto& [num, ids] : f_.process.qps_by_num)
      for (uint32_t id : ids) first_qp_ = std::min<size_t>(first_qp_, id), last = std::max<size_t>(last, id + 1);
    if (first_qp_ > last) first_qp_ = last = 0;
    qps_.resize(last - first_qp_);
    for (size_t i = 0; i < qps_.size(); ++i) {
      const QpRow& q = f_.model.qps[first_qp_ + i];
      QpState& s = qps_[i];
      s.qp_id = first_qp_ + i;
      if (q.remote_qp_id != kNone) {
        const QpRow& r = f_.model.qps[static_cast<size_t>(q.remote_qp_id)];
        s.peer_process = r.process_id;
        s.peer_qp_id = static_cast<uint64_t>(q.remote_qp_id);
        s.flows = q.connection_id != kNone;
      }
    }
  }

  void on_event(int64_t thread, int64_t ts, const format::DecodedEvent& ev) override;
  void on_aggregate(const format::DecodedEvent& ev) override;
  void finish() override;

 private:
  void post_send_wr(int64_t thread, int64_t ts, const format::DecodedEvent& ev);
  void post_recv_wr(int64_t thread, int64_t ts, const format::DecodedEvent& ev);
  void completion(int64_t thread, int64_t ts, const format::DecodedEvent& ev);
  void post_call(int64_t thread, int64_t ts, const format::DecodedEvent& ev, bool send);
  void control_call(int64_t thread, int64_t ts, const char* name, int64_t qp, int64_t result);
  void call_error(int64_t thread, int64_t ts, const format::DecodedEvent& ev);
  void finish_op(OpRecord& op);
  // Ties op (a work request, or a post call when wr_id is unknown) to its NCCL task, if any.
  void tag_nccl(OpRecord& op, uint64_t qp_num, bool wr_id_known);
  bool match_early(QpState* s, OpRecord& op, bool receive);
  void emit_completion(const CompletionRecord& c);
  QpState* state(int64_t qp) { return qp == kNone ? nullptr : &qps_[static_cast<size_t>(qp) - first_qp_]; }
  int64_t qp_of(uint64_t qp_num, uint64_t tsc) { return f_.qp_of(qp_num, tsc); }

  FileContext& f_;
  size_t first_qp_ = 0;
  std::vector<QpState> qps_;
  std::unordered_map<uint64_t, std::deque<PendingWr>> srq_recvs_;
  uint64_t completions_ = 0, errors_ = 0;
  NcclWorkRequestMatcher nccl_;
};

// The end of the file: WRs still waiting had their completion not traced (unsignaled at the end,
// or lost).
void IbvAssociation::finish() {
  for (QpState& s : qps_) {
    for (const CompletionRecord& c : s.early) ++f_.counters.unmatched_completions, emit_completion(c);
    s.early.clear();
    // What never completed: what a hung process waits for (aggregates.h, QpOutstanding).
    QpOutstanding& out = f_.agg.qp_outstanding[s.qp_id];
    out.messages_sent = s.send_seq, out.messages_received = s.recv_seq;
    auto note = [](const OpRecord& op, uint64_t* n, PendingOp* oldest) {
      if (!(*n)++ || op.ts_ns < oldest->ts_ns) *oldest = {op.ts_ns, op.op_class, op.bytes, op.wr_id};
    };
    for (const PendingWr& w : s.sends)
      if (w.op.signaled && !w.op.is_call) note(w.op, &out.sends, &out.oldest_send);
    for (const PendingWr& w : s.recvs)
      if (!w.op.is_call) note(w.op, &out.receives, &out.oldest_receive);
    for (PendingWr& w : s.sends) finish_op(w.op);
    for (PendingWr& w : s.recvs) finish_op(w.op);
    s.sends.clear(), s.recvs.clear();
  }
  for (auto& [srq, q] : srq_recvs_)
    for (PendingWr& w : q) finish_op(w.op);
}

void IbvAssociation::finish_op(OpRecord& op) {
  if (op.nccl_task >= 0) {
    NcclTaskTraffic& t = f_.counters.nccl_traffic[static_cast<size_t>(op.nccl_task)];
    const bool receive = op.op_class == kOpRecv;
    t.wrs += op.wr_count, (receive ? t.recv_wrs : t.send_wrs) += op.wr_count;
    if (!receive) t.wire_bytes += op.bytes;
    if (t.first_post_ns < 0 || op.ts_ns < t.first_post_ns) t.first_post_ns = op.ts_ns;
    t.last_done_ns = std::max(t.last_done_ns, op.ts_ns + std::max<int64_t>(op.dur_ns, 0));
  }
  if (f_.sink) f_.sink->op(op);
}

void IbvAssociation::tag_nccl(OpRecord& op, uint64_t qp_num, bool wr_id_known) {
  if (!nccl_.active()) return;
  op.nccl_task = nccl_.task_of(op.thread_id, qp_num, op.wr_id, wr_id_known, op.wr_count, &f_.counters.nccl);
  if (op.nccl_task >= 0) op.range_id = f_.process.ranges.id(f_.process.nccl_tasks[static_cast<size_t>(op.nccl_task)].range);
}

void IbvAssociation::on_event(int64_t thread, int64_t ts, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;
  switch (static_cast<EventType>(ev.type)) {
    case EventType::ibv_send_wr: post_send_wr(thread, ts, ev); break;
    case EventType::nccl_net_wr:
      if (nccl_.active()) nccl_.on_net_wr(thread, ev, &f_.counters.nccl);
      break;
    case EventType::ibv_recv_wr: post_recv_wr(thread, ts, ev); break;
    case EventType::ibv_completion: completion(thread, ts, ev); break;
    case EventType::ibv_post_send: post_call(thread, ts, ev, true); break;
    case EventType::ibv_post_recv: post_call(thread, ts, ev, false); break;
    case EventType::ibv_post_srq_recv: post_call(thread, ts, ev, false); break;
    case EventType::ibv_call_error: call_error(thread, ts, ev); break;
    case EventType::ibv_poll_cq:
      if (f_.sink && static_cast<int64_t>(v[1]) > 0) {
        CallRecord c{ts, 0, f_.process.process_id, thread, "ibv_poll_cq", kNone, 0, v[1], ev.as_i64(2)};
        f_.sink->call(c);
      }
      break;
    case EventType::ibv_async_event: {
      ++f_.counters.errors;
      ++f_.counters.error_kinds[error_kind("async", "event_type_" + std::to_string(v[1]), 0)];
      if (f_.sink) {
        ErrorRecord e{f_.process_scoped_id(&errors_), ts, f_.process.process_id, thread, "ibv", "async", "event_type_" + std::to_string(v[1]), v[2], 0, kNone};
        f_.sink->error(e);
      }
      break;
    }
    case EventType::ibv_device_open: control_call(thread, ts, "ibv_open_device", kNone, 0); break;
    case EventType::ibv_qp_create: control_call(thread, ts, "ibv_create_qp", qp_of(v[3], ev.tsc), 0); break;
    case EventType::ibv_qp_modify: control_call(thread, ts, "ibv_modify_qp", qp_of(v[0], ev.tsc), 0); break;
    case EventType::ibv_qp_destroy: control_call(thread, ts, "ibv_destroy_qp", qp_of(v[0], ev.tsc), 0); break;
    case EventType::ibv_mr_reg: control_call(thread, ts, "ibv_reg_mr", kNone, 0); break;
    case EventType::ibv_mr_dereg: control_call(thread, ts, "ibv_dereg_mr", kNone, 0); break;
    case EventType::ibv_cq_create: control_call(thread, ts, "ibv_create_cq", kNone, 0); break;
    case EventType::ibv_cq_destroy: control_call(thread, ts, "ibv_destroy_cq", kNone, 0); break;
    case EventType::ibv_device_close: control_call(thread, ts, "ibv_close_device", kNone, 0); break;
    case EventType::ibv_pd_alloc: control_call(thread, ts, "ibv_alloc_pd", kNone, 0); break;
    case EventType::ibv_srq_create: control_call(thread, ts, "ibv_create_srq", kNone, 0); break;
    default: break;
  }
}

// Aggregate mode: counters without timestamps, folded into the same per-QP totals.
void IbvAssociation::on_aggregate(const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;  // tid key_kind key_a key_b count bytes
  OpCounters& c = f_.op_counters(qp_of(v[2], 0));
  unsigned op = v[3] >= 0x100 ? static_cast<unsigned>(kOpRecv) : op_class_of_wr_opcode(v[3]);
  c.ops[op] += v[4];
  c.bytes[op] += v[5];
}

void IbvAssociation::post_send_wr(int64_t thread, int64_t ts, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;  // qp_num wr_id opcode bytes num_sge remote_addr rkey send_flags imm_data
  int64_t qp = qp_of(v[0], ev.tsc);
  QpState* s = state(qp);
  OpRecord op;
  op.op_id = f_.next_op_id();
  op.ts_ns = ts;
  op.process_id = f_.process.process_id;
  op.thread_id = thread;
  op.qp_id = qp;
  op.op_class = op_class_of_wr_opcode(v[2]);
  op.bytes = v[3];
  op.wr_id = v[1];
  op.signaled = (v[7] & kSendSignaled) != 0;
  tag_nccl(op, v[0], true);
  if (s) {
    op.peer_process_id = s->peer_process;
    if (op_consumes_receive(op.op_class)) {
      ++s->send_seq;
      if (s->flows) op.flow_id = message_flow_id(s->qp_id, s->send_seq), ++f_.counters.flows_out;
    }
  }
  OpCounters& c = f_.op_counters(qp);
  c.ops[op.op_class] += 1;
  c.bytes[op.op_class] += op.bytes;
  c.calls += 1;
  c.saw(ts);
  if (f_.sink) f_.sink->work_request(op);
  if (!s) {
    finish_op(op);
    return;
  }
  s->saw_signaled |= op.signaled;
  if (!s->early.empty() && match_early(s, op, false)) return;
  if (s->sends.size() >= kMaxPending) {
    finish_op(s->sends.front().op);
    s->sends.pop_front();
  }
  s->sends.push_back({op});
}

void IbvAssociation::post_recv_wr(int64_t thread, int64_t ts, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;  // qp_num wr_id bytes num_sge srq
  OpRecord op;
  op.op_id = f_.next_op_id();
  op.ts_ns = ts;
  op.process_id = f_.process.process_id;
  op.thread_id = thread;
  op.op_class = kOpRecv;
  op.bytes = v[2];
  op.wr_id = v[1];
  if (!v[4]) tag_nccl(op, v[0], true);
  std::deque<PendingWr>* queue;
  if (v[4]) {
    queue = &srq_recvs_[v[4]];
  } else {
    op.qp_id = qp_of(v[0], ev.tsc);
    QpState* s = state(op.qp_id);
    if (!s) {
      f_.counters.ops.ops[kOpRecv] += 1;
      if (f_.sink) f_.sink->work_request(op), finish_op(op);
      return;
    }
    op.peer_process_id = s->peer_process;
    queue = &s->recvs;
    if (!s->early.empty() && match_early(s, op, true)) {
      if (f_.sink) f_.sink->work_request(op);
      return;
    }
  }
  if (f_.sink) f_.sink->work_request(op);
  if (queue->size() >= kMaxPending) {
    finish_op(queue->front().op);
    queue->pop_front();
  }
  queue->push_back({op});
}

namespace {
// The pending WR a completion with this wr_id reports: the first one with that id, except that on
// a send queue a successful completion skips unsignalled WRs (they generate none; they complete
// with the next signalled one). With duplicate wr_ids (perftest posts every WR with id 0 and
// signals one in cq_mod) that is what pairs each completion with its own WR. Falls back to the
// first id match when no signalled WR matches (the QP was created with sq_sig_all).
size_t find_wr(const std::deque<PendingWr>& q, uint64_t wr_id, bool signalled_only) {
  size_t first = q.size();
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i].op.wr_id != wr_id) continue;
    if (!signalled_only || q[i].op.signaled) return i;
    if (first == q.size()) first = i;
  }
  return first;
}

// Removes the WR the completion reports from the queue, completing with it every earlier WR when
// `send_queue` (send queues complete in order on RC).
bool take_wr(std::deque<PendingWr>* q, uint64_t wr_id, bool send_queue, bool ok, OpRecord* out, std::vector<OpRecord>* earlier) {
  const size_t i = find_wr(*q, wr_id, send_queue && ok);
  if (i == q->size()) return false;
  *out = (*q)[i].op;
  if (send_queue) {
    for (size_t k = 0; k < i; ++k) earlier->push_back((*q)[k].op);
    q->erase(q->begin(), q->begin() + static_cast<long>(i) + 1);
  } else {
    q->erase(q->begin() + static_cast<long>(i));
  }
  return true;
}
}  // namespace

void IbvAssociation::emit_completion(const CompletionRecord& c) {
  if (f_.sink) f_.sink->completion(c);
}

// A WR whose completion was read earlier: complete it (and, for sends, every WR posted before it
// on the QP, as RC completes in order) with that completion.
bool IbvAssociation::match_early(QpState* s, OpRecord& op, bool receive) {
  for (auto it = s->early.begin(); it != s->early.end(); ++it) {
    CompletionRecord& c = *it;
    bool ok = c.status == 0;
    if (c.wr_id != op.wr_id || (ok && c.is_receive != receive)) continue;
    if (!receive && ok && !op.signaled && s->saw_signaled) continue;  // generates no completion
    if (!receive) {
      for (PendingWr& w : s->sends) {
        w.op.dur_ns = c.ts_ns - w.op.ts_ns;
        w.op.status = ok ? 0 : -1;
        finish_op(w.op);
      }
      s->sends.clear();
    } else {
      if (ok) op.bytes = c.byte_len, op.flow_id = c.flow_id;
    }
    op.dur_ns = c.ts_ns - op.ts_ns;
    op.status = static_cast<int64_t>(c.status);
    op.completion_id = static_cast<int64_t>(c.completion_id);
    c.op_id = static_cast<int64_t>(op.op_id);
    finish_op(op);
    emit_completion(c);
    s->early.erase(it);
    return true;
  }
  return false;
}

void IbvAssociation::completion(int64_t thread, int64_t ts, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;  // cq qp_num wr_id status opcode byte_len imm_data wc_flags src_qp vendor_err
  CompletionRecord c;
  c.completion_id = f_.process_scoped_id(&completions_);
  c.ts_ns = ts;
  c.process_id = f_.process.process_id;
  c.thread_id = thread;
  c.qp_id = qp_of(v[1], ev.tsc);
  c.cq = v[0], c.wr_id = v[2], c.status = v[3], c.opcode = v[4], c.byte_len = v[5];
  c.imm_data = v[6], c.wc_flags = v[7], c.src_qp = v[8], c.vendor_err = v[9];
  QpState* s = state(c.qp_id);
  OpCounters& cnt = f_.op_counters(c.qp_id);
  ++cnt.completions;
  cnt.saw(ts);
  bool ok = c.status == 0;
  // With an error status the opcode is undefined: look in both queues.
  bool recv_side = ok ? (c.opcode & kWcRecv) != 0 : false;
  OpRecord op;
  std::vector<OpRecord> earlier;
  bool found = false;
  if (s) {
    if (!ok || !recv_side) found = take_wr(&s->sends, c.wr_id, true, ok, &op, &earlier);
    if (!found && (!ok || recv_side)) {
      found = take_wr(&s->recvs, c.wr_id, false, ok, &op, &earlier);
      for (auto it = srq_recvs_.begin(); !found && it != srq_recvs_.end(); ++it)
        found = take_wr(&it->second, c.wr_id, false, ok, &op, &earlier);
      if (found) recv_side = true;
    }
  }
  if (ok && (c.opcode & kWcRecv)) {
    c.is_receive = true;
    cnt.bytes[kOpRecv] += c.byte_len;
    if (!found) cnt.ops[kOpRecv] += 1;  // receive WR not traced (lost, or posted before tracing)
    if (s) {
      ++s->recv_seq;
      if (s->flows) c.flow_id = message_flow_id(s->peer_qp_id, s->recv_seq), ++f_.counters.flows_in;
    }
  }
  if (!ok) {
    ++cnt.completion_errors;
    ++f_.counters.errors;
    ++f_.counters.error_kinds[error_kind("completion", wc_status_name(c.status), 0)];
  }
  if (found) {
    if (recv_side && op.qp_id == kNone) op.qp_id = c.qp_id;  // SRQ receive: now we know the QP
    if (recv_side && s) op.peer_process_id = s->peer_process;
    if (recv_side && ok) op.bytes = c.byte_len;
    if (recv_side) cnt.ops[kOpRecv] += 1;
    op.dur_ns = ts - op.ts_ns;
    op.status = static_cast<int64_t>(c.status);
    if (c.is_receive) op.flow_id = c.flow_id;
    op.completion_id = static_cast<int64_t>(c.completion_id);
    c.op_id = static_cast<int64_t>(op.op_id);
    for (OpRecord& e : earlier) {
      e.dur_ns = ts - e.ts_ns;
      e.status = 0;  // unsignaled, completed before this one (ordering), successfully if this one did
      if (!ok) e.status = -1;
      finish_op(e);
    }
    finish_op(op);
  } else if (s && s->early.size() < kMaxEarly) {
    s->early.push_back(c);  // its WR may come later in the file (another thread's chunk)
  } else {
    ++f_.counters.unmatched_completions;
  }
  if (f_.sink) {
    if (found || !s || s->early.empty() || s->early.back().completion_id != c.completion_id) f_.sink->completion(c);
    if (!ok) {
      ErrorRecord e{f_.process_scoped_id(&errors_), ts, f_.process.process_id, thread, "ibv", "completion", wc_status_name(c.status), c.wr_id,
                    static_cast<int64_t>(c.vendor_err), c.qp_id};
      f_.sink->error(e);
    }
  }
}

void IbvAssociation::post_call(int64_t thread, int64_t ts, const format::DecodedEvent& ev, bool send) {
  const uint64_t* v = ev.values;
  // post_send: qp_num wr_count bytes opcode_mask result; post_recv: qp_num wr_count bytes result;
  // post_srq_recv: srq wr_count bytes result.
  bool srq = ev.type == static_cast<uint16_t>(EventType::ibv_post_srq_recv);
  int64_t result = ev.as_i64(send ? 4 : 3);
  int64_t qp = srq ? kNone : qp_of(v[0], ev.tsc);
  const char* name = send ? "ibv_post_send" : srq ? "ibv_post_srq_recv" : "ibv_post_recv";
  if (f_.sink) f_.sink->call(CallRecord{ts, 0, f_.process.process_id, thread, name, qp, v[2], v[1], result});
  // A failed call is counted once, from its ibv_call_error record (written in every mode).
  if (f_.process.full_mode) return;  // operations come from the WR events
  QpState* s = state(qp);
  OpRecord op;
  op.op_id = f_.next_op_id();
  op.ts_ns = ts;
  op.dur_ns = 0;
  op.process_id = f_.process.process_id;
  op.thread_id = thread;
  op.qp_id = qp;
  op.op_class = send ? op_class_of_mask(v[3]) : static_cast<unsigned>(kOpRecv);
  op.bytes = v[2];
  op.wr_count = static_cast<uint32_t>(v[1]);
  op.peer_process_id = s ? s->peer_process : kNone;
  op.status = result;
  op.is_call = true;
  if (!srq) tag_nccl(op, v[0], false);
  OpCounters& c = f_.op_counters(qp);
  c.ops[op.op_class] += v[1];
  c.bytes[op.op_class] += v[2];
  c.calls += 1;
  c.saw(ts);
  if (f_.sink) f_.sink->work_request(op);
  finish_op(op);
}

void IbvAssociation::control_call(int64_t thread, int64_t ts, const char* name, int64_t qp, int64_t result) {
  f_.calls.call(CallRecord{ts, 0, f_.process.process_id, thread, name, qp, 0, 0, result});
}

void IbvAssociation::call_error(int64_t thread, int64_t ts, const format::DecodedEvent& ev) {
  const uint64_t* v = ev.values;  // call object error
  ++f_.counters.errors;
  ++f_.counters.error_kinds[error_kind("call", ibv_call_name(v[0]), ev.as_i64(2))];
  if (!f_.sink) return;
  int64_t qp = kNone;
  auto call = static_cast<format::IbvCall>(v[0]);
  if (call == format::IbvCall::post_send || call == format::IbvCall::post_recv || call == format::IbvCall::modify_qp ||
      call == format::IbvCall::destroy_qp)
    qp = f_.model.qp_at(f_.process.process_id, v[1], ev.tsc);
  ErrorRecord e{f_.process_scoped_id(&errors_), ts, f_.process.process_id, thread, "ibv", "call", ibv_call_name(v[0]), v[1], ev.as_i64(2), qp};
  f_.sink->error(e);
}

std::unique_ptr<LayerAssociator> make_ibv_associator(FileContext& f) { return std::make_unique<IbvAssociation>(f); }

constexpr EventIdRange kIbvEvents[] = {{100, 199}, {702, 702}};  // verbs, and nccl_net_wr
constexpr format::AggregateKey kIbvKeys[] = {format::AggregateKey::ibv_qp_opcode};

}  // namespace

extern const AssociatorRegistration kIbvAssociator = {"ibv", kIbvEvents, kIbvKeys, &make_ibv_associator};

}  // namespace sigmatrace::analysis
