// See json_hangs.h.
#include "export/json_hangs.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "analysis/ibv_names.h"
#include "analysis/kernel_names.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using nlohmann::json;

namespace {

// The first dump of each process (ns on the normalized timeline; -1: none).
std::vector<int64_t> first_dump_ns(const ExperimentModel& m) {
  std::vector<int64_t> out(m.processes.size(), -1);
  for (const ProcessRow& p : m.processes) out[p.process_id] = p.first_hang_dump_ns();
  return out;
}

// When a process ended: its file's end record, else (killed without a flush) its last sign of life.
int64_t ended_ns(const ProcessRow& p) {
  if (p.file->has_file_end) return p.clock.to_ns(p.file->file_end_tsc);
  return std::max(p.last_ns, p.clock.to_ns(p.file->last_progress_tsc()));
}

json pending_json(const PendingOp& op, int64_t dump_ns) {
  return {{"opcode", op_class_name(op.op_class)}, {"bytes", op.bytes}, {"wr_id", op.wr_id}, {"posted_ns", op.ts_ns},
          {"age_at_dump_ns", dump_ns - op.ts_ns}};
}

// What the QP waits for, told from both ends.
std::string diagnosis(const ExperimentModel& m, const Aggregates& agg, const QpRow& q, const std::vector<int64_t>& dumps) {
  const QpOutstanding& o = agg.qp_outstanding[q.qp_id];
  const std::string me = process_label(m.processes[q.process_id]);
  if (q.remote_qp_id == kNone) return "its peer is not in the trace: what it waits for cannot be told";
  const QpRow& r = m.qps[static_cast<size_t>(q.remote_qp_id)];
  const ProcessRow& peer = m.processes[r.process_id];
  const std::string them = process_label(peer);
  const QpOutstanding& po = agg.qp_outstanding[r.qp_id];
  const int64_t dump = dumps[q.process_id];
  const int64_t peer_end = ended_ns(peer);
  if (dumps[r.process_id] < 0 && peer_end < dump)
    return them + " ended before this dump (" + std::to_string((dump - peer_end) / 1000000) + " ms earlier): nothing it owed will come";
  if (o.sends) {
    const bool consumes = op_consumes_receive(o.oldest_send.op_class);
    if (consumes && !po.receives)
      return "a send " + them + " never posted a receive for: " + them + " had " + std::to_string(po.messages_received) +
             " receives complete and none waiting (the NIC retries it for ever: RNR)";
    return "its " + std::string(op_class_name(o.oldest_send.op_class)) + " has no completion although " + them +
           (consumes ? " has a receive posted" : " is there") + ": the peer's NIC or the link does not answer";
  }
  // Receives only: do the messages the peer sent account for every completed receive?
  if (po.messages_sent <= o.messages_received) {
    if (dumps[r.process_id] >= 0 && po.receives && !po.sends)
      return "a message " + them + " never sent: " + them + " sent " + std::to_string(po.messages_sent) + ", all received, and waits to receive from " +
             me + " itself (deadlock: each waits for the other to send)";
    return "a message " + them + " never sent: " + them + " sent " + std::to_string(po.messages_sent) + ", all received here";
  }
  return "a message " + them + " sent (" + std::to_string(po.messages_sent) + " sent, " + std::to_string(o.messages_received) +
         " received here): it was lost on the way";
}

// GPU-initiated work (docs/hangs.md, "GPU kernels that wait"): a kernel that waits for its peers' puts
// posts and polls nothing the verbs layer sees; what tells is which kernels ran at the dump and
// when each GPU last rang a doorbell towards the other.

std::string age_before_dump(int64_t dump_ns, int64_t t_ns) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f s before the dump", static_cast<double>(dump_ns - t_ns) / 1e9);
  return b;
}

// The kernels of p running at t_ns (started by then, not seen to end before it), by start.
std::vector<const ProcessRow::Span*> kernels_running(const ProcessRow& p, int64_t t_ns) {
  std::vector<const ProcessRow::Span*> out;
  for (const auto& [gpu, spans] : p.spans_on)
    for (const ProcessRow::Span& s : spans) {
      const bool unended = s.end_tsc + p.span_slack_ticks == ~uint64_t{0};
      if (p.clock.to_ns(s.start_tsc) <= t_ns && (unended || p.clock.to_ns(s.end_tsc) >= t_ns)) out.push_back(&s);
    }
  std::sort(out.begin(), out.end(), [](const ProcessRow::Span* a, const ProcessRow::Span* b) { return a->start_tsc < b->start_tsc; });
  return out;
}

