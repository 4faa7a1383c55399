// See json_nccl.h.
#include "export/json_nccl.h"

#include <map>
#include <tuple>

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using json = nlohmann::json;

json nccl_process_json(const ProcessRow& p, const ProcessCounters& c) {
  if (p.nccl_tasks.empty() && !c.nccl.unknown_steps) return nullptr;
  uint64_t attributed = 0;
  for (const NcclTaskTraffic& t : c.nccl_traffic) attributed += t.wrs;
  return {{"tasks", p.nccl_tasks.size()},         {"ops_attributed", attributed},
          {"matched_by_wr_id", c.nccl.by_wr_id},  {"matched_by_qp", c.nccl.by_qp},
          {"ops_unattributed", c.nccl.unattributed}, {"net_events_without_task", c.nccl.unknown_steps}};
}

json nccl_calls_json(const ExperimentModel& m, const Aggregates& agg) {
  struct Sum {
    uint64_t calls = 0, with_network = 0, wrs = 0, wire_bytes = 0;
    int64_t algorithm_bytes = 0;  // -1 once a call has none
    int64_t net_sum_ns = 0, net_max_ns = 0;
    uint64_t first_seq = ~uint64_t{0}, last_seq = 0;
    std::map<uint32_t, bool> processes;
  };
  // (function, bytes, algorithm, protocol, ranks)
  std::map<std::tuple<std::string, uint64_t, std::string, std::string, int64_t>, Sum> by;
  for (const ProcessRow& p : m.processes) {
    const std::vector<NcclTaskTraffic>& traffic = agg.process[p.process_id].nccl_traffic;
    for (size_t i = 0; i < p.nccl_tasks.size(); ++i) {
      const NcclTaskRow& t = p.nccl_tasks[i];
      Sum& s = by[{t.call_name(), t.bytes(), t.algorithm, t.protocol, t.nranks}];
      ++s.calls;
      s.processes[p.process_id] = true;
      s.first_seq = std::min(s.first_seq, t.seq), s.last_seq = std::max(s.last_seq, t.seq);
      const int64_t ab = t.algorithm_bytes();
      s.algorithm_bytes = (ab < 0 || s.algorithm_bytes < 0) ? -1 : s.algorithm_bytes + ab;
      if (i >= traffic.size()) continue;
      const NcclTaskTraffic& n = traffic[i];
      s.wrs += n.wrs, s.wire_bytes += n.wire_bytes;
      if (n.first_post_ns >= 0) {
        ++s.with_network;
        const int64_t d = n.last_done_ns - n.first_post_ns;
        s.net_sum_ns += d, s.net_max_ns = std::max(s.net_max_ns, d);
      }
    }
  }
  json out = json::array();
  for (const auto& [key, s] : by) {
    const auto& [func, bytes, algorithm, protocol, ranks] = key;
    json o = {{"func", func},
              {"bytes", bytes},
              {"algorithm", algorithm},
              {"protocol", protocol},
              {"ranks", ranks},
              {"processes", s.processes.size()},
              {"calls", s.calls},
              {"seq_first", s.first_seq},
              {"seq_last", s.last_seq},
              {"wrs", s.wrs},
              {"wire_bytes", s.wire_bytes},
              {"calls_with_network", s.with_network},
              {"network_mean_ns", s.with_network ? s.net_sum_ns / static_cast<int64_t>(s.with_network) : 0},
              {"network_max_ns", s.net_max_ns}};
    if (s.algorithm_bytes >= 0) {
      o["algorithm_bytes"] = s.algorithm_bytes;
      // What the wire carried for each byte the algorithm must move: NCCL's protocol's share
      // (LL's flags, LL128's, and the clear-to-send writes) on top of 1.
      if (s.algorithm_bytes > 0) o["wire_per_algorithm_byte"] = static_cast<double>(s.wire_bytes) / static_cast<double>(s.algorithm_bytes);
    }
    out.push_back(o);
  }
  return out;
}

}  // namespace sigmatrace::exporter
