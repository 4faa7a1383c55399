// See json_series.h.
#include "export/json_series.h"

#include <algorithm>
#include <map>

#include "analysis/ibv_names.h"
#include "analysis/kernel_names.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;
using nlohmann::json;

namespace {

// The window of fine bins that holds traffic or doorbells, cut into at most kSeriesBins output
// bins of `width` fine bins each.
struct Window {
  uint32_t first = 0, width = 1, bins = 1;
  std::vector<uint64_t> dense(const SparseBins& s) const {
    std::vector<uint64_t> out(bins, 0);
    for (const auto& [bin, n] : s.bins)
      if (bin >= first) out[std::min<uint32_t>(bins - 1, (bin - first) / width)] += n;
    return out;
  }
};

Window window_of(const ExperimentModel& m, const Aggregates& agg) {
  uint32_t lo = UINT32_MAX, hi = 0;
  auto see = [&](const SparseBins& s) {
    for (const auto& [bin, n] : s.bins) lo = std::min(lo, bin), hi = std::max(hi, bin);
  };
  for (const ProcessRow& p : m.processes) {
    const ProcessSeries& s = agg.process[p.process_id].series;
    for (const BinnedTraffic& t : s.by_layer) see(t.ops);
    for (const GpuSeries& g : s.gpus) see(g.traffic.ops), see(g.doorbells);
  }
  Window w;
  if (lo > hi) return w;  // nothing timed
  const uint32_t span = hi - lo + 1;
  w.first = lo;
  w.width = (span + kSeriesBins - 1) / kSeriesBins;
  w.bins = (span + w.width - 1) / w.width;
  return w;
}

void add_sparse(SparseBins* to, const SparseBins& from) {
  to->bins.insert(to->bins.end(), from.bins.begin(), from.bins.end());
  to->total += from.total;
}

json traffic_json(const Window& w, const BinnedTraffic& t) {
  return {{"bytes", w.dense(t.bytes)}, {"ops", w.dense(t.ops)}, {"total_bytes", t.bytes.total}, {"total_ops", t.ops.total}};
}

// The duration at which the histogram's running count reaches fraction q of its operations (the
// lower edge of that bucket: a bucket is a quarter of a power of two wide).
double quantile_ns(const LatencyHistogram& h, double q) {
  const double want = q * static_cast<double>(h.ops);
  uint64_t seen = 0;
  for (unsigned b = 0; b < h.counts.size(); ++b) {
    seen += h.counts[b];
    if (static_cast<double>(seen) >= want && h.counts[b]) return std::max<double>(static_cast<double>(h.min_ns), latency_bucket_lower_ns(b));
  }
  return static_cast<double>(h.max_ns);
}

json hosts_json(const ExperimentModel& m, const Aggregates& agg, const Window& w) {
  std::map<std::pair<uint32_t, unsigned>, BinnedTraffic> by;  // (host, layer)
  for (const ProcessRow& p : m.processes)
    for (unsigned l = 0; l < kLayerCount; ++l) {
      const BinnedTraffic& t = agg.process[p.process_id].series.by_layer[l];
      if (!t.ops.total) continue;
      BinnedTraffic& h = by[{p.host_id, l}];
      add_sparse(&h.bytes, t.bytes);
      add_sparse(&h.ops, t.ops);
    }
  json out = json::array();
  for (const auto& [key, t] : by) {
    json o = traffic_json(w, t);
    o["host"] = m.hosts[key.first];
    o["layer"] = kLayerNames[key.second];
    out.push_back(o);
  }
  return out;
}

json top_qps_json(const ExperimentModel& m, const Aggregates& agg, const Window& w, size_t* with_traffic) {
  std::vector<const QpSeries*> all;
  for (const ProcessRow& p : m.processes)
    for (const QpSeries& q : agg.process[p.process_id].series.qps)
      if (q.traffic.ops.total && q.qp_id >= 0 && static_cast<size_t>(q.qp_id) < m.qps.size()) all.push_back(&q);
  *with_traffic = all.size();
  for (const ProcessRow& p : m.processes) *with_traffic += agg.process[p.process_id].series.qps_without_series;
  std::sort(all.begin(), all.end(), [](const QpSeries* a, const QpSeries* b) {
    const uint64_t x = a->traffic.bytes.total, y = b->traffic.bytes.total;
    return x != y ? x > y : a->qp_id < b->qp_id;
  });
  json out = json::array();
  for (size_t i = 0; i < all.size() && i < kSeriesTopQps; ++i) {
    const QpRow& q = m.qps[static_cast<size_t>(all[i]->qp_id)];
    json o = traffic_json(w, all[i]->traffic);
    o["qp_id"] = all[i]->qp_id;
    o["label"] = process_label(m.processes[q.process_id]) + " qp " + std::to_string(q.qp_num);
    out.push_back(o);
  }
  return out;
}

json gpus_json(const ExperimentModel& m, const Aggregates& agg, const Window& w) {
  json out = json::array();
  for (const ProcessRow& p : m.processes)
    for (const GpuSeries& g : agg.process[p.process_id].series.gpus) {
      json o = traffic_json(w, g.traffic);
      o["process_id"] = p.process_id;
      o["gpu"] = g.gpu < 0 ? json(nullptr) : json(g.gpu);
      o["gpu_label"] = gpu_label(m, p.process_id, g.gpu);
      o["doorbells"] = w.dense(g.doorbells);
      o["total_doorbells"] = g.doorbells.total;
      out.push_back(o);
    }
  return out;
}

json latency_json(const ExperimentModel& m, const Aggregates& agg) {
  std::map<std::pair<unsigned, unsigned>, LatencyHistogram> by;  // (layer, class), over processes
  for (const ProcessRow& p : m.processes)
    for (const LatencyHistogram& h : agg.process[p.process_id].series.latency) {
      auto [it, fresh] = by.try_emplace({h.layer, h.op_class}, h);
      if (fresh) continue;
      LatencyHistogram& t = it->second;
      for (size_t b = 0; b < t.counts.size() && b < h.counts.size(); ++b) t.counts[b] += h.counts[b];
      t.ops += h.ops, t.sum_ns += h.sum_ns, t.sum_sq_ns2 += h.sum_sq_ns2;
      t.sum_log_ns += h.sum_log_ns, t.sum_log_sq += h.sum_log_sq;
      t.min_ns = std::min(t.min_ns, h.min_ns), t.max_ns = std::max(t.max_ns, h.max_ns);
    }
  json out = json::array();
  for (const auto& [key, h] : by) {
    json buckets = json::array();
    for (unsigned b = 0; b < h.counts.size(); ++b)
      if (h.counts[b]) buckets.push_back({{"from_ns", latency_bucket_lower_ns(b)}, {"to_ns", latency_bucket_lower_ns(b + 1)}, {"ops", h.counts[b]}});
    out.push_back({{"layer", kLayerNames[key.first]}, {"opcode", op_class_name(key.second)}, {"ops", h.ops},
                   {"min_ns", h.min_ns}, {"max_ns", h.max_ns},
                   {"mean_ns", h.ops ? static_cast<double>(h.sum_ns) / static_cast<double>(h.ops) : 0.0}, {"sum_ns", h.sum_ns},
                   {"sum_sq_ns2", h.sum_sq_ns2}, {"sum_log_ns", h.sum_log_ns}, {"sum_log_sq", h.sum_log_sq},
                   {"p50_ns", quantile_ns(h, 0.5)}, {"p99_ns", quantile_ns(h, 0.99)}, {"buckets", buckets}});
  }
  return out;
}

json kernels_json(const ExperimentModel& m, const Aggregates& agg) {
  std::vector<std::pair<uint32_t, const KernelActivity*>> all;
  for (const ProcessRow& p : m.processes)
    for (const KernelActivity& k : agg.process[p.process_id].series.kernels) all.emplace_back(p.process_id, &k);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second->doorbells != b.second->doorbells ? a.second->doorbells > b.second->doorbells : a.first < b.first;
  });
  json out = json::array();
  for (const auto& [pid, k] : all) {
    json o = {{"process_id", pid}, {"label", process_label(m.processes[pid])}, {"gpu_label", gpu_label(m, pid, k->gpu)},
              {"kernel", k->kernel.empty() ? json(nullptr) : json(k->kernel)},
              {"kernel_name", k->kernel.empty() ? json(nullptr) : json(readable_kernel_name(k->kernel))}, {"doorbells", k->doorbells}, {"wqebbs", k->wqebbs},
              {"wqes", k->wqes}, {"data_doorbells", k->data_doorbells}, {"control_doorbells", k->control_doorbells},
              {"first_ns", k->first_ns}, {"last_ns", k->last_ns}};
    json peers = json::array();
    for (const auto& [peer, t] : k->to_peer)
      peers.push_back({{"process_id", peer < 0 ? json(nullptr) : json(peer)},
                       {"label", peer < 0 || static_cast<size_t>(peer) >= m.processes.size() ? "unknown" : process_label(m.processes[static_cast<size_t>(peer)])},
                       {"ops", t.ops}, {"bytes", t.bytes}});
    o["to_peers"] = peers;  // with WQE recovery: its operations by the process each went to
    json phases = json::array();
    for (const KernelPhase& ph : k->phases.phases)
      phases.push_back({{"kind", ph.data ? "data" : "control"}, {"launch", ph.launch}, {"first_ns", ph.first_ns}, {"last_ns", ph.last_ns},
                        {"ops", ph.ops}, {"bytes", ph.bytes}});
    o["phases"] = phases;  // with WQE recovery (kernel_phases.h)
    o["phases_dropped"] = k->phases.dropped;
    o["ops_out_of_order"] = k->phases.ops_out_of_order;
    o["launches"] = k->phases.launches;
    if (k->doorbells) o["wqebbs_per_doorbell"] = static_cast<double>(k->wqebbs) / static_cast<double>(k->doorbells);
    if (k->doorbells && k->wqes) o["wqes_per_doorbell"] = static_cast<double>(k->wqes) / static_cast<double>(k->doorbells);
    if (k->last_ns > k->first_ns)
      o["doorbells_per_s"] = 1e9 * static_cast<double>(k->doorbells) / static_cast<double>(k->last_ns - k->first_ns);
    out.push_back(o);
  }
  return out;
}

