// See aggregates.h.
#include "analysis/aggregates.h"

#include <cstring>

#include <algorithm>

#include "analysis/layer_ops.h"

namespace sigmatrace::analysis {

void OpCounters::add(const OpCounters& o) {
  for (unsigned i = 0; i < kOpClasses; ++i) ops[i] += o.ops[i], bytes[i] += o.bytes[i];
  calls += o.calls;
  completions += o.completions;
  completion_errors += o.completion_errors;
  if (o.first_ns) saw(o.first_ns);
  if (o.last_ns) saw(o.last_ns);
}

uint64_t OpCounters::total_ops() const {
  uint64_t n = 0;
  for (uint64_t v : ops) n += v;
  return n;
}

uint64_t OpCounters::ops_out() const {
  uint64_t n = 0;
  for (unsigned i = 0; i < kOpClasses; ++i)
    if (op_moves_bytes_out(i)) n += ops[i];
  return n;
}

uint64_t OpCounters::bytes_out() const {
  uint64_t n = 0;
  for (unsigned i = 0; i < kOpClasses; ++i)
    if (op_moves_bytes_out(i)) n += bytes[i];
  return n;
}

std::string gpu_label(const ExperimentModel& m, uint32_t process_id, int64_t gpu) {
  return process_label(m.processes[process_id]) + (gpu >= 0 ? " GPU " + std::to_string(gpu) : " host-memory queues");
}

std::string process_label(const ProcessRow& p) {
  if (p.rank >= 0) return "rank " + std::to_string(p.rank);
  return p.host + ":" + std::to_string(p.pid);
}

std::string error_kind(const std::string& kind, const std::string& what, int64_t error) {
  std::string k = kind + " " + what;
  if (kind != "call") return k;
  // Calls report an errno (or a provider's negative return): named where it is one.
  const int e = static_cast<int>(error < 0 ? -error : error);
  const char* name = error != 0 && e < 4096 ? strerrorname_np(e) : nullptr;
  return k + ": " + (name ? std::string(name) : std::to_string(error));
}

ConnectionFlows connection_flows(const ConnectionRow& c, const Aggregates& agg) {
  const OpCounters& a = agg.qp[c.qp_a];
  const OpCounters none{};
  const OpCounters& b = c.qp_a == c.qp_b ? none : agg.qp[c.qp_b];
  ConnectionFlows f;
  f.ops_a_to_b = a.ops_out() + b.ops[kOpRead];
  f.bytes_a_to_b = a.bytes_out() + b.bytes_read();
  if (c.qp_a == c.qp_b) {
    f.ops_b_to_a = a.ops[kOpRead];
    f.bytes_b_to_a = a.bytes_read();
  } else {
    f.ops_b_to_a = b.ops_out() + a.ops[kOpRead];
    f.bytes_b_to_a = b.bytes_out() + a.bytes_read();
  }
  return f;
}

void DoorbellCounters::add(const DoorbellCounters& o) {
  last_before_own_dump_ns = std::max(last_before_own_dump_ns, o.last_before_own_dump_ns);
  last_before_peer_dump_ns = std::max(last_before_peer_dump_ns, o.last_before_peer_dump_ns);
  wqebbs_before_own_dump += o.wqebbs_before_own_dump;  // (a producer index is a QP's own: not summed)
  doorbells += o.doorbells;
  wqebbs += o.wqebbs;
  blueflame += o.blueflame;
  from_record += o.from_record;
  data_doorbells += o.data_doorbells;
  control_doorbells += o.control_doorbells;
  not_read_doorbells += o.not_read_doorbells;
  recovered += o.recovered;
  recovered_wqebbs += o.recovered_wqebbs;
  lost_wqebbs += o.lost_wqebbs;
  damaged += o.damaged;
  unread_wqebbs += o.unread_wqebbs;
  index_errors += o.index_errors;
  batches += o.batches;
  wait_ns += o.wait_ns;
  max_wait_ns = std::max(max_wait_ns, o.max_wait_ns);
  wqes_read |= o.wqes_read;
  if (o.first_ns && (!first_ns || o.first_ns < first_ns)) first_ns = o.first_ns;
  if (o.last_ns > last_ns) last_ns = o.last_ns;
}

void Aggregates::init(const ExperimentModel& m) {
  qp.assign(m.qps.size(), {});
  qp_by_peer.assign(m.qps.size(), {});
  qp_doorbells.assign(m.qps.size(), {});
  qp_outstanding.assign(m.qps.size(), {});
  process.assign(m.processes.size(), {});
}

namespace {
Imbalance imbalance_of(const std::vector<std::string>& labels, const std::vector<uint64_t>& egress) {
  Imbalance im;
  if (egress.empty()) return im;
  uint64_t sum = 0;
  for (size_t i = 0; i < egress.size(); ++i) {
    sum += egress[i];
    if (egress[i] > im.max_bytes || im.max_label.empty()) im.max_bytes = egress[i], im.max_label = labels[i];
  }
  im.mean_bytes = static_cast<double>(sum) / static_cast<double>(egress.size());
  im.max_over_mean = im.mean_bytes > 0 ? static_cast<double>(im.max_bytes) / im.mean_bytes : 0;
  return im;
}

void add_flow(Matrix* mx, size_t src, size_t dst, uint64_t bytes, uint64_t ops) {
  mx->bytes[src][dst] += bytes;
  mx->ops[src][dst] += ops;
}
}  // namespace

// q's operations by the process they went to: all to its peer QP's process, or, for a QP with
// none (a DC initiator), what qp_by_peer attributed, and the rest to no known process (kNone).
template <typename F>
void Aggregates::for_each_peer(const ExperimentModel& m, const QpRow& q, F&& f) const {
  const OpCounters& all = qp[q.qp_id];
  if (q.remote_qp_id != kNone) return f(int64_t(m.qps[static_cast<size_t>(q.remote_qp_id)].process_id), all);
  OpCounters rest = all;
  for (const auto& [peer, c] : qp_by_peer[q.qp_id]) {
    f(int64_t(peer), c);
    for (unsigned k = 0; k < kOpClasses; ++k) rest.ops[k] -= c.ops[k], rest.bytes[k] -= c.bytes[k];
  }
  f(kNone, rest);
}

void Aggregates::finish(const ExperimentModel& m) {
  // GPUs that rang doorbells: one row per (process, GPU of the QP's send queue).
  gpus.clear();
  std::map<std::pair<uint32_t, int64_t>, GpuRow> by_gpu;
  for (const QpRow& q : m.qps) {
    if (!q.gpu_initiated) continue;
    GpuRow& g = by_gpu[{q.process_id, q.gpu}];
    g.process_id = q.process_id, g.gpu = q.gpu;
    g.qps += 1;
    g.doorbells.add(qp_doorbells[q.qp_id]);
    g.ops.add(qp[q.qp_id]);
  }
  std::map<std::pair<uint32_t, int64_t>, size_t> gpu_index;
  for (auto& [k, g] : by_gpu) gpu_index[k] = gpus.size(), gpus.push_back(g);
  // GPU -> GPU (or "unknown") traffic of the GPU-initiated QPs, as the rank matrix counts it.
  const size_t ng = gpus.size();
  gpu_matrix.labels.clear();
  for (const GpuRow& g : gpus) gpu_matrix.labels.push_back(gpu_label(m, g.process_id, g.gpu));
  gpu_matrix.labels.push_back("unknown");
  gpu_matrix.bytes.assign(ng + 1, std::vector<uint64_t>(ng + 1, 0));
  gpu_matrix.ops = gpu_matrix.bytes;
  for (const QpRow& q : m.qps) {
    if (!q.gpu_initiated) continue;
    const size_t self = gpu_index[{q.process_id, q.gpu}];
    size_t peer = ng;
    if (q.remote_qp_id != kNone) {
      const QpRow& r = m.qps[static_cast<size_t>(q.remote_qp_id)];
      auto it = gpu_index.find({r.process_id, r.gpu});
      if (r.gpu_initiated && it != gpu_index.end()) peer = it->second;
    }
    for_each_peer(m, q, [&](int64_t peer_process, const OpCounters& c) {
      size_t to = peer;
      if (peer_process != kNone)  // a DC initiator's operations: to the GPU of the process they went to
        for (const QpRow& r : m.qps)
          if (r.process_id == uint32_t(peer_process) && r.gpu_initiated) {
            auto it = gpu_index.find({r.process_id, r.gpu});
            if (it != gpu_index.end()) to = it->second;
            break;
          }
      gpu_matrix.bytes[self][to] += c.bytes_out(), gpu_matrix.ops[self][to] += c.ops_out();
      gpu_matrix.bytes[to][self] += c.bytes_read(), gpu_matrix.ops[to][self] += c.ops[kOpRead];
    });
  }
  device.assign(m.devices.size(), {});
  host.assign(m.hosts.size(), {});
  // Operations on no known QP (SRQ receives, aggregate mode, QPs created before tracing): their
  // peer is unknown, but their bytes still count (matrix column "unknown").
  std::vector<OpCounters> without_qp;
  for (const ProcessCounters& pc : process) without_qp.push_back(pc.ops);
  for (const QpRow& q : m.qps) {
    process[q.process_id].ops.add(qp[q.qp_id]);
    if (q.device_id != kNone) device[static_cast<size_t>(q.device_id)].add(qp[q.qp_id]);
  }
  for (const ProcessRow& p : m.processes) host[p.host_id].add(process[p.process_id].ops);

  size_t np = m.processes.size(), nh = m.hosts.size();
  rank_matrix.labels.clear();
  for (const ProcessRow& p : m.processes) rank_matrix.labels.push_back(process_label(p));
  rank_matrix.labels.push_back("unknown");
  rank_matrix.bytes.assign(np + 1, std::vector<uint64_t>(np + 1, 0));
  rank_matrix.ops = rank_matrix.bytes;
  host_matrix.labels = m.hosts;
  host_matrix.labels.push_back("unknown");
  host_matrix.bytes.assign(nh + 1, std::vector<uint64_t>(nh + 1, 0));
  host_matrix.ops = host_matrix.bytes;
  // Writes, sends and atomics travel from the QP's process to its peer; READs the other way.
  for (const QpRow& q : m.qps) {
    const size_t self = q.process_id, self_host = m.processes[self].host_id;
    for_each_peer(m, q, [&](int64_t peer_process, const OpCounters& c) {
      size_t peer = np, peer_host = nh;
      if (peer_process != kNone) peer = size_t(peer_process), peer_host = m.processes[peer].host_id;
      const uint64_t out_ops = c.ops_out();
      add_flow(&rank_matrix, self, peer, c.bytes_out(), out_ops);
      add_flow(&rank_matrix, peer, self, c.bytes_read(), c.ops[kOpRead]);
      add_flow(&host_matrix, self_host, peer_host, c.bytes_out(), out_ops);
      add_flow(&host_matrix, peer_host, self_host, c.bytes_read(), c.ops[kOpRead]);
    });
  }
  for (const ProcessRow& p : m.processes) {
    const OpCounters& c = without_qp[p.process_id];
    const uint64_t out_ops = c.ops_out();
    add_flow(&rank_matrix, p.process_id, np, c.bytes_out(), out_ops);
    add_flow(&rank_matrix, np, p.process_id, c.bytes_read(), c.ops[kOpRead]);
    add_flow(&host_matrix, p.host_id, nh, c.bytes_out(), out_ops);
    add_flow(&host_matrix, nh, p.host_id, c.bytes_read(), c.ops[kOpRead]);
  }
  add_layer_traffic(m, this);  // UCX and libfabric operations with their peer (layer_ops.h)
  std::vector<uint64_t> rank_out(np, 0), host_out(nh, 0);
  for (size_t s = 0; s < np; ++s)
    for (size_t d = 0; d <= np; ++d) rank_out[s] += rank_matrix.bytes[s][d];
  for (size_t s = 0; s < nh; ++s)
    for (size_t d = 0; d <= nh; ++d) host_out[s] += host_matrix.bytes[s][d];
  // Ranks are the processes that have one; without ranks, the processes that communicated (a
  // launcher that only started the ranks is not a rank with nothing to send).
  bool any_rank = false;
  for (const ProcessRow& p : m.processes) any_rank |= p.rank >= 0;
  std::vector<std::string> rank_labels;
  std::vector<uint64_t> rank_egress_bytes;
  for (size_t s = 0; s < np; ++s) {
    uint64_t in = 0;
    for (size_t o = 0; o <= np; ++o) in += rank_matrix.bytes[o][s];
    if (any_rank ? m.processes[s].rank >= 0 : rank_out[s] + in > 0) {
      rank_labels.push_back(rank_matrix.labels[s]);
      rank_egress_bytes.push_back(rank_out[s]);
    }
  }
  rank_egress = imbalance_of(rank_labels, rank_egress_bytes);
  host_egress = imbalance_of(m.hosts, host_out);
  // Heaviest pair vs mean pair: over ordered rank pairs that exchanged anything.
  uint64_t sum = 0, pairs = 0;
  heaviest_pair_bytes = 0;
  heaviest_pair.clear();
  for (size_t s = 0; s < np; ++s)
    for (size_t d = 0; d < np; ++d) {
      uint64_t b = rank_matrix.bytes[s][d];
      if (!b || s == d) continue;  // a process's traffic with itself (loopback QPs) is no pair
      sum += b, ++pairs;
      if (b > heaviest_pair_bytes) heaviest_pair_bytes = b, heaviest_pair = rank_matrix.labels[s] + " -> " + rank_matrix.labels[d];
    }
  mean_pair_bytes = pairs ? static_cast<double>(sum) / static_cast<double>(pairs) : 0;
}

}  // namespace sigmatrace::analysis
