// See json_aggregates.h.
#include "export/json_aggregates.h"
#include "export/json_hangs.h"
#include "export/json_layers.h"
#include "export/json_nccl.h"
#include "export/json_process_ends.h"
#include "export/json_series.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "analysis/ibv_names.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using nlohmann::json;

namespace {

json counters_json(const OpCounters& c) {
  json j;
  j["ops"] = c.total_ops();
  j["bytes_out"] = c.bytes_out();
  j["bytes_read"] = c.bytes_read();
  j["bytes_received"] = c.bytes[kOpRecv];
  j["calls"] = c.calls;
  j["completions"] = c.completions;
  j["completion_errors"] = c.completion_errors;
  json by = json::object();
  for (unsigned i = 0; i < kOpClasses; ++i)
    if (c.ops[i] || c.bytes[i]) by[op_class_name(i)] = {{"ops", c.ops[i]}, {"bytes", c.bytes[i]}};
  j["by_opcode"] = by;
  // Bandwidth over the active span (first to last post or completion); absent without timestamps.
  if (c.last_ns > c.first_ns) {
    const int64_t span = c.last_ns - c.first_ns;
    j["active_ns"] = span;
    j["gbytes_per_s"] = static_cast<double>(c.bytes_out() + c.bytes_read()) / static_cast<double>(span);
  }
  return j;
}

json matrix_json(const Matrix& m) {
  return {{"labels", m.labels}, {"bytes", m.bytes}, {"ops", m.ops}};
}

// WQE recovery's account of a QP or GPU: nothing unrecovered goes unsaid.
json wqe_recovery_json(const DoorbellCounters& d) {
  return {{"wqes_recovered", d.recovered},     {"wqebbs_recovered", d.recovered_wqebbs}, {"lost_wqebbs", d.lost_wqebbs},
          {"damaged_wqes", d.damaged},         {"unread_wqebbs", d.unread_wqebbs},       {"index_errors", d.index_errors},
          {"data_doorbells", d.data_doorbells}, {"control_doorbells", d.control_doorbells},
          {"doorbells_not_read", d.not_read_doorbells}, {"batches", d.batches},
          {"batch_wait_ns", d.wait_ns},        {"max_batch_wait_ns", d.max_wait_ns}};
}

json imbalance_json(const Imbalance& im) {
  return {{"max_over_mean", im.max_over_mean}, {"max", im.max_label}, {"max_bytes", im.max_bytes}, {"mean_bytes", im.mean_bytes}};
}

}  // namespace

// Ranges by (domain, name) over all processes, the longest in total first: how often, how long,
// and the operations, bytes and kernel launches inside them (each counted in its innermost range).
namespace {
// The most frequent decoded payloads of one (domain, name): which sizes an NCCL collective kind
// was called with, for one. Most frequent first, then in text order; kTopPayloads at most.
json top_payloads(const std::map<std::string, uint64_t>& payloads) {
  constexpr size_t kTopPayloads = 8;
  std::vector<std::pair<std::string, uint64_t>> v(payloads.begin(), payloads.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  json out = json::array();
  for (size_t i = 0; i < v.size() && i < kTopPayloads; ++i) out.push_back({{"payload", v[i].first}, {"count", v[i].second}});
  return out;
}

json nvtx_ranges_json(const ExperimentModel& m, const Aggregates& agg) {
  struct Sum {
    uint64_t count = 0, ops = 0, bytes = 0, launches = 0, marks = 0;
    int64_t total_ns = 0, max_ns = 0;
    std::set<uint32_t> processes;
    std::map<std::string, uint64_t> payloads;  // decoded payload -> ranges and marks that carried it
  };
  std::map<std::pair<std::string, std::string>, Sum> by;
  for (const ProcessRow& p : m.processes) {
    const std::vector<RangeRow>& rows = p.ranges.rows();
    const std::vector<RangeTraffic>& t = agg.process[p.process_id].range_traffic;
    for (size_t i = 0; i < rows.size(); ++i) {
      Sum& s = by[{rows[i].domain, rows[i].name}];
      if (!rows[i].payload.empty()) ++s.payloads[rows[i].payload];
      if (rows[i].kind == static_cast<uint64_t>(format::NvtxKind::mark)) {
        ++s.marks;
        continue;
      }
      const int64_t d = rows[i].end_ns - rows[i].start_ns;
      ++s.count, s.total_ns += d, s.max_ns = std::max(s.max_ns, d);
      s.processes.insert(p.process_id);
      if (i < t.size()) s.ops += t[i].ops, s.bytes += t[i].bytes, s.launches += t[i].launches;
    }
  }
  std::vector<std::pair<std::pair<std::string, std::string>, Sum>> sorted(by.begin(), by.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.total_ns > b.second.total_ns; });
  json out = json::array();
  for (const auto& [key, s] : sorted)
    out.push_back({{"domain", key.first}, {"name", key.second}, {"count", s.count}, {"marks", s.marks}, {"total_ns", s.total_ns},
                   {"max_ns", s.max_ns}, {"ops", s.ops}, {"bytes", s.bytes}, {"kernel_launches", s.launches},
                   {"processes", s.processes.size()}, {"distinct_payloads", s.payloads.size()}, {"payloads", top_payloads(s.payloads)}});
  return out;
}
}  // namespace