// The control phases of one kernel lined up across the processes (and GPUs) that ran it: the
// n-th control phase of each is taken as the same barrier, and its first operation as the time
// that GPU arrived there. Per barrier: each one's arrival, the spread between the first and the
// last, and which one was last.
json barriers_json(const ExperimentModel& m, const Aggregates& agg) {
  struct Participant {
    uint32_t pid;
    const KernelActivity* k;
    std::vector<int64_t> arrivals;
  };
  std::map<std::string, std::vector<Participant>> by_kernel;
  for (const ProcessRow& p : m.processes)
    for (const KernelActivity& k : agg.process[p.process_id].series.kernels) {
      if (k.kernel.empty()) continue;
      Participant part{p.process_id, &k, {}};
      for (const KernelPhase& ph : k.phases.phases)
        if (!ph.data) part.arrivals.push_back(ph.first_ns);
      if (!part.arrivals.empty()) by_kernel[k.kernel].push_back(std::move(part));
    }
  json out = json::array();
  for (const auto& [kernel, parts] : by_kernel) {
    if (parts.size() < 2) continue;
    size_t rounds = SIZE_MAX, most = 0;
    for (const Participant& part : parts) rounds = std::min(rounds, part.arrivals.size()), most = std::max(most, part.arrivals.size());
    json participants = json::array(), arrival = json::array(), spread = json::array(), last = json::array();
    std::vector<uint64_t> last_count(parts.size(), 0);
    std::vector<int64_t> spreads;
    for (const Participant& part : parts)
      participants.push_back({{"process_id", part.pid}, {"label", process_label(m.processes[part.pid])}, {"gpu_label", gpu_label(m, part.pid, part.k->gpu)},
                              {"control_phases", part.arrivals.size()}, {"phases_dropped", part.k->phases.dropped}});
    for (size_t r = 0; r < rounds; ++r) {
      json row = json::array();
      size_t first = 0, latest = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        const int64_t t = parts[i].arrivals[r];
        row.push_back(t);
        if (t < parts[first].arrivals[r]) first = i;
        if (t > parts[latest].arrivals[r]) latest = i;
      }
      const int64_t d = parts[latest].arrivals[r] - parts[first].arrivals[r];
      arrival.push_back(row);
      spread.push_back(d);
      spreads.push_back(d);
      last.push_back(latest);
      ++last_count[latest];
    }
    std::nth_element(spreads.begin(), spreads.begin() + static_cast<ptrdiff_t>(spreads.size() / 2), spreads.end());
    out.push_back({{"kernel", kernel}, {"kernel_name", readable_kernel_name(kernel)}, {"participants", participants}, {"barriers", rounds},
                   {"unmatched", most != rounds},  // some ran more control phases than others: only the first `barriers` are lined up
                   {"arrival_ns", arrival}, {"spread_ns", spread}, {"last", last}, {"last_count", last_count},
                   {"median_spread_ns", spreads[spreads.size() / 2]}});
  }
  return out;
}

}  // namespace

json series_json(const ExperimentModel& m, const Aggregates& agg) {
  const SeriesGeometry g(m);
  const Window w = window_of(m, agg);
  size_t qps_with_traffic = 0;
  uint64_t untimed = 0;
  for (const ProcessRow& p : m.processes) untimed += agg.process[p.process_id].series.untimed_ops;
  // The window with traffic, in bins of bin_ns (the last one may reach past the experiment's end).
  json j = {{"start_ns", g.start_ns + static_cast<int64_t>(w.first) * g.bin_ns}, {"bin_ns", static_cast<int64_t>(w.width) * g.bin_ns}, {"bins", w.bins}};
  j["hosts"] = hosts_json(m, agg, w);
  j["top_qps"] = top_qps_json(m, agg, w, &qps_with_traffic);
  j["qps_with_traffic"] = qps_with_traffic;  // top_qps holds kSeriesTopQps of them at most
  j["gpus"] = gpus_json(m, agg, w);
  j["latency"] = latency_json(m, agg);
  j["kernels"] = kernels_json(m, agg);
  j["barriers"] = barriers_json(m, agg);
  j["untimed_ops"] = untimed;  // operations with no post time (aggregate mode has no operations at all)
  return j;
}

}  // namespace sigmatrace::exporter
