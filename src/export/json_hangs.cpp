// See json_hangs.h.
#include "export/json_hangs.h"

#include <algorithm>

#include "analysis/ibv_names.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using nlohmann::json;

namespace {

// The first dump of each process (ns on the normalized timeline; -1: none).
std::vector<int64_t> first_dump_ns(const ExperimentModel& m) {
  std::vector<int64_t> out(m.processes.size(), -1);
  for (const ProcessRow& p : m.processes)
    if (p.file && !p.file->hang_dumps.empty()) out[p.process_id] = p.clock.to_ns(p.file->hang_dumps.front().tsc);
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

}  // namespace

json hangs_json(const ExperimentModel& m, const Aggregates& agg) {
  const std::vector<int64_t> dumps = first_dump_ns(m);
  json out_dumps = json::array(), waiting = json::array(), quiet = json::array();
  for (const ProcessRow& p : m.processes) {
    if (!p.file) continue;
    for (const HangDump& d : p.file->hang_dumps)
      out_dumps.push_back({{"process_id", p.process_id}, {"label", process_label(p)}, {"ts_ns", p.clock.to_ns(d.tsc)},
                           {"reason", d.reason == 2 ? "signal" : "no progress"}, {"idle_ns", d.idle_ns}, {"completions_polled", d.completions}});
    if (dumps[p.process_id] < 0) continue;
    bool any = false;
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
  return {{"dumps", out_dumps}, {"waiting", waiting}, {"hung_without_waiting_qps", quiet}};
}

}  // namespace sigmatrace::exporter
