// See qp_topology.h.
#include "analysis/qp_topology.h"

#include <unordered_map>

namespace sigmatrace::analysis {

namespace {
// Lookup keys: a QP is findable by its GID address and by its LID address, since a peer may name it
// either way (InfiniBand: LID, GID optional; RoCE: GID only, LID 0).
uint64_t gid_key(uint64_t prefix, uint64_t iface, uint64_t qpn) {
  HwEndpoint e{prefix, iface, 0, qpn};
  return hw_endpoint_hash(e);
}
uint64_t lid_key(uint64_t lid, uint64_t qpn) {
  HwEndpoint e{0, 0, lid, qpn};
  return hw_endpoint_hash(e) ^ 0x9e3779b97f4a7c15ull;  // distinct from GID keys
}
}  // namespace

void pair_queue_pairs(ExperimentModel* m) {
  // QP numbers are reused after destroy: the address maps to every QP that had it, and the pairing
  // prefers the one whose lifetime overlaps the peer's.
  std::unordered_multimap<uint64_t, uint32_t> by_addr;
  for (QpRow& q : m->qps) {
    q.remote_qp_id = kNone;
    q.connection_id = kNone;
    q.local = HwEndpoint{0, 0, 0, q.qp_num};
    if (q.device_id != kNone) {
      if (const PortRow* p = m->devices[static_cast<size_t>(q.device_id)].port(q.port)) {
        q.local.gid_prefix = p->gid_prefix;
        q.local.gid_iface = p->gid_iface;
        q.local.lid = p->lid;
      }
    }
    if (q.device_id == kNone && q.aggregate_lid) q.local.lid = q.aggregate_lid;
    if (q.local.has_gid()) by_addr.emplace(gid_key(q.local.gid_prefix, q.local.gid_iface, q.qp_num), q.qp_id);
    if (q.local.lid) by_addr.emplace(lid_key(q.local.lid, q.qp_num), q.qp_id);
  }
  auto overlaps = [](const QpRow& a, const QpRow& b) {
    int64_t a_end = a.destroy_ns ? a.destroy_ns : INT64_MAX, b_end = b.destroy_ns ? b.destroy_ns : INT64_MAX;
    return a.create_ns <= b_end && b.create_ns <= a_end;
  };
  auto find_peer = [&](const QpRow& q) -> int64_t {
    if (!q.has_remote) return kNone;
    HwEndpoint r = q.remote();
    uint64_t k = r.has_gid() ? gid_key(r.gid_prefix, r.gid_iface, r.qp_num) : lid_key(r.lid, r.qp_num);
    int64_t best = kNone;
    auto [b, e] = by_addr.equal_range(k);
    for (auto it = b; it != e; ++it) {
      const QpRow& c = m->qps[it->second];
      if (!(c.local.qp_num == r.qp_num)) continue;
      // A QP connected to itself (NCCL's GPU-flush QP, loopback tests) is its own peer.
      if (c.qp_id == q.qp_id) return q.qp_id;
      if (best == kNone || (overlaps(q, c) && !overlaps(q, m->qps[static_cast<size_t>(best)]))) best = c.qp_id;
    }
    return best;
  };
  for (QpRow& q : m->qps) q.remote_qp_id = find_peer(q);
  // A connection needs both ends to agree (RC/UC); a QP whose peer does not name it back keeps its
  // remote_qp_id (it knows where it sends) but forms no connection.
  m->connections.clear();
  for (QpRow& q : m->qps) {
    if (q.remote_qp_id == kNone || q.connection_id != kNone) continue;
    QpRow& r = m->qps[static_cast<size_t>(q.remote_qp_id)];
    if (r.remote_qp_id != q.qp_id) continue;
    ConnectionRow c{static_cast<uint32_t>(m->connections.size()), std::min(q.qp_id, r.qp_id), std::max(q.qp_id, r.qp_id)};
    q.connection_id = r.connection_id = c.connection_id;
    m->connections.push_back(c);
  }
}

}  // namespace sigmatrace::analysis
