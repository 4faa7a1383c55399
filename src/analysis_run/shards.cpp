// See shards.h.
#include "analysis_run/shards.h"

#include <cstdlib>
#include <cstring>

#include "analysis/layer_ops.h"

namespace sigmatrace::analysis {
// The raw counters as JSON, field by field (a shard's aggregate.json carries them to the merge).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OpCounters, ops, bytes, calls, completions, completion_errors, first_ns, last_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PendingOp, ts_ns, op_class, bytes, wr_id)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(QpOutstanding, sends, receives, oldest_send, oldest_receive, messages_sent, messages_received)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DoorbellCounters, doorbells, wqebbs, blueflame, from_record, data_doorbells, control_doorbells,
                                   not_read_doorbells, recovered, recovered_wqebbs, lost_wqebbs, damaged, unread_wqebbs,
                                   index_errors, batches, wait_ns, max_wait_ns, wqes_read, first_ns, last_ns, last_before_own_dump_ns,
                                   last_before_peer_dump_ns, wqebbs_before_own_dump, producer_index_at_own_dump)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(HijackCounters, pages_hijacked, pages_not_hijacked, pages_doorbells_off, map_failures, pollers,
                                   poller_doorbells, poller_cpu_ns, poller_wall_ns, launches, kernels_marked, kernel_ends,
                                   kernel_markers_dropped, kernel_markers_unresolved)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LayerTraffic, layer, transport, src, dst, ops, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RangeTraffic, ops, bytes, launches)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SparseBins, bins, total)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BinnedTraffic, bytes, ops)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(QpSeries, qp_id, traffic)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuSeries, gpu, traffic, doorbells)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LatencyHistogram, layer, op_class, counts, ops, sum_ns, min_ns, max_ns, sum_sq_ns2,
                                   sum_log_ns, sum_log_sq)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DurationSum, ops, sum_ns, sum_sq_ns2, sum_log_ns, sum_log_sq, max_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PeerTraffic, ops, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelPhase, data, launch, first_ns, last_ns, ops, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelPhases, phases, dropped, ops_out_of_order, launches)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelActivity, kernel, gpu, doorbells, wqebbs, wqes, data_doorbells, control_doorbells, first_ns,
                                   last_ns, to_peer, phases)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ProcessSeries, by_layer, qps, qps_without_series, gpus, latency, qp_durations, kernels, untimed_ops)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ProcessCounters, ops, events, errors, error_kinds, unknown_qp, unmatched_completions, flows_out,
                                   flows_in, receives_untimed, aggregate_entries, doorbells_without_qp, hijack, layer_traffic,
                                   range_traffic, series)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FilePassStats, events, chunks, undecodable_chunks, skipped_events)
}  // namespace sigmatrace::analysis

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using nlohmann::json;

namespace {
bool parse_unsigned(const char* s, unsigned* out) {
  if (!s || !*s) return false;
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (*end || v > 1u << 20) return false;
  *out = static_cast<unsigned>(v);
  return true;
}
}  // namespace

bool parse_shard_spec(const std::string& text, ShardSpec* out, std::string* error) {
  ShardSpec s;
  if (text == "mpi") {
    static const char* const kLaunchers[][2] = {
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}};
    bool found = false;
    for (const auto& l : kLaunchers) {
      if (!std::getenv(l[0]) || !std::getenv(l[1])) continue;
      if (!parse_unsigned(std::getenv(l[0]), &s.index) || !parse_unsigned(std::getenv(l[1]), &s.count)) {
        *error = std::string("--shard mpi: ") + l[0] + "/" + l[1] + " are not numbers";
        return false;
      }
      found = true;
      break;
    }
    if (!found) {
      *error = "--shard mpi: no launcher's rank in the environment (OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)";
      return false;
    }
  } else {
    const size_t slash = text.find('/');
    if (slash == std::string::npos || !parse_unsigned(text.substr(0, slash).c_str(), &s.index) ||
        !parse_unsigned(text.substr(slash + 1).c_str(), &s.count)) {
      *error = "--shard " + text + ": expected K/N (shard K of N, from 0) or mpi";
      return false;
    }
  }
  if (s.count == 0 || s.index >= s.count) {
    *error = "--shard " + text + ": shard " + std::to_string(s.index) + " of " + std::to_string(s.count) + " does not exist (K counts from 0)";
    return false;
  }
  *out = s;
  return true;
}

std::vector<std::vector<uint32_t>> contiguous_groups(const std::vector<uint64_t>& weights, unsigned count) {
  uint64_t total = 0;
  for (uint64_t w : weights) total += w;
  // Cut where the running sum passes k/count of the total, keeping an item for each later group.
  std::vector<std::vector<uint32_t>> groups(count);
  uint64_t sum = 0;
  unsigned g = 0;
  for (uint32_t i = 0; i < weights.size(); ++i) {
    const bool must_move = weights.size() - i == count - g - 1;  // as many items left as groups after this one
    if (g + 1 < count && !groups[g].empty() && (must_move || sum * count >= total * (g + 1))) ++g;
    groups[g].push_back(i);
    sum += weights[i];
  }
  return groups;
}

bool shard_host_groups(const ExperimentModel& m, unsigned count, std::vector<std::vector<uint32_t>>* groups, std::string* error) {
  const size_t hosts = m.hosts.size();
  if (count > hosts) {
    *error = std::to_string(count) + " shards, but the experiment has " + std::to_string(hosts) + " host" + (hosts == 1 ? "" : "s") +
             " (a shard is a group of hosts)";
    return false;
  }
  std::vector<uint64_t> events(hosts, 0);
  for (const ProcessRow& p : m.processes) events[p.host_id] += p.file->events;
  *groups = contiguous_groups(events, count);
  return true;
}