// The kernel's name as a person reads it (the driver's symbol is mangled, often behind nvcc's
// internal-linkage prefix); the symbol itself is in the output too.
std::string kernel_symbol(const ProcessRow& p, uint64_t function) {
  auto it = p.kernel_names.find(function);
  return it == p.kernel_names.end() ? "" : it->second;
}
std::string kernel_label(const ProcessRow& p, uint64_t function) {
  const std::string symbol = kernel_symbol(p, function);
  return symbol.empty() ? "(unnamed kernel)" : readable_kernel_name(symbol);
}

// What p's GPU waits for from peer, from the peer's side: when its GPU last issued to p, whether
// it ran a kernel at p's dump, whether it hung too.
struct GpuPeer {
  int64_t mine_ns = 0, theirs_ns = 0;  // last doorbell p -> peer, peer -> p, before p's dump (0: none)
};

// peer_running: the peer's kernels running at p's dump (kernels_running).
std::string gpu_diagnosis(const ExperimentModel& m, const ProcessRow& p, uint32_t peer_id, const GpuPeer& g,
                          const std::vector<const ProcessRow::Span*>& peer_running, int64_t dump, int64_t idle_since,
                          const std::vector<int64_t>& dumps) {
  const ProcessRow& r = m.processes[peer_id];
  const std::string me = process_label(p), them = process_label(r);
  const int64_t peer_end = ended_ns(r);
  if (dumps[peer_id] < 0 && peer_end < dump)
    return them + " ended before this dump (" + std::to_string((dump - peer_end) / 1000000) + " ms earlier): nothing it owed will come";
  const std::string since = g.theirs_ns ? "since " + age_before_dump(dump, g.theirs_ns) : "at all";
  if (g.theirs_ns && g.theirs_ns > idle_since)
    return "not " + them + ": its GPU issued to " + me + " " + age_before_dump(dump, g.theirs_ns) + ", while " + me + " made no progress";
  if (peer_running.empty())
    return "a put " + them + " never issued: its GPU issued nothing to " + me + " " + since + " and ran no kernel at the dump";
  const std::string k = kernel_label(r, peer_running.back()->function);
  if (dumps[peer_id] >= 0)
    return "each waits for the other: " + them + "'s kernel " + k + " also runs and has issued nothing to " + me + " " + since +
           " (deadlock: each waits for the other's put)";
  return "a put " + them + " has not issued: its kernel " + k + " runs but has issued nothing to " + me + " " + since;
}

// p's GPU-initiated QPs at its first dump: each one's posted work, its GPU's last doorbell, and per
// GPU peer (RC QPs to another process) when either side last rang towards the other.
struct GpuStateAtDump {
  std::map<uint32_t, GpuPeer> peers;
  int64_t last_doorbell_ns = 0;
  json qps = json::array();
};

GpuStateAtDump gpu_state_at_dump(const ExperimentModel& m, const Aggregates& agg, const ProcessRow& p, int64_t dump) {
  GpuStateAtDump st;
  for (const auto& [num, ids] : p.qps_by_num)
    for (uint32_t id : ids) {
      const QpRow& q = m.qps[id];
      if (!q.gpu_initiated || (q.create_ns && q.create_ns > dump)) continue;
      const DoorbellCounters& c = agg.qp_doorbells[id];
      const QpRow* r = q.remote_qp_id == kNone ? nullptr : &m.qps[static_cast<size_t>(q.remote_qp_id)];
      st.last_doorbell_ns = std::max(st.last_doorbell_ns, c.last_before_own_dump_ns);
      if (c.last_before_own_dump_ns) {
        json j = {{"qp_id", id}, {"qp_num", q.qp_num}, {"producer_index", c.producer_index_at_own_dump},
                  {"wqebbs", c.wqebbs_before_own_dump}, {"last_doorbell_ns", c.last_before_own_dump_ns}};
        if (r) j["peer_label"] = process_label(m.processes[r->process_id]);
        st.qps.push_back(j);
      }
      if (!r || r->process_id == p.process_id) continue;
      GpuPeer& g = st.peers[r->process_id];
      g.mine_ns = std::max(g.mine_ns, c.last_before_own_dump_ns);
      g.theirs_ns = std::max(g.theirs_ns, agg.qp_doorbells[r->qp_id].last_before_peer_dump_ns);
    }
  return st;
}

