// See json_process_ends.h.
#include "export/json_process_ends.h"

#include <map>

#include "analysis/experiment_scan.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using json = nlohmann::json;

json ended_early_json(const ExperimentModel& m, const Aggregates& agg) {
  json out = json::array();
  for (const ProcessRow& p : m.processes) {
    const FileSummary& f = *p.file;
    const bool killed = !f.has_file_end;
    const auto reason = static_cast<format::ExitReason>(f.end_exit_reason);
    if (!killed && reason != format::ExitReason::signal && reason != format::ExitReason::crash) continue;
    json o = {{"process_id", p.process_id},
              {"label", process_label(p)},
              {"how", killed ? "no end record (killed or crashed)" : exit_reason_name(f.end_exit_reason)},
              {"last_ns", nullptr}};
    // A process killed before its first chunk was written has no timed event: it ended before
    // every other one that has.
    const bool timed = p.last_ns > 0;
    if (timed) o["last_ns"] = p.last_ns - m.start_ns;
    uint64_t went_on = 0;
    int64_t latest = timed ? p.last_ns : m.start_ns;
    for (const ProcessRow& q : m.processes)
      if (q.process_id != p.process_id && q.last_ns > 0 && (!timed || q.last_ns > p.last_ns)) ++went_on, latest = std::max(latest, q.last_ns);
    o["processes_that_went_on"] = went_on;
    o["latest_ns"] = latest - m.start_ns;
    // What the others' QPs connected to it reported failed.
    std::map<uint32_t, uint64_t> failed;  // other process -> failed completions on its QPs to p
    for (const QpRow& q : m.qps) {
      if (q.process_id == p.process_id || q.remote_qp_id == kNone) continue;
      if (m.qps[static_cast<size_t>(q.remote_qp_id)].process_id != p.process_id) continue;
      if (uint64_t n = agg.qp[q.qp_id].completion_errors) failed[q.process_id] += n;
    }
    json peers = json::array();
    for (const auto& [q, n] : failed)
      peers.push_back({{"process_id", q}, {"label", process_label(m.processes[q])}, {"failed_completions", n}});
    o["peers_with_failed_completions"] = peers;
    out.push_back(o);
  }
  return out;
}

}  // namespace sigmatrace::exporter