std::vector<bool> shard_processes(const ExperimentModel& m, const std::vector<uint32_t>& hosts) {
  std::vector<bool> in(m.processes.size(), false);
  for (const ProcessRow& p : m.processes)
    for (uint32_t h : hosts) in[p.process_id] = in[p.process_id] || p.host_id == h;
  return in;
}

std::string shard_directory(const std::string& dir, const ShardSpec& s) {
  return dir + "/" + kShardsDirectory + "/" + std::to_string(s.index) + "-of-" + std::to_string(s.count);
}

json experiment_fingerprint(const ExperimentModel& m) {
  uint64_t events = 0, bytes = 0;
  for (const ProcessRow& p : m.processes) events += p.file->events, bytes += p.file->file_bytes;
  return {{"files", m.scan.files.size()}, {"processes", m.processes.size()}, {"qps", m.qps.size()}, {"events", events},
          {"trace_bytes", bytes}, {"start_ns", m.start_ns}, {"end_ns", m.end_ns}};
}

json timeline_request_json(const TimelineRequest& r) {
  json j = {{"ranks", r.ranks}, {"hosts", r.hosts}, {"layers", r.layers}, {"budget_events", r.budget_events}};
  j["from_s"] = r.from_s ? json(*r.from_s) : json(nullptr);
  j["to_s"] = r.to_s ? json(*r.to_s) : json(nullptr);
  return j;
}

TimelineRequest timeline_request_from_json(const json& j) {
  TimelineRequest r;
  r.ranks = j.value("ranks", std::vector<long>{});
  r.hosts = j.value("hosts", std::vector<std::string>{});
  r.layers = j.value("layers", std::vector<std::string>{});
  r.budget_events = j.value("budget_events", r.budget_events);
  if (j.contains("from_s") && j["from_s"].is_number()) r.from_s = j["from_s"].get<double>();
  if (j.contains("to_s") && j["to_s"].is_number()) r.to_s = j["to_s"].get<double>();
  return r;
}

json shard_section(const ExperimentModel& m, const ShardSpec& s, const std::vector<uint32_t>& hosts, const std::vector<bool>& processes,
                   const Aggregates& raw, const SecondPassResult& pass, const TimelineRequest& request, bool perfetto, bool sqlite,
                   uint64_t timeline_left_out, uint64_t timeline_summarised) {
  json j;
  j["index"] = s.index;
  j["count"] = s.count;
  json host_names = json::array();
  for (uint32_t h : hosts) host_names.push_back(m.hosts[h]);
  j["hosts"] = host_names;
  j["experiment"] = experiment_fingerprint(m);
  j["timeline_request"] = timeline_request_json(request);
  j["outputs"] = {{"perfetto", perfetto}, {"sqlite", sqlite}};
  j["clock_sync"] = clock_sync_mode_name(m.clock_sync.mode);  // the merge's first pass must correct the same way
  j["timeline_left_out"] = timeline_left_out;
  j["timeline_summarised"] = timeline_summarised;
  json procs = json::array(), qps = json::array();
  for (const ProcessRow& p : m.processes)
    if (processes[p.process_id])
      procs.push_back({{"process_id", p.process_id}, {"counters", raw.process[p.process_id]}, {"pass", pass.files[p.process_id]}});
  for (const QpRow& q : m.qps)
    if (processes[q.process_id])
      qps.push_back({{"qp_id", q.qp_id}, {"ops", raw.qp[q.qp_id]}, {"doorbells", raw.qp_doorbells[q.qp_id]}, {"outstanding", raw.qp_outstanding[q.qp_id]}});
  j["processes"] = procs;
  j["qps"] = qps;
  return j;
}

bool add_shard_counters(const json& section, const ExperimentModel& m, Aggregates* agg, SecondPassResult* pass, std::vector<bool>* seen,
                        std::string* error) {
  const std::string which = "shard " + std::to_string(section.value("index", 0u)) + " of " + std::to_string(section.value("count", 0u));
  try {
    for (const json& p : section.at("processes")) {
      const uint32_t id = p.at("process_id").get<uint32_t>();
      if (id >= m.processes.size() || (*seen)[id]) {
        *error = which + " gives process " + std::to_string(id) + (id >= m.processes.size() ? ", which the experiment lacks" : " a second time");
        return false;
      }
      (*seen)[id] = true;
      agg->process[id] = p.at("counters").get<ProcessCounters>();
      pass->files[id] = p.at("pass").get<FilePassStats>();
      pass->events += pass->files[id].events;
    }
    for (const json& q : section.at("qps")) {
      const uint32_t id = q.at("qp_id").get<uint32_t>();
      if (id >= m.qps.size() || !(*seen)[m.qps[id].process_id]) {
        *error = which + " gives QP " + std::to_string(id) + ", which is not one of its processes'";
        return false;
      }
      agg->qp[id] = q.at("ops").get<OpCounters>();
      agg->qp_doorbells[id] = q.at("doorbells").get<DoorbellCounters>();
      if (q.contains("outstanding")) agg->qp_outstanding[id] = q.at("outstanding").get<QpOutstanding>();
    }
  } catch (const json::exception& e) {
    *error = which + ": its counters do not read (" + e.what() + ")";
    return false;
  }
  return true;
}

}  // namespace sigmatrace::exporter