json clock_sync_json(const ClockSyncResult& c) {
  json hosts = json::array();
  for (const HostClockCorrection& h : c.hosts) {
    json o = {{"host", h.host}, {"reference", h.reference}, {"estimated", h.estimated}, {"messages", h.messages}};
    if (h.estimated && !h.reference)
      o.update({{"offset_ns", h.offset_ns}, {"drift_ppm", h.drift_ppm}, {"bound_ns", h.bound_ns}});
    hosts.push_back(o);
  }
  return {{"mode", clock_sync_mode_name(c.mode)}, {"applied", c.applied}, {"outcome", c.outcome}, {"origin_ns", c.origin_ns},
          {"messages", c.messages}, {"backward_before", c.backward_before}, {"backward_after", c.backward_after},
          {"min_latency_before_ns", c.min_latency_before_ns}, {"min_latency_after_ns", c.min_latency_after_ns}, {"hosts", hosts}};
}

json aggregates_to_json(const ExperimentModel& m, const Aggregates& agg, const SecondPassResult& pass) {
  json j;
  j["format"] = "sigmatrace-aggregate";
  j["version"] = 1;
  j["experiment"] = m.dir;
  j["start_ns"] = m.start_ns;
  j["end_ns"] = m.end_ns;
  j["events"] = pass.events;
  j["clock_sync"] = clock_sync_json(m.clock_sync);  // the hosts' clocks as the messages compare them (clock_sync.h)
  j["hangs"] = hangs_json(m, agg);                   // sigmatrace profile --hang-dump (json_hangs.h)
  j["ended_early"] = ended_early_json(m, agg);       // processes killed or crashed before the rest (json_process_ends.h)

  uint64_t errors = 0, dropped = 0;
  std::map<std::string, uint64_t> error_kinds;
  std::map<std::string, std::pair<uint64_t, uint64_t>> coverage;  // provider -> (enabled, processes reporting)
  json procs = json::array();
  for (const ProcessRow& p : m.processes) {
    const FileSummary& f = *p.file;
    const ProcessCounters& pc = agg.process[p.process_id];
    json o = counters_json(pc.ops);
    o["process_id"] = p.process_id;
    o["label"] = process_label(p);
    o["host"] = p.host;
    o["pid"] = p.pid;
    o["rank"] = p.rank;
    o["mode"] = p.mode;
    o["file"] = f.path;
    o["complete"] = f.has_file_end;
    o["events"] = pc.events;
    o["events_dropped"] = f.events_dropped();
    o["errors"] = pc.errors;
    o["error_kinds"] = pc.error_kinds;
    o["unknown_qp_events"] = pc.unknown_qp;
    o["unmatched_completions"] = pc.unmatched_completions;
    o["flows_out"] = pc.flows_out;
    o["flows_in"] = pc.flows_in;
    o["receives_untimed"] = pc.receives_untimed;
    o["aggregate_entries"] = pc.aggregate_entries;
    const HijackCounters& h = pc.hijack;
    if (h.pages_hijacked || h.pages_not_hijacked || h.pages_doorbells_off || h.map_failures || h.pollers || h.launches ||
        pc.doorbells_without_qp.doorbells)
      o["gpu_doorbells"] = {{"pages_hijacked", h.pages_hijacked},
                            {"pages_not_hijacked", h.pages_not_hijacked},
                            {"pages_with_doorbells_off", h.pages_doorbells_off},
                            {"map_failures", h.map_failures},
                            {"pollers", h.pollers},
                            {"poller_doorbells", h.poller_doorbells},
                            {"poller_cpu_ns", h.poller_cpu_ns},
                            {"poller_wall_ns", h.poller_wall_ns},
                            {"kernel_launches", h.launches},
                            {"doorbells_on_unknown_qps", pc.doorbells_without_qp.doorbells}};
    if (pc.doorbells_without_qp.wqes_read) o["gpu_doorbells"]["wqe_recovery_on_unknown_qps"] = wqe_recovery_json(pc.doorbells_without_qp);
    if (h.kernels_marked)
      o["gpu_doorbells"]["kernel_end_markers"] = {{"marked", h.kernels_marked}, {"ends_reported", h.kernel_ends},
                                                  {"dropped", h.kernel_markers_dropped}, {"unresolved", h.kernel_markers_unresolved}};
    if (const RangeCounters& rc = p.ranges.counters; rc.ranges || rc.marks)
      o["nvtx"] = {{"ranges", rc.ranges}, {"marks", rc.marks}, {"not_ended", rc.unended}, {"unmatched_ends", rc.unmatched_ends},
                   {"undecoded_payloads", rc.undecoded_payloads}};
    if (json n = nccl_process_json(p, pc); !n.is_null()) o["nccl"] = n;
    o["clock"] = {{"source", clock_source_name(p.clock.source)},   {"samples", p.clock.samples},
                  {"ns_per_tick", p.clock.ns_per_tick},           {"max_residual_ns", p.clock.max_residual_ns},
                  {"rms_residual_ns", p.clock.rms_residual_ns}};
    procs.push_back(o);
    errors += pc.errors;
    for (const auto& [k, n] : pc.error_kinds) error_kinds[k] += n;
    dropped += f.events_dropped();
    for (const ProviderState& pr : f.providers) {
      auto& c = coverage[pr.name];
      c.first += pr.enabled, c.second += 1;
    }
  }
  j["processes"] = procs;
  if (json calls = nccl_calls_json(m, agg); !calls.empty()) j["nccl_calls"] = calls;

  json hosts = json::array();
  for (size_t h = 0; h < m.hosts.size(); ++h) {
    json o = counters_json(agg.host[h]);
    o["host"] = m.hosts[h];
    uint64_t n = 0;
    for (const ProcessRow& p : m.processes) n += p.host_id == h;
    o["processes"] = n;
    hosts.push_back(o);
  }
  j["hosts"] = hosts;

  json devices = json::array();
  for (const DeviceRow& d : m.devices) {
    json o = counters_json(agg.device[d.device_id]);
    o["device_id"] = d.device_id;
    o["process_id"] = d.process_id;
    o["host"] = m.processes[d.process_id].host;
    o["name"] = d.name;
    devices.push_back(o);
  }
  j["devices"] = devices;

  json qps = json::array();
  for (const QpRow& q : m.qps) {
    json o = counters_json(agg.qp[q.qp_id]);
    o["qp_id"] = q.qp_id;
    o["process_id"] = q.process_id;
    o["qp_num"] = q.qp_num;
    o["type"] = qp_type_name(q.qp_type);
    o["device"] = q.device_id != kNone ? m.devices[static_cast<size_t>(q.device_id)].name : "";
    o["remote_qp_id"] = q.remote_qp_id == kNone ? json(nullptr) : json(q.remote_qp_id);
    o["peer_process_id"] = q.remote_qp_id == kNone ? json(nullptr) : json(m.qps[static_cast<size_t>(q.remote_qp_id)].process_id);
    o["connection_id"] = q.connection_id == kNone ? json(nullptr) : json(q.connection_id);
    const auto& durations = agg.process[q.process_id].series.qp_durations;
    if (auto d = durations.find(q.qp_id); d != durations.end())  // its operations with a completion
      o["durations"] = {{"ops", d->second.ops}, {"sum_ns", d->second.sum_ns}, {"max_ns", d->second.max_ns}, {"sum_sq_ns2", d->second.sum_sq_ns2},
                        {"sum_log_ns", d->second.sum_log_ns}, {"sum_log_sq", d->second.sum_log_sq}};
    if (q.gpu_initiated) {
      const DoorbellCounters& d = agg.qp_doorbells[q.qp_id];
      o["gpu_initiated"] = true;
      o["gpu"] = q.gpu < 0 ? json(nullptr) : json(q.gpu);
      o["doorbells"] = d.doorbells;
      o["wqebbs"] = d.wqebbs;
      if (d.from_record) o["from_record_doorbells"] = d.from_record;
      if (d.wqes_read) o["wqe_recovery"] = wqe_recovery_json(d);
    }
    qps.push_back(o);
  }
  j["qps"] = qps;

  // GPU-initiated traffic per GPU of each process (gpu null: queues in host memory).
  json gpus = json::array();
  for (const GpuRow& g : agg.gpus) {
    const ProcessRow& p = m.processes[g.process_id];
    json o = {{"process_id", g.process_id}, {"label", process_label(p)}, {"host", p.host},
              {"gpu", g.gpu < 0 ? json(nullptr) : json(g.gpu)}, {"qps", g.qps}, {"doorbells", g.doorbells.doorbells},
              {"wqebbs", g.doorbells.wqebbs}, {"blueflame_doorbells", g.doorbells.blueflame},
              {"from_record_doorbells", g.doorbells.from_record}};
    if (g.doorbells.last_ns > g.doorbells.first_ns)
      o["doorbells_per_s"] = 1e9 * static_cast<double>(g.doorbells.doorbells) / static_cast<double>(g.doorbells.last_ns - g.doorbells.first_ns);
    o["gpu_label"] = gpu_label(m, g.process_id, g.gpu);
    if (g.doorbells.wqes_read || g.ops.total_ops()) {
      o["operations"] = counters_json(g.ops);  // recovered from its queues, with bandwidth
      o["wqe_recovery"] = wqe_recovery_json(g.doorbells);
    }
    gpus.push_back(o);
  }
  j["gpus"] = gpus;

  j["nvtx_ranges"] = nvtx_ranges_json(m, agg);

  json conns = json::array();
  for (const ConnectionRow& c : m.connections) {
    const QpRow& a = m.qps[c.qp_a];
    const QpRow& b = m.qps[c.qp_b];
    const ConnectionFlows f = connection_flows(c, agg);
    const uint64_t ab = f.bytes_a_to_b, ba = f.bytes_b_to_a;
    conns.push_back({{"connection_id", c.connection_id},
                     {"qp_a", c.qp_a},
                     {"qp_b", c.qp_b},
                     {"a", process_label(m.processes[a.process_id]) + " qp " + std::to_string(a.qp_num)},
                     {"b", process_label(m.processes[b.process_id]) + " qp " + std::to_string(b.qp_num)},
                     {"host_a", m.processes[a.process_id].host},
                     {"host_b", m.processes[b.process_id].host},
                     {"bytes_a_to_b", ab},
                     {"bytes_b_to_a", ba},
                     {"bytes", ab + ba}});
  }
  j["connections"] = conns;
  j["matrices"] = {{"rank", matrix_json(agg.rank_matrix)}, {"host", matrix_json(agg.host_matrix)}};
  if (!agg.gpus.empty()) j["matrices"]["gpu"] = matrix_json(agg.gpu_matrix);
  j["imbalance"] = {{"host_egress", imbalance_json(agg.host_egress)},
                    {"rank_egress", imbalance_json(agg.rank_egress)},
                    {"heaviest_pair", agg.heaviest_pair},
                    {"heaviest_pair_bytes", agg.heaviest_pair_bytes},
                    {"mean_pair_bytes", agg.mean_pair_bytes},
                    {"heaviest_over_mean_pair", agg.mean_pair_bytes > 0 ? agg.heaviest_pair_bytes / agg.mean_pair_bytes : 0.0}};
  j["errors"] = errors;
  j["error_kinds"] = error_kinds;
  j["events_dropped"] = dropped;

  json damage = json::array();
  for (const ProcessRow& p : m.processes) {
    const FileSummary& f = *p.file;
    uint64_t lost = 0;
    for (const auto& l : f.losses) lost += l.bytes;
    const FilePassStats& st = pass.files[p.process_id];
    if (f.losses.empty() && !f.chunks_missing && !f.undecodable_chunks && !st.skipped_events && f.has_file_end &&
        !f.write_failure.failed)
      continue;
    damage.push_back({{"file", f.path},
                      {"complete", f.has_file_end},
                      {"write_error", f.write_failure.failed ? f.write_failure.error : ""},
                      {"events_lost_to_write_failure", f.write_failure.events_lost},
                      {"chunks_lost_to_write_failure", f.write_failure.chunks_lost},
                      {"events_missing_at_least", f.events_missing_at_least()},
                      {"damaged_regions", f.losses.size()},
                      {"bytes_skipped", lost},
                      {"chunks_missing", f.chunks_missing},
                      {"undecodable_chunks", f.undecodable_chunks},
                      {"events_of_unreadable_layout", st.skipped_events}});
  }
  j["damage"] = damage;
  j["skipped_files"] = m.scan.skipped;
  json cov = json::object();
  for (const auto& [name, c] : coverage) cov[name] = {{"enabled_in", c.first}, {"reported_by", c.second}};
  j["coverage"] = cov;
  j["layers"] = layer_traffic_json(m, agg);  // UCX / libfabric traffic (json_layers.h)
  j["series"] = series_json(m, agg);          // binned over time, for the plots (json_series.h)
  return j;
}

bool write_json_file(const std::string& path, const json& j, std::string* error) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(1) << "\n";
    if (!out) {
      *error = "cannot write " + tmp;
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path;
    return false;
  }
  return true;
}

}  // namespace sigmatrace::exporter