// One entry per kernel of p running at its first dump, with each GPU peer's view.
void gpu_waits(const ExperimentModel& m, const Aggregates& agg, const ProcessRow& p, const std::vector<int64_t>& dumps, json* out) {
  const int64_t dump = dumps[p.process_id];
  const std::vector<const ProcessRow::Span*> running = kernels_running(p, dump);
  if (running.empty()) return;
  const HangDump& d = p.file->hang_dumps.front();
  const int64_t idle_since = dump - static_cast<int64_t>(d.idle_ns);
  const GpuStateAtDump st = gpu_state_at_dump(m, agg, p, dump);
  json peers = json::array();
  for (const auto& [peer_id, g] : st.peers) {
    const ProcessRow& r = m.processes[peer_id];
    const std::vector<const ProcessRow::Span*> peer_running = kernels_running(r, dump);
    json j = {{"peer_process_id", peer_id}, {"peer_label", process_label(r)}, {"peer_dumped", dumps[peer_id] >= 0},
              {"waits_for", gpu_diagnosis(m, p, peer_id, g, peer_running, dump, idle_since, dumps)}};
    if (g.mine_ns) j["last_issued_to_peer_ns"] = g.mine_ns;
    if (g.theirs_ns) j["last_issued_by_peer_ns"] = g.theirs_ns;
    json kernels = json::array();
    for (const ProcessRow::Span* k : peer_running) kernels.push_back(kernel_label(r, k->function));
    j["peer_kernels_running"] = kernels;
    peers.push_back(j);
  }
  for (const ProcessRow::Span* s : running) {
    json e = {{"process_id", p.process_id}, {"label", process_label(p)}, {"kernel", kernel_label(p, s->function)},
              {"kernel_symbol", kernel_symbol(p, s->function)}, {"launched_ns", p.clock.to_ns(s->launch_tsc)},
              {"running_at_dump_ns", dump - p.clock.to_ns(s->start_tsc)}, {"gpu_kernels_running", d.gpu_kernels_running},
              {"peers", peers}, {"qps", st.qps}};
    if (st.last_doorbell_ns) e["last_doorbell_ns"] = st.last_doorbell_ns, e["last_doorbell_age_at_dump_ns"] = dump - st.last_doorbell_ns;
    out->push_back(e);
  }
}

}  // namespace

json hangs_json(const ExperimentModel& m, const Aggregates& agg) {
  const std::vector<int64_t> dumps = first_dump_ns(m);
  json out_dumps = json::array(), waiting = json::array(), quiet = json::array(), gpu_waiting = json::array();
  for (const ProcessRow& p : m.processes) {
    if (!p.file) continue;
    for (const HangDump& d : p.file->hang_dumps)
      out_dumps.push_back({{"process_id", p.process_id}, {"label", process_label(p)}, {"ts_ns", p.clock.to_ns(d.tsc)},
                           {"reason", d.reason == 2 ? "signal" : "no progress"}, {"idle_ns", d.idle_ns}, {"completions_polled", d.completions},
                           {"gpu_kernels_running", d.gpu_kernels_running}});
    if (dumps[p.process_id] < 0) continue;
    const size_t gpu_before = gpu_waiting.size();
    gpu_waits(m, agg, p, dumps, &gpu_waiting);
    bool any = gpu_waiting.size() > gpu_before;
    for (const auto& [num, ids] : p.qps_by_num)
      for (uint32_t id : ids) {
        const QpRow& q = m.qps[id];
        const QpOutstanding& o = agg.qp_outstanding[id];
        if (!o.any() || (q.create_ns && q.create_ns > dumps[p.process_id])) continue;
        any = true;
        json w = {{"process_id", p.process_id}, {"label", process_label(p)}, {"qp_id", id}, {"qp_num", q.qp_num},
                  {"outstanding_sends", o.sends}, {"outstanding_receives", o.receives}, {"messages_sent", o.messages_sent},
                  {"messages_received", o.messages_received}, {"waits_for", diagnosis(m, agg, q, dumps)}};
        if (o.sends) w["oldest_send"] = pending_json(o.oldest_send, dumps[p.process_id]);
        if (o.receives) w["oldest_receive"] = pending_json(o.oldest_receive, dumps[p.process_id]);
        if (q.remote_qp_id != kNone) {
          const QpRow& r = m.qps[static_cast<size_t>(q.remote_qp_id)];
          w["peer_process_id"] = r.process_id;
          w["peer_label"] = process_label(m.processes[r.process_id]);
          w["peer_qp_id"] = r.qp_id;
          w["peer_qp_num"] = r.qp_num;
          w["peer_dumped"] = dumps[r.process_id] >= 0;
        }
        waiting.push_back(w);
      }
    // A hung process none of whose QPs waits: stuck outside what the trace sees.
    if (!any) quiet.push_back({{"process_id", p.process_id}, {"label", process_label(p)}});
  }
  std::stable_sort(waiting.begin(), waiting.end(), [](const json& a, const json& b) {
    const auto age = [](const json& w) {
      int64_t t = 0;
      for (const char* k : {"oldest_send", "oldest_receive"})
        if (w.contains(k)) t = std::max(t, w[k]["age_at_dump_ns"].get<int64_t>());
      return t;
    };
    return age(a) > age(b);
  });
  return {{"dumps", out_dumps}, {"waiting", waiting}, {"gpu_waiting", gpu_waiting}, {"hung_without_waiting_qps", quiet}};
}

}  // namespace sigmatrace::exporter
